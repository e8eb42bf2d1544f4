package netns

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
)

// auditLog collects audit events.
type auditLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *auditLog) add(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *auditLog) all() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

// find returns the events for which match is true.
func (l *auditLog) find(match func(Event) bool) []Event {
	var out []Event
	for _, e := range l.all() {
		if match(e) {
			out = append(out, e)
		}
	}
	return out
}

// origin serves /hello, /echo (body back) and /bytes?n=N (N bytes, streamed).
func originHandler() http.Handler {
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte('a' + i%26)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s host=%s", r.URL.Path, r.Host)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(w, r.Body)
	})
	mux.HandleFunc("/bytes", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		for n > 0 {
			k := min(n, int64(len(chunk)))
			if _, err := w.Write(chunk[:k]); err != nil {
				return
			}
			n -= k
		}
	})
	return mux
}

// testEnv is a proxy on loopback in front of an HTTP and an HTTPS origin on 127.0.0.1, with
// names served by a test DNS server.
type testEnv struct {
	t          testing.TB
	dns        *testutil.DNS
	dnsAddr    string
	audit      *auditLog
	proxy      *Proxy
	origin     *httptest.Server
	tlsOrigin  *httptest.Server
	originPort int
	tlsPort    int
	httpAddr   string
	socksAddr  string
	hits       *hitCounter
}

type hitCounter struct {
	mu sync.Mutex
	n  int
}

func (h *hitCounter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (h *hitCounter) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// newTestEnv starts the origins and DNS, then calls rules with their ports to build the rule
// config, and serves the proxy until the test ends.
func newTestEnv(t testing.TB, rules func(originPort, tlsPort int) RulesConfig, tweak func(*Config)) *testEnv {
	t.Helper()
	e := &testEnv{t: t, audit: &auditLog{}, hits: &hitCounter{}}
	e.dns, e.dnsAddr = testutil.StartDNS(t)
	e.origin = httptest.NewServer(e.hits.wrap(originHandler()))
	t.Cleanup(e.origin.Close)
	e.tlsOrigin = httptest.NewTLSServer(e.hits.wrap(originHandler()))
	t.Cleanup(e.tlsOrigin.Close)
	e.originPort = portOf(t, e.origin.Listener.Addr())
	e.tlsPort = portOf(t, e.tlsOrigin.Listener.Addr())

	r, err := NewRules(rules(e.originPort, e.tlsPort))
	if err != nil {
		t.Fatal(err)
	}
	res, err := NewResolver(e.dnsAddr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Rules: r, Resolver: res, Audit: e.audit.add, IdleTimeout: 10 * time.Second}
	if tweak != nil {
		tweak(&cfg)
	}
	e.proxy, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.httpAddr, e.socksAddr = hl.Addr().String(), sl.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); checkServe(t, e.proxy.ServeHTTP(ctx, hl)) }()
	go func() { defer wg.Done(); checkServe(t, e.proxy.ServeSOCKS5(ctx, sl)) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return e
}

func checkServe(t testing.TB, err error) {
	if err != nil {
		t.Errorf("serve: %v", err)
	}
}

func portOf(t testing.TB, a net.Addr) int {
	t.Helper()
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		t.Fatal(err)
	}
	return int(ap.Port())
}

// httpClient goes through the HTTP proxy; TLS trusts the test origin's certificate, which is
// issued for example.com.
func (e *testEnv) httpClient() *http.Client {
	tr := &http.Transport{
		Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: e.httpAddr}),
		TLSClientConfig: e.tlsConfig(),
	}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func (e *testEnv) tlsConfig() *tls.Config {
	c := e.tlsOrigin.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	c.ServerName = "example.com"
	return c
}

// rawProxy sends a raw request to the HTTP proxy and returns the response.
func (e *testEnv) rawProxy(req string) *http.Response {
	e.t.Helper()
	c, err := net.Dial("tcp", e.httpAddr)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}
