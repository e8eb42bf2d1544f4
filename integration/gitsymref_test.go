//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runID is a shell line that sets RUN to the run's id as the sandbox can
// read it: the overlay upper directories of its git views are named
// after it in /proc/self/mountinfo.
const runID = `RUN=$(sed -n 's|.* - overlay .*upperdir=[^,]*/\([0-9a-f]\{16\}\)/g[0-9]*/upper.*|\1|p' /proc/self/mountinfo | head -1) && test -n "$RUN"` + "\n"

// TestSymbolicRefToHeldCommit: a commit held because it changes the hooks
// directory is kept under refs/jail/<run>/, a name the sandbox can read
// (its mounts name the run) or see (an earlier run's held ref). A
// symbolic ref names no object, so the hold check alone would adopt
// HEAD, or a branch, made a symbolic ref to it, and the host's next
// reset --hard would check the held hook out and its commit run it. Each
// way is tried: HEAD and refs/heads/main made symbolic refs to this run's
// held branch, HEAD to the one an earlier run held, HEAD to a branch the
// host does not have, and a repository made in a subdirectory whose HEAD
// names its own held branch. The host's HEAD resolves to no held commit
// and the host's git runs nothing afterwards (docs/git-adoption.md).
func TestSymbolicRefToHeldCommit(t *testing.T) {
	needGit(t)
	const ident = "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b\n"
	forEachPath(t, func(t *testing.T, r runner) {
		hooked := func(t *testing.T) (ws, marker, plant string) {
			ws = r.dir(t, "jail-it-ws-")
			r.gitRepo(t, ws)
			r.host(t, ws, "config", "core.hooksPath", ".githooks")
			marker = filepath.Join(r.dir(t, "jail-it-marker-"), "ran")
			plant = ident + "git checkout -q -b evil && printf '#!/bin/sh\\necho hook >> " + marker + "\\n' > /tmp/planted && " +
				"B=$(git hash-object -w /tmp/planted) && git update-index --add --cacheinfo 100755,$B,.githooks/pre-commit && " +
				"git commit -qm 'fix typo' && git checkout -q -f main\n"
			return ws, marker, plant
		}
		judge := func(t *testing.T, ws, marker, stderr string) {
			t.Helper()
			if head, err := os.ReadFile(filepath.Join(ws, ".git", "HEAD")); err != nil || strings.Contains(string(head), "refs/jail/") {
				t.Errorf("the host's HEAD is %q (%v)\n%s", head, err, stderr)
			}
			if main := r.host(t, ws, "symbolic-ref", "-q", "HEAD"); strings.TrimSpace(main) != "refs/heads/main" {
				t.Errorf("the host's HEAD is %q\n%s", main, stderr)
			}
			if v, err := os.ReadFile(filepath.Join(ws, ".git", "refs", "heads", "main")); err == nil && strings.HasPrefix(string(v), "ref:") {
				t.Errorf("the host's refs/heads/main is %q\n%s", v, stderr)
			}
			r.hostGit(t, ws, "reset", "-q", "--hard")
			r.writeFile(t, filepath.Join(ws, "z"), "z\n")
			r.hostGit(t, ws, "add", "z")
			r.hostGit(t, ws, "commit", "-qm", "host commit")
			planted(t, marker, "the host's reset --hard and commit in "+ws)
			if _, err := os.Stat(filepath.Join(ws, ".githooks", "pre-commit")); err == nil {
				t.Errorf("the held hook was checked out on the host\n%s", stderr)
			}
		}
		for _, c := range []struct{ name, point string }{
			{"HEAD", "git symbolic-ref HEAD refs/jail/$RUN/heads/evil"},
			{"branch", "git symbolic-ref refs/heads/main refs/jail/$RUN/heads/evil"},
			{"branch-loose", "printf 'ref: refs/jail/%s/heads/evil\\n' $RUN > .git/refs/heads/main"},
		} {
			t.Run(c.name, func(t *testing.T) {
				ws, marker, plant := hooked(t)
				res := r.sh(t, ws, plant+runID+c.point)
				mustExit(t, res, 0)
				if !strings.Contains(res.stderr, "refs/jail/") || !strings.Contains(res.stderr, "a symbolic ref through") {
					t.Errorf("the symbolic ref into refs/jail/ was not named as refused:\n%s", res.stderr)
				}
				judge(t, ws, marker, res.stderr)
			})
		}
		t.Run("earlier-run", func(t *testing.T) {
			ws, marker, plant := hooked(t)
			res := r.sh(t, ws, plant)
			mustExit(t, res, 0)
			if !strings.Contains(res.stderr, "held: refs/heads/evil") {
				t.Fatalf("the first run's branch was not held:\n%s", res.stderr)
			}
			res = r.sh(t, ws, `git symbolic-ref HEAD "$(git for-each-ref --format='%(refname)' refs/jail/ | head -1)"`)
			mustExit(t, res, 0)
			judge(t, ws, marker, res.stderr)
			// A branch the host lacks.
			res = r.sh(t, ws, "git symbolic-ref HEAD refs/heads/gone")
			mustExit(t, res, 0)
			if !strings.Contains(res.stderr, "which the host does not have") {
				t.Errorf("a symbolic HEAD to a missing branch was not named:\n%s", res.stderr)
			}
			judge(t, ws, marker, res.stderr)
		})
		t.Run("new-subdirectory", func(t *testing.T) {
			ws := r.dir(t, "jail-it-ws-")
			r.gitRepo(t, ws)
			res := r.sh(t, ws, ident+runID+"mkdir sub && cd sub && git init -q -b main && B=$(echo 'echo planted' | git hash-object -w --stdin) && "+
				"git update-index --add --cacheinfo 100644,$B,.envrc && git commit -qm envrc && git symbolic-ref HEAD refs/jail/$RUN/heads/main")
			mustExit(t, res, 0)
			sub := filepath.Join(ws, "sub")
			if head, err := os.ReadFile(filepath.Join(sub, ".git", "HEAD")); err != nil || strings.Contains(string(head), "refs/jail/") {
				t.Errorf("the new repository's HEAD is %q (%v)\n%s", head, err, res.stderr)
			}
			if out, err := r.hostGit(t, sub, "rev-parse", "-q", "--verify", "HEAD"); err == nil {
				t.Errorf("the new repository's HEAD resolves to the held commit %s\n%s", out, res.stderr)
			}
			r.hostGit(t, sub, "reset", "-q", "--hard")
			if _, err := os.Stat(filepath.Join(sub, ".envrc")); err == nil {
				t.Errorf("the held .envrc was checked out on the host\n%s", res.stderr)
			}
		})
	})
}
