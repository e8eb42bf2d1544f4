package netns

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Config configures a Proxy. Only Rules is required.
type Config struct {
	// Rules decide names, ports and addresses. Required.
	Rules *Rules
	// Resolver looks names up. Nil: the system resolver.
	Resolver *Resolver
	// Audit receives every decision. It is called from connection goroutines, possibly
	// concurrently, and must not block for long. Nil: decisions are not reported.
	Audit func(Event)
	// Approve is asked about a host:port that no rule allows or denies. Nil: such hosts are
	// denied. Its answer is remembered for the life of the Proxy. Approval never bypasses the
	// address checks.
	Approve func(ctx context.Context, host string, port int) (bool, error)
	// Logger receives operational errors (accept failures). Nil: discarded.
	Logger *slog.Logger
	// MaxConns bounds concurrent client connections over all listeners. 0: 256.
	MaxConns int
	// MaxBytes bounds the bytes, both directions together, one connection may carry. 0: no
	// limit.
	MaxBytes int64
	// IdleTimeout closes a connection on which nothing moved in either direction for this
	// long. 0: 5 minutes.
	IdleTimeout time.Duration
	// DialTimeout bounds each connection attempt to a checked address. 0: 30 seconds.
	DialTimeout time.Duration
}

// Decision is the outcome recorded in an Event.
type Decision string

// Decisions.
const (
	Allowed Decision = "allowed"
	Denied  Decision = "denied"
)

// Event is one audit record. An allowed connection produces two: one when it is opened
// (Closed false) and one when it closes (Closed true) with the byte counts.
type Event struct {
	Time  time.Time
	Proto string // "http", "connect", "socks5", "transparent" or "dns"
	Host  string // as asked for, normalized when it was valid
	Port  int
	// Addr is the checked address connected to (or, when an address was refused, the
	// refused address); zero when no address was involved.
	Addr     netip.AddrPort
	Decision Decision
	Reason   string
	// Cause classifies a refusal, so a caller can name the setting that would allow it
	// (Explain); zero for allowed connections and protocol errors.
	Cause    Cause
	Closed   bool
	BytesIn  int64 // from the remote host to the sandbox
	BytesOut int64 // from the sandbox to the remote host
	Duration time.Duration
}

// Proxy makes every connection the sandbox asks for, after checking it. One Proxy serves any
// number of listeners; each Serve method returns when its ctx is done and all the connections
// it accepted have finished.
type Proxy struct {
	cfg       Config
	resolver  *Resolver
	log       *slog.Logger
	slots     chan struct{}
	transport *http.Transport
	bufs      sync.Pool

	mu        sync.Mutex
	approvals map[string]bool
	self      []netip.AddrPort
}

// copyBufSize is large so a bulk transfer costs few syscalls per megabyte.
const copyBufSize = 256 << 10

// New returns a Proxy for cfg.
func New(cfg Config) (*Proxy, error) {
	if cfg.Rules == nil {
		return nil, errors.New("netns: proxy: no rules")
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 256
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 5 * time.Minute
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 30 * time.Second
	}
	p := &Proxy{
		cfg:       cfg,
		resolver:  cfg.Resolver,
		log:       cfg.Logger,
		slots:     make(chan struct{}, cfg.MaxConns),
		approvals: map[string]bool{},
	}
	if p.resolver == nil {
		p.resolver, _ = NewResolver("")
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.bufs.New = func() any { b := make([]byte, copyBufSize); return &b }
	p.transport = &http.Transport{
		Proxy: nil, // never chain to another proxy from the environment
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, port, err := splitHostPort(addr)
			if err != nil {
				return nil, err
			}
			return p.connect(ctx, "http", host, port)
		},
		DisableCompression:    true, // pass Accept-Encoding through untouched
		ForceAttemptHTTP2:     false,
		TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{},
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       cfg.IdleTimeout,
		ResponseHeaderTimeout: cfg.IdleTimeout,
		ReadBufferSize:        copyBufSize,
		WriteBufferSize:       copyBufSize,
	}
	return p, nil
}

func (p *Proxy) audit(ev Event) {
	if p.cfg.Audit == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	p.cfg.Audit(ev)
}

