//go:build linux

package launch

// The proxy and transparent network modes of every sandbox: the wiring between the policy's
// [network] section, package netns (the egress proxy, which does all checking) and the
// sandbox's Spec (sockets opened inside its network namespace, the command's environment,
// Landlock's connect ports, a resolv.conf).
//
// Order of a run:
//
//	PrepareNet    policy -> Rules, Resolver, Proxy (errors here stop the run before any
//	              process exists); fixed socket addresses, env, ports, resolv.conf
//	Start         the sandbox's init opens the sockets in its fresh namespace and hands them over
//	(*Net).Serve  one goroutine per server on those sockets, bound to a context
//	cmd.Wait      the sandbox is gone
//	stop          cancel the context, wait for every server goroutine
//	(*Net).Close  close the audit file, the terminal, resolv.conf's directory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/netns"
	"github.com/jail-sandbox/jail/policy"
	"github.com/jail-sandbox/jail/termtext"
	"golang.org/x/sys/unix"
)

// Fixed addresses inside the sandbox. The network namespace is the sandbox's own, so nothing
// else can hold these ports, and the command's environment can name them before it exists.
const (
	httpProxyAddr = "127.0.0.1:3128"
	socksAddr     = "127.0.0.1:1080"
	dnsAddr       = "127.0.0.1:53"
)

// maxSockets bounds the listening sockets one run asks the sandbox's init for (confine
// accepts up to 4096). Transparent mode listens on every pool address for every allowed port;
// this keeps a policy with many ports from costing thousands of descriptors.
const maxSockets = 1024

// transparentPool is the number of names transparent mode can map in one run.
const transparentPool = 64

// Net is the supervisor side of one run's proxy or transparent mode. A nil *Net (modes
// none and host) does nothing.
type Net struct {
	mode  string
	proxy *netns.Proxy
	trans *netns.Transparent // transparent mode only
	audit *netAudit          // nil when the policy disables the audit log

	// What the Spec gets.
	sockets []confine.Socket
	env     []string
	mounts  []confine.Mount

	tmpDir string   // holds resolv.conf; removed by close
	tty    *os.File // the terminal [network] ask prompts on
	// CommandOnTTY is set when the command's stdout or stderr is a
	// terminal: jail then asks no one, since the command could draw a
	// prompt of its own beside jail's (docs/terminal.md).
	CommandOnTTY bool
	// Terminal is the pty relay of an interactive run: a question pauses
	// it (the command's output held, its keys cut off) and is asked on
	// the caller's terminal, which the command never holds.
	Terminal *confine.Terminal
}

