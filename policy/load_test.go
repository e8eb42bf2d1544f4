package policy

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func testEnv(t testing.TB) Env {
	return Env{Home: "/home/alice", Workspace: "/work/proj"}
}

func writeFile(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExampleParses(t *testing.T) {
	p, err := Load(filepath.Join("..", "policy.toml.example"), testEnv(t))
	if err != nil {
		t.Fatalf("policy.toml.example does not load: %v", err)
	}
	if p.Limits.Timeout != 0 || p.Limits.Memory != 0 || p.Limits.OutputChars != 100000 || p.Sandbox.Workspace != "/home/alice/src/project" {
		t.Errorf("example values not as documented: %+v %+v", p.Limits, p.Sandbox.Workspace)
	}
	if p.Agents["claude"].Role != "build" || p.Roles["docs"].MaxRisk != "write" {
		t.Errorf("example roles/agents not parsed: %+v %+v", p.Agents, p.Roles)
	}
}

// TestExampleDocumentsEveryKey walks the schema's TOML tags and requires each key to appear in
// policy.toml.example, so a new field cannot go undocumented.
func TestExampleDocumentsEveryKey(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "policy.toml.example"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	lines := keyLines(text)
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for _, key := range tomlFields(typ) {
			f, _ := typ.FieldByNameFunc(func(n string) bool {
				sf, _ := typ.FieldByName(n)
				return strings.Split(sf.Tag.Get("toml"), ",")[0] == key
			})
			full := prefix + key
			ft := f.Type
			switch {
			case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
				// [roles.NAME] / [agents.NAME]: the example uses one name per table.
				found := false
				for k := range lines {
					if strings.HasPrefix(k, full+".") {
						found = true
						name := strings.Split(strings.TrimPrefix(k, full+"."), ".")[0]
						walk(full+"."+name+".", ft.Elem())
						break
					}
				}
				if !found {
					t.Errorf("policy.toml.example has no [%s.NAME] table", full)
				}
			case ft.Kind() == reflect.Struct && ft != reflect.TypeOf(time.Duration(0)):
				if _, ok := lines[full]; !ok {
					t.Errorf("policy.toml.example lacks table [%s]", full)
				}
				walk(full+".", ft)
			default:
				if _, ok := lines[full]; !ok {
					t.Errorf("policy.toml.example lacks key %s", full)
				}
			}
		}
	}
	walk("", reflect.TypeOf(Policy{}))
}

