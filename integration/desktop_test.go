//go:build linux

package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The desktop tests drive real containers: a Docker engine (scripts/dockerd.sh) and the
// desktop image (make images). Without them they skip with the reason, except under
// JAIL_REQUIRE_DOCKER=1 (make test), where they fail.

const desktopImage = "jail-desktop:local"

// dockerAPI calls the local engine's API directly: the test's own evidence, independent of
// jail's client.
func dockerAPI(method, path string) (*http.Response, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", "/var/run/docker.sock")
		}}}
	req, err := http.NewRequest(method, "http://docker"+path, nil)
	if err != nil {
		return nil, err
	}
	return c.Do(req)
}

// needDesktop skips (or fails under JAIL_REQUIRE_DOCKER=1) without an engine and the desktop
// image, and returns r able to use Docker.
func needDesktop(t *testing.T, r runner) runner {
	t.Helper()
	return needDocker(t, r, desktopImage)
}

// needDocker skips (or fails under JAIL_REQUIRE_DOCKER=1) without an engine and image, and
// returns r able to use Docker: as the unprivileged user, a member of the docker group.
func needDocker(t *testing.T, r runner, image string) runner {
	t.Helper()
	why := ""
	if resp, err := dockerAPI("GET", "/images/"+image+"/json"); err != nil {
		why = fmt.Sprintf("no Docker engine on /var/run/docker.sock (scripts/dockerd.sh): %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != 200 {
			why = fmt.Sprintf("image %s missing (make images): HTTP %d", image, resp.StatusCode)
		}
	}
	if why == "" && r.uid != 0 && r.uid != os.Getuid() {
		g, err := user.LookupGroup("docker")
		if err != nil {
			why = "no docker group for the unprivileged user: " + err.Error()
		} else {
			gid, _ := strconv.Atoi(g.Gid)
			r.groups = []uint32{uint32(gid)}
		}
	}
	if why != "" {
		if os.Getenv("JAIL_REQUIRE_DOCKER") == "1" {
			t.Fatalf("JAIL_REQUIRE_DOCKER=1: %s", why)
		}
		t.Skip("requires Docker: " + why)
	}
	return r
}

// desktopPolicy enables Docker and passes the desktop tools without asking.
func (r runner) desktopPolicy(t *testing.T, extra string) (file, audit string) {
	t.Helper()
	return r.dockerPolicy(t, dockerRole{category: "desktop", role: "gui", agent: "tester", extra: extra,
		tools: []string{"desktop_launch", "desktop_screenshot", "desktop_click", "desktop_move", "desktop_drag",
			"desktop_scroll", "desktop_type", "desktop_key", "desktop_cursor_position", "desktop_windows", "desktop_wait_for_window"}})
}

// dockerRole is what dockerPolicy gives a Docker-backed category's tests.
type dockerRole struct {
	category    string   // browser, desktop: the remit, and the approval that passes them
	role, agent string   // [roles.ROLE], [agents.AGENT]
	tools       []string // the role's defaults besides read, ls and bash
	extra       string   // more TOML ([network], ...)
}

// dockerPolicy writes a policy that enables Docker and the full toolset, and gives the agent
// a role of the category's tools, passed (with bash and processes) without asking; the audit
// log is in the policy's directory.
func (r runner) dockerPolicy(t *testing.T, d dockerRole) (file, audit string) {
	t.Helper()
	dir := r.dir(t, "jail-it-"+d.category+"-cfg-")
	file = filepath.Join(dir, "policy.toml")
	audit = filepath.Join(dir, "audit", "audit.jsonl")
	defaults := []string{"read", "ls", "bash"}
	var quoted []string
	for _, n := range append(defaults, d.tools...) {
		quoted = append(quoted, strconv.Quote(n))
	}
	r.writeFile(t, file, fmt.Sprintf(`[docker]
enabled = true
idle_grace = "2m"
%s
[tools]
profile = "full"
[approval]
auto_approve = ["bash", %q, "process"]
[roles.%s]
remit = ["fs.read", "fs.write", "process.exec", %q]
max_risk = "exec"
defaults = [%s]
[agents.%s]
role = %q
[audit]
path = %q
`, d.extra, d.category, d.role, d.category, strings.Join(quoted, ", "), d.agent, d.role, audit))
	return file, audit
}

