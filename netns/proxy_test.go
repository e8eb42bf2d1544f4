package netns

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
	"golang.org/x/net/proxy"
)

func loopbackRules(op, tp int) RulesConfig {
	return RulesConfig{
		Allow: []string{
			"web.jail.test:" + strconv.Itoa(op),
			"secure.jail.test:" + strconv.Itoa(tp),
			"*.wild.jail.test:" + strconv.Itoa(op),
			"denied.jail.test:" + strconv.Itoa(op),
			"mixed.jail.test:" + strconv.Itoa(op),
		},
		Deny:         []string{"denied.jail.test"},
		AllowPrivate: []string{"127.0.0.0/8"},
	}
}

func newLoopbackEnv(t testing.TB, tweak func(*Config)) *testEnv {
	e := newTestEnv(t, loopbackRules, tweak)
	e.dns.Static("web.jail.test", netip.MustParseAddr("127.0.0.1"))
	e.dns.Static("secure.jail.test", netip.MustParseAddr("127.0.0.1"))
	e.dns.Static("a.wild.jail.test", netip.MustParseAddr("127.0.0.1"))
	e.dns.Static("denied.jail.test", netip.MustParseAddr("127.0.0.1"))
	e.dns.Static("other.jail.test", netip.MustParseAddr("127.0.0.1"))
	// One loopback and one private answer: never dialed, since every address must pass.
	e.dns.Static("mixed.jail.test", netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.0.0.1"))
	return e
}

func (e *testEnv) url(host string, port int, path string) string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + path
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", u, err)
	}
	return resp, string(b)
}

func TestHTTPProxyAllowed(t *testing.T) {
	e := newLoopbackEnv(t, nil)
	c := e.httpClient()
	resp, body := get(t, c, e.url("web.jail.test", e.originPort, "/hello"))
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "hello from /hello host=web.jail.test:") {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	resp, body = get(t, c, e.url("a.wild.jail.test", e.originPort, "/hello"))
	if resp.StatusCode != 200 {
		t.Fatalf("wildcard: %d %q", resp.StatusCode, body)
	}
	// A streamed upload comes back whole.
	payload := bytes.Repeat([]byte("0123456789"), 100_000)
	resp, err := c.Post(e.url("web.jail.test", e.originPort, "/echo"), "application/octet-stream", bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(got, payload) {
		t.Fatalf("echo returned %d bytes, want %d", len(got), len(payload))
	}
}

func TestHTTPSConnectAllowed(t *testing.T) {
	e := newLoopbackEnv(t, nil)
	c := e.httpClient()
	resp, body := get(t, c, "https://"+net.JoinHostPort("secure.jail.test", strconv.Itoa(e.tlsPort))+"/hello")
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "hello from /hello") || resp.TLS == nil {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
}

func TestSOCKS5Allowed(t *testing.T) {
	e := newLoopbackEnv(t, nil)
	d, err := proxy.SOCKS5("tcp", e.socksAddr, nil, proxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{
		DialContext:     d.(proxy.ContextDialer).DialContext,
		TLSClientConfig: e.tlsConfig(),
	}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, body := get(t, c, e.url("web.jail.test", e.originPort, "/hello"))
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "hello from") {
		t.Fatalf("http over socks: %d %q", resp.StatusCode, body)
	}
	resp, body = get(t, c, "https://"+net.JoinHostPort("secure.jail.test", strconv.Itoa(e.tlsPort))+"/hello")
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "hello from") {
		t.Fatalf("https over socks: %d %q", resp.StatusCode, body)
	}
}

