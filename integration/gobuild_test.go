//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestGoBuildWithoutRepository: a Go module that is not a git repository
// builds inside, as on the host. The sandbox sees an empty .git there (the
// private directory a repository made inside would go to, docs/git.md), which
// go build took for a repository and failed on ("error obtaining VCS
// status"); and nothing is left in the tree afterwards.
func TestGoBuildWithoutRepository(t *testing.T) {
	goBin := "/usr/local/go/bin/go"
	if _, err := os.Stat(goBin); err != nil {
		t.Skipf("requires Go at %s (inside the sandbox, /usr is the system's): %v", goBin, err)
	}
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-gonorepo-")
		r.cleanAfter(t, ws)
		r.writeFile(t, filepath.Join(ws, "go.mod"), "module example.com/m\n\ngo 1.22\n")
		r.writeFile(t, filepath.Join(ws, "main.go"), "package main\n\nfunc main() { println(\"built\") }\n")
		res := r.jail(t, call{dir: ws, limit: 5 * time.Minute, args: []string{"run", "--", "/bin/sh", "-c", goBin + " build -o /tmp/m . && /tmp/m"}})
		mustExit(t, res, 0)
		if _, err := os.Lstat(filepath.Join(ws, ".git")); !os.IsNotExist(err) {
			t.Fatalf("after the run the workspace has a .git (%v)", err)
		}
	})
}
