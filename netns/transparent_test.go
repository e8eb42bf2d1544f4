package netns

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// stubResolver asks only the DNS stub at addr, the way a sandboxed program whose resolv.conf
// names the stub would.
func stubResolver(addr string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

func TestTransparent(t *testing.T) {
	e := newLoopbackEnv(t, nil)
	tr := e.proxy.NewTransparent(4)
	addrs := tr.Addrs()
	if len(addrs) != 8 { // 4 pool addresses x {origin port, TLS port}
		t.Fatalf("Addrs = %v", addrs)
	}
	var lns []net.Listener
	for _, ap := range addrs {
		ln, err := net.Listen("tcp", ap.String())
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); checkServe(t, tr.Serve(ctx, lns)) }()
	go func() { defer wg.Done(); checkServe(t, tr.ServeDNS(ctx, pc)) }()
	defer func() { cancel(); wg.Wait() }()

	r := stubResolver(pc.LocalAddr().String())
	got, err := r.LookupNetIP(ctx, "ip", "web.jail.test.")
	if err != nil || len(got) != 1 || got[0] != netip.MustParseAddr("127.77.0.1") {
		t.Fatalf("web.jail.test = %v, %v", got, err)
	}
	got, err = r.LookupNetIP(ctx, "ip4", "A.Wild.Jail.Test.")
	if err != nil || len(got) != 1 || got[0] != netip.MustParseAddr("127.77.0.2") {
		t.Fatalf("a.wild.jail.test = %v, %v", got, err)
	}
	// Asking again gives the same address.
	if got, err = r.LookupNetIP(ctx, "ip4", "web.jail.test."); err != nil || got[0] != netip.MustParseAddr("127.77.0.1") {
		t.Fatalf("second lookup = %v, %v", got, err)
	}
	for _, name := range []string{"other.jail.test.", "denied.jail.test.", "wild.jail.test.", "localhost."} {
		_, err := r.LookupNetIP(ctx, "ip", name)
		var de *net.DNSError
		if !errors.As(err, &de) || !de.IsNotFound {
			t.Errorf("%s: %v, want NXDOMAIN", name, err)
		}
	}

	// Any TCP client works: raw bytes to the mapped address reach the origin.
	c, err := net.DialTimeout("tcp", netip.AddrPortFrom(netip.MustParseAddr("127.77.0.1"), uint16(e.originPort)).String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /hello HTTP/1.1\r\nHost: web.jail.test\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	c.Close()
	if resp.StatusCode != 200 || string(body) != "hello from /hello host=web.jail.test" {
		t.Fatalf("through transparent: %d %q", resp.StatusCode, body)
	}
	// A pool address no name was handed out for goes nowhere.
	c, err = net.Dial("tcp", netip.AddrPortFrom(netip.MustParseAddr("127.77.0.3"), uint16(e.originPort)).String())
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("unmapped address: %d %v", n, err)
	}
	c.Close()

	waitEvent(t, e.audit, func(ev Event) bool {
		return ev.Proto == "transparent" && ev.Closed && ev.Host == "web.jail.test" && ev.BytesIn > 0 && ev.BytesOut > 0
	})
	waitEvent(t, e.audit, func(ev Event) bool { return ev.Proto == "dns" && ev.Host == "other.jail.test" && ev.Decision == Denied })
	waitEvent(t, e.audit, func(ev Event) bool {
		return ev.Proto == "transparent" && ev.Reason == "no name is mapped to this address"
	})
}

func TestDNSStubAnswers(t *testing.T) {
	r, err := NewRules(RulesConfig{Allow: []string{"a.example.org", "b.example.org", "c.example.org:22"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Rules: r})
	if err != nil {
		t.Fatal(err)
	}
	tr := p.NewTransparent(2)
	ask := func(name string, typ dnsmessage.Type) dnsmessage.Message {
		t.Helper()
		q := dnsmessage.Message{
			Header:    dnsmessage.Header{ID: 7, RecursionDesired: true},
			Questions: []dnsmessage.Question{{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}},
		}
		pkt, err := q.Pack()
		if err != nil {
			t.Fatal(err)
		}
		out, ok := tr.answer(pkt)
		if !ok {
			t.Fatalf("%s: no answer", name)
		}
		var m dnsmessage.Message
		if err := m.Unpack(out); err != nil {
			t.Fatal(err)
		}
		if m.ID != 7 || !m.Response {
			t.Fatalf("%s: header %+v", name, m.Header)
		}
		return m
	}
	if m := ask("a.example.org.", dnsmessage.TypeAAAA); m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 0 {
		t.Errorf("AAAA for an allowed name: %v %d answers, want NODATA", m.RCode, len(m.Answers))
	}
	if m := ask("a.example.org.", dnsmessage.TypeA); len(m.Answers) != 1 || m.Answers[0].Header.TTL != DNSTTL {
		t.Errorf("A: %+v", m.Answers)
	}
	if m := ask("c.example.org.", dnsmessage.TypeA); len(m.Answers) != 1 {
		t.Errorf("c: %+v", m)
	}
	// The pool holds two names.
	if m := ask("b.example.org.", dnsmessage.TypeA); m.RCode != dnsmessage.RCodeRefused {
		t.Errorf("pool exhausted: %v", m.RCode)
	}
	if m := ask("x.example.org.", dnsmessage.TypeA); m.RCode != dnsmessage.RCodeNameError {
		t.Errorf("not allowed: %v", m.RCode)
	}
	if got := tr.Addrs(); len(got) != 2*3 || got[0].Port() != 22 {
		t.Errorf("Addrs = %v, want 2 addresses x ports 22 80 443", got)
	}
}