// deny records a refusal and returns it as an error.
func (p *Proxy) deny(proto, host string, port int, addr netip.AddrPort, cause Cause, reason string) error {
	p.audit(Event{Proto: proto, Host: host, Port: port, Addr: addr, Decision: Denied, Cause: cause, Reason: reason})
	return &DenyError{Host: host, Port: port, Reason: reason}
}

// authorize checks a name and port against the rules and, for a host no rule covers, the
// approval gate. It returns the normalized host.
func (p *Proxy) authorize(ctx context.Context, proto, rawHost string, port int) (string, error) {
	host, err := normalizeHost(rawHost)
	if err != nil {
		return "", p.deny(proto, strconv.QuoteToASCII(rawHost), port, netip.AddrPort{}, CauseProtocol, "invalid host name")
	}
	if port < 1 || port > 65535 {
		return "", p.deny(proto, host, port, netip.AddrPort{}, CauseProtocol, "invalid port")
	}
	v, reason := p.cfg.Rules.match(host, port)
	cause := CauseNotAllowed
	switch {
	case v == verdictAllow:
		return host, nil
	case v == verdictDeny:
		return "", p.deny(proto, host, port, netip.AddrPort{}, CauseDenyRule, reason)
	case reason != reasonNotInAllow:
		cause = CausePort
	}
	if p.cfg.Approve == nil {
		return "", p.deny(proto, host, port, netip.AddrPort{}, cause, reason)
	}
	key := net.JoinHostPort(host, strconv.Itoa(port))
	p.mu.Lock()
	ok, seen := p.approvals[key]
	p.mu.Unlock()
	if !seen {
		var aerr error
		ok, aerr = p.cfg.Approve(ctx, host, port)
		if aerr != nil {
			return "", p.deny(proto, host, port, netip.AddrPort{}, cause, "approval failed: "+aerr.Error())
		}
		p.mu.Lock()
		p.approvals[key] = ok
		p.mu.Unlock()
	}
	if !ok {
		return "", p.deny(proto, host, port, netip.AddrPort{}, cause, reason+"; approval refused")
	}
	return host, nil
}

// isSelf reports whether ap is one of the proxy's own listeners, so a CONNECT to it (a nested
// or relayed proxy request that could launder a denied target) is refused.
func (p *Proxy) isSelf(ap netip.AddrPort) bool {
	a := ap.Addr().Unmap()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.self {
		if s.Port() != ap.Port() {
			continue
		}
		// A listener on the unspecified address answers on every local address; one on a
		// specific address only there.
		sa := s.Addr().Unmap()
		if sa == a || sa.IsUnspecified() && (a.IsLoopback() || a.IsUnspecified()) {
			return true
		}
	}
	return false
}

func (p *Proxy) addSelf(addr net.Addr) {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return
	}
	p.mu.Lock()
	p.self = append(p.self, ap)
	p.mu.Unlock()
}

