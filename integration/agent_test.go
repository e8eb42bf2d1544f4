package integration

// Agent profiles (docs/agents.md), with the real agent CLIs: @anthropic-ai/claude-code and
// @openai/codex, installed from the npm registry into the unprivileged user's ~/.local as a
// user would install them. Each talks to a fake API server on a test host (the network
// namespace of network_test.go) through jail's egress proxy, pointed there by its base-URL
// setting; every other host stays refused. What the agent may change in its own config is
// judged on the host side.

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// agentPackages are the npm packages the test installs.
var agentPackages = []string{"@anthropic-ai/claude-code", "@openai/codex"}

// agentCacheDir is the test's own npm cache: a second install (another test run on this
// machine, or the jailtest home wiped) comes from it instead of the registry.
const agentCacheDir = "/var/tmp/jail-it-agents-npm"

// installAgents installs the agent CLIs into the unprivileged user's ~/.local (npm install -g
// --prefix ~/.local), unless an earlier run of the suite installed them there, and returns
// that ~/.local.
func installAgents(t *testing.T) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("requires npm: not on PATH (scripts/deps.sh installs it)")
	}
	u := runner{name: "user", uid: suite.uid, gid: suite.gid}
	local := filepath.Join(u.homeOf(t), ".local")
	have := func() bool {
		for _, b := range []string{"claude", "codex"} {
			if _, err := os.Stat(filepath.Join(local, "bin", b)); err != nil {
				return false
			}
		}
		return true
	}
	// The root runner runs the same install (read-only): root inside a sandbox holds no
	// capability that would let it into a private directory of jailtest's.
	defer os.Chmod(local, 0o755)
	if have() {
		return local
	}
	os.MkdirAll(agentCacheDir, 0o755)
	u.own(t, agentCacheDir)
	args := append([]string{"install", "-g", "--prefix", local, "--cache", agentCacheDir, "--prefer-offline",
		"--no-audit", "--no-fund", "--no-update-notifier"}, agentPackages...)
	// A machine that reaches the registry through a gateway with its own certificate authority
	// says so in npm's configuration (cafile) or NODE_EXTRA_CA_CERTS; the user's install uses
	// the same.
	var extra []string
	if out, err := exec.Command(npm, "config", "get", "cafile").Output(); err == nil {
		if ca := strings.TrimSpace(string(out)); filepath.IsAbs(ca) {
			args = append(args, "--cafile", ca)
		}
	}
	if ca := os.Getenv("NODE_EXTRA_CA_CERTS"); ca != "" {
		extra = append(extra, "NODE_EXTRA_CA_CERTS="+ca)
	}
	cmd := exec.Command(npm, args...)
	u.prepare(cmd, extra...)
	cmd.Dir = u.homeOf(t)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("installed %v into %s in %s", agentPackages, local, time.Since(start).Round(time.Second))
	if !have() {
		t.Fatalf("npm install left no claude and codex in %s/bin:\n%s", local, out)
	}
	return local
}

// fakeAPI answers as the Anthropic Messages API and the OpenAI Responses API would, with one
// fixed reply, and records what it was asked.
type fakeAPI struct {
	mu       sync.Mutex
	requests []string // "METHOD PATH key=KEY"
}

