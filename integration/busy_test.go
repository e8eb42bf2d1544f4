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
	"slices"
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

// TestCreateHint: writing a protected name that does not exist (echo x > .envrc, whose stand-in
// is an empty read-only directory: "Is a directory"), mkdir .vscode ("File exists") and a file
// beneath a held directory (cat > .claude/settings.json: "Read-only file system") each get one
// line of jail's on stderr naming the path, how jail holds it and the policy key, once per
// path and kind of call. What fails as it would anywhere (/usr is read-only, a file that
// exists) and what succeeds get nothing.
func TestCreateHint(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-create-")
		res := r.jail(t, call{dir: ws, args: []string{"run", "--", "/bin/sh", "-c", `
echo x > .envrc; echo "envrc=$?"
echo x > .envrc; echo "again=$?"
mkdir .vscode; echo "vscode=$?"
cat > .claude/settings.json </dev/null; echo "claude=$?"
touch /usr/jail-x 2>/dev/null; echo "usr=$?"
mkdir made && echo x > made/f && echo ordinary-ok
cat /etc/hostname >/dev/null && echo read-ok`}})
		mustExit(t, res, 0)
		for _, want := range []string{"envrc=2", "again=2", "vscode=1", "claude=2", "usr=1", "ordinary-ok", "read-ok"} {
			if !strings.Contains(res.stdout, want) {
				t.Fatalf("no %q in\n%s\nstderr: %s", want, res.stdout, res.stderr)
			}
		}
		for _, want := range []string{
			"jail: open for writing " + filepath.Join(ws, ".envrc") + ": Is a directory: jail holds it read-only in place: a protected path of the workspace",
			"jail: mkdir " + filepath.Join(ws, ".vscode") + ": File exists: jail holds it read-only in place",
			"jail: open for writing " + filepath.Join(ws, ".claude/settings.json") + ": Read-only file system: jail holds " + filepath.Join(ws, ".claude") + " read-only in place",
		} {
			if n := strings.Count(res.stderr, want); n != 1 {
				t.Errorf("%q is there %d times, want once:\n%s", want, n, res.stderr)
			}
		}
		if !strings.Contains(res.stderr, "[sandbox] protected") {
			t.Errorf("the hint names no policy key:\n%s", res.stderr)
		}
		if n := strings.Count(res.stderr, "jail: "); n != 3 {
			t.Errorf("%d lines of jail's, want 3 (none for /usr, made/f, the second .envrc):\n%s", n, res.stderr)
		}
		if ents, _ := os.ReadDir(ws); len(ents) != 1 || ents[0].Name() != "made" {
			t.Errorf("the workspace holds %v after the run, want only made", ents)
		}
	})
}

// BenchmarkCreateInside: what creating a file costs inside a sandbox, where the filter hands
// each open with O_CREAT to pid 1 for the hint of TestCreateHint, and bare on the host, in one
// interleaved run; a plain open stays in the kernel. Each op is one open(O_CREAT) and close of
// a C-speed loop inside one `jail run`.
//
//	go test ./integration/ -run '^$' -bench CreateInside -benchtime 20000x
func BenchmarkCreateInside(b *testing.B) {
	ws, _ := filepath.EvalSymlinks(b.TempDir())
	script := `import os, sys, time
n = int(sys.argv[1])
t = time.perf_counter_ns()
for i in range(n):
    os.close(os.open("f%d" % (i % 64), os.O_WRONLY | os.O_CREAT, 0o644))
c = (time.perf_counter_ns() - t) / max(n, 1)
t = time.perf_counter_ns()
for i in range(n):
    os.close(os.open("f%d" % (i % 64), os.O_RDONLY))
print(c, (time.perf_counter_ns() - t) / max(n, 1))
`
	per := func(jailed bool) (float64, float64) {
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
		f := strings.Fields(string(out))
		if len(f) != 2 {
			b.Fatalf("%q", out)
		}
		c, _ := strconv.ParseFloat(f[0], 64)
		o, _ := strconv.ParseFloat(f[1], 64)
		return c, o
	}
	var bc, bo, jc, jo float64
	for range 3 {
		c, o := per(false)
		bc, bo = bc+c/3, bo+o/3
		c, o = per(true)
		jc, jo = jc+c/3, jo+o/3
	}
	b.ReportMetric(bc, "bare-ns/create")
	b.ReportMetric(jc, "jail-ns/create")
	b.ReportMetric(bo, "bare-ns/open")
	b.ReportMetric(jo, "jail-ns/open")
	b.ReportMetric(0, "ns/op")
}

// TestGitCleanInside: git clean -fdx inside a repository works as on the host: it removes what
// the command made and exits 0, although the names jail holds for the run (the empty read-only
// stand-ins of protected paths: .vscode, .envrc, ...) are untracked empty directories to git
// inside. Their removal reports success and leaves them (pid 1 answers it without running it,
// kept_dir), with one line of jail's for the run. Before, git clean failed with exit 1, a
// "failed to remove" warning and a jail hint for each. git stash -u works too. The host's tree
// is as it was before.
func TestGitCleanInside(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-clean-")
		r.gitRepo(t, ws)
		before, _ := r.hostGit(t, ws, "status", "--porcelain", "--ignored")
		names := lsA(t, ws)
		res := r.sh(t, ws, `export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
echo tmp > untracked.txt && git stash -u -q && [ ! -e untracked.txt ] && git stash pop -q && [ -e untracked.txt ] && echo stash-ok
touch junk.o && mkdir -p build/sub && touch build/sub/x
git clean -fdxq; echo "clean=$?"
ls -A | grep -v '^\.' | tr '\n' ' '; echo`)
		mustExit(t, res, 0)
		for _, want := range []string{"stash-ok", "clean=0", "file.txt \n"} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("no %q:\n%s\nstderr: %s", want, res.stdout, res.stderr)
			}
		}
		if strings.Contains(res.stderr, "busy") || strings.Contains(res.stderr, "failed to remove") {
			t.Errorf("git clean met the held names:\n%s", res.stderr)
		}
		if n := strings.Count(res.stderr, "jail: rmdir "); n != 1 || !strings.Contains(res.stderr, ": kept: jail holds it") {
			t.Errorf("%d lines about the held names, want one saying they are kept:\n%s", n, res.stderr)
		}
		after, _ := r.hostGit(t, ws, "status", "--porcelain", "--ignored")
		if after != before || !slices.Equal(lsA(t, ws), names) {
			t.Errorf("the host's tree changed: git status %q -> %q, ls -A %v -> %v", before, after, names, lsA(t, ws))
		}
	})
}
