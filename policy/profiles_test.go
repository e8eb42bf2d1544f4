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
	if len(ws) != 1 || ws[0].Key != "profiles" {
		t.Fatalf("widenings %v, want one for profiles", ws)
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