func TestLoadErrorsNameFileLineKey(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		body string
		line int
		key  string
		want string
	}{
		{"[sandbox]\nworkspace = \"/w\"\nbogus = 1\n", 3, "sandbox.bogus", "accepted here: workspace, ro, rw"},
		{"[limits]\ntimeout = \"ten minutes\"\n", 2, "limits.timeout", "invalid duration"},
		{"[limits]\n\ntimeout = 30\n", 3, "limits.timeout", `e.g. "30s"`},
		{"[limits]\nmemory = \"2 gigs\"\n", 2, "limits.memory", "accepted: bytes"},
		{"[limits]\npids = \"many\"\n", 2, "limits.pids", "incompatible types"},
		{"[sandbox]\nro = [\"/usr\",\n  \"relative/dir\"]\n", 2, "sandbox.ro", "is relative"},
		{"[network]\nmode = \"open\"\n", 2, "network.mode", "accepted: none, proxy, transparent, host"},
		{"[network]\nallow = [\"*.com\"]\n", 2, "network.allow", "public suffix"},
		{"[network]\nallow = [\"*\"]\n", 2, "network.allow", "every host"},
		{"[network]\nallow_private = [\"10.0.0.1/33\"]\n", 2, "network.allow_private", "not a CIDR"},
		{"[seccomp]\ndeny = [\"openat\", \"not_a_syscall\"]\n", 2, "seccomp.deny", "not a Linux"},
		{"[tools]\ndeny = [\"rmrf\"]\n", 2, "tools.deny", "unknown tool \"rmrf\" (accepted: read, ls"},
		{"[tools]\nprofile = \"huge\"\n", 2, "tools.profile", "accepted: minimal, coding, full"},
		{"[agents.a]\nrole = \"wizard\"\n", 2, "agents.a.role", "unknown role"},
		{"[roles.build]\nremit = [\"fs.read\"]\n", 1, "roles.build", "built-in"},
		{"[roles.r]\nremit = [\"fs.read\"]\ndefaults = [\"bash\"]\n", 3, "roles.r.defaults", "outside the r role's remit"},
		{"[roles.r]\nmax_risk = \"extreme\"\n", 2, "roles.r.max_risk", "unknown risk level"},
		{"[roles.r]\nremit = [\"fs.teleport\"]\n", 2, "roles.r.remit", "unknown capability"},
		{"[guards]\ndisable = [\"unparseable\"]\n", 2, "guards.disable", "unknown guard id"},
		{"[guards]\nhard = [\"(\"]\n", 2, "guards.hard", "bad regular expression"},
		{"[audit]\npath = \"~bob/log\"\n", 2, "audit.path", "not ~user"},
		{"[sandbox]\nprotected = [\"../x\"]\n", 2, "sandbox.protected", "relative to the workspace"},
		{"[sandbox]\nenv = [\"BAD-NAME\"]\n", 2, "sandbox.env", "not a variable name"},
		{"[approval]\nunattended_policy = \"maybe\"\n", 2, "approval.unattended_policy", "accepted: allow, deny"},
		{"[sandbox]\nworkspace = \n", 2, "", "expected value"},
		{"[[sandbox]]\n", 1, "", ""},
	}
	for i, c := range cases {
		path := writeFile(t, dir, "p"+string(rune('a'+i))+".toml", c.body)
		_, err := Load(path, testEnv(t))
		if err == nil {
			t.Errorf("%q: no error", c.body)
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%q: error %v is not a FieldError", c.body, err)
			continue
		}
		msg := err.Error()
		if fe.File != path || fe.Line != c.line || (c.key != "" && fe.Key != c.key) || !strings.Contains(msg, c.want) {
			t.Errorf("%q:\n got %s (line %d, key %q)\nwant line %d key %q containing %q", c.body, msg, fe.Line, fe.Key, c.line, c.key, c.want)
		}
		if !strings.HasPrefix(msg, path+":") {
			t.Errorf("error %q does not start with the file name", msg)
		}
	}
}

func TestLoadReportsAllErrors(t *testing.T) {
	_, err := LoadBytes("x.toml", []byte("[tools]\nprofile = \"x\"\nsecurity = \"y\"\n"), testEnv(t))
	if err == nil || !strings.Contains(err.Error(), "tools.profile") || !strings.Contains(err.Error(), "tools.security") {
		t.Fatalf("want both errors, got %v", err)
	}
}

func TestParseBytes(t *testing.T) {
	good := map[string]Bytes{"0": 0, "1024": 1024, "1024K": 1 << 20, "512M": 512 << 20, "2G": 2 << 30, "1T": 1 << 40, "2GiB": 2 << 30, "10MB": 10 << 20}
	for s, want := range good {
		if got, err := ParseBytes(s); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "-1", "1.5G", "2X", "G", "+5", "99999999999T", "1 G2"} {
		if _, err := ParseBytes(s); err == nil {
			t.Errorf("ParseBytes(%q) accepted", s)
		}
	}
	if s := Bytes(512 << 20).String(); s != "512M" {
		t.Errorf("String = %s", s)
	}
}