const fakeReply = "PONG-FROM-FAKE-API"

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	f.mu.Lock()
	f.requests = append(f.requests, fmt.Sprintf("%s %s key=%s", r.Method, r.URL.Path, key))
	f.mu.Unlock()
	sse := func(events ...[2]string) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e[0], e[1])
		}
	}
	text, _ := json.Marshal(fakeReply)
	switch {
	case strings.HasPrefix(r.URL.Path, "/v1/messages") && strings.Contains(string(body), `"stream":true`):
		sse([2]string{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}`},
			[2]string{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
			[2]string{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + string(text) + `}}`},
			[2]string{"content_block_stop", `{"type":"content_block_stop","index":0}`},
			[2]string{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}`},
			[2]string{"message_stop", `{"type":"message_stop"}`})
	case strings.HasPrefix(r.URL.Path, "/v1/messages"):
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`, text)
	case strings.HasSuffix(r.URL.Path, "/responses"):
		sse([2]string{"response.created", `{"type":"response.created","response":{"id":"resp_1"}}`},
			[2]string{"response.output_item.done", `{"type":"response.output_item.done","item":{"type":"message","role":"assistant","id":"msg_1","content":[{"type":"output_text","text":` + string(text) + `}]}}`},
			[2]string{"response.completed", `{"type":"response.completed","response":{"id":"resp_1","usage":{"input_tokens":1,"input_tokens_details":null,"output_tokens":1,"output_tokens_details":null,"total_tokens":2}}}`})
	default:
		http.NotFound(w, r)
	}
}

// asked reports whether a request for path with key reached the fake.
func (f *fakeAPI) asked(path, key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.requests {
		if strings.Contains(r, " "+path) && strings.HasSuffix(r, "key="+key) {
			return true
		}
	}
	return false
}

// agentHome makes a home for r outside /tmp (the sandbox's /tmp is its own), with the agent
// settings a user would have: Claude Code's ~/.claude.json, and Codex's config.toml naming
// the fake API as its model provider.
func (r runner) agentHome(t *testing.T, codexURL string) string {
	t.Helper()
	h, err := os.MkdirTemp("/home", "jail-it-agenthome-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(h) })
	os.Chmod(h, 0o755)
	r.writeFile(t, filepath.Join(h, ".claude.json"), `{"hostMarker":"written-on-the-host","hasCompletedOnboarding":true}`)
	r.writeFile(t, filepath.Join(h, ".codex", "config.toml"), fmt.Sprintf(`model = "gpt-5"