func TestDeniedNames(t *testing.T) {
	e := newLoopbackEnv(t, nil)
	c := e.httpClient()
	cases := []struct{ host, reason string }{
		{"denied.jail.test", `denied by rule "denied.jail.test"`},
		{"other.jail.test", "host not in allowlist"},
		{"mixed.jail.test", "resolves to 10.0.0.1: private address"},
	}
	for _, tc := range cases {
		resp, body := get(t, c, e.url(tc.host, e.originPort, "/hello"))
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get(DenyReasonHeader), tc.reason) {
			t.Errorf("%s: got %d %q reason %q, want 403 %q", tc.host, resp.StatusCode, body, resp.Header.Get(DenyReasonHeader), tc.reason)
		}
		// The same over CONNECT and SOCKS5.
		resp = e.rawProxy("CONNECT " + tc.host + ":" + strconv.Itoa(e.originPort) + " HTTP/1.1\r\nHost: " + tc.host + ":" + strconv.Itoa(e.originPort) + "\r\n\r\n")
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get(DenyReasonHeader), tc.reason) {
			t.Errorf("CONNECT %s: got %d reason %q", tc.host, resp.StatusCode, resp.Header.Get(DenyReasonHeader))
		}
		if code := socksRequest(t, e.socksAddr, 1, socksDomain(tc.host), e.originPort); code != socksNotAllowed {
			t.Errorf("SOCKS5 %s: reply %#x, want 0x02", tc.host, code)
		}
	}
	if e.hits.count() != 0 {
		t.Fatalf("origin got %d requests for denied names", e.hits.count())
	}
	for _, tc := range cases {
		if ev := e.audit.find(func(ev Event) bool { return ev.Host == tc.host && ev.Decision == Denied }); len(ev) < 3 {
			t.Errorf("%s: %d denied audit events, want 3 (http, connect, socks5)", tc.host, len(ev))
		}
	}
}

func TestPrivateAddressNeedsAllowPrivate(t *testing.T) {
	rules := func(op, _ int) RulesConfig {
		return RulesConfig{Allow: []string{"web.jail.test:" + strconv.Itoa(op)}}
	}
	e := newTestEnv(t, rules, nil)
	e.dns.Static("web.jail.test", netip.MustParseAddr("127.0.0.1"))
	resp, _ := get(t, e.httpClient(), e.url("web.jail.test", e.originPort, "/hello"))
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get(DenyReasonHeader), "loopback address") {
		t.Fatalf("got %d reason %q, want 403 loopback", resp.StatusCode, resp.Header.Get(DenyReasonHeader))
	}
	// Literal addresses and IPv4-mapped spellings are checked the same way.
	for _, target := range []string{"127.0.0.1", "[::ffff:127.0.0.1]", "[::1]"} {
		resp := e.rawProxy("CONNECT " + target + ":" + strconv.Itoa(e.originPort) + " HTTP/1.1\r\n\r\n")
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("CONNECT %s: %d, want 403", target, resp.StatusCode)
		}
	}
	if e.hits.count() != 0 {
		t.Fatalf("origin reached %d times", e.hits.count())
	}

	// The same name is fine once allow_private covers the address.
	e2 := newTestEnv(t, func(op, tp int) RulesConfig {
		r := rules(op, tp)
		r.AllowPrivate = []string{"127.0.0.1/32"}
		return r
	}, nil)
	e2.dns.Static("web.jail.test", netip.MustParseAddr("127.0.0.1"))
	if resp, body := get(t, e2.httpClient(), e2.url("web.jail.test", e2.originPort, "/hello")); resp.StatusCode != 200 {
		t.Fatalf("with allow_private: %d %q", resp.StatusCode, body)
	}
}

