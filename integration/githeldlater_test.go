//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHeldCommitStaysHeld: a commit held in one run (it changes the
// hooks directory core.hooksPath names) is kept under refs/jail/<run>/,
// where the next run's sandbox sees it. That sandbox points the branch, a
// tag and a notes ref at it: the commit is still not one the host had, so
// each is held again, and the host's reset --hard and commit afterwards
// run no code of the sandbox's (docs/git-adoption.md, "Held refs").
func TestHeldCommitStaysHeld(t *testing.T) {
	needGit(t)
	const ident = "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b\n"
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		marker := filepath.Join(r.dir(t, "jail-it-marker-"), "ran")
		r.writeFile(t, filepath.Join(ws, ".githooks", "pre-commit"), "#!/bin/sh\nexit 0\n")
		os.Chmod(filepath.Join(ws, ".githooks", "pre-commit"), 0o755)
		r.host(t, ws, "add", ".githooks")
		r.host(t, ws, "commit", "-qm", "hooks")
		r.host(t, ws, "config", "core.hooksPath", ".githooks")
		before := strings.TrimSpace(r.host(t, ws, "rev-parse", "HEAD"))

		res := r.sh(t, ws, ident+"printf '#!/bin/sh\\necho hook >> "+marker+"\\n' > /tmp/planted && "+
			"B=$(git hash-object -w /tmp/planted) && git update-index --cacheinfo 100755,$B,.githooks/pre-commit && git commit -qm evil")
		mustExit(t, res, 0)
		if !strings.Contains(res.stderr, "held: refs/heads/main") {
			t.Fatalf("the first run's commit was not held:\n%s", res.stderr)
		}
		// Runs in between (the cached runner's take the plan cache's path).
		mustExit(t, r.sh(t, ws, "true"), 0)
		res = r.sh(t, ws, ident+`H=$(git for-each-ref --format='%(objectname)' refs/jail/ | head -1) && test -n "$H" && `+
			`git update-ref refs/heads/main $H && git tag planted $H && git tag -a -m t plantedann $H && `+
			`git update-ref refs/heads/side $H && git notes add -m n $H`)
		mustExit(t, res, 0)
		for _, ref := range []string{"refs/heads/main", "refs/tags/planted", "refs/tags/plantedann", "refs/heads/side"} {
			if !strings.Contains(res.stderr, "held: "+ref+":") {
				t.Errorf("%s, pointed at the held commit, was not held:\n%s", ref, res.stderr)
			}
			if out, _ := r.hostGit(t, ws, "rev-parse", "-q", "--verify", ref); strings.TrimSpace(out) != "" && ref != "refs/heads/main" {
				t.Errorf("%s was adopted: %s", ref, out)
			}
		}
		if after := strings.TrimSpace(r.host(t, ws, "rev-parse", "HEAD")); after != before {
			t.Errorf("the host's HEAD moved to the held commit: %s -> %s", before, after)
		}
		r.hostGit(t, ws, "reset", "-q", "--hard")
		r.hostGit(t, ws, "checkout", "--", ".")
		r.writeFile(t, filepath.Join(ws, "file.txt"), "host edit\n")
		r.host(t, ws, "commit", "-qam", "host commit")
		if b, err := os.ReadFile(marker); err == nil {
			t.Fatalf("the held hook ran on the host: %q", b)
		}
	})
}