// PrepareNet builds the proxy for mode from the policy's [network] section. It returns nil for
// none and host. Errors are the policy's or the host's, before any sandbox exists.
func PrepareNet(mode string, p *policy.Policy, stderr io.Writer) (nr *Net, err error) {
	if mode != policy.NetProxy && mode != policy.NetTransparent {
		return nil, nil
	}
	n := p.Network
	rules, err := netns.NewRules(netns.RulesConfig{Allow: n.Allow, Deny: n.Deny, AllowPrivate: n.AllowPrivate})
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	server := n.Resolver
	if a, perr := netip.ParseAddr(server); perr == nil {
		server = netip.AddrPortFrom(a, 53).String() // the policy accepts a bare IP
	}
	res, err := netns.NewResolver(server)
	if err != nil {
		return nil, fmt.Errorf("network.resolver: %w", err)
	}
	nr = &Net{mode: mode}
	defer func() {
		if err != nil {
			nr.Close()
			nr = nil
		}
	}()
	if p.Audit.Enabled == nil || *p.Audit.Enabled {
		if p.Audit.Path == "" {
			return nil, errors.New("audit: no log path (set [audit] path, or HOME or XDG_STATE_HOME); the network modes record every connection")
		}
		nr.audit, err = openNetAudit(p.Audit.Path, p.Audit.Fsync, p.Hash(), stderr)
		if err != nil {
			return nil, err
		}
	}
	cfg := netns.Config{
		Rules:    rules,
		Resolver: res,
		Logger:   slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if n.Ask {
		cfg.Approve = nr.askOnTerminal(p.Approval.AskTimeout, stderr)
	}
	// Each refused host is named once on stderr with the setting that would allow it; the
	// audit log keeps every decision.
	refusals := netns.NewRefusals(stderr)
	refusals.Quiet(n.QuietProfile, n.Quiet)
	cfg.Audit = refusals.Event
	if nr.audit != nil {
		cfg.Audit = func(ev netns.Event) {
			nr.audit.write(ev)
			refusals.Event(ev)
		}
	}
	nr.proxy, err = netns.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	nr.sockets = []confine.Socket{{Network: "tcp", Addr: httpProxyAddr}, {Network: "tcp", Addr: socksAddr}}
	nr.env = netns.ProxyEnv(httpProxyAddr, socksAddr)

	if mode == policy.NetTransparent {
		nr.trans = nr.proxy.NewTransparent(transparentPool)
		addrs := nr.trans.Addrs()
		// Every pool address is listened on for every allowed port: shrink the pool to fit.
		if ports := len(addrs) / transparentPool; ports > 0 {
			room := maxSockets - len(nr.sockets) - 1
			if ports > room {
				return nil, fmt.Errorf("network: transparent mode listens on every allowed port, and %d ports are more than it can open (%d)", ports, room)
			}
			if transparentPool*ports > room {
				nr.trans = nr.proxy.NewTransparent(room / ports)
				addrs = nr.trans.Addrs()
			}
		}
		for _, a := range addrs {
			nr.sockets = append(nr.sockets, confine.Socket{Network: "tcp", Addr: a.String()})
		}
		nr.sockets = append(nr.sockets, confine.Socket{Network: "udp", Addr: dnsAddr})
		// The command's resolver must ask jail's stub; the file lives in a private directory
		// of the supervisor's and is bound read-only over /etc/resolv.conf.
		nr.tmpDir, err = os.MkdirTemp("", "jail-net-")
		if err != nil {
			return nil, fmt.Errorf("network: resolv.conf: %w", err)
		}
		rc := filepath.Join(nr.tmpDir, "resolv.conf")
		if err := os.WriteFile(rc, []byte("# written by jail: names resolve only through jail's allowlist\nnameserver 127.0.0.1\noptions ndots:1 attempts:2 timeout:2\n"), 0o644); err != nil {
			return nil, fmt.Errorf("network: resolv.conf: %w", err)
		}
		nr.mounts = []confine.Mount{{Kind: confine.Bind, Source: rc, Dest: "/etc/resolv.conf"}}
	}
	// The summary is for logs, where it records what the run could reach. A person at a
	// terminal would see it before every command of an interactive session; the refusal lines
	// tell them what they need when it matters. (--net host and degraded layers still warn on
	// every run: launch.NewSpec.)
	if !IsTerminal(stderr) {
		fmt.Fprintln(stderr, "jail: network:", allowedSummary(mode, n))
	}
	return nr, nil
}

// allowedSummary is the one line a proxy or transparent run prints about what it may reach.
func allowedSummary(mode string, n policy.Network) string {
	if len(n.Allow) == 0 {
		return mode + " mode; no host is allowed, every connection will be refused"
	}
	s := mode + " mode; allowed hosts: " + strings.Join(n.Allow, ", ")
	if len(n.Deny) > 0 {
		s += "; denied: " + strings.Join(n.Deny, ", ")
	}
	if len(n.AllowPrivate) > 0 {
		s += "; private ranges allowed: " + strings.Join(n.AllowPrivate, ", ")
	}
	return s
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	if l, ok := w.(*confine.LineWriter); ok {
		w = l.W
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// ApplyTo puts the run's sockets, ports, mounts and environment into the launch. The proxy
// variables come first so a --env or policy env_set of the same name wins.
func (nr *Net) ApplyTo(o *Options, layout *confine.Layout) {
	if nr == nil {
		return
	}
	layout.Extra = append(layout.Extra, nr.mounts...)
	o.Env = append(slices.Clone(nr.env), o.Env...)
}

// Sockets are the sockets the sandbox's init opens for the run.
func (nr *Net) Sockets() []confine.Socket {
	if nr == nil {
		return nil
	}
	return nr.sockets
}

// Serve starts one goroutine per server on the sockets the sandbox handed over (in the order
// of nr.sockets) and returns the function that stops them: it cancels their context and waits
// until every one has returned. Call it once the sandbox has exited.
func (nr *Net) Serve(files []*os.File, stderr io.Writer) (stop func()) {
	if nr == nil {
		closeFiles(files)
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer closeFiles(files) // net.FileListener and FilePacketConn keep duplicates
	if len(files) != len(nr.sockets) {
		fmt.Fprintf(stderr, "jail: network: the sandbox handed over %d sockets, want %d: the command has no network\n", len(files), len(nr.sockets))
		return cancel
	}
	var lns []net.Listener
	var dns net.PacketConn
	for i, f := range files {
		var err error
		if nr.sockets[i].Network == "udp" {
			dns, err = net.FilePacketConn(f)
		} else {
			var ln net.Listener
			ln, err = net.FileListener(f)
			lns = append(lns, ln)
		}
		if err != nil {
			fmt.Fprintf(stderr, "jail: network: socket %s: %v: the command has no network\n", nr.sockets[i].Addr, err)
			for _, ln := range lns {
				if ln != nil {
					ln.Close()
				}
			}
			if dns != nil {
				dns.Close()
			}
			return cancel
		}
	}
	// Each goroutine lives until ctx is cancelled (the sandbox has exited) and all the
	// connections it accepted have ended; stop waits for it.
	run := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && ctx.Err() == nil {
				termtext.Fprintf(stderr, "jail: network: %s: %v\n", name, err)
			}
		}()
	}
	run("http proxy", func() error { return nr.proxy.ServeHTTP(ctx, lns[0]) })
	run("socks5 proxy", func() error { return nr.proxy.ServeSOCKS5(ctx, lns[1]) })
	if nr.trans != nil {
		run("transparent", func() error { return nr.trans.Serve(ctx, lns[2:]) })
		run("dns", func() error { return nr.trans.ServeDNS(ctx, dns) })
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// askOnTerminal returns the proxy's approval callback for [network] ask: the question goes to
// a person on jail's controlling terminal, one at a time, and times out to a refusal. Without
// a terminal every such host is refused, and jail says so once. In an interactive run the
// question pauses the pty relay (Net.Terminal): the command's output is held and its keys cut
// off while it is open. Otherwise, while a command owns the terminal (its process group is in
// the foreground) or writes to it, the host is refused with that reason.
func (nr *Net) askOnTerminal(timeout time.Duration, stderr io.Writer) func(context.Context, string, int) (bool, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(stderr, "jail: network.ask: no terminal to ask on; hosts outside the allowlist are refused")
		return nil
	}
	nr.tty = tty
	asker := &policy.TerminalAsker{In: tty, Out: tty}
	var mu sync.Mutex
	return func(ctx context.Context, host string, port int) (bool, error) {
		mu.Lock() // one question on the terminal at a time
		defer mu.Unlock()
		if t := nr.Terminal; t != nil {
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			in, out := t.Pause()
			defer t.Resume()
			defer in.Close()
			if out == nil {
				return false, errors.New("the command has ended")
			}
			a, err := (&policy.TerminalAsker{In: in, Out: out}).Ask(ctx, policy.Question{Tool: "network", Risk: policy.Exec,
				Args: map[string]any{"host": host, "port": port}, Reason: "a connection to a host outside [network] allow"})
			if err != nil {
				return false, err
			}
			return a.Approve, nil
		}
		if fg, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP); err != nil || fg != unix.Getpgrp() {
			return false, errors.New("the command owns the terminal, so no one can be asked")
		}
		if nr.CommandOnTTY {
			return false, errors.New("the command writes to the terminal, where it could imitate jail's question, so no one is asked (use --capture, or add the host to [network] allow)")
		}
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		a, err := asker.Ask(ctx, policy.Question{Tool: "network", Risk: policy.Exec,
			Args: map[string]any{"host": host, "port": port}, Reason: "a connection to a host outside [network] allow"})
		if err != nil {
			return false, err
		}
		return a.Approve, nil
	}
}

// Close releases what PrepareNet made: the terminal, the audit file and
// resolv.conf's directory.
func (nr *Net) Close() {
	if nr == nil {
		return
	}
	if nr.tty != nil {
		nr.tty.Close()
	}
	if nr.audit != nil {
		nr.audit.close()
	}
	if nr.tmpDir != "" {
		os.RemoveAll(nr.tmpDir)
	}
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// netRecord is a `network` record of the audit log: the same JSON-lines file as the policy's
// tool-call records (policy.AuditRecord), told apart by "type". One record per decision; an
// allowed connection gives a second record when it closes, with closed, bytes and duration.
type netRecord struct {
	Time       time.Time `json:"time"`
	Type       string    `json:"type"`  // always "network"
	Proto      string    `json:"proto"` // http, connect, socks5, transparent, dns
	Host       string    `json:"host"`
	Port       int       `json:"port,omitempty"`
	Addr       string    `json:"addr,omitempty"` // the checked address connected to, or the refused one
	Decision   string    `json:"decision"`       // allowed or denied
	Reason     string    `json:"reason"`
	Closed     bool      `json:"closed,omitempty"`
	BytesIn    int64     `json:"bytes_in,omitempty"`  // to the sandbox
	BytesOut   int64     `json:"bytes_out,omitempty"` // from the sandbox
	DurationMS int64     `json:"duration_ms,omitempty"`
	PolicyHash string    `json:"policy_hash"`
}

// netAudit appends network records to the policy's audit log (policy.AuditLog:
// O_APPEND, one write per record, 0600, outside every sandbox).
type netAudit struct {
	mu         sync.Mutex
	log        *policy.AuditLog
	policyHash string
	stderr     io.Writer
	failed     bool
}

func openNetAudit(path string, fsync bool, policyHash string, stderr io.Writer) (*netAudit, error) {
	log, err := policy.OpenAuditLog(path, fsync)
	if err != nil {
		return nil, err
	}
	return &netAudit{log: log, policyHash: policyHash, stderr: stderr}, nil
}

// write is netns.Config.Audit: called from connection goroutines, concurrently.
func (a *netAudit) write(ev netns.Event) {
	r := netRecord{Time: ev.Time.UTC(), Type: "network", Proto: ev.Proto, Host: ev.Host, Port: ev.Port,
		Decision: string(ev.Decision), Reason: ev.Reason, Closed: ev.Closed, BytesIn: ev.BytesIn,
		BytesOut: ev.BytesOut, DurationMS: ev.Duration.Milliseconds(), PolicyHash: a.policyHash}
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	if ev.Addr.IsValid() {
		r.Addr = ev.Addr.String()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failed {
		return
	}
	if err := a.log.Append(r); err != nil {
		// Reported once; the connection itself was already decided by the rules.
		a.failed = true
		fmt.Fprintf(a.stderr, "jail: audit: write network record: %v\n", err)
	}
}

func (a *netAudit) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.log.Close()
}
