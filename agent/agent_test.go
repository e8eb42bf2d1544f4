//go:build linux

package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/policy"
)

func builtin(t *testing.T, name string) policy.Profile {
	t.Helper()
	p, ok := (&policy.Policy{}).Profile(name)
	if !ok {
		t.Fatalf("no built-in profile %s", name)
	}
	return p
}

// TestApplyOwn: an Own directory shows each host entry read-only, leaves the private names
// and the seed to the sandbox, binds the login read-write, and creates the login file empty
// on the host when the profile says the agent reads an empty one as none.
func TestApplyOwn(t *testing.T) {
	home := t.TempDir()
	for _, f := range []string{".claude/settings.json", ".claude/agents/a.md", ".claude/projects/p/memory/MEMORY.md", ".claude/shell-snapshots/s.sh", ".claude/history.jsonl"} {
		os.MkdirAll(filepath.Dir(filepath.Join(home, f)), 0o700)
		os.WriteFile(filepath.Join(home, f), []byte("host\n"), 0o600)
	}
	os.Symlink("/nonexistent", filepath.Join(home, ".claude", "dangling"))
	l := &confine.Layout{Workspace: t.TempDir()}
	if _, err := Apply(l, "claude", builtin(t, "claude"), home, "", nil, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	c := func(n string) string { return filepath.Join(home, ".claude", n) }
	for _, want := range []string{c("settings.json"), c("agents")} {
		if !slices.Contains(l.ReadOnly, want) {
			t.Errorf("%s not bound read-only: %v", want, l.ReadOnly)
		}
	}
	for _, private := range []string{c("projects"), c("shell-snapshots"), c("dangling"), c("history.jsonl"), c(".credentials.json")} {
		if slices.Contains(l.ReadOnly, private) {
			t.Errorf("%s bound read-only from the host", private)
		}
	}
	for _, rw := range []string{c("history.jsonl"), c(".credentials.json")} {
		if !slices.Contains(l.ReadWrite, rw) {
			t.Errorf("%s not bound read-write: %v", rw, l.ReadWrite)
		}
	}
	if st, err := os.Stat(c(".credentials.json")); err != nil || st.Size() != 3 || st.Mode().Perm() != 0o600 {
		t.Fatalf("the login file was not created as {} 0600 on the host: %v %v", st, err)
	}
	for _, p := range append(l.ReadOnly, l.ReadWrite...) {
		if strings.Contains(p, ".claude.json") {
			t.Errorf("~/.claude.json is bound (%s); it is seeded", p)
		}
	}
}

// TestApplyConfigEnv: CLAUDE_CONFIG_DIR set by the caller moves every path of the profile,
// ~/.claude.json included (Claude Code keeps it in that directory then), and is passed; one
// outside the home or inside the workspace is refused with the way out.
func TestApplyConfigEnv(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	cfg := filepath.Join(home, "work-claude")
	os.MkdirAll(filepath.Join(cfg, "rules"), 0o700)
	os.WriteFile(filepath.Join(cfg, ".claude.json"), []byte("{}"), 0o600)
	os.MkdirAll(filepath.Join(home, ".claude", "rules"), 0o700)
	l := &confine.Layout{Workspace: ws}
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg}
	s, err := Apply(l, "claude", builtin(t, "claude"), home, "", nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(l.ReadOnly, filepath.Join(cfg, "rules")) || slices.Contains(l.ReadOnly, filepath.Join(home, ".claude", "rules")) {
		t.Fatalf("read-only binds %v: want %s/rules, not ~/.claude's", l.ReadOnly, cfg)
	}
	if slices.Contains(l.ReadOnly, filepath.Join(cfg, ".claude.json")) {
		t.Fatalf("$CLAUDE_CONFIG_DIR/.claude.json bound read-only; it is seeded")
	}
	if !slices.Contains(l.ReadWrite, filepath.Join(cfg, ".credentials.json")) {
		t.Fatalf("the login is not taken from $CLAUDE_CONFIG_DIR: %v", l.ReadWrite)
	}
	if !slices.Contains(s.Env, "CLAUDE_CONFIG_DIR") {
		t.Fatalf("CLAUDE_CONFIG_DIR not passed: %v", s.Env)
	}
	for _, bad := range []string{"/etc", filepath.Join(ws, "cfg"), home} {
		env["CLAUDE_CONFIG_DIR"] = bad
		_, err := Apply(&confine.Layout{Workspace: ws}, "claude", builtin(t, "claude"), home, "", nil, func(k string) string { return env[k] })
		if err == nil || !strings.Contains(err.Error(), "--profile none") {
			t.Errorf("CLAUDE_CONFIG_DIR=%s: %v, want a refusal naming the way out", bad, err)
		}
	}
}

// TestApplyGeminiHome: GEMINI_CLI_HOME stands for the home itself.
func TestApplyGeminiHome(t *testing.T) {
	home := t.TempDir()
	alt := filepath.Join(home, "alt")
	os.MkdirAll(filepath.Join(alt, ".gemini", "extensions"), 0o700)
	l := &confine.Layout{Workspace: t.TempDir()}
	if _, err := Apply(l, "gemini", builtin(t, "gemini"), home, "", nil, func(k string) string {
		if k == "GEMINI_CLI_HOME" {
			return alt
		}
		return ""
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(l.ReadOnly, filepath.Join(alt, ".gemini", "extensions")) {
		t.Fatalf("read-only binds %v", l.ReadOnly)
	}
}
