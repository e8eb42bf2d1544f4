package browser

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jail-sandbox/jail/container"
	"github.com/jail-sandbox/jail/internal/testutil"
	"github.com/jail-sandbox/jail/netns"
)

// The tests run real Chromium in a real container of the browser image make images builds, on
// the engine scripts/dockerd.sh starts. Without either they skip with the reason, except under
// JAIL_REQUIRE_DOCKER=1 (make test, CI), where they fail.

func TestMain(m *testing.M) {
	// Inside a container this test binary is jail's init (bound at container.BinaryPath),
	// as the jail binary is in production.
	if len(os.Args) > 1 && os.Args[1] == container.InitCommand {
		os.Exit(container.InitMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func testImage() string {
	if v := os.Getenv("JAIL_BROWSER_IMAGE"); v != "" {
		return v
	}
	return "jail-browser:local"
}

func needEngine(t testing.TB) *container.Engine {
	t.Helper()
	e, err := container.Connect()
	if err == nil {
		err = e.ImageReady(context.Background(), testImage())
	}
	if err != nil {
		if os.Getenv("JAIL_REQUIRE_DOCKER") == "1" {
			t.Fatalf("JAIL_REQUIRE_DOCKER=1 and Docker is not usable: %v", err)
		}
		t.Skipf("requires a Docker engine with %s (scripts/dockerd.sh, make images): %v", testImage(), err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func testLimits() container.Limits {
	return container.Limits{Memory: 1 << 30, CPUs: 2, Pids: 512, TmpfsMax: 256 << 20}
}

// site is a test web server on a loopback address, which counts the requests it got.
type site struct {
	addr netip.AddrPort
	hits atomic.Int64
	mu   sync.Mutex
	seen []string
}

func serve(t testing.TB, ip string, h http.Handler) *site {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	s := &site{addr: netip.MustParseAddrPort(ln.Addr().String())}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		s.seen = append(s.seen, r.URL.Path)
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// egressFor is an Egress whose policy allows the names given (each resolving to its site's
// address through a test DNS) and treats 127.0.0.1 alone as a private range allowed.
func egressFor(t testing.TB, allow []string, names map[string]netip.Addr, record func(Entry)) *Egress {
	t.Helper()
	dns, dnsAddr := testutil.StartDNS(t)
	for n, a := range names {
		dns.Static(n, a)
	}
	rules, err := netns.NewRules(netns.RulesConfig{Allow: allow, AllowPrivate: []string{"127.0.0.1/32"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := netns.NewResolver(dnsAddr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := netns.New(netns.Config{Rules: rules, Resolver: res})
	if err != nil {
		t.Fatal(err)
	}
	return &Egress{Dial: p.Dial, Record: record, Timeout: 10 * time.Second}
}

// TestEgress drives real Chromium: a page, its iframe and its script's request come through
// jail's fetch; an image on a private address and a request to a host the policy does not
// list fail while the page still renders; a redirect to an unlisted host is refused at the
// second hop (the unlisted server never hears of it); a WebSocket fails closed; and every
// outcome is recorded.
func TestEgress(t *testing.T) {
	e := needEngine(t)
	private := serve(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("private"))
	}))
	unlisted := serve(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("unlisted"))
	}))
	var page *site
	page = serve(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "abc", Path: "/"})
			fmt.Fprintf(w, `<!doctype html><title>start</title><h1 id="h">hello from the page</h1>
<img id="img" src="http://private.test:%d/x.png">
<iframe id="f" src="/frame"></iframe>
<script>
fetch("http://unlisted.test:%d/api").then(r => r.text()).then(t => document.title = "leak " + t, e => document.title = "fetch refused");
new WebSocket("ws://page.test:%d/ws").onerror = () => document.body.dataset.ws = "failed";
</script>`, private.addr.Port(), unlisted.addr.Port(), page.addr.Port())
		case "/frame":
			fmt.Fprintf(w, "<p>frame cookie=%s</p>", r.Header.Get("Cookie"))
		case "/redir":
			http.Redirect(w, r, fmt.Sprintf("http://unlisted.test:%d/landed", unlisted.addr.Port()), http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	var mu sync.Mutex
	var log []Entry
	eg := egressFor(t, []string{fmt.Sprintf("page.test:%d", page.addr.Port()), fmt.Sprintf("private.test:%d", private.addr.Port())},
		map[string]netip.Addr{"page.test": page.addr.Addr(), "private.test": private.addr.Addr(), "unlisted.test": unlisted.addr.Addr()},
		func(en Entry) { mu.Lock(); log = append(log, en); mu.Unlock() })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, err := Launch(ctx, e, Options{Image: testImage(), Limits: testLimits(), Egress: eg})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tctx, cancelT := context.WithTimeout(b.Context(), 60*time.Second)
	defer cancelT()
	if err := chromedp.Do(tctx, chromedp.Navigate(fmt.Sprintf("http://page.test:%d/", page.addr.Port()))); err != nil {
		t.Fatal(err)
	}
	title, err := poll[string](tctx, `document.title != "start" && document.body.dataset.ws ? document.title : ""`)
	if err != nil || title != "fetch refused" {
		t.Fatalf("the page's request to an unlisted host: title %q, %v", title, err)
	}
	h, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.getElementById("h").textContent + "|" + document.getElementById("img").naturalWidth + "|" + document.getElementById("f").contentDocument?.body?.innerText`))
	if err != nil || !strings.HasPrefix(h, "hello from the page|0|") {
		t.Fatalf("the page did not render, or the private image loaded: %q %v", h, err)
	}
	if private.hits.Load() != 0 || unlisted.hits.Load() != 0 {
		t.Fatalf("a refused host was reached: private %d, unlisted %d", private.hits.Load(), unlisted.hits.Load())
	}
	// The iframe is another origin's process only in name here (same site), so read it from
	// the server: it got the cookie the page's response set.
	page.mu.Lock()
	seenFrame := strings.Join(page.seen, ",")
	page.mu.Unlock()
	if !strings.Contains(seenFrame, "/frame") {
		t.Fatalf("the iframe's request did not come through: %s", seenFrame)
	}

	// A redirect to an unlisted host: the first hop is fetched, the second refused.
	err = chromedp.Do(tctx, chromedp.Navigate(fmt.Sprintf("http://page.test:%d/redir", page.addr.Port())))
	if err == nil || unlisted.hits.Load() != 0 {
		t.Fatalf("a redirect to an unlisted host: %v, unlisted hits %d", err, unlisted.hits.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, en := range log {
		got = append(got, fmt.Sprintf("%s %s %d %s", en.Kind, en.URL, en.Status, en.Refused))
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		fmt.Sprintf("Document http://page.test:%d/ 200 ", page.addr.Port()),
		fmt.Sprintf("http://private.test:%d/x.png 0 jail: network: private.test:%d: resolves to 127.0.0.2", private.addr.Port(), private.addr.Port()),
		fmt.Sprintf("http://unlisted.test:%d/api 0 jail: network: unlisted.test:%d: host not in allowlist", unlisted.addr.Port(), unlisted.addr.Port()),
		fmt.Sprintf("Document http://page.test:%d/redir 302 ", page.addr.Port()),
		fmt.Sprintf("Document http://unlisted.test:%d/landed 0 jail: network: unlisted.test", unlisted.addr.Port()),
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the egress log lacks %q:\n%s", want, all)
		}
	}
}
