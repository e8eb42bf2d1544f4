package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestProfilesOverrideKeyByKey(t *testing.T) {
	p := mustLoad(t, `
[profiles.claude]
allow = ["gateway.example.org:443"]

[profiles.helper]
commands = ["helper"]
rw = ["~/.helper"]

[profiles.gemini]
disabled = true
`)
	c, ok := p.Profile("claude")
	if !ok || !slices.Equal(c.Allow, []string{"gateway.example.org:443"}) || !slices.Contains(c.Own, "~/.claude") || !slices.Contains(c.RWFiles, "~/.claude/.credentials.json") || !slices.Contains(c.Seed, "~/.claude.json") {
		t.Fatalf("claude profile with an allow override: %+v, %v", c, ok)
	}
	for cmd, want := range map[string]string{"claude": "claude", "/home/u/.local/bin/codex": "codex", "helper": "helper", "gemini": "", "sh": ""} {
		if got := p.ProfileFor(cmd); got != want {
			t.Errorf("ProfileFor(%q) = %q, want %q", cmd, got, want)
		}
	}
	if _, ok := p.Profile("gemini"); ok {
		t.Error("a disabled profile can be chosen")
	}
	if names := p.ProfileNames(); !slices.Equal(names, []string{"aider", "claude", "codex", "opencode", "helper"}) {
		t.Errorf("ProfileNames = %v", names)
	}
	// The built-ins themselves are unchanged by a policy's override.
	if b := BuiltinProfiles()["claude"]; slices.Contains(b.Allow, "gateway.example.org:443") {
		t.Error("an override changed the built-in profile")
	}
}

func TestProfilePathsStayInTheHome(t *testing.T) {
	for _, bad := range []string{`rw = ["/etc"]`, `ro = ["~/../bob/.ssh"]`, `seed = ["~/.config/*"]`, `commands = ["bin/claude"]`, `rw_files = ["/etc/x"]`, `set_env = ["NOEQUALS"]`, `own = ["/etc"]`, `config_env = ["X=/etc"]`, `config_env = ["X/../y=~/.x"]`} {
		_, err := LoadBytes("p.toml", []byte("[profiles.x]\n"+bad+"\n"), Env{Home: "/home/alice", Workspace: "/w"})
		if err == nil || !strings.Contains(err.Error(), "p.toml:2: profiles.x.") {
			t.Errorf("%s: %v, want an error at p.toml:2", bad, err)
		}
	}
}

// TestProfilePrivateIsAnEntry: a private name must be a direct entry of an own directory.
func TestProfilePrivateIsAnEntry(t *testing.T) {
	_, err := LoadBytes("p.toml", []byte("[profiles.x]\nown = [\"~/.x\"]\nprivate = [\"~/.x/a/b\"]\n"), Env{Home: "/home/alice", Workspace: "/w"})
	if err == nil || !strings.Contains(err.Error(), "p.toml:3: profiles.x.private") {
		t.Fatalf("%v, want an error at p.toml:3", err)
	}
}

