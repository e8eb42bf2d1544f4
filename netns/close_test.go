package netns

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
)

// TestCloseEventCountsWhenServeStops: when the supervisor stops serving (the sandbox has
// exited) while a tunnel is open, the tunnel's close event still carries every byte that went
// through it. jail run cancels the serve context as soon as the sandbox is gone, so this is
// the ordinary end of a tunnel there, not a corner case.
func TestCloseEventCountsWhenServeStops(t *testing.T) {
	const n = 64 << 10 // less than one splice round
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var upWG sync.WaitGroup
	t.Cleanup(func() { up.Close(); upWG.Wait() })
	upWG.Add(1)
	go func() { // until the one connection is closed by the proxy
		defer upWG.Done()
		c, err := up.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write(make([]byte, n))
		io.Copy(io.Discard, c) // hold the connection open until the proxy closes it
	}()
	upPort := portOf(t, up.Addr())

	dns, dnsAddr := testutil.StartDNS(t)
	dns.Static("up.jail.test", netip.MustParseAddr("127.0.0.1"))
	rules, err := NewRules(RulesConfig{Allow: []string{fmt.Sprintf("up.jail.test:%d", upPort)}, AllowPrivate: []string{"127.0.0.1/32"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := NewResolver(dnsAddr)
	if err != nil {
		t.Fatal(err)
	}
	audit := &auditLog{}
	p, err := New(Config{Rules: rules, Resolver: res, Audit: audit.add})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- p.ServeHTTP(ctx, ln) }() // until cancel below
	t.Cleanup(cancel)

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT up.jail.test:%d HTTP/1.1\r\nHost: up.jail.test:%d\r\n\r\n", upPort, upPort)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	if _, err := io.ReadFull(br, make([]byte, n)); err != nil {
		t.Fatalf("read through the tunnel: %v", err)
	}

	cancel() // the client is still connected
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeHTTP did not return after its context was cancelled")
	}
	evs := audit.find(func(ev Event) bool { return ev.Proto == "connect" && ev.Closed })
	if len(evs) != 1 || evs[0].BytesIn != n {
		t.Fatalf("close events %+v, want one with bytes_in %d", evs, n)
	}
}