func TestRebindingCannotSwitchTarget(t *testing.T) {
	rules := func(op, tp int) RulesConfig {
		return RulesConfig{
			Allow:        []string{"rebind.jail.test:" + strconv.Itoa(op)},
			AllowPrivate: []string{"127.0.0.1/32"}, // 127.0.0.2 stands for "private"
		}
	}
	e := newTestEnv(t, rules, nil)
	e.dns.Set("rebind.jail.test", func(n int) []netip.Addr {
		if n == 0 {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.2")}
	})
	// One tunnel, many requests: one lookup, every request reaches the checked address.
	c, err := net.Dial("tcp", e.socksAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if code := socksHandshake(t, c, 1, socksDomain("rebind.jail.test"), e.originPort); code != socksSucceeded {
		t.Fatalf("socks reply %#x", code)
	}
	br := bufio.NewReader(c)
	for i := range 3 {
		fmt.Fprintf(c, "GET /hello HTTP/1.1\r\nHost: rebind.jail.test\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	if n := e.dns.Queries("rebind.jail.test"); n != 1 {
		t.Fatalf("%d lookups for one tunnel, want 1", n)
	}
	// A new connection looks the name up again and the private answer is refused, not dialed.
	resp, _ := get(t, e.httpClient(), e.url("rebind.jail.test", e.originPort, "/hello"))
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get(DenyReasonHeader), "127.0.0.2") {
		t.Fatalf("after rebinding: %d %q", resp.StatusCode, resp.Header.Get(DenyReasonHeader))
	}
	if n := e.dns.Queries("rebind.jail.test"); n != 2 {
		t.Fatalf("%d lookups for two connections, want 2", n)
	}
	if e.hits.count() != 3 {
		t.Fatalf("origin got %d requests, want 3", e.hits.count())
	}
	for _, ev := range e.audit.find(func(ev Event) bool { return ev.Decision == Allowed }) {
		if ev.Addr.Addr().String() != "127.0.0.1" {
			t.Fatalf("allowed connection to %v", ev.Addr)
		}
	}
}

func TestRequestSmugglingAndMismatch(t *testing.T) {
	e := newLoopbackEnv(t, nil)
	op := strconv.Itoa(e.originPort)
	cases := []struct {
		name, req string
		code      int
		reason    string
	}{
		{"host mismatch", "GET http://web.jail.test:" + op + "/hello HTTP/1.1\r\nHost: other.jail.test:" + op + "\r\n\r\n", 403, "Host header disagrees"},
		{"host port mismatch", "GET http://web.jail.test:" + op + "/hello HTTP/1.1\r\nHost: web.jail.test\r\n\r\n", 403, "Host header disagrees"},
		{"connect host mismatch", "CONNECT web.jail.test:" + op + " HTTP/1.1\r\nHost: evil.jail.test:" + op + "\r\n\r\n", 403, "Host header disagrees"},
		{"two hosts", "GET http://web.jail.test:" + op + "/ HTTP/1.1\r\nHost: web.jail.test:" + op + "\r\nHost: x\r\n\r\n", 400, "more than one Host"},
		{"origin form", "GET /hello HTTP/1.1\r\nHost: web.jail.test:" + op + "\r\n\r\n", 400, "absolute"},
		{"https in url", "GET https://secure.jail.test/ HTTP/1.1\r\n\r\n", 400, "CONNECT"},
		{"te and cl", "POST http://web.jail.test:" + op + "/echo HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "both"},
		{"userinfo", "GET http://u:p@web.jail.test:" + op + "/ HTTP/1.1\r\n\r\n", 400, "user information"},
		{"connect without port", "CONNECT web.jail.test HTTP/1.1\r\n\r\n", 400, "host:port"},
		{"long name", "CONNECT " + strings.Repeat("a", 64) + ".jail.test:443 HTTP/1.1\r\n\r\n", 403, "invalid host name"},
		{"numeric name", "CONNECT 2130706433:443 HTTP/1.1\r\n\r\n", 403, "invalid host name"},
	}
	for _, tc := range cases {
		resp := e.rawProxy(tc.req)
		if resp.StatusCode != tc.code || !strings.Contains(resp.Header.Get(DenyReasonHeader), tc.reason) {
			t.Errorf("%s: %d %q, want %d %q", tc.name, resp.StatusCode, resp.Header.Get(DenyReasonHeader), tc.code, tc.reason)
		}
	}
	if e.hits.count() != 0 {
		t.Fatalf("origin reached %d times", e.hits.count())
	}
}

func TestNestedConnectRefused(t *testing.T) {
	var proxyPort int
	rules := func(op, tp int) RulesConfig {
		return RulesConfig{Allow: []string{"self.jail.test", "127.0.0.1"}, AllowPrivate: []string{"127.0.0.0/8"}, DefaultPorts: []int{80, 443}}
	}
	e := newTestEnv(t, rules, nil)
	proxyPort = portOf(t, mustAddr(t, e.httpAddr))
	// Rebuild rules now that the proxy's port is known, so only the nested check stands in
	// the way.
	r, err := NewRules(RulesConfig{
		Allow:        []string{"self.jail.test:" + strconv.Itoa(proxyPort), "127.0.0.1:" + strconv.Itoa(proxyPort)},
		AllowPrivate: []string{"127.0.0.0/8"},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.proxy.cfg.Rules = r
	e.dns.Static("self.jail.test", netip.MustParseAddr("127.0.0.1"))
	for _, target := range []string{"self.jail.test", "127.0.0.1"} {
		resp := e.rawProxy("CONNECT " + target + ":" + strconv.Itoa(proxyPort) + " HTTP/1.1\r\n\r\n")
		if resp.StatusCode != 403 || !strings.Contains(resp.Header.Get(DenyReasonHeader), "nested proxy") {
			t.Errorf("CONNECT %s to the proxy: %d %q", target, resp.StatusCode, resp.Header.Get(DenyReasonHeader))
		}
	}
}

func mustAddr(t *testing.T, s string) net.Addr {
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestSOCKS5Protocol(t *testing.T) {
	e := newLoopbackEnv(t, nil)
	if code := socksRequest(t, e.socksAddr, 2, socksDomain("web.jail.test"), e.originPort); code != socksCmdNotSupported {
		t.Errorf("BIND: %#x, want 0x07", code)
	}
	if code := socksRequest(t, e.socksAddr, 3, socksDomain("web.jail.test"), e.originPort); code != socksCmdNotSupported {
		t.Errorf("UDP ASSOCIATE: %#x, want 0x07", code)
	}
	if code := socksRequest(t, e.socksAddr, 1, []byte{9, 1, 2, 3, 4}, e.originPort); code != socksAtypNotSupported {
		t.Errorf("bad ATYP: %#x, want 0x08", code)
	}
	for _, name := range []string{"web.jail.test\r\nX: y", "web\x00.jail.test", strings.Repeat("a", 255)} {
		if code := socksRequest(t, e.socksAddr, 1, socksDomain(name), e.originPort); code != socksNotAllowed {
			t.Errorf("name %q: %#x, want 0x02", name, code)
		}
	}
	// IPv4 and IPv6 address types reach the rules (127.0.0.1 is not in the allowlist).
	if code := socksRequest(t, e.socksAddr, 1, []byte{socksAtypIPv4, 127, 0, 0, 1}, e.originPort); code != socksNotAllowed {
		t.Errorf("IPv4 literal: %#x", code)
	}
	v6 := append([]byte{socksAtypIPv6}, net.ParseIP("::ffff:127.0.0.1").To16()...)
	if code := socksRequest(t, e.socksAddr, 1, v6, e.originPort); code != socksNotAllowed {
		t.Errorf("IPv6 literal: %#x", code)
	}
	// A client offering only username/password is turned away.
	c, err := net.Dial("tcp", e.socksAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{5, 1, 2})
	var b [2]byte
	if _, err := io.ReadFull(c, b[:]); err != nil || b[1] != socksNoAcceptable {
		t.Errorf("auth-only greeting: %v %v", b, err)
	}
}

func socksDomain(name string) []byte {
	return append([]byte{socksAtypDomain, byte(len(name))}, name...)
}

// socksRequest performs one SOCKS5 request on a fresh connection and returns the reply code.
func socksRequest(t *testing.T, addr string, cmd byte, dst []byte, port int) byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return socksHandshake(t, c, cmd, dst, port)
}

func socksHandshake(t *testing.T, c net.Conn, cmd byte, dst []byte, port int) byte {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte{5, 1, 0}); err != nil {
		t.Fatal(err)
	}
	var b [10]byte
	if _, err := io.ReadFull(c, b[:2]); err != nil || b[1] != 0 {
		t.Fatalf("greeting: %v %v", b[:2], err)
	}
	req := append([]byte{5, cmd, 0}, dst...)
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, b[:]); err != nil {
		t.Fatalf("reply: %v", err)
	}
	return b[1]
}

func TestAuditByteCounts(t *testing.T) {
	e := newLoopbackEnv(t, nil)
	const n = 3 << 20
	c := e.httpClient()
	resp, body := get(t, c, "https://"+net.JoinHostPort("secure.jail.test", strconv.Itoa(e.tlsPort))+fmt.Sprintf("/bytes?n=%d", n))
	if resp.StatusCode != 200 || len(body) != n {
		t.Fatalf("download: %d, %d bytes", resp.StatusCode, len(body))
	}
	c.Transport.(*http.Transport).CloseIdleConnections()
	ev := waitEvent(t, e.audit, func(ev Event) bool { return ev.Proto == "connect" && ev.Closed })
	if ev.Host != "secure.jail.test" || ev.Port != e.tlsPort || ev.Addr.String() != "127.0.0.1:"+strconv.Itoa(e.tlsPort) ||
		ev.Decision != Allowed || ev.BytesIn < n || ev.BytesOut == 0 || ev.Time.IsZero() {
		t.Fatalf("close event %+v", ev)
	}
	open := e.audit.find(func(ev Event) bool { return ev.Proto == "connect" && !ev.Closed && ev.Decision == Allowed })
	if len(open) != 1 || !strings.Contains(open[0].Reason, "allowed by rule") {
		t.Fatalf("open events %+v", open)
	}
}

func waitEvent(t testing.TB, l *auditLog, match func(Event) bool) Event {
	t.Helper()
	var evs []Event
	if !testutil.Eventually(5*time.Second, func() bool { evs = l.find(match); return len(evs) > 0 }) {
		t.Fatalf("no matching audit event in %+v", l.all())
	}
	return evs[0]
}

func TestApprovalGate(t *testing.T) {
	asked := 0
	e := newLoopbackEnv(t, func(c *Config) {
		c.Approve = func(_ context.Context, host string, port int) (bool, error) {
			asked++
			switch host {
			case "other.jail.test":
				return true, nil
			case "boom.jail.test":
				return false, errors.New("gate down")
			}
			return false, nil
		}
	})
	e.dns.Static("boom.jail.test", netip.MustParseAddr("127.0.0.1"))
	c := e.httpClient()
	for range 2 {
		if resp, body := get(t, c, e.url("other.jail.test", e.originPort, "/hello")); resp.StatusCode != 200 {
			t.Fatalf("approved host: %d %q", resp.StatusCode, body)
		}
	}
	resp, _ := get(t, c, e.url("boom.jail.test", e.originPort, "/hello"))
	if resp.StatusCode != 403 || !strings.Contains(resp.Header.Get(DenyReasonHeader), "approval failed") {
		t.Fatalf("gate error: %d %q", resp.StatusCode, resp.Header.Get(DenyReasonHeader))
	}
	// The denylist is not subject to approval.
	resp, _ = get(t, c, e.url("denied.jail.test", e.originPort, "/hello"))
	if resp.StatusCode != 403 {
		t.Fatalf("denied host: %d", resp.StatusCode)
	}
	if asked != 2 {
		t.Fatalf("approval asked %d times, want 2 (once per unknown host:port)", asked)
	}
}

func TestLimits(t *testing.T) {
	t.Run("bytes", func(t *testing.T) {
		e := newLoopbackEnv(t, func(c *Config) { c.MaxBytes = 256 << 10 })
		c := e.httpClient()
		resp, err := c.Get("https://" + net.JoinHostPort("secure.jail.test", strconv.Itoa(e.tlsPort)) + "/bytes?n=4194304")
		if err == nil {
			got, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if got >= 4<<20 {
				t.Fatalf("read %d bytes past a 256 KiB limit", got)
			}
		}
		ev := waitEvent(t, e.audit, func(ev Event) bool { return ev.Closed })
		if ev.Reason != "byte limit reached" || ev.BytesIn+ev.BytesOut > 256<<10+copyBufSize {
			t.Fatalf("close event %+v", ev)
		}
	})
	t.Run("idle", func(t *testing.T) {
		e := newLoopbackEnv(t, func(c *Config) { c.IdleTimeout = 200 * time.Millisecond })
		c, err := net.Dial("tcp", e.socksAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if code := socksHandshake(t, c, 1, socksDomain("web.jail.test"), e.originPort); code != 0 {
			t.Fatalf("reply %#x", code)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Fatal("read data from an idle tunnel")
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("idle tunnel closed after %v", d)
		}
		waitEvent(t, e.audit, func(ev Event) bool { return ev.Closed && ev.Reason == "idle timeout" })
	})
	t.Run("conns", func(t *testing.T) {
		e := newLoopbackEnv(t, func(c *Config) { c.MaxConns = 1 })
		c1, err := net.Dial("tcp", e.socksAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c1.Close()
		if code := socksHandshake(t, c1, 1, socksDomain("web.jail.test"), e.originPort); code != 0 {
			t.Fatalf("reply %#x", code)
		}
		c2, err := net.Dial("tcp", e.socksAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		c2.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c2.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("second connection over the limit: %v", err)
		}
		waitEvent(t, e.audit, func(ev Event) bool { return ev.Reason == "connection limit reached" })
	})
}
