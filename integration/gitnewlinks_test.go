//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewRepositoryGitlinksReduced: a repository the sandbox makes (at
// the root of a workspace without one, or in a subdirectory) commits
// gitlinks to repositories it made in node_modules, where the walk after
// the run does not look, one of them deeper, each with a core.fsmonitor.
// The new repository is reduced, and so is what stands at its commits'
// gitlinks, as at the root or in a repository the launch knew: the
// host's git reset and git status there afterwards run nothing.
func TestNewRepositoryGitlinksReduced(t *testing.T) {
	needGit(t)
	const ident = "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b\n"
	forEachPath(t, func(t *testing.T, r runner) {
		for _, c := range []struct {
			name, dir string
			repo      bool
		}{{"root", ".", false}, {"sub-of-repo", "sub", true}, {"sub", "a/sub", false}} {
			t.Run(c.name, func(t *testing.T) {
				ws := r.dir(t, "jail-it-ws-")
				if c.repo {
					r.gitRepo(t, ws)
				}
				marker, plant := r.marker(t, ws)
				res := r.sh(t, ws, ident+plant+`
mkdir -p `+c.dir+` && cd `+c.dir+` && git init -q -b main || exit 1
for d in node_modules/evil node_modules/x/node_modules/evil; do
  mkdir -p $d && git -C $d init -q && echo e > $d/e && git -C $d add e && git -C $d commit -qm e && git -C $d config core.fsmonitor "$OLDPWD/.payload" || exit 1
done
echo t > t && git add t node_modules/evil node_modules/x/node_modules/evil && git commit -qm top && git ls-files -s | grep -c ^160000`)
				mustExit(t, res, 0)
				if strings.TrimSpace(res.stdout) != "2" {
					t.Fatalf("the gitlinks were not committed:\n%s\n%s", res.stdout, res.stderr)
				}
				top := filepath.Join(ws, c.dir)
				for _, d := range []string{"node_modules/evil", "node_modules/x/node_modules/evil"} {
					if cfg, err := os.ReadFile(filepath.Join(top, d, ".git", "config")); err == nil && strings.Contains(string(cfg), "fsmonitor") {
						t.Errorf("%s kept its core.fsmonitor:\n%s\n%s", d, cfg, res.stderr)
					}
				}
				r.hostGit(t, top, "reset", "-q")
				r.hostStatusIn(t, marker, top, filepath.Join(top, "node_modules", "evil"), filepath.Join(top, "node_modules", "x", "node_modules", "evil"))
			})
		}
	})
}

// TestPendingReductionFollowsGitlinks: the repository A's sandbox makes
// in sub, with a gitlink to node_modules/evil (a repository with a
// core.fsmonitor), is B's workspace when A ends: B's git view holds a
// mount on sub/.git, so A's end leaves its reduction to the last run out.
// B's end reduces it, and what its gitlinks name too: the host's git
// reset and git status in sub and in node_modules/evil run nothing.
func TestPendingReductionFollowsGitlinks(t *testing.T) {
	needGit(t)
	const ident = "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b\n"
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		marker, plant := r.marker(t, ws)
		sub := filepath.Join(ws, "sub")
		a, b := r.overlap(t, ws, sub, ident+plant+`
mkdir sub && cd sub && git init -q -b main && mkdir -p node_modules/evil && git -C node_modules/evil init -q &&
echo e > node_modules/evil/e && git -C node_modules/evil add e && git -C node_modules/evil commit -qm e &&
git -C node_modules/evil config core.fsmonitor "$OLDPWD/.payload" && echo t > t && git add t node_modules/evil && git commit -qm top; cd ..`, "true", nil)
		mustExit(t, a, 0)
		mustExit(t, b, 0)
		if !strings.Contains(a.stderr, "another live run") {
			t.Fatalf("A's end did not leave sub/.git to B's:\nA: %s\nB: %s", a.stderr, b.stderr)
		}
		if cfg, err := os.ReadFile(filepath.Join(sub, "node_modules", "evil", ".git", "config")); err == nil && strings.Contains(string(cfg), "fsmonitor") {
			t.Errorf("node_modules/evil kept its core.fsmonitor:\n%s\nA: %s\nB: %s", cfg, a.stderr, b.stderr)
		}
		r.hostGit(t, sub, "reset", "-q")
		r.hostStatusIn(t, marker, sub, filepath.Join(sub, "node_modules", "evil"))
	})
}