model_provider = "fake"
[model_providers.fake]
name = "fake"
base_url = %q
env_key = "OPENAI_API_KEY"
wire_api = "responses"
supports_websockets = false
`, codexURL))
	r.own(t, h)
	return h
}

func TestAgentProfiles(t *testing.T) {
	h := newTestHosts(t)
	local := installAgents(t)
	api := &fakeAPI{}
	var ln net.Listener
	inNetns(t, h.ns, func() error {
		var err error
		ln, err = net.Listen("tcp", netip.AddrPortFrom(h.web, 8080).String())
		return err
	})
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }() // until srv.Close below
	t.Cleanup(func() { srv.Close(); <-done })
	apiHost := netip.AddrPortFrom(h.web, 8080).String()
	base := "http://" + apiHost

	forEach(t, func(t *testing.T, r runner) {
		home := r.agentHome(t, base+"/v1")
		ws := r.dir(t, "jail-it-agent-ws-")
		cfg := r.dir(t, "jail-it-agent-cfg-")
		policyFile := filepath.Join(cfg, "policy.toml")
		// The profiles' own API hosts are replaced by the fake's; the test host is private, so
		// allow_private lists its subnet.
		r.writeFile(t, policyFile, fmt.Sprintf("[network]\nallow_private = [%q]\n[audit]\npath = %q\n[profiles.claude]\nallow = [%q]\n[profiles.codex]\nallow = [%q]\n",
			h.subnet.String(), filepath.Join(cfg, "audit.jsonl"), apiHost, apiHost))
		env := []string{"HOME=" + home, "ANTHROPIC_API_KEY=sk-fake-claude", "ANTHROPIC_BASE_URL=" + base,
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "OPENAI_API_KEY=sk-fake-codex"}
		run := func(argv ...string) result {
			args := append([]string{"run", "--policy", policyFile, "--ro", local, "--"}, argv...)
			return r.jail(t, call{dir: ws, env: env, args: args, limit: 3 * time.Minute})
		}
		claude, codex := filepath.Join(local, "bin", "claude"), filepath.Join(local, "bin", "codex")

		t.Run("version", func(t *testing.T) {
			res := run(claude, "--version")
			mustExit(t, res, 0)
			if !strings.Contains(res.stdout, "Claude Code") {
				t.Fatalf("claude --version: %q\nstderr: %s", res.stdout, res.stderr)
			}
			res = run(codex, "--version")
			mustExit(t, res, 0)
			if !strings.Contains(res.stdout, "codex-cli") {
				t.Fatalf("codex --version: %q\nstderr: %s", res.stdout, res.stderr)
			}
		})

		t.Run("claude", func(t *testing.T) {
			res := run(claude, "-p", "say pong")
			mustExit(t, res, 0)
			if !strings.Contains(res.stdout, fakeReply) || !api.asked("/v1/messages", "sk-fake-claude") {
				t.Fatalf("claude -p did not get the fake API's reply: %q\nstderr: %s\nrequests: %v", res.stdout, res.stderr, api.requests)
			}
			if !strings.Contains(res.stderr, "proxy mode") {
				t.Fatalf("the claude profile did not open the proxy:\n%s", res.stderr)
			}
			// Claude Code rewrote ~/.claude.json (temp file, rename over it) in the
			// workspace's persistent home; the host's copy is untouched.
			if b, _ := os.ReadFile(filepath.Join(home, ".claude.json")); string(b) != `{"hostMarker":"written-on-the-host","hasCompletedOnboarding":true}` {
				t.Fatalf("the host's ~/.claude.json changed: %s", b)
			}
			inside := run("/bin/sh", "-c", `cat ~/.claude.json`)
			if !strings.Contains(inside.stdout, "written-on-the-host") || !strings.Contains(inside.stdout, "firstStartTime") {
				t.Fatalf("the sandbox's ~/.claude.json is not the seeded copy Claude Code saved: %q\n%s", inside.stdout, inside.stderr)
			}
			// Session state lands in the host's ~/.claude, shared with claude outside jail.
			if ents, _ := os.ReadDir(filepath.Join(home, ".claude", "projects")); len(ents) == 0 {
				t.Fatalf("no session state in the host's ~/.claude/projects")
			}
		})

		t.Run("codex", func(t *testing.T) {
			res := run(codex, "exec", "--skip-git-repo-check", "say pong")
			mustExit(t, res, 0)
			if !strings.Contains(res.stdout, fakeReply) || !api.asked("/v1/responses", "sk-fake-codex") {
				t.Fatalf("codex exec did not get the fake API's reply: %q\nstderr: %s\nrequests: %v", res.stdout, res.stderr, api.requests)
			}
			if ents, _ := os.ReadDir(filepath.Join(home, ".codex", "sessions")); len(ents) == 0 {
				t.Fatalf("no session state in the host's ~/.codex/sessions")
			}
		})

		t.Run("other-hosts-refused", func(t *testing.T) {
			before := h.hitCount(h.web) + h.hitCount(h.internal)
			res := r.jail(t, call{dir: ws, env: env, args: []string{"run", "--policy", policyFile, "--profile", "claude", "--", "/bin/sh", "-c",
				fmt.Sprintf(`curl -s -o /dev/null -w 'api=%%{http_code}\n' %s/v1/messages -d '{}'; curl -s -m 10 -o /dev/null -w 'web=%%{http_code}\n' http://%s/; curl -s -m 10 -o /dev/null -w 'internal=%%{http_code}\n' http://%s/; exit 0`, base, h.web, h.internal)}})
			mustExit(t, res, 0)
			if !strings.Contains(res.stdout, "api=200") {
				t.Fatalf("the profile's API host was not reachable:\n%s\n%s", res.stdout, res.stderr)
			}
			if strings.Contains(res.stdout, "web=200") || strings.Contains(res.stdout, "internal=200") {
				t.Fatalf("a host the profile does not allow was reached:\n%s", res.stdout)
			}
			if n := h.hitCount(h.web) + h.hitCount(h.internal) - before; n != 0 {
				t.Fatalf("the test hosts' other servers served %d requests from the sandbox", n)
			}
		})

		t.Run("own-config", func(t *testing.T) {
			// What would run code, or steer the agent, outside jail later is read-only
			// inside; login and session state are writable (TestAgentConfigReadOnly tries
			// every other name).
			// The login file is state the agent rewrites: bound when it exists, written in place.
			r.writeFile(t, filepath.Join(home, ".claude", ".credentials.json"), "{}\n")
			r.writeFile(t, filepath.Join(home, ".claude", "settings.json"), "{}\n")
			r.writeFile(t, filepath.Join(home, ".codex", "auth.json"), "{}\n")
			res := r.jail(t, call{dir: ws, env: env, args: []string{"run", "--policy", policyFile, "--profile", "claude", "--net", "none", "--", "/bin/sh", "-c", `
echo '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}' > ~/.claude/settings.json && echo WROTE-SETTINGS
mv ~/.claude/settings.json ~/.claude/old && echo MOVED-SETTINGS
rm -f ~/.claude/settings.json && echo REMOVED-SETTINGS
echo 'touch /tmp/pwned' > ~/.claude/hooks/h.sh && echo WROTE-HOOK
rmdir ~/.claude/commands && echo REMOVED-COMMANDS
echo '# steer' > ~/.claude/CLAUDE.md && echo WROTE-INSTRUCTIONS
echo token > ~/.claude/.credentials.json && echo CREDENTIALS-OK
mkdir -p ~/.claude/projects/p && echo s > ~/.claude/projects/p/session.jsonl && echo SESSION-OK
echo '{}' > ~/.claude.json.tmp && mv ~/.claude.json.tmp ~/.claude.json && echo CLAUDE-JSON-OK
exit 0`}})
			mustExit(t, res, 0)
			for _, bad := range []string{"WROTE-SETTINGS", "MOVED-SETTINGS", "REMOVED-SETTINGS", "WROTE-HOOK", "REMOVED-COMMANDS", "WROTE-INSTRUCTIONS"} {
				if strings.Contains(res.stdout, bad) {
					t.Errorf("%s inside the sandbox:\n%s", bad, res.stdout)
				}
			}
			for _, good := range []string{"CREDENTIALS-OK", "SESSION-OK", "CLAUDE-JSON-OK"} {
				if !strings.Contains(res.stdout, good) {
					t.Errorf("no %s:\n%s\n%s", good, res.stdout, res.stderr)
				}
			}
			if b, err := os.ReadFile(filepath.Join(home, ".claude", "settings.json")); err != nil || strings.Contains(string(b), "hooks") {
				t.Fatalf("host settings.json: %q, %v", b, err)
			}
			if _, err := os.Lstat(filepath.Join(home, ".claude", "hooks", "h.sh")); err == nil {
				t.Fatalf("a hook script was made in the host's ~/.claude/hooks from inside")
			}
			if b, _ := os.ReadFile(filepath.Join(home, ".claude", ".credentials.json")); string(b) != "token\n" {
				t.Fatalf("the credentials renamed into place inside are not on the host: %q", b)
			}
			if b, _ := os.ReadFile(filepath.Join(home, ".claude.json")); !strings.Contains(string(b), "hostMarker") {
				t.Fatalf("the host's ~/.claude.json was replaced from inside: %q", b)
			}
			res = r.jail(t, call{dir: ws, env: env, args: []string{"run", "--policy", policyFile, "--profile", "codex", "--net", "none", "--", "/bin/sh", "-c", `
echo 'notify = ["/bin/sh", "-c", "touch /tmp/pwned"]' >> ~/.codex/config.toml && echo WROTE-CONFIG
echo steer > ~/.codex/AGENTS.md && echo WROTE-AGENTS
echo '{"k":1}' > ~/.codex/auth.json && echo AUTH-OK
exit 0`}})
			mustExit(t, res, 0)
			if strings.Contains(res.stdout, "WROTE-") || !strings.Contains(res.stdout, "AUTH-OK") {
				t.Fatalf("codex profile inside:\n%s\n%s", res.stdout, res.stderr)
			}
			if b, _ := os.ReadFile(filepath.Join(home, ".codex", "config.toml")); strings.Contains(string(b), "notify") {
				t.Fatalf("the host's codex config.toml was changed from inside: %s", b)
			}
		})
	})
}
