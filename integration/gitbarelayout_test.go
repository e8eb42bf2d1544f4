//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBareRepositoryLayout: the layout of a bare repository beside its
// worktrees (.bare a bare clone, .git a gitfile naming ./.bare, main a
// linked worktree whose git directory is .bare/worktrees/main, which git
// takes for a bare repository by its commondir). The run starts (a mount
// of its own for the worktree's git directory inside .bare's overlay
// failed every run), the sandbox's commit in the worktree is adopted, and
// the hook and core.fsmonitor it plants in .bare stay out of the host's:
// the host's git status and commit in the worktree run nothing.
func TestBareRepositoryLayout(t *testing.T) {
	needGit(t)
	const ident = "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b\n"
	forEachPath(t, func(t *testing.T, r runner) {
		seed := r.dir(t, "jail-it-seed-")
		r.gitRepo(t, seed)
		ws := r.dir(t, "jail-it-ws-")
		r.host(t, ws, "clone", "-q", "--bare", seed, ".bare")
		r.writeFile(t, filepath.Join(ws, ".git"), "gitdir: ./.bare\n")
		r.host(t, ws, "worktree", "add", "-q", "main", "main")
		marker, plant := r.marker(t, ws)
		for i := 0; i < 2; i++ { // the cached runner's second run takes the plan cache's path
			res := r.sh(t, ws, ident+plant+`
cd main && echo more >> file.txt && git commit -qam inside && echo COMMITTED
printf '#!/bin/sh\necho hook >> `+marker+`\n' > ../.bare/hooks/pre-commit; chmod +x ../.bare/hooks/pre-commit
git config core.fsmonitor "$OLDPWD/.payload"; true`)
			mustExit(t, res, 0)
			if !strings.Contains(res.stdout, "COMMITTED") {
				t.Fatalf("run %d: the commit in the worktree failed:\n%s\n%s", i, res.stdout, res.stderr)
			}
			if !strings.Contains(res.stderr, "a linked worktree of the host's keeps its own index, HEAD and reflog; run git reset in it") {
				t.Errorf("run %d: the line does not say why the worktree's index stays the host's:\n%s", i, res.stderr)
			}
		}
		if log := r.host(t, filepath.Join(ws, "main"), "log", "-1", "--format=%s"); strings.TrimSpace(log) != "inside" {
			t.Errorf("the sandbox's commit in the worktree was not adopted: %q", log)
		}
		if _, err := os.Stat(filepath.Join(ws, ".bare", "hooks", "pre-commit")); err == nil {
			t.Errorf("the hook planted in .bare reached the host")
		}
		main := filepath.Join(ws, "main")
		r.hostGit(t, main, "reset", "-q", "--hard")
		r.writeFile(t, filepath.Join(main, "z"), "z\n")
		r.hostGit(t, main, "add", "z")
		r.hostGit(t, main, "commit", "-qm", "host")
		r.hostStatusIn(t, marker, ws, main)
	})
}
