//go:build linux

package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/png"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
)

// The browser tests drive real Chromium in real containers (a Docker engine from
// scripts/dockerd.sh, the browser image from make images) against pages on the test hosts of
// network_test.go, in a network namespace the test builds. Without an engine or the image they
// skip with the reason, except under JAIL_REQUIRE_DOCKER=1 (make test), where they fail.

const browserImage = "jail-browser:local"

// needBrowser skips (or fails under JAIL_REQUIRE_DOCKER=1) without an engine and the browser
// image, and returns r able to use Docker.
func needBrowser(t *testing.T, r runner) runner {
	t.Helper()
	return needDocker(t, r, browserImage)
}

// browserAgent is an agent name no other test uses: its containers are found by its label.
func browserAgent() string {
	b := make([]byte, 4)
	rand.Read(b)
	return "web-" + hex.EncodeToString(b)
}

// browserPolicy enables Docker and the browser tools for agent, under the network policy of
// the test hosts: web.test allowed, other.test not, inside.test private.
func (r runner) browserPolicy(t *testing.T, h *testHosts, agent, mode string) (file, audit string) {
	t.Helper()
	nw := fmt.Sprintf("[network]\nmode = %q\n", mode)
	if h != nil {
		nw += fmt.Sprintf("allow = [%q, %q]\nresolver = %q\nallow_private = [%q]\n", webName, insideName, hostPort(h.web, 53), h.web.String()+"/32")
	}
	return r.dockerPolicy(t, dockerRole{category: "browser", role: "web", agent: agent, extra: nw,
		tools: []string{"browser_navigate", "browser_snapshot", "browser_click", "browser_type",
			"browser_screenshot", "browser_network", "browser_console", "browser_wait_for"}})
}

func hostPort(a interface{ String() string }, port int) string {
	return net.JoinHostPort(a.String(), strconv.Itoa(port))
}

// call sends one call as agent and waits for its result.
func (s *served) callAs(id int, agent, tool, args string) resp {
	s.t.Helper()
	s.send(fmt.Sprintf(`{"id":%d,"tool":%q,"args":%s,"context":{"agent":%q}}`, id, tool, args, agent))
	r := s.next()
	if r.Type != "result" || string(r.ID) != strconv.Itoa(id) {
		s.t.Fatalf("call %d: %+v\nstderr: %s", id, r, s.err.String())
	}
	return r
}