func TestProjectFileCannotSetProfiles(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "project.toml")
	os.WriteFile(proj, []byte("[profiles.claude]\nallow = [\"evil.example.org:443\"]\n[sandbox]\nhome = \"empty\"\n"), 0o600)
	out, ws, err := Tighten(Default(Env{Home: "/home/alice", Workspace: dir}), proj, Env{Home: "/home/alice", Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := out.Profile("claude"); slices.Contains(c.Allow, "evil.example.org:443") {
		t.Fatal("a project file changed a profile")
	}
	if len(ws) != 1 || ws[0].Key != "profiles.claude.allow" {
		t.Fatalf("widenings %v, want one for profiles.claude.allow", ws)
	}
	if out.Sandbox.Home != HomeEmpty {
		t.Fatalf("a project file's home = \"empty\" (stricter) was not taken: %q", out.Sandbox.Home)
	}
}

func TestMissingPathsNameFileLineKey(t *testing.T) {
	dir := t.TempDir()
	there := filepath.Join(dir, "there")
	os.Mkdir(there, 0o755)
	file := filepath.Join(dir, "p.toml")
	os.WriteFile(file, []byte("[sandbox]\nro = [\"/usr\", \"/lib32\", \""+there+"\"]\n\nrw = [\""+filepath.Join(dir, "nope")+"\", \""+dir+"/g*\"]\n"), 0o600)
	p, err := Load(file, Env{Home: "/home/alice", Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	errs := p.MissingPaths()
	if len(errs) != 1 || errs[0].Error() != file+":4: sandbox.rw: "+filepath.Join(dir, "nope")+" does not exist: create it (mkdir -p "+filepath.Join(dir, "nope")+", or the file) or remove it from sandbox.rw" {
		t.Fatalf("MissingPaths = %v", errs)
	}
	if errs := Default(Env{Home: "/nonexistent", Workspace: dir}).MissingPaths(); len(errs) != 0 {
		t.Fatalf("the default policy reports %v", errs)
	}
}

// TestExampleProfileIsTheBuiltin: the example's [profiles.claude] spells out the built-in, so
// a user who copies it changes nothing (a shorter private list would show the host's state).
func TestExampleProfileIsTheBuiltin(t *testing.T) {
	p, err := Load(filepath.Join("..", "policy.toml.example"), testEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := p.Profile("claude")
	want := BuiltinProfiles()["claude"]
	for _, f := range []struct {
		key       string
		got, want []string
	}{{"own", got.Own, want.Own}, {"private", got.Private, want.Private}, {"rw_files", got.RWFiles, want.RWFiles}, {"create", got.Create, want.Create},
		{"config_env", got.ConfigEnv, want.ConfigEnv}, {"seed", got.Seed, want.Seed}, {"allow", got.Allow, want.Allow}, {"env", got.Env, want.Env},
		{"set_env", got.SetEnv, want.SetEnv}, {"quiet", got.Quiet, want.Quiet}} {
		if !slices.Equal(f.got, f.want) {
			t.Errorf("policy.toml.example profiles.claude.%s = %v, the built-in has %v", f.key, f.got, f.want)
		}
	}
}

// TestProjectFileNarrowsProfiles: a project's [profiles.NAME] may turn a profile off, keep
// fewer of its hosts and pass fewer variables; every other key (paths, commands, variables
// set) and a profile the user policy does not know are ignored with a warning each.
func TestProjectFileNarrowsProfiles(t *testing.T) {
	dir := t.TempDir()
	env := Env{Home: "/home/alice", Workspace: dir}
	proj := filepath.Join(dir, "project.toml")
	os.WriteFile(proj, []byte(`[profiles.claude]
allow = ["api.anthropic.com:443", "evil.example.org:443"]
env = ["ANTHROPIC_*", "AWS_*"]
rw = ["~/.ssh"]
set_env = ["X=1"]
[profiles.codex]
disabled = true
[profiles.mine]
allow = ["x.example:443"]
`), 0o600)
	out, ws, err := Tighten(Default(env), proj, env)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := out.Profile("claude")
	if !ok || !slices.Equal(c.Allow, []string{"api.anthropic.com:443"}) || !slices.Equal(c.Env, []string{"ANTHROPIC_*"}) {
		t.Fatalf("claude narrowed to %v / %v (ok %v)", c.Allow, c.Env, ok)
	}
	if len(c.RW) != 0 || len(c.SetEnv) != len(BuiltinProfiles()["claude"].SetEnv) {
		t.Fatalf("a project file changed claude's paths or variables: %v %v", c.RW, c.SetEnv)
	}
	if _, ok := out.Profile("codex"); ok {
		t.Error("disabled = true of a project file was not taken")
	}
	if _, ok := out.Profile("mine"); ok {
		t.Error("a project file defined a profile")
	}
	var keys []string
	for _, w := range ws {
		keys = append(keys, w.Key)
	}
	for _, k := range []string{"profiles.claude.allow", "profiles.claude.env", "profiles.claude.rw", "profiles.claude.set_env", "profiles.mine"} {
		if !slices.Contains(keys, k) {
			t.Errorf("no warning for %s: %v", k, ws)
		}
	}
	os.WriteFile(proj, []byte("[profiles.claude]\nallow = []\nenv = []\n"), 0o600)
	out, _, err = Tighten(Default(env), proj, env)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := out.Profile("claude"); !ok || len(c.Allow) != 0 || len(c.Env) != 0 {
		t.Errorf("allow = [] and env = [] did not leave claude with no host and no variable: %v %v", c.Allow, c.Env)
	}
}

// TestProjectFileNarrowsUndefinedAgent: a project's [agents.NAME] for an agent the user
// policy leaves to the default toolset (named after a profile) narrows that toolset: its
// denies remove tools, its grants are the only tools kept; it cannot choose a role.
func TestProjectFileNarrowsUndefinedAgent(t *testing.T) {
	dir := t.TempDir()
	env := Env{Home: "/home/alice", Workspace: dir}
	proj := filepath.Join(dir, "project.toml")
	os.WriteFile(proj, []byte("[agents.claude]\nrole = \"fix\"\ngrants = [\"read\", \"bash\", \"grep\"]\ndenies = [\"bash\"]\n[agents.ghost]\ngrants = [\"read\"]\n"), 0o600)
	base := Default(env)
	out, ws, err := Tighten(base, proj, env)
	if err != nil {
		t.Fatal(err)
	}
	all, err := Resolve(base, Catalogue(), Subject{Agent: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := Resolve(out, Catalogue(), Subject{Agent: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(ts.Granted); !slices.Equal(got, []string{"read", "grep"}) && !slices.Equal(got, []string{"grep", "read"}) {
		t.Fatalf("claude under the project's [agents.claude]: %v, want read and grep (of %v)", got, names(all.Granted))
	}
	for _, g := range ts.Granted {
		if _, ok := all.Lookup(g.Tool.Name); !ok {
			t.Errorf("%s granted beyond the default toolset", g.Tool.Name)
		}
	}
	if d, _ := ts.Lookup("bash"); !strings.Contains(d.Reason, "denies of "+proj) {
		t.Errorf("bash: %s", d.Reason)
	}
	var keys []string
	for _, w := range ws {
		keys = append(keys, w.Key)
	}
	if !slices.Contains(keys, "agents.claude.role") || !slices.Contains(keys, "agents.ghost") {
		t.Errorf("widenings %v, want agents.claude.role and agents.ghost", keys)
	}
	if _, err := Resolve(out, Catalogue(), Subject{Agent: "ghost"}); err == nil {
		t.Error("an agent only a project file defines resolved")
	}
	rv, err := Resolve(out, Catalogue(), Subject{Agent: "claude", Role: "review"})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := rv.Lookup("grep"); d.Status != StatusGranted {
		t.Errorf("--role review with the project's grants: grep %s", d.Reason)
	}
	if d, _ := rv.Lookup("write"); d.Status == StatusGranted {
		t.Error("--role review with the project's grants granted write")
	}
}

// TestProjectNarrowingHashed: what a project file narrows changes the policy's hash.
func TestProjectNarrowingHashed(t *testing.T) {
	dir := t.TempDir()
	env := Env{Home: "/home/alice", Workspace: dir}
	proj := filepath.Join(dir, "project.toml")
	seen := map[string]string{Default(env).Hash(): "default"}
	for _, body := range []string{"[agents.claude]\ndenies = [\"bash\"]\n", "[agents.claude]\ngrants = []\n", "[profiles.claude]\nallow = []\n", "[profiles.claude]\nenv = []\n"} {
		os.WriteFile(proj, []byte(body), 0o600)
		out, _, err := Tighten(Default(env), proj, env)
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[out.Hash()]; dup {
			t.Errorf("%q hashes as %q does", body, prev)
		}
		seen[out.Hash()] = body
	}
}
