//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitRoutesToPushClassified attacks the action classifier with git's
// own ways of pushing and of running a program, under the standard access
// level with vcs:push needing approval (refused unattended, as jail tool
// is): an alias given with -c (a push, or a shell command that pushes),
// an alias from the repository's config, the plumbing (send-pack),
// rebase -x, bisect run, submodule foreach and a -c key that runs a
// program. The remote is a bare repository in the workspace; after each
// call the host's git checks that no ref reached it. A commit, and a push
// the force-push guard sees through send-pack, are judged too.
func TestGitRoutesToPushClassified(t *testing.T) {
	needGit(t)
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		cfg := r.dir(t, "jail-it-cfg-")
		r.gitRepo(t, ws)
		r.host(t, ws, "init", "-q", "--bare", "r.git")
		r.host(t, ws, "config", "alias.sync", "push r.git HEAD:refs/heads/alias")
		pol := filepath.Join(cfg, "p.toml")
		r.writeFile(t, pol, fmt.Sprintf("[access]\nlevel = \"standard\"\n[approval]\nrequire_approval = [\"vcs:push\"]\n[audit]\npath = %q\n", filepath.Join(cfg, "audit.jsonl")))
		tool := func(cmd string) result {
			b, _ := json.Marshal(map[string]string{"command": "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b; " + cmd})
			return r.jail(t, call{dir: ws, args: []string{"tool", "--policy", pol, "-w", ws, "bash", string(b)}})
		}
		for _, c := range []struct{ cmd, ref string }{
			{`git -c alias.x="push r.git HEAD:refs/heads/p1" x`, "p1"},
			{`git -c alias.x="!git push r.git HEAD:refs/heads/p2" x`, "p2"},
			{`git sync`, "alias"},
			{`git send-pack r.git HEAD:refs/heads/p3`, "p3"},
			{`git rebase -q -x "git push -q r.git HEAD:refs/heads/p4" --root`, "p4"},
			{`git bisect start HEAD HEAD && git bisect run git push -q r.git HEAD:refs/heads/p5`, "p5"},
			{`git -c core.sshCommand="git push -q r.git HEAD:refs/heads/p6" fetch -q ssh://h/x`, "p6"},
			{`git -c alias.x="push --force" x r.git HEAD:refs/heads/p7`, "p7"},
			{`git send-pack --force r.git HEAD:refs/heads/p8`, "p8"},
		} {
			res := tool(c.cmd)
			if !strings.Contains(res.stdout, `"is_error":true`) {
				t.Errorf("%s ran without approval: %s\nstderr: %s", c.cmd, res.stdout, res.stderr)
			}
			if out, err := r.hostGit(t, filepath.Join(ws, "r.git"), "rev-parse", "--verify", "-q", "refs/heads/"+c.ref); err == nil {
				t.Errorf("%s pushed refs/heads/%s to the remote: %s", c.cmd, c.ref, out)
			}
		}
		res := tool(`echo more >> file.txt && git commit -qam more && git log -1 --format=%s`)
		if strings.Contains(res.stdout, `"is_error":true`) || !strings.Contains(res.stdout, "more") {
			t.Errorf("a commit did not run: %s\nstderr: %s", res.stdout, res.stderr)
		}
	})
}
