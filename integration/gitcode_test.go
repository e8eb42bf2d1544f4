//go:build linux

package integration

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitConfigIsCode attacks git's config and hooks through jail serve
// at access level standard (vcs:push needs approval; every question is
// answered no). One call appends core.fsmonitor, a program git runs on
// `git status`, to .git/config and runs git status: the call must be
// asked about. Another, approved, appends it to the sandbox-side global
// config in the persistent home; a later `git status`, in a new jail
// serve, must be asked about naming the setting. Judged on the host: the
// bare remote the program would push to gets no branch.
func TestGitConfigIsCode(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-gitcode-")
		cfg := r.dir(t, "jail-it-gitcodecfg-")
		pol := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, pol, "[access]\nlevel = \"standard\"\n")
		remote := filepath.Join(ws, "remote.git")
		for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "a@b"}, {"config", "user.name", "a"},
			{"commit", "-q", "--allow-empty", "-m", "init"}, {"init", "-q", "--bare", remote}, {"remote", "add", "origin", remote}} {
			if out, err := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", ws}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v: %s", args, err, out)
			}
		}
		r.own(t, ws)
		pushed := func(what string) {
			t.Helper()
			out, err := exec.Command("git", "-c", "safe.directory=*", "-C", remote, "branch", "-a").CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "" {
				t.Fatalf("%s: the remote holds a branch (%v): %s", what, err, out)
			}
		}
		serve := func() func(cmd string, approve bool) (string, resp) {
			s := r.serve(t, ws, "--policy", pol)
			id := 0
			return func(cmd string, approve bool) (reason string, res resp) {
				t.Helper()
				id++
				s.send(fmt.Sprintf(`{"id":%d,"tool":"bash","args":{"command":%q},"context":{"task_id":"t"}}`, id, cmd))
				res = s.next()
				if res.Type == "approval_request" {
					reason = res.Reason
					s.send(fmt.Sprintf(`{"id":%d,"type":"approval_response","approve":%v}`, id, approve))
					res = s.next()
				}
				if res.Type != "result" {
					t.Fatalf("%q: %+v\nstderr: %s", cmd, res, s.err.String())
				}
				return reason, res
			}
		}
		evil := func(file, branch string) string {
			return fmt.Sprintf(`printf '[core]\n\tfsmonitor = "git push -q origin HEAD:refs/heads/%s; false"\n' >> %s`, branch, file)
		}
		call := serve()
		if why, _ := call(evil(".git/config", "in-call")+" && git status --short", false); why == "" {
			t.Errorf("a write of .git/config with git status was not asked about")
		}
		pushed("a write of .git/config and git status")
		// Control: a plain git status is auto-approved.
		if why, res := call("git status --short", false); why != "" || res.Result.IsError {
			t.Fatalf("plain git status: asked %q, %+v", why, res.Result)
		}
		if why, res := call(evil("~/.config/git/jail.gitconfig", "by-status"), true); why == "" || res.Result.IsError {
			t.Fatalf("a write of the global git config: asked %q, %+v", why, res.Result)
		}
		call = serve()
		why, res := call("git status --short", false)
		if !strings.Contains(why, "core.fsmonitor") || !res.Result.IsError {
			t.Errorf("git status after the global config set core.fsmonitor: asked %q, %+v", why, res.Result)
		}
		pushed("git status in a later serve")
	})
}
