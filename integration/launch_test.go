package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProtectionsOutlastTheLaunch: once the sandbox's mounts are locked,
// the process outside its pid namespace detaches the writable trees from
// the mount namespace it shared with pid 1 (docs/plan-cache.md,
// "Measured"). The sandbox's own copy must not lose a mount with them: a
// command that waits until that is long done still finds every mount it
// started with, cannot write a protected name (made as a placeholder or
// existing), and still writes the workspace through to the host; the
// placeholders are gone when jail has exited.
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
	rmdir $p 2>/dev/null && echo "REMOVED $p"
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
