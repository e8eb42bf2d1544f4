//go:build linux

package integration

// The hint for a name jail holds (docs/commands.md, "Refusals that say how to allow them"): a
// rename onto a protected path, or of a file bound from the host, fails in the kernel with
// EBUSY, and jail's pid 1, which the seccomp filter hands every rename and rmdir, says on
// stderr once per path which path that is, how jail holds it and where that is decided. A
// rename of anything else goes on as before and prints nothing.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestBusyHint(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-busy-")
		bound := r.dir(t, "jail-it-busy-bound-")
		r.writeFile(t, filepath.Join(ws, ".envrc"), "export A=1\n")
		r.writeFile(t, filepath.Join(bound, "state.json"), "{}\n")
		file := filepath.Join(bound, "state.json")
		res := r.jail(t, call{dir: ws, args: []string{"run", "--rw", file, "--", "/bin/sh", "-c", `
echo new > t && mv t .envrc; echo "envrc=$?"
echo new > t && mv t .envrc; echo "again=$?"
echo x > a && mv a b && echo plain-rename-ok
mv ` + file + ` /tmp/moved; echo "bound=$?"
echo in-place > ` + file + ` && echo written-in-place`}})
		mustExit(t, res, 0)
		for _, want := range []string{"envrc=1", "again=1", "plain-rename-ok", "bound=1", "written-in-place"} {
			if !strings.Contains(res.stdout, want) {
				t.Fatalf("no %q in\n%s\nstderr: %s", want, res.stdout, res.stderr)
			}
		}
		protected := "jail: rename onto " + filepath.Join(ws, ".envrc") + ": Device or resource busy: jail holds it in place, mounted read-only (a protected path"
		if n := strings.Count(res.stderr, protected); n != 1 {
			t.Fatalf("the protected path's hint is there %d times, want once:\n%s", n, res.stderr)
		}
		if !strings.Contains(res.stderr, "jail: rename of "+file+": Device or resource busy: jail holds it in place, bound from the host") {
			t.Fatalf("no hint for the bound file:\n%s", res.stderr)
		}
		if strings.Count(res.stderr, "jail: rename") != 2 {
			t.Fatalf("hints for names jail does not hold:\n%s", res.stderr)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, ".envrc")); string(b) != "export A=1\n" {
			t.Fatalf("the protected .envrc changed: %q", b)
		}
		if b, _ := os.ReadFile(file); string(b) != "in-place\n" {
			t.Fatalf("the bound file: %q", b)
		}
	})
}

// BenchmarkRenameInside: what a rename costs inside a sandbox, where the filter hands each one
// to pid 1 for the held-name hint, and bare on the host, in one interleaved run. Each op is one
// rename(2) of a C-speed loop (python3's os.rename) inside one `jail run`; the run's start is
// left out by timing inside.
//
//	go test ./integration/ -run '^$' -bench RenameInside -benchtime 20000x
func BenchmarkRenameInside(b *testing.B) {
	ws, _ := filepath.EvalSymlinks(b.TempDir())
	script := `import os, sys, time
n = int(sys.argv[1])
open("a", "w").close()
t = time.perf_counter_ns()
for i in range(n // 2):
    os.rename("a", "b"); os.rename("b", "a")
print((time.perf_counter_ns() - t) / max(n, 1))
`
	per := func(jailed bool) float64 {
		argv := []string{"python3", "-c", script, strconv.Itoa(b.N)}
		if jailed {
			argv = append([]string{suite.bin, "run", "--"}, argv...)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = ws
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("%v: %v", argv, err)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
		if err != nil {
			b.Fatalf("%q: %v", out, err)
		}
		return v
	}
	var bare, jailed float64
	for range 3 {
		bare += per(false) / 3
		jailed += per(true) / 3
	}
	b.ReportMetric(bare, "bare-ns/rename")
	b.ReportMetric(jailed, "jail-ns/rename")
	b.ReportMetric(0, "ns/op")
}
