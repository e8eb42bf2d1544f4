package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestProtectionsOutlastTheLaunch: once the sandbox's mounts are locked,
// the process outside its pid namespace detaches the writable trees from
// the mount namespace it shared with pid 1 (docs/plan-cache.md,
// "Measured"). The sandbox's own copy must not lose a mount with them: a
// command that waits until that is long done still finds every mount it
// started with, cannot write a protected name (made as a placeholder or
// existing), and still writes the workspace through to the host; the
// placeholders are gone when jail has exited. (The removal of an empty
// placeholder reports success and leaves it, so that git clean -fdx works:
// what counts is that the name is still there.)
func TestProtectionsOutlastTheLaunch(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		if r.cached {
			r = r.requireCache()
		}
		ws := r.dir(t, "jail-it-outlast-")
		r.writeFile(t, filepath.Join(ws, ".envrc"), "use nix")
		script := `before=$(wc -l < /proc/self/mountinfo)
sleep 1
after=$(wc -l < /proc/self/mountinfo)
echo "MOUNTS $before $after"
for p in .vscode .idea .claude .codex .envrc; do
	mkdir -p $p 2>/dev/null
	echo evil > $p/x 2>/dev/null && echo "WROTE $p/x"
	echo evil > $p 2>/dev/null && echo "WROTE $p"
	mv $p moved-$p 2>/dev/null && echo "MOVED $p"
	rmdir $p 2>/dev/null; [ -e $p ] || echo "REMOVED $p"
done
echo ok > plain.txt && echo PLAIN`
		res := r.sh(t, ws, script)
		mustExit(t, res, 0)
		var before, after string
		for _, l := range strings.Split(res.stdout, "\n") {
			f := strings.Fields(l)
			switch {
			case len(f) == 3 && f[0] == "MOUNTS":
				before, after = f[1], f[2]
			case len(f) > 0 && (f[0] == "WROTE" || f[0] == "MOVED" || f[0] == "REMOVED"):
				t.Errorf("after the launch: %s", l)
			}
		}
		if before == "" || before != after {
			t.Errorf("the sandbox's mounts changed while it ran: %q before, %q after\n%s\n%s", before, after, res.stdout, res.stderr)
		}
		if !strings.Contains(res.stdout, "PLAIN") {
			t.Fatalf("an ordinary write failed:\n%s\n%s", res.stdout, res.stderr)
		}
		if b, err := os.ReadFile(filepath.Join(ws, "plain.txt")); err != nil || string(b) != "ok\n" {
			t.Errorf("the workspace's write did not reach the host: %q %v", b, err)
		}
		if b, err := os.ReadFile(filepath.Join(ws, ".envrc")); err != nil || string(b) != "use nix" {
			t.Errorf(".envrc changed on the host: %q %v", b, err)
		}
		ents, err := os.ReadDir(ws)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if strings.Join(names, " ") != ".envrc plain.txt" {
			t.Errorf("the workspace holds %q after the run, want .envrc and plain.txt only", names)
		}
	})
}

// TestWorkspaceInTheRootOnlyWalk: a root caller's cached run checks the
// walk of /etc and /opt for what only root may read while pid 1 builds
// the sandbox's first mounts, except a walk the workspace lies in, which
// is checked before the run makes its .git there: a workspace under /opt
// is served from the cache run after run (checked after, the .git would
// change the walk every time), and a root-only file made in /opt between
// two runs still sends the next one down the Go path, which hides it.
func TestWorkspaceInTheRootOnlyWalk(t *testing.T) {
	if !suite.root {
		t.Skip("requires root: the walk for what only root may read is a root caller's")
	}
	r := runner{name: "root"}
	name := "jail-it-optws-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ws := filepath.Join("/opt", name)
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join("/opt", name+"-secret")
	t.Cleanup(func() { os.RemoveAll(ws); os.Remove(secret) })
	run := func() result {
		t.Helper()
		res := r.jail(t, call{dir: ws, args: []string{"run", "--", "/bin/sh", "-c", "cat " + secret + " 2>/dev/null; echo done"}, env: []string{"JAIL_PLAN_CACHE=trace"}})
		mustExit(t, res, 0)
		return res
	}
	run()
	for i := 0; i < 3; i++ {
		if res := run(); !strings.Contains(res.stderr, "plan cache: used") {
			t.Fatalf("run %d in a workspace under /opt was not served from the cache:\n%s", i+2, res.stderr)
		}
	}
	if err := os.WriteFile(secret, []byte("ROOT-ONLY"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"stored", "used"} {
		res := run()
		if strings.Contains(res.stdout, "ROOT-ONLY") {
			t.Fatalf("run %d read a root-only file made in /opt:\n%s", i, res.stdout)
		}
		if !strings.Contains(res.stderr, "plan cache: "+want) || (want == "stored" && strings.Contains(res.stderr, "plan cache: used")) {
			t.Fatalf("after a root-only file appeared in /opt, run %d: want %q in the trace:\n%s", i, want, res.stderr)
		}
	}
	if ents, _ := os.ReadDir(ws); len(ents) != 0 {
		t.Errorf("the workspace holds %d entries after the runs", len(ents))
	}
}

// TestRootOnlyWalkWithoutPlaceholders: in a workspace that already holds
// every protected name (nothing to make), the plan is still cut before the
// command while the walk of /etc and /opt is checked, so a root-only file
// made between two runs sends the next one down the Go path, which hides
// it, and the one after is cached again.
func TestRootOnlyWalkWithoutPlaceholders(t *testing.T) {
	if !suite.root {
		t.Skip("requires root: the walk for what only root may read is a root caller's")
	}
	r := runner{name: "root"}
	ws := r.dir(t, "jail-it-allnames-")
	name := "jail-it-walk-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	secret := filepath.Join("/etc", name+".conf")
	t.Cleanup(func() { os.Remove(secret) })
	run := func(script string) result {
		t.Helper()
		res := r.jail(t, call{dir: ws, args: []string{"run", "--", "/bin/sh", "-c", script}, env: []string{"JAIL_PLAN_CACHE=trace"}})
		mustExit(t, res, 0)
		return res
	}
	// The names the sandbox sees made for it: each becomes the host's own.
	res := run("ls -A")
	for _, n := range strings.Fields(res.stdout) {
		if n == ".git" {
			continue // the git view's, made by every run
		}
		if err := os.Mkdir(filepath.Join(ws, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := "cat " + secret + " 2>/dev/null; echo done"
	run(script)
	if res := run(script); !strings.Contains(res.stderr, "plan cache: used") {
		t.Fatalf("with every protected name in place the run was not served from the cache:\n%s", res.stderr)
	}
	if err := os.WriteFile(secret, []byte("ROOT-ONLY"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"stored", "used"} {
		res := run(script)
		if strings.Contains(res.stdout, "ROOT-ONLY") {
			t.Fatalf("run %d read a root-only file made in /etc:\n%s", i, res.stdout)
		}
		if !strings.Contains(res.stderr, "plan cache: "+want) || (want == "stored" && strings.Contains(res.stderr, "plan cache: used")) {
			t.Fatalf("after a root-only file appeared in /etc, run %d: want %q in the trace:\n%s", i, want, res.stderr)
		}
	}
}