// serveEnv is serve with extra environment; it gives the server 30 s to exit at the end (its
// containers go with it).
func (r runner) serveEnv(t *testing.T, ws string, env []string, args ...string) *served {
	t.Helper()
	return r.startServe(t, ws, env, 30*time.Second, args...)
}

// shot decodes a screenshot result and checks its file and hash.
func shot(t *testing.T, ws string, res resp) image.Image {
	t.Helper()
	if res.Result.IsError {
		t.Fatalf("desktop_screenshot: %+v", res.Result)
	}
	m := res.Result.Meta
	b, err := base64.StdEncoding.DecodeString(fmt.Sprint(m["image_png_base64"]))
	if err != nil {
		t.Fatalf("image: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if img.Bounds().Dx() != 1280 || img.Bounds().Dy() != 800 {
		t.Fatalf("screenshot %v, want the advertised 1280x800", img.Bounds())
	}
	path := fmt.Sprint(m["path"])
	if !strings.HasPrefix(path, ".jail/desktop/screenshots/") || !strings.HasSuffix(path, ".png") {
		t.Fatalf("saved at %q", path)
	}
	file, err := os.ReadFile(filepath.Join(ws, path))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(file)
	if hex.EncodeToString(sum[:]) != m["sha256"] || !bytes.Equal(file, b) {
		t.Fatalf("the file's hash %x is not the result's %v (or its bytes differ from the image returned)", sum, m["sha256"])
	}
	if !strings.Contains(res.Result.Content, fmt.Sprint(m["sha256"])) {
		t.Errorf("the result text does not carry the hash: %q", res.Result.Content)
	}
	return img
}

func differ(a, b image.Image) int {
	n := 0
	for y := 0; y < a.Bounds().Dy(); y += 2 {
		for x := 0; x < a.Bounds().Dx(); x += 2 {
			if a.At(x, y) != b.At(x, y) {
				n++
			}
		}
	}
	return n
}

const tkApp = `import tkinter as tk
root = tk.Tk()
root.title("jail-tk-waiting")
root.geometry("400x200+0+0")
label = tk.Label(root, text="waiting", bg="white", fg="black")
label.place(x=20, y=110, width=360, height=60)
def clicked():
    label.config(text="CLICKED", bg="red")
    root.title("jail-tk-clicked")
tk.Button(root, text="Press me", command=clicked).place(x=20, y=20, width=160, height=60)
root.mainloop()
`

// TestDesktop: a real container with a real X app, driven through jail serve as root and as
// a user of the docker group: an xterm takes a typed command and Return, and the screenshot
// after differs from the one before; a Tk app from the workspace changes its label when its
// button is clicked; an app that dies gives "app not running" with its status and output;
// the container's end is in the audit log; kill -9 of jail leaves no container behind.
func TestDesktop(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		r = needDesktop(t, r)
		ws := r.dir(t, "jail-it-desktop-")
		r.writeFile(t, filepath.Join(ws, "app.py"), tkApp)
		pol, audit := r.desktopPolicy(t, "")
		s := r.serve(t, ws, "--policy", pol)
		ctx := `"context":{"agent":"tester","task_id":"t1"}`
		id := 0
		call := func(tool, args string) (resp, time.Duration) {
			id++
			start := time.Now()
			s.send(fmt.Sprintf(`{"id":%d,"tool":%q,"args":%s,%s}`, id, tool, args, ctx))
			res := s.next()
			if res.Type != "result" || string(res.ID) != strconv.Itoa(id) {
				t.Fatalf("call %d (%s): %+v", id, tool, res)
			}
			return res, time.Since(start)
		}
		must := func(tool, args string) (resp, time.Duration) {
			res, d := call(tool, args)
			if res.Result.IsError {
				t.Fatalf("%s %s: %s\nstderr: %s", tool, args, res.Result.Content, s.err.String())
			}
			return res, d
		}

		// The xterm: launch (cold: the container starts), screenshot, type, Return.
		res, launchTook := must("desktop_launch", `{"command":"xterm -geometry 80x24+0+0"}`)
		if !strings.Contains(res.Result.Content, `"xterm"`) {
			t.Errorf("launch: %q", res.Result.Content)
		}
		res, shotTook := must("desktop_screenshot", `{}`)
		before := shot(t, ws, res)
		t.Logf("launch to first screenshot (cold container): %v (launch %v, screenshot %v)", launchTook+shotTook, launchTook, shotTook)
		_, typeTook := must("desktop_type", `{"text":"echo jail-desktop-works"}`)
		_, keyTook := must("desktop_key", `{"keys":"Return"}`)
		res, shotTook = must("desktop_screenshot", `{}`)
		after := shot(t, ws, res)
		if n := differ(before, after); n < 50 {
			t.Errorf("the screenshot after typing differs in %d sampled pixels from the one before", n)
		}
		res, _ = must("desktop_windows", `{}`)
		if !strings.Contains(res.Result.Content, `"xterm" at (0, 0)`) {
			t.Errorf("windows: %q", res.Result.Content)
		}
		res, curTook := must("desktop_cursor_position", `{}`)
		_ = res
		t.Logf("per action: type %v, key %v, screenshot %v, cursor %v", typeTook, keyTook, shotTook, curTook)

		// The Tk app from the workspace: click its button, see the label change.
		must("desktop_launch", `{"command":"python3 app.py"}`)
		must("desktop_wait_for_window", `{"title":"^jail-tk-waiting$"}`)
		res, _ = must("desktop_screenshot", `{}`)
		tkBefore := shot(t, ws, res)
		_, clickTook := must("desktop_click", `{"x":100,"y":50}`)
		must("desktop_wait_for_window", `{"title":"^jail-tk-clicked$","timeout_ms":5000}`)
		res, _ = must("desktop_screenshot", `{}`)
		tkAfter := shot(t, ws, res)
		red := func(img image.Image) bool {
			cr, cg, cb, _ := img.At(200, 140).RGBA()
			return cr>>8 > 200 && cg>>8 < 60 && cb>>8 < 60
		}
		if red(tkBefore) || !red(tkAfter) {
			t.Errorf("the label's pixel at (200, 140): before %v, after %v; want white, then red", tkBefore.At(200, 140), tkAfter.At(200, 140))
		}
		t.Logf("per action: click %v", clickTook)
		_, dragTook := must("desktop_drag", `{"x":300,"y":300,"to_x":400,"to_y":400}`)
		_, scrollTook := must("desktop_scroll", `{"x":100,"y":100,"direction":"down"}`)
		_, moveTook := must("desktop_move", `{"x":10,"y":10}`)
		t.Logf("per action: drag %v, scroll %v, move %v", dragTook, scrollTook, moveTook)
		// Outside the screen is refused with the size.
		if res, _ := call("desktop_click", `{"x":1280,"y":5}`); !res.Result.IsError || !strings.Contains(res.Result.Content, "1280x800") {
			t.Errorf("a click outside the screen: %+v", res.Result)
		}

		// An app that dies: the launch and every call after say so, with status and output.
		res, _ = call("desktop_launch", `{"command":"echo about-to-die; exit 3"}`)
		if !res.Result.IsError || !strings.Contains(res.Result.Content, "app not running") || !strings.Contains(res.Result.Content, "exit status 3") ||
			!strings.Contains(res.Result.Content, "about-to-die") {
			t.Errorf("a dying app's launch: %+v", res.Result)
		}
		for _, tool := range []string{"desktop_screenshot", "desktop_click"} {
			args := `{}`
			if tool == "desktop_click" {
				args = `{"x":5,"y":5}`
			}
			res, _ = call(tool, args)
			if !res.Result.IsError || !strings.Contains(res.Result.Content, "app not running: echo about-to-die; exit 3 ended (exit status 3)") ||
				res.Result.Meta["image_png_base64"] != nil {
				t.Errorf("%s on a dead app: %+v", tool, res.Result)
			}
		}

		// The server ends: its container ends and is recorded.
		s.in.Close()
		s.cmd.Wait()
		if !testutil.Eventually(20*time.Second, func() bool { return len(desktopContainers(t, ws)) == 0 }) {
			t.Errorf("containers left after jail serve ended: %v", desktopContainers(t, ws))
		}
		b, err := os.ReadFile(audit)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, line := range strings.Split(string(b), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil || rec["type"] != "container" {
				continue
			}
			found = true
			if rec["kind"] != "desktop" || rec["agent"] != "tester" || rec["task"] != "t1" || rec["end"] != "released" ||
				rec["stdout_bytes"].(float64) < 1000 || rec["stderr"] != nil {
				t.Errorf("container record: %s", line)
			}
			if reqs, _ := rec["requests"].([]any); len(reqs) < 10 {
				t.Errorf("container record lists %d requests: %s", len(reqs), line)
			}
		}
		if !found {
			t.Errorf("no container record in the audit log:\n%s", b)
		}
	})
}

