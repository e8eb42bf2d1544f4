//go:build linux && cgo

package confine

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestEarlyFlagsAreTheDefaultSandbox ties JAIL_EARLY_FLAGS to the
// namespaces Prestart asks for: a mismatch would make every `jail run`
// throw its early child away (or the child refuse the plan).
func TestEarlyFlagsAreTheDefaultSandbox(t *testing.T) {
	for _, n := range []NetMode{NetNone} {
		if got := namespaceFlags(&Spec{Net: n}); got != earlyFlags {
			t.Errorf("net %q: namespaces %#x, the early child has %#x", n, got, earlyFlags)
		}
	}
	if namespaceFlags(&Spec{Net: NetHost}) == earlyFlags {
		t.Error("the host's network must not be given an early child's network namespace")
	}
}

// TestNoEarlyChildInTests: the constructor forks one only for `jail run`.
func TestNoEarlyChildInTests(t *testing.T) {
	if e, ok := takeEarly(); ok {
		t.Fatalf("a test binary got an early child (pid %d)", e.pid)
	}
}

// TestFastSignalNames: the plan cache's JSON result names a signal as the
// Go path's does (unix.SignalName), and leaves out one Go does not name.
func TestFastSignalNames(t *testing.T) {
	for sig := -1; sig <= 65; sig++ {
		if got, want := fastSignalName(sig), unix.SignalName(syscall.Signal(sig)); got != want {
			t.Errorf("signal %d: plan cache names it %q, the Go path %q", sig, got, want)
		}
	}
}

// TestDirsHashMatchesC: the plan cache's constructor hashes a directory's
// subdirectories and .git and HEAD entries exactly as the planner did.
func TestDirsHashMatchesC(t *testing.T) {
	d := t.TempDir()
	for _, p := range []string{"a", "b/c", "node_modules", ".git", "sub/.git"} {
		os.MkdirAll(filepath.Join(d, p), 0o755)
	}
	os.WriteFile(filepath.Join(d, "file"), nil, 0o644)
	os.WriteFile(filepath.Join(d, "b", ".git"), []byte("gitdir: x\n"), 0o644)
	os.WriteFile(filepath.Join(d, "a", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	for _, n := range []string{".envrc", ".mcp.json", "lefthook-local.yml", ".lefthook.toml", "opencode.jsonc", "x.code-workspace", ".code-workspace", "code-workspace", "lefthoo", "opencode", "HEAD.lock"} {
		os.WriteFile(filepath.Join(d, "b", n), nil, 0o644)
		if WatchedName(n) != !slices.Contains([]string{"code-workspace", "lefthoo", "opencode", "HEAD.lock"}, n) {
			t.Errorf("WatchedName(%q) = %v", n, WatchedName(n))
		}
	}
	os.Symlink("a", filepath.Join(d, "link"))
	seen := map[uint64]bool{}
	for _, dir := range []string{d, filepath.Join(d, "b"), filepath.Join(d, "sub"), filepath.Join(d, "a")} {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, skip := range []bool{false, true} {
			h, err := DirsHash(fd, skip)
			if c := fastDirsHash(fd, skip); err != nil || h != c {
				t.Errorf("%s (skip .git %v): Go %x (%v), C %x", dir, skip, h, err, c)
			}
			if !skip {
				seen[h] = true
			}
		}
		unix.Close(fd)
	}
	if len(seen) != 4 {
		t.Error("different directories hash alike")
	}
	fd, _ := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	before, _ := DirsHash(fd, false)
	os.WriteFile(filepath.Join(d, "another-file"), nil, 0o644)
	same, _ := DirsHash(fd, false)
	withGit, _ := DirsHash(fd, true)
	os.Remove(filepath.Join(d, ".git"))
	withoutGit, _ := DirsHash(fd, true)
	os.Mkdir(filepath.Join(d, "new"), 0o755)
	changed, _ := DirsHash(fd, false)
	unix.Close(fd)
	if same != before || changed == before || withGit != withoutGit {
		t.Errorf("a file changed the hash (%v), a directory did not (%v), or a skipped .git counted (%v)", same != before, changed == before, withGit != withoutGit)
	}
}
