package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Transparent is transparent mode: a DNS stub inside the sandbox answers each allowed name
// with a loopback address of its own, and jail listens on that address for every allowed port.
// A connection there is forwarded, after the usual checks, to the real address of the name the
// loopback address stands for. Programs need no proxy support; names the rules do not allow
// get NXDOMAIN, and no other route exists.
//
// Addresses come from a fixed pool that is handed out in the order names are first asked
// for, so the listeners can all be opened before the command starts (by Listen, or by the
// child itself). A name keeps its address for the Transparent's life; when the pool is used
// up, further new names are answered REFUSED.
type Transparent struct {
	p     *Proxy
	pool  []netip.Addr
	ports []int

	mu     sync.Mutex
	byName map[string]netip.Addr
	byAddr map[netip.Addr]string
}

// DNSTTL is the time-to-live of the stub's answers. Short, so a program that caches does not
// outlive a changed policy by much; the mapping itself never changes.
const DNSTTL = 60

// NewTransparent returns transparent mode for p with a pool of n names (0: 64).
func (p *Proxy) NewTransparent(n int) *Transparent {
	if n <= 0 {
		n = 64
	}
	t := &Transparent{
		p:      p,
		ports:  p.cfg.Rules.allPorts(),
		byName: map[string]netip.Addr{},
		byAddr: map[netip.Addr]string{},
	}
	// The pool starts at 127.77.0.1. 127.0.0.0/8 is all local on Linux once lo is up, so no
	// address has to be added to lo; the pool keeps clear of 127.0.0.1 (the proxies, the DNS
	// stub, the command's own servers) and 127.0.0.53 (systemd-resolved's habit).
	a := netip.AddrFrom4([4]byte{127, 77, 0, 1})
	for range n {
		t.pool = append(t.pool, a)
		a = a.Next()
		if b := a.As4(); b[3] == 0 || b[3] == 255 {
			a = a.Next() // skip .0 and .255, which some programs treat as special
		}
	}
	return t
}

// Addrs lists every address and port the caller must open a TCP listener on inside the
// sandbox and pass to Serve: each pool address times each port the allowlist opens.
func (t *Transparent) Addrs() []netip.AddrPort {
	var out []netip.AddrPort
	for _, a := range t.pool {
		for _, port := range t.ports {
			out = append(out, netip.AddrPortFrom(a, uint16(port)))
		}
	}
	return out
}

// Serve forwards connections accepted on lns (opened on Addrs) until ctx is done. It owns the
// listeners and returns after all of them are closed and every connection has ended.
func (t *Transparent) Serve(ctx context.Context, lns []net.Listener) error {
	var wg sync.WaitGroup
	errs := make([]error, len(lns))
	for i, ln := range lns {
		t.p.addSelf(ln.Addr())
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = t.p.serve(ctx, ln, "transparent", t.handle)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (t *Transparent) handle(ctx context.Context, c net.Conn) {
	local, err := netip.ParseAddrPort(c.LocalAddr().String())
	if err != nil {
		return
	}
	t.mu.Lock()
	name, ok := t.byAddr[local.Addr().Unmap()]
	t.mu.Unlock()
	if !ok {
		t.p.deny("transparent", local.Addr().String(), int(local.Port()), local, CauseUnmapped, "no name is mapped to this address")
		return
	}
	up, err := t.p.connect(ctx, "transparent", name, int(local.Port()))
	if err != nil {
		return // refused or failed: the client sees the connection close
	}
	defer up.Close()
	t.p.pipe(ctx, c, up)
}

// allowedName reports whether the rules allow host on at least one port.
func (t *Transparent) allowedName(host string) bool {
	for _, port := range t.p.cfg.Rules.Ports(host) {
		if v, _ := t.p.cfg.Rules.match(host, port); v == verdictAllow {
			return true
		}
	}
	return false
}

// mapName returns the pool address for host, assigning the next free one.
func (t *Transparent) mapName(host string) (netip.Addr, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a, ok := t.byName[host]; ok {
		return a, true
	}
	if len(t.byName) >= len(t.pool) {
		return netip.Addr{}, false
	}
	a := t.pool[len(t.byName)]
	t.byName[host] = a
	t.byAddr[a] = host
	return a, true
}

// ServeDNS answers DNS queries on pc (UDP port 53 inside the sandbox) until ctx is done: A
// queries for allowed names get their pool address, other query types for allowed names get
// an empty answer (so resolvers fall back to A), and every other name gets NXDOMAIN. It owns pc
// and closes it. Queries are answered one at a time on this goroutine; each is a map lookup.
func (t *Transparent) ServeDNS(ctx context.Context, pc net.PacketConn) error {
	stop := context.AfterFunc(ctx, func() { pc.Close() })
	defer stop()
	defer pc.Close()
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("netns: dns: read: %w", err)
		}
		resp, ok := t.answer(buf[:n])
		if !ok {
			continue // not a query we can even answer with an error: drop it
		}
		pc.SetWriteDeadline(time.Now().Add(time.Second))
		pc.WriteTo(resp, from)
	}
}

// answer builds the response to one query packet.
func (t *Transparent) answer(pkt []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(pkt)
	if err != nil || h.Response {
		return nil, false
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, Authoritative: true,
		RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	q, err := p.Question()
	if err != nil || h.OpCode != 0 {
		rh.RCode = dnsmessage.RCodeFormatError
		if h.OpCode != 0 {
			rh.RCode = dnsmessage.RCodeNotImplemented
		}
		return buildDNS(rh, nil, nil)
	}
	name := strings.TrimSuffix(q.Name.String(), ".")
	host, nerr := normalizeHost(name)
	allowed := nerr == nil && q.Class == dnsmessage.ClassINET && t.allowedName(host)
	if _, err := netip.ParseAddr(host); err == nil {
		allowed = false // an address literal is not a name the stub hands out
	}
	if !allowed {
		if q.Type == dnsmessage.TypeA || q.Type == dnsmessage.TypeAAAA {
			t.p.audit(Event{Proto: "dns", Host: sanitizeReason(name), Decision: Denied, Cause: CauseNotAllowed, Reason: "name not allowed: NXDOMAIN"})
		}
		rh.RCode = dnsmessage.RCodeNameError
		return buildDNS(rh, &q, nil)
	}
	if q.Type != dnsmessage.TypeA {
		return buildDNS(rh, &q, nil) // NODATA: the name exists, but only as IPv4
	}
	a, ok := t.mapName(host)
	if !ok {
		t.p.audit(Event{Proto: "dns", Host: host, Decision: Denied, Reason: "transparent address pool exhausted: REFUSED"})
		rh.RCode = dnsmessage.RCodeRefused
		return buildDNS(rh, &q, nil)
	}
	t.p.audit(Event{Proto: "dns", Host: host, Addr: netip.AddrPortFrom(a, 0), Decision: Allowed, Reason: "mapped to " + a.String()})
	return buildDNS(rh, &q, &dnsmessage.AResource{A: a.As4()})
}

func buildDNS(h dnsmessage.Header, q *dnsmessage.Question, a *dnsmessage.AResource) ([]byte, bool) {
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), h)
	b.EnableCompression()
	if q != nil {
		if b.StartQuestions() != nil || b.Question(*q) != nil {
			return nil, false
		}
	}
	if a != nil {
		if b.StartAnswers() != nil {
			return nil, false
		}
		rh := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: DNSTTL}
		if b.AResource(rh, *a) != nil {
			return nil, false
		}
	}
	msg, err := b.Finish()
	return msg, err == nil
}