// desktopContainers are the ids of jail's desktop containers that bind ws.
func desktopContainers(t *testing.T, ws string) []string {
	t.Helper()
	f := url.QueryEscape(`{"label":["org.jail-sandbox.managed=1","org.jail-sandbox.kind=desktop"]}`)
	resp, err := dockerAPI("GET", "/containers/json?all=1&filters="+f)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []struct {
		ID     string `json:"Id"`
		Mounts []struct{ Source string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list {
		for _, m := range c.Mounts {
			if m.Source == ws {
				ids = append(ids, c.ID[:12])
			}
		}
	}
	return ids
}

// TestDesktopKilledJail: kill -9 of jail serve with a desktop running leaves no container
// once the grace (5 s) has passed.
func TestDesktopKilledJail(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		r = needDesktop(t, r)
		ws := r.dir(t, "jail-it-desktop-kill-")
		pol, _ := r.desktopPolicy(t, "")
		s := r.serve(t, ws, "--policy", pol)
		res := s.call(1, "desktop_launch", `{"command":"xterm"}`)
		if res.Result.IsError {
			t.Fatalf("launch: %+v\nstderr: %s", res.Result, s.err.String())
		}
		ids := desktopContainers(t, ws)
		if len(ids) != 1 {
			t.Fatalf("desktop containers of the workspace: %v", ids)
		}
		s.cmd.Process.Signal(syscall.SIGKILL)
		killed := time.Now()
		if !testutil.Eventually(30*time.Second, func() bool { return len(desktopContainers(t, ws)) == 0 }) {
			t.Fatalf("container %v still there 30 s after kill -9 of jail", ids)
		}
		t.Logf("container gone %v after kill -9 of jail serve", time.Since(killed).Round(100*time.Millisecond))
	})
}

