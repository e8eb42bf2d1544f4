//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The approval gate's attacks: each case drives `jail serve` as a
// harness would, one session, every question answered no, and is judged
// on the host: MARK in the workspace, which what the sandbox planted
// writes when it runs, and the questions asked.

// gateCall is one call of a gate case: the bash command (or, with tool,
// the tool's JSON arguments) and whether it must be asked about.
type gateCall struct {
	cmd, tool string
	asked     bool
	// why, when asked: a piece of the question's reason.
	why string
}

// gateCase is one attack: files to make in the workspace (a value
// ending in "\x00x" is made executable), the policy, the calls.
type gateCase struct {
	name   string
	policy string
	files  map[string]string
	calls  []gateCall
}

const (
	gateCodeRead = "[approval]\nauto_approve = [\"code\", \"vcs:read\"]\n"
	gateStandard = "[approval]\nauto_approve = [\"code\", \"test\", \"build\", \"vcs:read\", \"vcs:fetch\", \"vcs:branch\", \"vcs:commit\"]\n"
	gateRestrict = "[access]\nlevel = \"restricted\"\n"
)

// mark is the shell text that records in the workspace's MARK that what
// the sandbox planted ran.
func mark(ws, what string) string {
	return fmt.Sprintf("echo %s-ran >> %s/MARK", what, ws)
}

func runGate(t *testing.T, r runner, c gateCase) {
	ws := r.dir(t, "jail-it-gate-")
	cfg := r.dir(t, "jail-it-gatecfg-")
	pol := filepath.Join(cfg, "policy.toml")
	r.writeFile(t, pol, c.policy)
	os.Chmod(pol, 0o600)
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "a@b"}, {"config", "user.name", "a"},
		{"commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	for name, content := range c.files {
		p := filepath.Join(ws, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		mode := os.FileMode(0o644)
		if s, ok := strings.CutSuffix(content, "\x00x"); ok {
			content, mode = s, 0o755
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(content, "$WS", ws)), mode); err != nil {
			t.Fatal(err)
		}
	}
	r.own(t, ws)
	s := r.serve(t, ws, "--policy", pol, "--prewarm", "0", "--max-concurrency", "1")
	for i, cl := range c.calls {
		id := i + 1
		tool, args := "bash", fmt.Sprintf(`{"command":%q}`, strings.ReplaceAll(cl.cmd, "$WS", ws))
		if cl.tool != "" {
			tool, args = cl.tool, strings.ReplaceAll(cl.cmd, "$WS", ws)
		}
		s.send(fmt.Sprintf(`{"id":%d,"tool":%q,"args":%s,"context":{"task_id":"t1"}}`, id, tool, args))
		res, why := s.next(), ""
		if res.Type == "approval_request" {
			why = res.Reason
			s.send(fmt.Sprintf(`{"id":%d,"type":"approval_response","approve":false}`, id))
			res = s.next()
		}
		if res.Type != "result" {
			t.Fatalf("%s: call %d %q: %+v\nstderr: %s", c.name, id, cl.cmd, res, s.err.String())
		}
		switch {
		case cl.asked && why == "":
			t.Errorf("%s: call %d %q was not asked about (%+v)", c.name, id, cl.cmd, res.Result)
		case !cl.asked && why != "":
			t.Errorf("%s: call %d %q (the control) was asked about: %s", c.name, id, cl.cmd, why)
		case cl.asked && cl.why != "" && !strings.Contains(why, cl.why):
			t.Errorf("%s: call %d %q: the question %q does not name %q", c.name, id, cl.cmd, why, cl.why)
		}
	}
	if data, err := os.ReadFile(filepath.Join(ws, "MARK")); err == nil {
		t.Errorf("%s: what the sandbox planted ran on the host's workspace: %s", c.name, data)
	}
}

// TestGateGitConfigParsedAsGit: the sandbox-side global config in the
// persistent home is read as git reads it. A value ending in an escaped
// backslash is not continued, so git reads the [core] after it; a
// reader that continued it would not see core.fsmonitor.
func TestGateGitConfigParsedAsGit(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		runGate(t, r, gateCase{name: "B", policy: gateCodeRead,
			files: map[string]string{"pl/.config/git/jail.gitconfig": "[user]\n\tnote = foo\\\\\n[core]\n\tfsmonitor = \"" + mark("$WS", "fsmonitor") + "; false\"\n"},
			calls: []gateCall{{cmd: "cp -r pl/. ~/"}, {cmd: "git status --short", asked: true, why: "core.fsmonitor"}}})
	})
}
