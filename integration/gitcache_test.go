//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRepositoryRunCached: the repeated `jail run` in a workspace that is
// a repository takes the plan cache's path (its trace says so), as root
// and as the unprivileged user. A run there that changed nothing leaves
// no RUN directory; a change of the repository's state on the host (a
// commit) sends the next run to the Go path, which stores the new state;
// on the cached path, a commit made inside reaches the host while the
// hook and core.fsmonitor planted with it do not, and .git can be neither
// moved nor removed. The git tests that attack each protection on both
// paths (forEachPath) require the cached path for their repositories
// (requireCache).
func TestRepositoryRunCached(t *testing.T) {
	needGit(t)
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		state := r.dir(t, "jail-it-state-")
		os.Chmod(state, 0o700)
		env := []string{"JAIL_PLAN_CACHE=trace", "XDG_STATE_HOME=" + state}
		run := func(script string, want string) result {
			t.Helper()
			res := r.jail(t, call{args: []string{"run", "-w", ws, "--", "/bin/sh", "-c", script}, dir: ws, env: env})
			rest, trace := cutTrace(res.stderr)
			res.stderr = rest
			if !slices.ContainsFunc(trace, func(l string) bool { return strings.HasPrefix(l, "jail: plan cache: "+want) }) {
				t.Fatalf("%q: the plan cache's trace %q, want %q\nstdout: %s\nstderr: %s", script, trace, want, res.stdout, res.stderr)
			}
			return res
		}
		runDirs := func() []string {
			t.Helper()
			var out []string
			keys, _ := os.ReadDir(filepath.Join(state, "jail", "git"))
			for _, k := range keys {
				ents, _ := os.ReadDir(filepath.Join(state, "jail", "git", k.Name()))
				for _, e := range ents {
					out = append(out, filepath.Join(k.Name(), e.Name()))
				}
			}
			return out
		}
		mustExit(t, run("true", "stored"), 0)
		res := run("git status --porcelain; mv .git .g && echo MOVED; rmdir .git 2>/dev/null && echo REMOVED; test -f .git/HEAD && echo HEAD-STAYS", "used")
		mustExit(t, res, 0)
		if strings.Contains(res.stdout, "MOVED") || strings.Contains(res.stdout, "REMOVED") || !strings.Contains(res.stdout, "HEAD-STAYS") {
			t.Fatalf("on the cached path the sandbox moved or emptied .git:\n%s", res.stdout)
		}
		if left := runDirs(); len(left) > 0 {
			t.Fatalf("a cached run that changed nothing left git state: %v", left)
		}

		// The host commits: the next run plans afresh, then is cached.
		r.writeFile(t, filepath.Join(ws, "host.txt"), "host\n")
		for _, args := range [][]string{{"add", "host.txt"}, {"commit", "-qm", "host"}} {
			if out, err := r.hostGit(t, ws, args...); err != nil {
				t.Fatalf("host git %v: %v\n%s", args, err, out)
			}
		}
		mustExit(t, run("true", "not used: a repository's state changed"), 0)
		marker, plant := r.marker(t, ws)
		res = run(plant+`
cp .payload .git/hooks/post-commit && cp .payload .git/hooks/post-checkout
git config core.fsmonitor "$PWD/.payload"
echo inside > inside.txt && git add inside.txt && git -c user.email=s@example.com -c user.name=s commit -qm inside && echo COMMITTED`, "used")
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "COMMITTED") {
			t.Fatalf("the commit inside failed:\n%s\n%s", res.stdout, res.stderr)
		}
		if log, err := r.hostGit(t, ws, "log", "--format=%s", "-1"); err != nil || log != "inside\n" {
			t.Fatalf("the commit made on the cached path is not the host's HEAD: %q %v\nstderr: %s", log, err, res.stderr)
		}
		noHooks(t, filepath.Join(ws, ".git"))
		if cfg, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); strings.Contains(string(cfg), "fsmonitor") {
			t.Errorf("core.fsmonitor reached the host:\n%s", cfg)
		}
		r.judge(t, ws, marker)
		if left := runDirs(); len(left) > 0 {
			t.Fatalf("an adopted cached run left git state: %v", left)
		}
		// The adoption changed the state: planned once more, then cached.
		mustExit(t, run("true", "not used: a repository's state changed"), 0)
		mustExit(t, run("git status --porcelain", "used"), 0)
	})
}

// TestSweepThroughUnchangedDirectories: the plan cache's sweep after a run
// does not list a directory that the plan found quiet (no symlink, .git or
// HEAD, every subdirectory recorded) and that has the identity the plan
// recorded; it opens its subdirectories by their recorded names instead.
// The attack leaves what the sweep must find below such directories only:
// symlinks into the sandbox's persistent home (where a repository with a
// core.fsmonitor waits) four and six levels down, and a repository made
// in an old directory six levels down, each with every directory above it
// untouched by the run. On both paths, as root and as the unprivileged
// user, in a workspace that is a repository and one that is not: the
// links are removed, the repository is reduced, and the host's git status
// in each place runs nothing. A run that changed nothing is cached again.
func TestSweepThroughUnchangedDirectories(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		r = r.requireCache()
		for _, repo := range []bool{false, true} {
			ws := r.dir(t, "jail-it-ws-")
			if repo {
				r.gitRepo(t, ws)
			}
			for _, d := range []string{"a/b/c/d", "p/q/r/s/t/u", "x/y/z", "x/w"} {
				os.MkdirAll(filepath.Join(ws, d), 0o755)
				os.WriteFile(filepath.Join(ws, d, "file"), []byte("f\n"), 0o644)
			}
			r.own(t, ws)
			// Older than the plan's walk by more than the clock's tick: the
			// plan finds them quiet.
			time.Sleep(100 * time.Millisecond)
			marker, plant := r.marker(t, ws)
			res := r.sh(t, ws, plant+`
H=$(awk -v h="$HOME" '$5==h{print $4}' /proc/self/mountinfo | tail -1)
echo "HOME-ON-HOST=$H"
git init -q ~/r && git -C ~/r config core.fsmonitor "$PWD/.payload" || exit 1
ln -s "$H/r" a/b/c/d/deep && ln -s "$H/r" p/q/r/s/t/u/deeper || exit 1
git init -q p/q/r/s/t/made && git -C p/q/r/s/t/made config core.fsmonitor "$PWD/.payload" || exit 1
echo SANDBOX-DONE`)
			mustExit(t, res, 0)
			if !strings.Contains(res.stdout, "SANDBOX-DONE") || !strings.Contains(res.stdout, "/jail/homes/") {
				t.Fatalf("the attack was not set up:\n%s\n%s", res.stdout, res.stderr)
			}
			for _, l := range []string{"a/b/c/d/deep", "p/q/r/s/t/u/deeper"} {
				if _, err := os.Lstat(filepath.Join(ws, l)); err == nil {
					t.Errorf("repo %v: the symlink %s into the sandbox's home is still in the workspace\n%s", repo, l, res.stderr)
				}
			}
			if !strings.Contains(res.stderr, "lead into jail's own directories") {
				t.Errorf("repo %v: no line names the symlinks removed:\n%s", repo, res.stderr)
			}
			r.hostStatusIn(t, marker, ws, filepath.Join(ws, "a/b/c/d"), filepath.Join(ws, "p/q/r/s/t/u"), filepath.Join(ws, "p/q/r/s/t/made"))
			if repo {
				r.judge(t, ws, marker)
			}
			// Nothing left to find: the next runs are repeated from the cache.
			mustExit(t, r.sh(t, ws, "true"), 0)
		}
	})
}