// TestDesktopDockerUnavailable: with no engine, the desktop tools fail with the reason and
// the fix, jail check lists them as unready saying why, and the other tools work.
func TestDesktopDockerUnavailable(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-desktop-nodocker-")
		r.writeFile(t, filepath.Join(ws, "hello.txt"), "still here\n")
		pol, _ := r.desktopPolicy(t, "")
		env := []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}
		s := r.serveEnv(t, ws, env, "--policy", pol)
		res := s.call(1, "desktop_screenshot", `{}`)
		if !res.Result.IsError || !strings.Contains(res.Result.Content, "Docker is not reachable at unix:///nonexistent/docker.sock") ||
			!strings.Contains(res.Result.Content, "scripts/dockerd.sh") {
			t.Errorf("desktop_screenshot without Docker: %+v", res.Result)
		}
		if res := s.call(2, "read", `{"path":"hello.txt"}`); res.Result.IsError || !strings.Contains(res.Result.Content, "still here") {
			t.Errorf("read without Docker: %+v", res.Result)
		}
		s.send(`{"id":3,"type":"list_tools"}`)
		lt := s.next()
		for _, d := range lt.Tools {
			if strings.HasPrefix(d.Name, "desktop_") {
				t.Errorf("list_tools offers %s without Docker", d.Name)
			}
		}

		// jail check, with a user policy that enables Docker.
		cfg := r.dir(t, "jail-it-desktop-xdg-")
		r.writeFile(t, filepath.Join(cfg, "jail", "policy.toml"), "[docker]\nenabled = true\n")
		r.own(t, cfg)
		out := r.jail(t, call{args: []string{"check"}, dir: ws, env: append(env, "XDG_CONFIG_HOME="+cfg)})
		if !regexp.MustCompile(`(?m)^tool .*\bdesktop_screenshot\b.* unready `).MatchString(out.stdout) || !strings.Contains(out.stdout, "Docker is not reachable at unix:///nonexistent/docker.sock") {
			t.Errorf("jail check without Docker:\n%s", out.stdout)
		}
		if !regexp.MustCompile(`(?m)^tool read +ready`).MatchString(out.stdout) {
			t.Errorf("jail check: read is not ready:\n%s", out.stdout)
		}
	})
}

