//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
