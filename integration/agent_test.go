//go:build linux

package integration

// Agent profiles (docs/agents.md), with the real agent CLIs: @anthropic-ai/claude-code,
// @openai/codex, @google/gemini-cli and opencode-ai, installed from the npm registry into the
// unprivileged user's ~/.local as a user would install them. (aider is a PyPI package, which
// this test's machines cannot reach: its profile's files are tried by TestAgentConfigReadOnly.) Each talks to a fake API server on a test host (the network
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
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// agentPackages are the npm packages the test installs.
var agentPackages = []string{"@anthropic-ai/claude-code", "@openai/codex", "@google/gemini-cli", "opencode-ai"}

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
		for _, b := range []string{"claude", "codex", "gemini", "opencode"} {
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
		t.Fatalf("npm install left no claude, codex, gemini and opencode in %s/bin:\n%s", local, out)
	}
	return local
}

// fakeAPI answers as the Anthropic Messages API, the OpenAI Responses API and the Gemini API
// would, with one fixed reply, and records what it was asked.
type fakeAPI struct {
	mu       sync.Mutex
	requests []string // "METHOD PATH key=KEY"
}

const fakeReply = "PONG-FROM-FAKE-API"

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		key = r.Header.Get("X-Goog-Api-Key")
	}
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
	case strings.Contains(r.URL.Path, ":streamGenerateContent"):
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":%s}]},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":1,\"candidatesTokenCount\":1,\"totalTokenCount\":2}}\n\n", text)
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
	// Gemini CLI with an API key, and opencode with the Anthropic provider at the fake.
	r.writeFile(t, filepath.Join(h, ".gemini", "settings.json"), `{"security":{"auth":{"selectedType":"gemini-api-key"}}}`)
	r.writeFile(t, filepath.Join(h, ".config", "opencode", "opencode.json"), fmt.Sprintf(`{"model":"anthropic/claude-sonnet-4-5","provider":{"anthropic":{"options":{"baseURL":%q,"apiKey":"sk-fake-opencode"}}}}`, strings.TrimSuffix(codexURL, "/v1")+"/v1"))
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
		r.writeFile(t, policyFile, fmt.Sprintf("[network]\nallow_private = [%q]\n[audit]\npath = %q\n[profiles.claude]\nallow = [%[3]q]\n[profiles.codex]\nallow = [%[3]q]\n[profiles.gemini]\nallow = [%[3]q]\n[profiles.opencode]\nallow = [%[3]q]\n",
			h.subnet.String(), filepath.Join(cfg, "audit.jsonl"), apiHost))
		env := []string{"HOME=" + home, "ANTHROPIC_API_KEY=sk-fake-claude", "ANTHROPIC_BASE_URL=" + base,
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "OPENAI_API_KEY=sk-fake-codex",
			"GEMINI_API_KEY=sk-fake-gemini", "GOOGLE_GEMINI_BASE_URL=" + base, "GEMINI_CLI_TRUST_WORKSPACE=true",
			"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1"}
		runEnv := func(extra []string, argv ...string) result {
			args := []string{"run", "--policy", policyFile, "--ro", local}
			if argv[0] == "/bin/sh" {
				args = append(args, "--profile", "claude")
			}
			args = append(append(args, "--"), argv...)
			return r.jail(t, call{dir: ws, env: append(slices.Clone(env), extra...), args: args, limit: 3 * time.Minute})
		}
		run := func(argv ...string) result { return runEnv(nil, argv...) }
		bin := func(name string) string { return filepath.Join(local, "bin", name) }
		claude, codex := bin("claude"), bin("codex")
		// The sandbox's side of the agents' files: the workspace's persistent home.
		own := func(rel string) string {
			if d := sandboxHomesIn(home)[ws]; d != "" {
				return filepath.Join(d, rel)
			}
			return filepath.Join(home, "no-persistent-home-for", ws)
		}

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
			for _, a := range []string{"gemini", "opencode"} {
				res = run(bin(a), "--version")
				mustExit(t, res, 0)
				if !regexp.MustCompile(`^\d+\.\d+\.\d+`).MatchString(strings.TrimSpace(res.stdout)) {
					t.Fatalf("%s --version: %q\nstderr: %s", a, res.stdout, res.stderr)
				}
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
			// Session state (transcripts, memory, shell snapshots, session environments) is
			// the sandbox's own, in the workspace's home: the host's agent loads some of it.
			if ents, _ := os.ReadDir(own(".claude/projects")); len(ents) == 0 {
				t.Fatalf("no session state in the sandbox's ~/.claude/projects")
			}
			for _, d := range []string{"projects", "session-env", "shell-snapshots", "backups"} {
				if _, err := os.Lstat(filepath.Join(home, ".claude", d)); err == nil {
					t.Errorf("the host's ~/.claude/%s was made from inside", d)
				}
			}
		})

		t.Run("gemini", func(t *testing.T) {
			// A fixed model: the default one routes each prompt through a classifier first.
			res := run(bin("gemini"), "-m", "gemini-2.5-flash", "-p", "say pong")
			mustExit(t, res, 0)
			if !strings.Contains(res.stdout, fakeReply) || !api.asked("/v1beta/models/gemini-2.5-flash:streamGenerateContent", "sk-fake-gemini") {
				t.Fatalf("gemini -p did not get the fake API's reply: %q\nstderr: %s\nrequests: %v", res.stdout, res.stderr, api.requests)
			}
			if ents, _ := filepath.Glob(own(".gemini/tmp/*/chats/*")); len(ents) == 0 {
				t.Fatalf("no chat in the sandbox's ~/.gemini/tmp")
			}
			if _, err := os.Lstat(filepath.Join(home, ".gemini", "tmp")); err == nil {
				t.Errorf("the host's ~/.gemini/tmp (checkpoints /restore writes back into the project) was made from inside")
			}
		})

		t.Run("opencode", func(t *testing.T) {
			// A project without opencode.json meets the protected name's placeholder, an
			// empty read-only directory, which opencode fails to read as its project config
			// ("BadResource: FileSystem.readFile"): docs/agents.md, "What that costs". This
			// project has one.
			r.writeFile(t, filepath.Join(ws, "opencode.json"), "{}\n")
			res := run(bin("opencode"), "run", "say pong")
			mustExit(t, res, 0)
			if !strings.Contains(res.stdout, fakeReply) || !api.asked("/v1/messages", "sk-fake-opencode") {
				t.Fatalf("opencode run did not get the fake API's reply: %q\nstderr: %s\nrequests: %v", res.stdout, res.stderr, api.requests)
			}
			if _, err := os.Stat(own(".local/share/opencode/opencode.db")); err != nil {
				t.Fatalf("opencode's database is not in the sandbox's home: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(home, ".local/share/opencode/opencode.db")); err == nil {
				t.Errorf("the host's opencode database was made from inside")
			}
			if b, _ := os.ReadFile(filepath.Join(home, ".config/opencode/opencode.json")); !strings.Contains(string(b), "sk-fake-opencode") {
				t.Errorf("the host's opencode.json changed: %s", b)
			}
		})

		t.Run("config-env", func(t *testing.T) {
			// CLAUDE_CONFIG_DIR and CODEX_HOME set by the caller are followed: the profile
			// shows and shares that directory, Claude Code's .claude.json in it included.
			alt := filepath.Join(home, "alt-claude")
			r.writeFile(t, filepath.Join(alt, ".claude.json"), `{"altMarker":"alt-on-the-host","hasCompletedOnboarding":true}`)
			r.writeFile(t, filepath.Join(alt, "CLAUDE.md"), "alt instructions\n")
			altCodex := filepath.Join(home, "alt-codex")
			b, _ := os.ReadFile(filepath.Join(home, ".codex", "config.toml"))
			r.writeFile(t, filepath.Join(altCodex, "config.toml"), string(b))
			res := runEnv([]string{"CLAUDE_CONFIG_DIR=" + alt}, claude, "-p", "say pong")
			mustExit(t, res, 0)
			if !strings.Contains(res.stdout, fakeReply) {
				t.Fatalf("claude -p with CLAUDE_CONFIG_DIR: %q\nstderr: %s", res.stdout, res.stderr)
			}
			res = runEnv([]string{"CLAUDE_CONFIG_DIR=" + alt}, "/bin/sh", "-c", `echo dir=$CLAUDE_CONFIG_DIR; cat "$CLAUDE_CONFIG_DIR/.claude.json" "$CLAUDE_CONFIG_DIR/CLAUDE.md"; echo x >> "$CLAUDE_CONFIG_DIR/CLAUDE.md" || echo READ-ONLY`)
			mustExit(t, res, 0)
			for _, want := range []string{"dir=" + alt, "alt-on-the-host", "firstStartTime", "alt instructions", "READ-ONLY"} {
				if !strings.Contains(res.stdout, want) {
					t.Fatalf("inside, with CLAUDE_CONFIG_DIR: no %q in\n%s\n%s", want, res.stdout, res.stderr)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(alt, ".claude.json")); strings.Contains(string(b), "firstStartTime") {
				t.Fatalf("the host's $CLAUDE_CONFIG_DIR/.claude.json was rewritten from inside: %s", b)
			}
			res = runEnv([]string{"CODEX_HOME=" + altCodex}, codex, "exec", "--skip-git-repo-check", "say pong")
			mustExit(t, res, 0)
			if !strings.Contains(res.stdout, fakeReply) {
				t.Fatalf("codex exec with CODEX_HOME: %q\nstderr: %s", res.stdout, res.stderr)
			}
			if ents, _ := os.ReadDir(filepath.Join(altCodex, "sessions")); len(ents) == 0 {
				t.Fatalf("no session in the host's $CODEX_HOME/sessions")
			}
			// Outside the home: refused, naming the way out.
			res = runEnv([]string{"CLAUDE_CONFIG_DIR=/etc"}, claude, "--version")
			if res.code != 2 || !strings.Contains(res.stderr, "CLAUDE_CONFIG_DIR=/etc") || !strings.Contains(res.stderr, "--profile none") {
				t.Fatalf("CLAUDE_CONFIG_DIR=/etc: exit %d\n%s", res.code, res.stderr)
			}
		})

		t.Run("first-login", func(t *testing.T) {
			// A fresh home: no ~/.claude on the host. The login is saved the way Claude Code
			// saves it (a temporary file in ~/.claude renamed over .credentials.json, and a
			// copy in place when the rename fails with EBUSY, EXDEV, EPERM or EEXIST: the
			// OAuth exchange itself needs Anthropic's servers); then the real claude, in a
			// later run and on the host, is logged in with it.
			fresh := r.agentHome(t, base+"/v1")
			os.RemoveAll(filepath.Join(fresh, ".claude"))
			fws := r.dir(t, "jail-it-agent-fresh-")
			freshEnv := []string{"HOME=" + fresh, "ANTHROPIC_BASE_URL=" + base, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
			frun := func(argv ...string) result {
				return r.jail(t, call{dir: fws, env: freshEnv, args: append([]string{"run", "--policy", policyFile, "--ro", local, "--profile", "claude", "--"}, argv...), limit: 3 * time.Minute})
			}
			res := frun(claude, "auth", "status")
			if !strings.Contains(res.stdout, `"loggedIn": false`) {
				t.Fatalf("claude auth status in a fresh home: %q\n%s", res.stdout, res.stderr)
			}
			cred := fmt.Sprintf(`{"claudeAiOauth":{"accessToken":"sk-ant-oat01-login-inside","refreshToken":"sk-ant-ort01-x","expiresAt":%d,"scopes":["user:inference","user:profile"],"subscriptionType":"pro"}}`, time.Now().Add(24*time.Hour).UnixMilli())
			res = frun("/bin/sh", "-c", `t=~/.claude/.credentials.json.tmp.1a2b3c4d; printf '%s' "$0" > $t && chmod 600 $t && { mv $t ~/.claude/.credentials.json 2>/dev/null || { cp $t ~/.claude/.credentials.json && rm $t; }; } && echo SAVED`, cred)
			if !strings.Contains(res.stdout, "SAVED") {
				t.Fatalf("saving the login inside: %q\n%s", res.stdout, res.stderr)
			}
			if b, _ := os.ReadFile(filepath.Join(fresh, ".claude", ".credentials.json")); !strings.Contains(string(b), "login-inside") {
				t.Fatalf("the login made inside is not in the host's ~/.claude/.credentials.json: %q", b)
			}
			res = frun(claude, "-p", "say pong")
			mustExit(t, res, 0)
			if !strings.Contains(res.stdout, fakeReply) || !api.asked("/v1/messages", "sk-ant-oat01-login-inside") {
				t.Fatalf("claude -p in the next run did not use the login: %q\n%s\nrequests: %v", res.stdout, res.stderr, api.requests)
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
			r.writeFile(t, filepath.Join(home, ".claude", "CLAUDE.md"), "host\n")
			r.writeFile(t, filepath.Join(home, ".claude", "hooks", "keep"), "host\n")
			r.writeFile(t, filepath.Join(home, ".claude", "commands", "keep"), "host\n")
			r.writeFile(t, filepath.Join(home, ".codex", "auth.json"), "{}\n")
			res := r.jail(t, call{dir: ws, env: env, args: []string{"run", "--policy", policyFile, "--profile", "claude", "--net", "none", "--", "/bin/sh", "-c", `
echo '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}' > ~/.claude/settings.json && echo WROTE-SETTINGS
mv ~/.claude/settings.json ~/.claude/old && echo MOVED-SETTINGS
rm -f ~/.claude/settings.json && echo REMOVED-SETTINGS
echo 'touch /tmp/pwned' > ~/.claude/hooks/h.sh && echo WROTE-HOOK
rm -rf ~/.claude/commands && echo REMOVED-COMMANDS
echo '# steer' > ~/.claude/CLAUDE.md && echo WROTE-INSTRUCTIONS
echo token > ~/.claude/.credentials.json && echo CREDENTIALS-OK
mkdir -p ~/.claude/projects/p && echo s > ~/.claude/projects/p/session.jsonl && echo SESSION-OK
echo '{}' > ~/.claude.json.tmp && mv ~/.claude.json.tmp ~/.claude.json && echo CLAUDE-JSON-OK
mkdir -p ~/.claude/shell-snapshots ~/.claude/ide && echo 'alias ls=x' > ~/.claude/shell-snapshots/snapshot-bash-1.sh && echo '{"port":1}' > ~/.claude/ide/1.lock && echo SNAPSHOT-OK
mkdir -p ~/.claude/projects/other/memory && echo steer > ~/.claude/projects/other/memory/MEMORY.md && echo MEMORY-PRIVATE
exit 0`}})
			mustExit(t, res, 0)
			for _, bad := range []string{"WROTE-SETTINGS", "MOVED-SETTINGS", "REMOVED-SETTINGS", "WROTE-HOOK", "REMOVED-COMMANDS", "WROTE-INSTRUCTIONS"} {
				if strings.Contains(res.stdout, bad) {
					t.Errorf("%s inside the sandbox:\n%s", bad, res.stdout)
				}
			}
			for _, good := range []string{"CREDENTIALS-OK", "SESSION-OK", "CLAUDE-JSON-OK", "SNAPSHOT-OK", "MEMORY-PRIVATE"} {
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
			for _, f := range []string{"CLAUDE.md", "commands/keep"} {
				if b, _ := os.ReadFile(filepath.Join(home, ".claude", f)); string(b) != "host\n" {
					t.Fatalf("the host's ~/.claude/%s changed from inside: %q", f, b)
				}
			}
			// Snapshots, IDE locks and memory are written, in the sandbox's own copy only.
			for _, f := range []string{"shell-snapshots/snapshot-bash-1.sh", "ide/1.lock", "projects/other/memory/MEMORY.md"} {
				if _, err := os.Lstat(filepath.Join(home, ".claude", f)); err == nil {
					t.Fatalf("the host's ~/.claude/%s was made from inside", f)
				}
				if _, err := os.Stat(own(filepath.Join(".claude", f))); err != nil {
					t.Fatalf("~/.claude/%s is not in the sandbox's home: %v", f, err)
				}
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
			// config.toml is the host's (read-only); an AGENTS.md the host lacks is the
			// sandbox's own, written in its home, never on the host.
			if strings.Contains(res.stdout, "WROTE-CONFIG") || !strings.Contains(res.stdout, "AUTH-OK") {
				t.Fatalf("codex profile inside:\n%s\n%s", res.stdout, res.stderr)
			}
			if b, _ := os.ReadFile(filepath.Join(home, ".codex", "config.toml")); strings.Contains(string(b), "notify") {
				t.Fatalf("the host's codex config.toml was changed from inside: %s", b)
			}
			if _, err := os.Lstat(filepath.Join(home, ".codex", "AGENTS.md")); err == nil {
				t.Fatalf("an AGENTS.md was made in the host's ~/.codex from inside")
			}
		})
	})
}
