package browser

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/tools"
)

// app is the test's web app: a form that greets, a link to a second page, a page that echoes
// the cookies it got, and a page that keeps a value in localStorage.
func app(t *testing.T) *site {
	return serve(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			http.SetCookie(w, &http.Cookie{Name: "visit", Value: "42", Path: "/", Expires: time.Now().Add(time.Hour)})
			fmt.Fprint(w, `<!doctype html><title>Greeter</title>
<h1>Greeter</h1>
<label>Name <input id="name"></label>
<button onclick="document.getElementById('out').textContent = 'Hello, ' + document.getElementById('name').value">Greet</button>
<p id="out"></p>
<select id="color" aria-label="Color"><option value="r">Red</option><option value="g">Green</option></select>
<a href="/next">Next page</a>
<script>console.log("page-loaded"); localStorage.setItem("kept", "yes");</script>`)
		case "/next":
			fmt.Fprint(w, `<!doctype html><title>Next</title><h1>Second page</h1>`)
		case "/whoami":
			fmt.Fprintf(w, `<!doctype html><title>who</title><p>cookie=[%s]</p>`, r.Header.Get("Cookie"))
		default:
			http.NotFound(w, r)
		}
	}))
}

type tooling struct {
	t  *testing.T
	bs *Browsers
	ts map[string]*tools.Tool
}

