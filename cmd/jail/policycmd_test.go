//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jail-sandbox/jail/launch"
	"github.com/jail-sandbox/jail/policy"
)

func runPolicy(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := policyMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestPolicyCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(good, []byte("[limits]\ntimeout = \"30s\"\n"), 0o644)
	os.WriteFile(bad, []byte("[limits]\ntimeout = \"30s\"\n\n[tools]\nprofile = \"huge\"\nbogus = 1\n"), 0o644)
	code, out, _ := runPolicy(t, "check", good)
	if code != 0 || !strings.Contains(out, "ok (sha256 ") {
		t.Errorf("check good: %d %q", code, out)
	}
	code, _, errs := runPolicy(t, "check", bad)
	if code != 2 || !strings.Contains(errs, bad+":5: tools.profile") || !strings.Contains(errs, bad+":6: tools.bogus: unknown key") {
		t.Errorf("check bad: %d %q", code, errs)
	}
	if code, _, _ := runPolicy(t, "check", filepath.Join("..", "..", "policy.toml.example")); code != 0 {
		t.Error("the example does not pass check")
	}
	if code, _, _ := runPolicy(t, "frobnicate"); code != 2 {
		t.Error("unknown subcommand")
	}
}

func TestPolicyExplain(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "cfg")) // no user file: the default applies
	file := filepath.Join(dir, "p.toml")
	os.WriteFile(file, []byte("[agents.rev]\nrole = \"review\"\ngrants = [\"bash\"]\ndenies = [\"grep\"]\n[limits]\ntimeout = \"90s\"\npids = 512\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "ws", ".jail"), 0o755)
	os.WriteFile(filepath.Join(dir, "ws", ".jail", "policy.toml"), []byte("[limits]\nmemory = \"1G\"\npids = 100000\n"), 0o644)

	code, out, errs := runPolicy(t, "explain", "--policy", file, "--agent", "rev", "-w", filepath.Join(dir, "ws"))
	if code != 0 {
		t.Fatalf("explain: %d %s", code, errs)
	}
	for _, want := range []string{"agent rev (role review)", "(ro)", "network    none", "timeout 1m30s, memory 1G", "unavailable (3):", "goes with bash (bash: outside", "outside the review role's remit", "denied by agents.rev.denies", "sha256:"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "limits.pids: ignored") {
		t.Errorf("widening not warned: %q", errs)
	}

	code, out, _ = runPolicy(t, "explain", "--policy", file, "--agent", "rev", "--json", "-w", filepath.Join(dir, "ws"))
	var ex launch.Explanation
	if code != 0 || json.Unmarshal([]byte(out), &ex) != nil {
		t.Fatalf("json: %d %s", code, out)
	}
	// explain and the runtime use the same loader and resolver: same hash, same toolset.
	env, _ := launch.PolicyEnv(filepath.Join(dir, "ws"))
	p, _, err := policy.LoadEffective(file, env)
	if err != nil {
		t.Fatal(err)
	}
	g, err := policy.NewGate(p, policy.Catalogue(), policy.Subject{Agent: "rev"}, env.Home, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Hash != p.Hash() || len(ex.Toolset.Granted) != len(g.Toolset.Granted) || ex.Confinement.WorkspaceRW {
		t.Errorf("explain disagrees with the runtime: %s vs %s", ex.Hash, p.Hash())
	}
	for _, d := range ex.Toolset.Unavailable {
		if dec := g.Check(t.Context(), policy.Call{Tool: d.Tool.Name, Args: map[string]any{"command": "ls"}}); dec.Allowed {
			t.Errorf("explain says %s is unavailable but the gate allows it", d.Tool.Name)
		}
	}

	if code, _, _ := runPolicy(t, "explain", "--agent", "a", "--role", "b"); code != 2 {
		t.Error("--agent with --role accepted")
	}
	if code, _, errs := runPolicy(t, "explain", "--policy", file, "--agent", "ghost"); code != 2 || !strings.Contains(errs, "unknown agent") {
		t.Errorf("unknown agent: %d %s", code, errs)
	}
}

// TestPolicyExplainAccessLevels checks that explain shows what each access level expands to, in
// text and JSON, and which keys the file overrides.
func TestPolicyExplainAccessLevels(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "cfg"))
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	for _, level := range []string{"sandboxed", "restricted", "standard", "elevated", "custom"} {
		file := filepath.Join(dir, level+".toml")
		os.WriteFile(file, []byte("[access]\nlevel = \""+level+"\"\n[approval]\nunattended_policy = \"deny\"\n"), 0o644)
		code, out, errs := runPolicy(t, "explain", "--policy", file, "-w", ws, "--json")
		if code != 0 {
			t.Fatalf("%s: %d %s", level, code, errs)
		}
		var ex launch.Explanation
		if err := json.Unmarshal([]byte(out), &ex); err != nil {
			t.Fatal(err)
		}
		want := policy.LevelExpansion(level)
		if ex.Access.Level != level || len(ex.Access.ExpandsTo) != len(want) || ex.Access.NeedsHuman != (level == "elevated") {
			t.Errorf("%s: json access %+v", level, ex.Access)
		}
		for i, s := range ex.Access.ExpandsTo {
			if s.Key != want[i].Key || s.Value != want[i].Value || s.Overridden != (s.Key == "approval.unattended_policy") {
				t.Errorf("%s: setting %d = %+v, want %+v", level, i, s, want[i])
			}
		}
		_, text, _ := runPolicy(t, "explain", "--policy", file, "-w", ws)
		if !strings.Contains(text, "access level "+level) {
			t.Errorf("%s: text lacks the level:\n%s", level, text)
		}
		for _, s := range want {
			if !strings.Contains(text, s.Key) || !strings.Contains(text, s.Value) {
				t.Errorf("%s: text lacks %s = %s", level, s.Key, s.Value)
			}
		}
		if level == "elevated" && !strings.Contains(text, "only when a human approves it") {
			t.Errorf("elevated: text does not say it needs a human")
		}
		if level == "sandboxed" && (!strings.Contains(text, "(ro)") || !strings.Contains(text, "sandbox.workspace_ro = true removes tools needing fs.write")) {
			t.Errorf("sandboxed: workspace not shown read-only:\n%s", text)
		}
	}
}