// browserContainers are the ids of jail's browser containers of agent.
func browserContainers(t *testing.T, agent string) []string {
	t.Helper()
	f := url.QueryEscape(fmt.Sprintf(`{"label":["org.jail-sandbox.managed=1","org.jail-sandbox.kind=browser","org.jail-sandbox.agent=%s"]}`, agent))
	resp, err := dockerAPI("GET", "/containers/json?all=1&filters="+f)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []struct {
		ID string `json:"Id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ID[:12])
	}
	return ids
}

// pageSite serves the browser's test pages on the test hosts and records the paths each
// host name was asked for.
type pageSite struct {
	mu   sync.Mutex
	seen []string // "host path"
}

func (p *pageSite) hit(host, path string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.seen {
		if s == host+" "+path {
			return true
		}
	}
	return false
}

func (p *pageSite) handler(w http.ResponseWriter, r *http.Request) bool {
	if !strings.HasPrefix(r.URL.Path, "/browser/") {
		return false
	}
	host, _, _ := strings.Cut(r.Host, ":")
	p.mu.Lock()
	p.seen = append(p.seen, host+" "+r.URL.Path)
	p.mu.Unlock()
	switch r.URL.Path {
	case "/browser/page":
		fmt.Fprintf(w, `<!doctype html><title>start</title><h1>Test page</h1>
<img src="http://%s/browser/private.png">
<label>Name <input id="n"></label><button onclick="document.getElementById('o').textContent='Hi '+document.getElementById('n').value">Go</button><p id="o"></p>
<script>fetch("http://%s/browser/api").then(r => r.text()).then(t => document.title = "leak " + t, e => document.title = "fetch refused");</script>`, insideName, otherName)
	case "/browser/redirect":
		http.Redirect(w, r, "http://"+otherName+"/browser/landed", http.StatusFound)
	default:
		fmt.Fprintf(w, "<p>%s %s</p>", host, r.URL.Path)
	}
	return true
}

// TestBrowser drives the browser tools through jail serve as root and as a docker-group user,
// against the test hosts: navigate, snapshot, type and click by ref change the page; a
// screenshot decodes and differs after the change; the page's request to a private address
// and to an unlisted host fail while the page renders; a denied URL fails with the reason and
// an audit record; a redirect to an unlisted host is refused at its second hop;
// http://localhost reaches the session's background server and nothing on the host's
// loopback; and the agent's browser state is out of its own bash's sight.
func TestBrowser(t *testing.T) {
	h := newTestHosts(t)
	site := &pageSite{}
	h.pages = site.handler
	forEach(t, func(t *testing.T, r runner) {
		r = needBrowser(t, r)
		agent := browserAgent()
		ws := r.dir(t, "jail-it-browser-")
		pol, audit := r.browserPolicy(t, h, agent, "proxy")
		s := r.serve(t, ws, "--policy", pol)
		id := 0
		call := func(tool, args string) resp {
			t.Helper()
			id++
			return s.callAs(id, agent, tool, args)
		}
		ok := func(tool, args string) resp {
			t.Helper()
			res := call(tool, args)
			if res.Result.IsError {
				t.Fatalf("%s %s: %s\nstderr: %s", tool, args, res.Result.Content, s.err.String())
			}
			return res
		}

		start := time.Now()
		ok("browser_navigate", `{"url":"http://web.test/browser/page"}`)
		t.Logf("first navigate, container start included: %s", time.Since(start).Round(time.Millisecond))
		if res := ok("browser_wait_for", `{"text":"Test page"}`); res.Result.IsError {
			t.Fatal(res.Result.Content)
		}
		start = time.Now()
		snap := ok("browser_snapshot", `{}`).Result.Content
		t.Logf("warm snapshot: %s", time.Since(start).Round(time.Millisecond))
		ref := func(pattern string) string {
			m := regexp.MustCompile(pattern + `.*\[ref=(e[0-9]+)\]`).FindStringSubmatch(snap)
			if m == nil {
				t.Fatalf("no %q in the snapshot:\n%s", pattern, snap)
			}
			return m[1]
		}
		first := browserShot(t, ws, ok("browser_screenshot", `{}`))
		ok("browser_type", fmt.Sprintf(`{"ref":%q,"text":"Ada"}`, ref(`textbox "Name"`)))
		if res := ok("browser_click", fmt.Sprintf(`{"ref":%q}`, ref(`button "Go"`))); !strings.Contains(res.Result.Content, "Hi Ada") {
			t.Fatalf("click: %s", res.Result.Content)
		}
		if browserShot(t, ws, ok("browser_screenshot", `{}`)) == first {
			t.Fatal("the screenshot did not change with the page")
		}
		// The page rendered although its image (a private address) and its request (an
		// unlisted host) were refused, and neither host heard of them.
		if res := ok("browser_wait_for", `{"text":"Test page"}`); res.Result.IsError {
			t.Fatal(res.Result.Content)
		}
		netlog := ok("browser_network", `{}`).Result.Content
		for _, want := range []string{"200 GET http://web.test/browser/page (Document)", "REFUSED GET http://inside.test/browser/private.png (Image): jail: network: inside.test:80: resolves to",
			"REFUSED GET http://other.test/browser/api (XHR): jail: network: other.test:80: host not in allowlist"} {
			if !strings.Contains(netlog, want) {
				t.Errorf("browser_network lacks %q:\n%s", want, netlog)
			}
		}
		if site.hit(insideName, "/browser/private.png") || site.hit(otherName, "/browser/api") {
			t.Fatalf("a refused host was reached: %v", site.seen)
		}

		// A denied URL: the reason, and an audit record.
		res := call("browser_navigate", `{"url":"http://other.test/browser/direct"}`)
		if !res.Result.IsError || !strings.Contains(res.Result.Content, "other.test:80: host not in allowlist") {
			t.Fatalf("navigate to an unlisted host: %+v", res.Result)
		}
		// A redirect to an unlisted host: the first hop is fetched, the second refused.
		res = call("browser_navigate", `{"url":"http://web.test/browser/redirect"}`)
		if !res.Result.IsError || !site.hit(webName, "/browser/redirect") || site.hit(otherName, "/browser/landed") {
			t.Fatalf("a redirect to an unlisted host: %+v (seen %v)", res.Result, site.seen)
		}
		b, _ := os.ReadFile(audit)
		if !bytes.Contains(b, []byte(`"proto":"browser","host":"other.test","port":80`)) || !bytes.Contains(b, []byte(`"decision":"denied"`)) {
			t.Errorf("no audit record of the refused browser request:\n%s", b)
		}

		// localhost: the session's background server, never the host's loopback.
		hostLn, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer hostLn.Close()
		var hostHits sync.WaitGroup
		hostHit := false
		hostHits.Add(1)
		go func() {
			defer hostHits.Done()
			c, err := hostLn.Accept()
			if err == nil {
				hostHit = true
				c.Close()
			}
		}()
		r.writeFile(t, filepath.Join(ws, "site", "index.html"), "<!doctype html><title>dev</title><h1>from the agent's own server</h1>")
		ok("bash", `{"command":"cd site && exec /usr/bin/python3 -m http.server 8123 --bind 127.0.0.1","run_in_background":true}`)
		var got string
		for i := 0; i < 40 && !strings.Contains(got, "agent's own server"); i++ {
			res = call("browser_navigate", `{"url":"http://localhost:8123/"}`)
			if !res.Result.IsError {
				got = ok("browser_snapshot", `{}`).Result.Content
			} else {
				time.Sleep(250 * time.Millisecond)
			}
		}
		if !strings.Contains(got, "from the agent's own server") {
			t.Fatalf("localhost did not reach the session's background server: %s / %+v", got, res.Result)
		}
		port := hostLn.Addr().(*net.TCPAddr).Port
		if res := call("browser_navigate", fmt.Sprintf(`{"url":"http://localhost:%d/"}`, port)); !res.Result.IsError || !strings.Contains(res.Result.Content, "no background process of this session listens there") {
			t.Fatalf("localhost reached a port of the host's loopback: %+v", res.Result)
		}
		hostLn.Close()
		hostHits.Wait()
		if hostHit {
			t.Fatal("the host's loopback listener got a connection from the browser")
		}

		// The agent's browser state is out of its bash's sight.
		res = ok("bash", `{"command":"ls -d \"$HOME\"/.local/state/jail/browser 2>&1; ls /root/.local/state/jail/browser 2>&1; echo done"}`)
		if strings.Contains(res.Result.Content, "agent-") {
			t.Fatalf("a sandboxed bash sees the browser profiles: %s", res.Result.Content)
		}
	})
}

// browserShot checks a screenshot result (a PNG in the workspace with the hash the result
// gives) and returns the hash.
func browserShot(t *testing.T, ws string, res resp) string {
	t.Helper()
	path, _ := res.Result.Meta["path"].(string)
	sum, _ := res.Result.Meta["sha256"].(string)
	b, err := os.ReadFile(filepath.Join(ws, path))
	if err != nil || !strings.HasPrefix(path, ".jail/browser/") {
		t.Fatalf("screenshot %q: %v", path, err)
	}
	if _, err := png.Decode(bytes.NewReader(b)); err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	img, _ := base64.StdEncoding.DecodeString(res.Result.Meta["image_png_base64"].(string))
	if !bytes.Equal(img, b) {
		t.Fatal("the screenshot's image content is not the saved file")
	}
	return sum
}

// TestBrowserKilledJail: kill -9 of jail serve with a browser running leaves no container
// once the grace has passed.
func TestBrowserKilledJail(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		r = needBrowser(t, r)
		agent := browserAgent()
		ws := r.dir(t, "jail-it-browser-kill-")
		pol, _ := r.browserPolicy(t, nil, agent, "none")
		s := r.serve(t, ws, "--policy", pol)
		if res := s.callAs(1, agent, "browser_snapshot", `{}`); res.Result.IsError {
			t.Fatalf("snapshot: %+v\nstderr: %s", res.Result, s.err.String())
		}
		if ids := browserContainers(t, agent); len(ids) != 1 {
			t.Fatalf("browser containers of the agent: %v", ids)
		}
		s.cmd.Process.Signal(syscall.SIGKILL)
		killed := time.Now()
		if !testutil.Eventually(30*time.Second, func() bool { return len(browserContainers(t, agent)) == 0 }) {
			t.Fatalf("a browser container is still there 30 s after kill -9 of jail")
		}
		t.Logf("container gone %v after kill -9 of jail serve", time.Since(killed).Round(100*time.Millisecond))
	})
}

// TestBrowserDockerUnavailable: with no engine the browser tools fail with the reason and the
// fix and are not listed, and the other tools work.
func TestBrowserDockerUnavailable(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		agent := browserAgent()
		ws := r.dir(t, "jail-it-browser-nodocker-")
		r.writeFile(t, filepath.Join(ws, "hello.txt"), "still here\n")
		pol, _ := r.browserPolicy(t, nil, agent, "none")
		s := r.serveEnv(t, ws, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, "--policy", pol)
		res := s.callAs(1, agent, "browser_navigate", `{"url":"http://web.test/"}`)
		if !res.Result.IsError || !strings.Contains(res.Result.Content, "Docker is not reachable at unix:///nonexistent/docker.sock") {
			t.Errorf("browser_navigate without Docker: %+v", res.Result)
		}
		if res := s.callAs(2, agent, "read", `{"path":"hello.txt"}`); res.Result.IsError || !strings.Contains(res.Result.Content, "still here") {
			t.Errorf("read without Docker: %+v", res.Result)
		}
		s.send(fmt.Sprintf(`{"id":3,"type":"list_tools","context":{"agent":%q}}`, agent))
		for _, d := range s.next().Tools {
			if strings.HasPrefix(d.Name, "browser_") {
				t.Errorf("list_tools offers %s without Docker", d.Name)
			}
		}
	})
}

// TestBrowserLocalhostUnderHostMode: under [network] mode = "host" a background process shares
// the host's network namespace, so its loopback is the host's: the browser's localhost is
// refused there, with the reason, and a server on the host's loopback gets no connection,
// neither directly nor through a redirect to 127.0.0.1.
func TestBrowserLocalhostUnderHostMode(t *testing.T) {
	h := newTestHosts(t)
	site := &pageSite{}
	h.pages = site.handler
	forEach(t, func(t *testing.T, r runner) {
		r = needBrowser(t, r)
		agent := browserAgent()
		ws := r.dir(t, "jail-it-brhost-")
		pol, _ := r.browserPolicy(t, h, agent, "host")
		s := r.serve(t, ws, "--policy", pol)
		hostLn, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer hostLn.Close()
		hits := make(chan struct{}, 8)
		go func() {
			for {
				c, err := hostLn.Accept()
				if err != nil {
					return
				}
				hits <- struct{}{}
				c.Close()
			}
		}()
		port := hostLn.Addr().(*net.TCPAddr).Port
		id := 1
		if res := s.callAs(id, agent, "bash", `{"command":"sleep 300","run_in_background":true}`); res.Result.IsError {
			t.Fatalf("background: %+v", res.Result)
		}
		for _, url := range []string{
			fmt.Sprintf("http://localhost:%d/direct", port),
			fmt.Sprintf("http://127.0.0.1:%d/literal", port),
		} {
			id++
			res := s.callAs(id, agent, "browser_navigate", fmt.Sprintf(`{"url":%q}`, url))
			if !res.Result.IsError || !strings.Contains(res.Result.Content, `mode = \"host\"`) && !strings.Contains(res.Result.Content, `mode = "host"`) {
				t.Errorf("%s under host mode: %+v", url, res.Result)
			}
		}
		select {
		case <-hits:
			t.Fatal("the host's loopback listener got a connection from the browser under host mode")
		case <-time.After(500 * time.Millisecond):
		}
	})
}