func newTooling(t *testing.T, ws, state string, pageSite *site) *tooling {
	t.Helper()
	e := needEngine(t)
	bs, err := New(Config{Engine: e, Image: testImage(), Limits: testLimits(), Lifecycle: "agent", IdleGrace: time.Minute,
		Session: "test", Workspace: ws, StateDir: state,
		Egress: func(agent string) *Egress {
			return egressFor(t, []string{fmt.Sprintf("page.test:%d", pageSite.addr.Port())}, map[string]netip.Addr{"page.test": pageSite.addr.Addr()}, nil)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bs.Close)
	tl := &tooling{t: t, bs: bs, ts: map[string]*tools.Tool{}}
	reg, err := tools.NewRegistry(bs.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range reg.Tools() {
		tl.ts[x.Name] = x
	}
	return tl
}

func (tl *tooling) call(agent, name, args string) tools.Result {
	tl.t.Helper()
	x, ok := tl.ts[name]
	if !ok {
		tl.t.Fatalf("no tool %s", name)
	}
	if err := x.Validate(json.RawMessage(args)); err != nil {
		tl.t.Fatalf("%s %s: %v", name, args, err)
	}
	return x.Host(context.Background(), tools.HostCall{Args: json.RawMessage(args), Context: tools.CallContext{Agent: agent}, Timeout: 90 * time.Second})
}

func (tl *tooling) ok(agent, name, args string) tools.Result {
	tl.t.Helper()
	r := tl.call(agent, name, args)
	if r.IsError {
		tl.t.Fatalf("%s %s: %s", name, args, r.Content)
	}
	return r
}

// refOf finds the ref of the snapshot line that matches pattern.
func refOf(t *testing.T, snap, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern + `.*\[ref=(e[0-9]+)\]`).FindStringSubmatch(snap)
	if m == nil {
		t.Fatalf("no line matching %q in the snapshot:\n%s", pattern, snap)
	}
	return m[1]
}

// shot checks a screenshot result: a PNG that decodes, saved in the workspace with the hash
// the result gives, and the same bytes as the image content.
func shot(t *testing.T, ws string, r tools.Result) string {
	t.Helper()
	path, _ := r.Meta["path"].(string)
	sum, _ := r.Meta["sha256"].(string)
	b, err := os.ReadFile(filepath.Join(ws, path))
	if err != nil || !strings.HasPrefix(path, ScreenshotDir+"/") {
		t.Fatalf("screenshot file %q: %v", path, err)
	}
	h := sha256.Sum256(b)
	img, _ := base64.StdEncoding.DecodeString(r.Meta[metaImagePNG].(string))
	if hex.EncodeToString(h[:]) != sum || !bytes.Equal(img, b) {
		t.Fatalf("screenshot %s: hash or image content differ from the file", path)
	}
	if _, err := png.Decode(bytes.NewReader(b)); err != nil {
		t.Fatalf("screenshot %s does not decode: %v", path, err)
	}
	return sum
}

// TestTools drives the tools against real Chromium: navigate, snapshot, type and click by ref
// change the page and say what changed; screenshots decode and differ after the change; a ref
// of an earlier page is stale; console, network and storage report; and an agent's cookies and
// storage outlive its browser while another agent sees none of them.
func TestTools(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	site := app(t)
	tl := newTooling(t, ws, state, site)
	base := fmt.Sprintf("http://page.test:%d", site.addr.Port())

	start := time.Now()
	r := tl.ok("a", "browser_navigate", fmt.Sprintf(`{"url":%q}`, base+"/"))
	t.Logf("first navigate (container start included): %s", time.Since(start))
	if !strings.Contains(r.Content, `"Greeter"`) || r.Meta["browser_cold_start"] != true {
		t.Fatalf("navigate: %+v", r)
	}
	start = time.Now()
	snap := tl.ok("a", "browser_snapshot", `{}`).Content
	t.Logf("warm snapshot: %s", time.Since(start))
	name := refOf(t, snap, `textbox "Name"`)
	greet := refOf(t, snap, `button "Greet"`)
	color := refOf(t, snap, `combobox "Color"`)
	link := refOf(t, snap, `link "Next page"`)
	if filtered := tl.ok("a", "browser_snapshot", `{"filter":"role=button"}`).Content; !strings.Contains(filtered, "Greet") || strings.Contains(filtered, "Next page") {
		t.Fatalf("role filter: %s", filtered)
	}
	first := shot(t, ws, tl.ok("a", "browser_screenshot", `{}`))

	if r := tl.ok("a", "browser_type", fmt.Sprintf(`{"ref":%q,"text":"Ada"}`, name)); !strings.Contains(r.Content, "typed 3 characters") {
		t.Fatalf("type: %s", r.Content)
	}
	start = time.Now()
	r = tl.ok("a", "browser_click", fmt.Sprintf(`{"ref":%q}`, greet))
	t.Logf("click: %s", time.Since(start))
	if !strings.Contains(r.Content, "appeared:") || !strings.Contains(r.Content, "Hello, Ada") {
		t.Fatalf("click did not report the change: %s", r.Content)
	}
	if r := tl.ok("a", "browser_select", fmt.Sprintf(`{"ref":%q,"values":["Green"]}`, color)); !strings.Contains(r.Content, `selected ["Green"]`) {
		t.Fatalf("select: %s", r.Content)
	}
	if second := shot(t, ws, tl.ok("a", "browser_screenshot", `{"full_page":true}`)); second == first {
		t.Fatal("the screenshot after the change is the same as before")
	}
	if r := tl.ok("a", "browser_console", `{}`); !strings.Contains(r.Content, "log: page-loaded") {
		t.Fatalf("console: %s", r.Content)
	}
	if r := tl.ok("a", "browser_network", `{}`); !strings.Contains(r.Content, "200 GET "+base+"/ (Document)") {
		t.Fatalf("network: %s", r.Content)
	}
	if r := tl.ok("a", "browser_wait_for", `{"text":"Hello, Ada"}`); !strings.Contains(r.Content, "appeared") {
		t.Fatalf("wait_for: %s", r.Content)
	}

	r = tl.ok("a", "browser_click", fmt.Sprintf(`{"ref":%q}`, link))
	if r.Meta["navigated"] != true || !strings.Contains(r.Content, "Second page") && !strings.Contains(r.Content, `"Next"`) {
		t.Fatalf("following the link: %+v", r)
	}
	if r := tl.call("a", "browser_click", fmt.Sprintf(`{"ref":%q}`, greet)); !r.IsError || !strings.Contains(r.Content, "stale") || !strings.Contains(r.Content, "take a new snapshot") {
		t.Fatalf("a ref of the earlier page: %+v", r)
	}
	if r := tl.ok("a", "browser_storage_get", fmt.Sprintf(`{"origin":%q,"key":"kept"}`, base)); r.Content != "yes" {
		t.Fatalf("storage_get: %+v", r)
	}
	tl.ok("a", "browser_storage_set", fmt.Sprintf(`{"origin":%q,"key":"note","value":"from the agent"}`, base))

	// The agent's state outlives its browser (a new container, the same profile), and
	// another agent's browser has none of it.
	tl.bs.Close()
	tl = newTooling(t, ws, state, site)
	r = tl.ok("a", "browser_navigate", fmt.Sprintf(`{"url":%q}`, base+"/whoami"))
	if snap := tl.ok("a", "browser_snapshot", `{}`).Content; !strings.Contains(snap, "visit=42") {
		t.Fatalf("the agent's cookie did not last: %s", snap)
	}
	if r := tl.ok("a", "browser_storage_get", fmt.Sprintf(`{"origin":%q,"key":"note"}`, base)); r.Content != "from the agent" {
		t.Fatalf("the agent's storage did not last: %+v", r)
	}
	tl.ok("b", "browser_navigate", fmt.Sprintf(`{"url":%q}`, base+"/whoami"))
	if snap := tl.ok("b", "browser_snapshot", `{}`).Content; !strings.Contains(snap, "cookie=[]") {
		t.Fatalf("another agent got the first agent's cookie: %s", snap)
	}
	if r := tl.ok("b", "browser_storage_get", fmt.Sprintf(`{"origin":%q,"key":"note"}`, base)); r.Meta["found"] != false {
		t.Fatalf("another agent read the first agent's storage: %+v", r)
	}
}