func TestDefaultsAndHomeExpansion(t *testing.T) {
	p, err := LoadBytes("x.toml", []byte("[sandbox]\nrw = [\"~/.cache\", \"/data//x/\"]\nhide = [\"~\"]\n"), testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Sandbox.RW, []string{"/home/alice/.cache", "/data/x"}) || !slices.Equal(p.Sandbox.Hide, []string{"/home/alice"}) {
		t.Errorf("expansion: rw %v hide %v", p.Sandbox.RW, p.Sandbox.Hide)
	}
	d := Default(testEnv(t))
	if d.Sandbox.Workspace != "/work/proj" || d.Network.Mode != NetNone || d.Limits.Timeout != DefaultTimeout ||
		!slices.Contains(d.Sandbox.Hide, "/home/alice") || d.Sandbox.EnvSet["TMPDIR"] != "/tmp" ||
		slices.Contains(d.Sandbox.Env, "TMPDIR") || !slices.Contains(d.Sandbox.Protected, ".envrc") ||
		d.Audit.Path != "/home/alice/.local/state/jail/audit.jsonl" {
		t.Errorf("default policy: %+v", d)
	}
	if _, err := LoadBytes("x.toml", []byte("[sandbox]\nrw = [\"~/x\"]\n"), Env{Workspace: "/w"}); err == nil {
		t.Error("~ expanded without a home")
	}
}

func TestUserAndProjectFiles(t *testing.T) {
	if got := UserFile(Env{Home: "/h", XDGConfigHome: "/cfg"}); got != "/cfg/jail/policy.toml" {
		t.Error(got)
	}
	if got := UserFile(Env{Home: "/h"}); got != "/h/.config/jail/policy.toml" {
		t.Error(got)
	}
	if got := ProjectFile("/w"); got != "/w/.jail/policy.toml" {
		t.Error(got)
	}
}

func TestExpandGlobs(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"opt/a/bin/tool", "opt/b/bin/tool", "opt/c/lib/x", "srv/deep/x/y/.env", "srv/.env"} {
		writeFile(t, root, p, "")
	}
	got, err := ExpandGlobs(root, []string{"/opt/*/bin", "/srv/**/.env", "/missing/plain", "/nomatch/*"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/opt/a/bin", "/opt/b/bin", "/srv/.env", "/srv/deep/x/y/.env", "/missing/plain"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ExpandGlobs = %v, want %v", got, want)
	}
	if _, err := ExpandGlobs(root, []string{"rel/*"}); err == nil {
		t.Error("relative pattern accepted")
	}
	s := Sandbox{Workspace: "/ws", Protected: []string{".git/hooks", "**/.envrc"}}
	writeFile(t, root, "ws/sub/.envrc", "")
	e, err := s.Expand(root)
	if err != nil || !slices.Equal(e.Protected, []string{"/ws/.git/hooks", "/ws/sub/.envrc"}) {
		t.Errorf("Expand protected = %v, %v", e.Protected, err)
	}
}

func TestSyscallList(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9_]+$`)
	for _, n := range syscallNames() {
		if !re.MatchString(n) {
			t.Errorf("bad syscall name %q", n)
		}
	}
	for _, n := range []string{"openat", "io_uring_setup", "bpf", "ptrace", "clone3", "renameat2"} {
		if !isSyscall(n) {
			t.Errorf("%s missing", n)
		}
	}
}

func FuzzLoad(f *testing.F) {
	for _, s := range []string{"", "[sandbox]\nro = [\"/usr\"]\n", "[limits]\ntimeout = \"1s\"\nmemory = \"1G\"\n",
		"[agents.a]\nrole = \"review\"\ngrants = [\"bash\"]\n", "[network]\nallow = [\"a.b.c:443\"]\n", "x = [\n"} {
		f.Add([]byte(s))
	}
	env := Env{Home: "/h", Workspace: "/w"}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := LoadBytes("fuzz.toml", data, env)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error is not a FieldError: %v", err)
			}
			return
		}
		// Anything that loads must be usable and deterministic.
		if h := p.Hash(); h != clonePolicy(p).Hash() {
			t.Fatal("hash not deterministic")
		}
		if _, err := Resolve(p, Catalogue(), Subject{}); err != nil {
			t.Fatalf("loaded policy does not resolve: %v", err)
		}
		if p.Network.Mode == "" || p.Limits.Timeout < 0 {
			t.Fatalf("defaults not applied: %+v", p)
		}
	})
}