// TestDesktopMCPImage: over MCP (the official Go SDK's client against jail mcp), a
// desktop_screenshot result carries the screen as an image block, the text naming its file
// and hash.
func TestDesktopMCPImage(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		r = needDesktop(t, r)
		ws := r.dir(t, "jail-it-desktop-mcp-")
		pol, _ := r.desktopPolicy(t, "")
		cmd := exec.Command(suite.bin, "mcp", "-w", ws, "--policy", pol, "--agent", "tester")
		cmd.Dir = ws
		r.prepare(cmd)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "jail-it", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "desktop_screenshot", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		var text string
		var img *mcp.ImageContent
		for _, c := range res.Content {
			switch c := c.(type) {
			case *mcp.TextContent:
				text += c.Text
			case *mcp.ImageContent:
				img = c
			}
		}
		if res.IsError || img == nil || img.MIMEType != "image/png" {
			t.Fatalf("desktop_screenshot over MCP: error %v, text %q, image %v", res.IsError, text, img != nil)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(img.Data))
		if err != nil || cfg.Width != 1280 || cfg.Height != 800 {
			t.Fatalf("the image block: %v %+v", err, cfg)
		}
		sum := sha256.Sum256(img.Data)
		if !strings.Contains(text, hex.EncodeToString(sum[:])) || !strings.Contains(text, ".jail/desktop/screenshots/") {
			t.Errorf("the text %q does not name the file and the image's hash", text)
		}
	})
}

// TestDesktopForgedDriverLine: the app under test runs with the driver's uid and tries to
// write a response of its own into the driver's stdout, and to read its stdin, through
// /proc/PID/fd, of pid 1 (which holds the container's stdio, whatever it is) and of every
// jail process. The driver and jail's init (pid 1) are not dumpable, so both are refused;
// the protocol stays intact (and were a line forged anyway, the supervisor would take it as
// out of step and end that desktop).
func TestDesktopForgedDriverLine(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		r = needDesktop(t, r)
		ws := r.dir(t, "jail-it-desktop-forge-")
		r.writeFile(t, filepath.Join(ws, "forge.sh"), `n=0
for p in /proc/[0-9]*; do
  case "$p $(tr '\0' ' ' < $p/cmdline 2>/dev/null)" in
  "/proc/1 "*|*" /run/jail/jail __"*)
    n=$((n+1))
    if echo '{"id":2,"result":{"png":"Zm9yZ2Vk","width":1280,"height":800}}' > $p/fd/1 2>/dev/null; then echo "forged-into-$p"; else echo "stdout-refused-$n"; fi
    if timeout 1 head -c1 $p/fd/0 >/dev/null 2>&1; then echo "read-stdin-$p"; else echo "stdin-refused-$n"; fi ;;
  esac
done >/tmp/forge-result
exec xterm
`)
		r.writeFile(t, filepath.Join(ws, "verdict.sh"), "cat /tmp/forge-result; exit 7\n")
		pol, _ := r.desktopPolicy(t, "")
		s := r.serve(t, ws, "--policy", pol)
		if res := s.call(1, "desktop_launch", `{"command":"sh forge.sh"}`); res.Result.IsError {
			t.Fatalf("launch: %+v", res.Result)
		}
		res := s.call(2, "desktop_screenshot", `{}`)
		shot(t, ws, res)
		// The verdict, as the last output of an app that prints it and exits.
		res = s.call(3, "desktop_launch", `{"command":"sh verdict.sh"}`)
		out := res.Result.Content
		if !res.Result.IsError || !strings.Contains(out, "exit status 7") {
			t.Fatalf("the verdict app: %+v", res.Result)
		}
		if strings.Contains(out, "forged-into") || strings.Contains(out, "read-stdin") ||
			!strings.Contains(out, "stdout-refused-2") || !strings.Contains(out, "stdin-refused-2") {
			t.Errorf("the app reached the driver's or init's stdio (want both refused, for both): %s", out)
		}
	})
}
