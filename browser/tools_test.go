package browser

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/jail-sandbox/jail/policy"
	"github.com/jail-sandbox/jail/tools"
)

// app is the test's web app: a form that greets, a link to a second page, a page that echoes
// the cookies it got, and a page that keeps a value in localStorage.
func app(t testing.TB) *site {
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
<label>File <input type="file" id="f" onchange="document.getElementById('fo').textContent = 'got ' + this.files[0].name + ' ' + this.files[0].size"></label><p id="fo"></p>
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
	t  testing.TB
	bs *Browsers
	ts map[string]*tools.Tool
}

func newTooling(t testing.TB, ws, state string, pageSite *site) *tooling {
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
func refOf(t testing.TB, snap, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern + `.*\[ref=(e[0-9]+)\]`).FindStringSubmatch(snap)
	if m == nil {
		t.Fatalf("no line matching %q in the snapshot:\n%s", pattern, snap)
	}
	return m[1]
}

// shot checks a screenshot result: a PNG that decodes, saved in the workspace with the hash
// the result gives, and the same bytes as the image content.
func shot(t testing.TB, ws string, r tools.Result) string {
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
	os.WriteFile(filepath.Join(ws, "report.txt"), []byte("twelve bytes"), 0o644)
	if r := tl.ok("a", "browser_upload", fmt.Sprintf(`{"ref":%q,"paths":["report.txt"]}`, refOf(t, snap, `button "File[^"]*"`))); !strings.Contains(r.Content, "got report.txt 12") {
		t.Fatalf("upload: %s", r.Content)
	}
	if r := tl.call("a", "browser_upload", fmt.Sprintf(`{"ref":%q,"paths":["../etc/passwd"]}`, name)); !r.IsError || !strings.Contains(r.Content, "relative to the workspace") {
		t.Fatalf("upload outside the workspace: %+v", r)
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

	tl.ok("a", "browser_hover", fmt.Sprintf(`{"ref":%q}`, greet))
	tl.ok("a", "browser_type", fmt.Sprintf(`{"ref":%q,"text":"Bo"}`, name))
	if r := tl.ok("a", "browser_press_key", `{"key":"Backspace"}`); !strings.Contains(r.Content, "pressed Backspace") {
		t.Fatalf("press_key: %s", r.Content)
	}
	if v := tl.ok("a", "browser_evaluate", `{"expression":"document.getElementById('name').value"}`).Content; v != `"B"` {
		t.Fatalf("after Backspace the input holds %s", v)
	}
	// Tabs: open one on the second page, list, go back to the first, close the second.
	tl.ok("a", "browser_tabs", fmt.Sprintf(`{"action":"open","url":%q}`, base+"/next"))
	if r := tl.ok("a", "browser_tabs", `{"action":"list"}`); strings.Count(r.Content, "\n") != 2 || !strings.Contains(r.Content, `* 1 `+base+`/next "Next"`) {
		t.Fatalf("tabs after open: %s", r.Content)
	}
	tl.ok("a", "browser_tabs", `{"action":"select","index":0}`)
	if r := tl.ok("a", "browser_tabs", `{"action":"close","index":1}`); strings.Count(r.Content, "\n") != 1 || !strings.Contains(r.Content, `* 0 `+base+`/ "Greeter"`) {
		t.Fatalf("tabs after close: %s", r.Content)
	}
	if r := tl.ok("a", "browser_wait_for", `{"time":0.1}`); !strings.Contains(r.Content, "waited") {
		t.Fatalf("wait_for time: %s", r.Content)
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

// TestWebAuthn: a passkey made by a page on the virtual authenticator signs the page's next
// login, survives the browser (the agent's next container loads it), and its private key is
// in no tool result.
func TestWebAuthn(t *testing.T) {
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>passkeys</title>
<button onclick="register()">Register</button><button onclick="login()">Login</button><p id="s">idle</p>
<script>
const say = t => document.getElementById("s").textContent = t;
async function register() {
  try {
    await navigator.credentials.create({publicKey: {rp: {name: "test", id: "example.com"},
      user: {id: new Uint8Array([1, 2, 3]), name: "ada", displayName: "Ada"}, challenge: new Uint8Array(32),
      pubKeyCredParams: [{type: "public-key", alg: -7}],
      authenticatorSelection: {residentKey: "required", userVerification: "required"}}});
    say("registered");
  } catch (e) { say("register failed: " + e); }
}
async function login() {
  try {
    const c = await navigator.credentials.get({publicKey: {challenge: new Uint8Array(32), rpId: "example.com", userVerification: "required"}});
    say("logged in as " + new Uint8Array(c.response.userHandle).join(","));
  } catch (e) { say("login failed: " + e); }
}
</script>`)
	}))
	ts.StartTLS()
	t.Cleanup(ts.Close)
	addr := netip.MustParseAddrPort(ts.Listener.Addr().String())
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	ws, state := t.TempDir(), t.TempDir()
	mk := func() *tooling {
		e := needEngine(t)
		bs, err := New(Config{Engine: e, Image: testImage(), Limits: testLimits(), Lifecycle: "agent", IdleGrace: time.Minute,
			Session: "test", Workspace: ws, StateDir: state,
			Egress: func(agent string) *Egress {
				eg := egressFor(t, []string{fmt.Sprintf("example.com:%d", addr.Port())}, map[string]netip.Addr{"example.com": addr.Addr()}, nil)
				eg.RootCAs = pool
				return eg
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
	var results []tools.Result
	do := func(tl *tooling, name, args string) tools.Result {
		r := tl.ok("a", name, args)
		results = append(results, r)
		return r
	}
	url := fmt.Sprintf("https://example.com:%d/", addr.Port())
	tl := mk()
	do(tl, "browser_navigate", fmt.Sprintf(`{"url":%q}`, url))
	do(tl, "browser_webauthn_create", `{}`)
	snap := do(tl, "browser_snapshot", `{}`).Content
	do(tl, "browser_click", fmt.Sprintf(`{"ref":%q}`, refOf(t, snap, `button "Register"`)))
	if r := tl.call("a", "browser_wait_for", `{"text":"registered","time":10}`); r.IsError {
		t.Fatalf("register: %s\n%s", r.Content, do(tl, "browser_snapshot", `{}`).Content)
	}
	do(tl, "browser_click", fmt.Sprintf(`{"ref":%q}`, refOf(t, snap, `button "Login"`)))
	if r := tl.call("a", "browser_wait_for", `{"text":"logged in as 1,2,3","time":10}`); r.IsError {
		t.Fatalf("login: %s\n%s", r.Content, do(tl, "browser_snapshot", `{}`).Content)
	}
	list := do(tl, "browser_webauthn_list", `{}`)
	if !strings.Contains(list.Content, "rp=example.com") || len(list.Meta["passkeys"].([]any)) != 1 {
		t.Fatalf("list: %+v", list)
	}
	// The key is kept in jail's state, outside the profile the container writes.
	var stored []*webauthn.Credential
	b, err := os.ReadFile(tl.bs.passkeysFile("a"))
	if err != nil || json.Unmarshal(b, &stored) != nil || len(stored) != 1 || len(stored[0].PrivateKey) == 0 {
		t.Fatalf("the passkeys file: %v %d", err, len(stored))
	}
	key := stored[0].PrivateKey

	// The next browser of the agent has the passkey.
	tl.bs.Close()
	tl = mk()
	do(tl, "browser_navigate", fmt.Sprintf(`{"url":%q}`, url))
	if r := do(tl, "browser_webauthn_create", `{}`); !strings.Contains(r.Content, "1 stored passkeys loaded") {
		t.Fatalf("the passkey did not last: %s", r.Content)
	}
	snap = do(tl, "browser_snapshot", `{}`).Content
	do(tl, "browser_click", fmt.Sprintf(`{"ref":%q}`, refOf(t, snap, `button "Login"`)))
	if r := tl.call("a", "browser_wait_for", `{"text":"logged in as 1,2,3","time":10}`); r.IsError {
		t.Fatalf("login with the kept passkey: %s", r.Content)
	}
	id := list.Meta["passkeys"].([]any)[0].(map[string]any)["credential_id"].(string)
	do(tl, "browser_webauthn_delete", fmt.Sprintf(`{"credential_id":%q}`, id))
	if r := do(tl, "browser_webauthn_list", `{}`); !strings.Contains(r.Content, "no passkeys") {
		t.Fatalf("after delete: %s", r.Content)
	}

	// No result carries the private key, in any encoding.
	tl.bs.Close()
	b, err = os.ReadFile(tl.bs.passkeysFile("a"))
	if err != nil || json.Unmarshal(b, &stored) != nil || len(stored) != 0 {
		t.Fatalf("the deleted passkey is still stored: %v %d", err, len(stored))
	}
	for _, r := range results {
		blob, _ := json.Marshal(r)
		for _, enc := range []string{base64.StdEncoding.EncodeToString(key), base64.RawURLEncoding.EncodeToString(key), hex.EncodeToString(key)} {
			if strings.Contains(string(blob), enc) {
				t.Fatalf("a tool result carries the private key: %s", blob)
			}
		}
	}
}

// TestToolsMatchCatalogue: every browser tool is in the policy's static map with the risk and
// capabilities it declares, so grants, risk and action types apply to it.
func TestToolsMatchCatalogue(t *testing.T) {
	bs, err := New(Config{Lifecycle: "agent", IdleGrace: time.Minute, Disabled: "test"})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.NewRegistry(bs.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, c := range policy.Catalogue() {
		known[c.Name] = true
	}
	for _, x := range reg.Tools() {
		if !known[x.Name] || x.Risk != catalogue(x.Name).Risk {
			t.Errorf("%s: not in policy.Catalogue with risk %s", x.Name, x.Risk)
		}
		if len(policy.ToolActions(x.Info())) != 1 || policy.ToolActions(x.Info())[0].Category() != "browser" {
			t.Errorf("%s: action types %v", x.Name, policy.ToolActions(x.Info()))
		}
		if err := x.Ready(); err == nil || err.Error() != "test" {
			t.Errorf("%s: readiness %v", x.Name, err)
		}
	}
	for _, opt := range []string{"browser_evaluate", "browser_webauthn_create", "browser_webauthn_list", "browser_webauthn_delete"} {
		if catalogue(opt).Risk < policy.Exec {
			t.Errorf("%s is opt-in: its risk must be exec or higher", opt)
		}
	}
}

// TestSinceLast pins what browser_console and browser_network return
// around their buffer: the dropped line, the cut at maxSinceLast with how
// many lines it left out, the line for none.
func TestSinceLast(t *testing.T) {
	if got := sinceLast(nil, 0, "requests", "no requests since the last call"); got != "no requests since the last call\n" {
		t.Errorf("none: %q", got)
	}
	if got := sinceLast(nil, 3, "requests", "none"); got != "[3 earlier requests dropped]\n" {
		t.Errorf("dropped only: %q", got)
	}
	if got := sinceLast([]string{"a", "b"}, 1, "messages", "none"); got != "[1 earlier messages dropped]\na\nb\n" {
		t.Errorf("two: %q", got)
	}
	line := strings.Repeat("x", 999)
	var lines []string
	for range 100 {
		lines = append(lines, line)
	}
	got := sinceLast(lines, 0, "messages", "none")
	if len(got) > maxSinceLast+100 || !strings.HasSuffix(got, "... [70 more messages cut]\n") {
		t.Errorf("100 lines of 1000 bytes: %d bytes, ending %q", len(got), got[len(got)-40:])
	}
}

func TestBounded(t *testing.T) {
	if v, cut := bounded("abc", 3); v != "abc" || cut != 0 {
		t.Errorf("bounded(abc, 3) = %q, %d", v, cut)
	}
	if v, cut := bounded("abcdef", 2); v != "ab... [4 chars truncated]" || cut != 4 {
		t.Errorf("bounded(abcdef, 2) = %q, %d", v, cut)
	}
}

func TestWebURL(t *testing.T) {
	for u, want := range map[string]bool{"http://a": true, "https://a/b": true, "file:///etc/passwd": false, "javascript:1": false, "": false, "HTTP://a": false} {
		if webURL(u) != want {
			t.Errorf("webURL(%q) = %v", u, !want)
		}
	}
}
