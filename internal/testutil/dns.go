package testutil

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// DNS is a DNS server for test names. It answers A and AAAA queries for
// the names it was given (with the answer's IPv4 or IPv6 addresses, TTL
// 0), other types with an empty answer, and other names with NXDOMAIN. An
// answer function gets the number of earlier A queries for the name, so a
// test can change the answer between lookups (DNS rebinding).
type DNS struct {
	mu      sync.Mutex
	answers map[string]func(n int) []netip.Addr
	counts  map[string]int
}

// NewDNS is a server with no names; give it a socket with Serve.
func NewDNS() *DNS {
	return &DNS{answers: map[string]func(int) []netip.Addr{}, counts: map[string]int{}}
}

// StartDNS serves a new DNS on a UDP port of 127.0.0.1 until the test
// ends, and returns it with its address.
func StartDNS(t testing.TB) (*DNS, string) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := NewDNS()
	done := make(chan struct{})
	go func() {
		// Lifetime: until pc is closed by the cleanup below.
		defer close(done)
		d.Serve(pc)
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return d, pc.LocalAddr().String()
}

// Set makes f answer for name (lower case, without the trailing dot) and
// restarts its query count.
func (d *DNS) Set(name string, f func(n int) []netip.Addr) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.answers[name] = f
	d.counts[name] = 0
}

// Static makes name answer addrs, always.
func (d *DNS) Static(name string, addrs ...netip.Addr) {
	d.Set(name, func(int) []netip.Addr { return addrs })
}

// Queries is how many A queries name has had since it was set.
func (d *DNS) Queries(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counts[name]
}

// Serve answers the queries that arrive on pc until it is closed.
func (d *DNS) Serve(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp := d.Reply(buf[:n]); resp != nil {
			pc.WriteTo(resp, from)
		}
	}
}

// Reply is the answer to one query packet, or nil for a packet that is
// not a query.
func (d *DNS) Reply(pkt []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(pkt)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	name := strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
	d.mu.Lock()
	f, known := d.answers[name]
	n := d.counts[name]
	if q.Type == dnsmessage.TypeA {
		d.counts[name]++
	}
	d.mu.Unlock()
	var addrs []netip.Addr
	if known && (q.Type == dnsmessage.TypeA || q.Type == dnsmessage.TypeAAAA) {
		addrs = f(n)
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.StartQuestions()
	b.Question(q)
	b.StartAnswers()
	for _, a := range addrs {
		hdr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET}
		switch {
		case a.Is4() && q.Type == dnsmessage.TypeA:
			hdr.Type = dnsmessage.TypeA
			b.AResource(hdr, dnsmessage.AResource{A: a.As4()})
		case a.Is6() && q.Type == dnsmessage.TypeAAAA:
			hdr.Type = dnsmessage.TypeAAAA
			b.AAAAResource(hdr, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
	}
	msg, err := b.Finish()
	if err != nil {
		return nil
	}
	return msg
}