// Dial is the proxy's whole check for a connection made on the supervisor's own behalf (the
// browser's requests, fetched outside its container): the rules, the approval gate, jail's own
// lookup and the address checks, then a dial of exactly the checked address, audited with proto
// as the Event's Proto. A refusal is a *DenyError. The connection reports its byte counts when
// closed.
func (p *Proxy) Dial(ctx context.Context, proto, host string, port int) (net.Conn, error) {
	c, err := p.connect(ctx, proto, host, port)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// connect authorizes host:port, resolves host once, checks every address and dials one of
// them. The returned connection reports its byte counts to the audit callback when closed.
func (p *Proxy) connect(ctx context.Context, proto, rawHost string, port int) (*trackedConn, error) {
	host, err := p.authorize(ctx, proto, rawHost, port)
	if err != nil {
		return nil, err
	}
	addrs, err := p.resolver.Lookup(ctx, host)
	if err != nil || len(addrs) == 0 {
		reason := "name did not resolve"
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && !dnsErr.IsNotFound {
			reason = "lookup failed"
		}
		return nil, p.deny(proto, host, port, netip.AddrPort{}, CauseResolve, reason)
	}
	// Every address must pass: a name that mixes a public and a private address is an attack
	// or a misconfiguration either way.
	targets := make([]netip.AddrPort, 0, len(addrs))
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a.Unmap(), uint16(port))
		if p.isSelf(ap) {
			return nil, p.deny(proto, host, port, ap, CauseProtocol, "target is the proxy itself (nested proxy request)")
		}
		if r := p.cfg.Rules.addrReason(a); r != "" {
			return nil, p.deny(proto, host, port, ap, CauseAddress, "resolves to "+a.String()+": "+r)
		}
		targets = append(targets, ap)
	}
	var lastErr error
	for _, ap := range targets {
		c, err := p.dial(ctx, ap)
		if err != nil {
			lastErr = err
			continue
		}
		ev := Event{Proto: proto, Host: host, Port: port, Addr: ap, Decision: Allowed, Reason: "allowed"}
		if v, r := p.cfg.Rules.match(host, port); v == verdictAllow {
			ev.Reason = r
		} else {
			ev.Reason = "approved"
		}
		p.audit(ev)
		return &trackedConn{Conn: c, p: p, ev: ev, start: time.Now(), limit: p.cfg.MaxBytes}, nil
	}
	p.audit(Event{Proto: proto, Host: host, Port: port, Addr: targets[0], Decision: Denied, Cause: CauseDial,
		Reason: "connect failed: " + errReason(lastErr)})
	return nil, &dialError{host: host, err: lastErr}
}

// dial connects to exactly ap. The Control hook re-checks the address the kernel is asked to
// connect to, so no code path can slip a name or another address in.
func (p *Proxy) dial(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
	want := ap.String()
	d := net.Dialer{
		Timeout: p.cfg.DialTimeout,
		Control: func(_, address string, _ syscall.RawConn) error {
			if address != want {
				return fmt.Errorf("netns: dial %s: address changed to %s", want, address)
			}
			return nil
		},
	}
	return d.DialContext(ctx, "tcp", want)
}

// dialError is an allowed connection that could not be made.
type dialError struct {
	host string
	err  error
}

func (e *dialError) Error() string { return "netns: connect " + e.host + ": " + e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

func errReason(err error) string {
	switch {
	case err == nil:
		return "unknown error"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "unreachable"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT):
		return "timed out"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timed out"
	}
	return "error"
}

// trackedConn is an upstream connection that counts bytes, enforces the byte limit and reports
// the close event once.
type trackedConn struct {
	net.Conn
	p         *Proxy
	ev        Event
	start     time.Time
	limit     int64
	in, out   atomic.Int64
	closeOnce sync.Once
	reason    atomic.Pointer[string]
}

func (c *trackedConn) over() bool {
	return c.limit > 0 && c.in.Load()+c.out.Load() > c.limit
}

func (c *trackedConn) Read(b []byte) (int, error) {
	if c.over() {
		c.setReason("byte limit reached")
		return 0, ErrByteLimit
	}
	n, err := c.Conn.Read(b)
	c.in.Add(int64(n))
	return n, err
}

func (c *trackedConn) Write(b []byte) (int, error) {
	if c.over() {
		c.setReason("byte limit reached")
		return 0, ErrByteLimit
	}
	n, err := c.Conn.Write(b)
	c.out.Add(int64(n))
	return n, err
}

func (c *trackedConn) setReason(r string) { c.reason.CompareAndSwap(nil, &r) }

// CloseWrite half-closes the upstream side so a tunnel can pass EOF on.
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() {
		ev := c.ev
		ev.Time = time.Now()
		ev.Closed = true
		ev.BytesIn, ev.BytesOut = c.in.Load(), c.out.Load()
		ev.Duration = time.Since(c.start)
		if r := c.reason.Load(); r != nil {
			ev.Reason = *r
		} else {
			ev.Reason = "closed"
		}
		c.p.audit(ev)
	})
	return err
}

func splitHostPort(hp string) (string, int, error) {
	h, ps, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, fmt.Errorf("netns: %q: %w", hp, err)
	}
	port, err := parsePort(ps)
	if err != nil {
		return "", 0, fmt.Errorf("netns: %q: %w", hp, err)
	}
	return h, port, nil
}
