//go:build linux

package confine

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHoldsRefuseClaims: a layout's holds (the workspace, a placeholder, a protected
// directory that exists and its pinned parent, a protected symlink through its directory)
// make every Claim of them fail with ErrHeld until Unhold and Release; what no mount sits on
// is claimed. The plan cache's list names each held object.
func TestHoldsRefuseClaims(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "pkg", ".vscode"), 0o755)
	os.Mkdir(filepath.Join(ws, "free"), 0o755)
	os.Symlink("nowhere", filepath.Join(ws, ".codex"))
	l := &Layout{Workspace: ws, Protected: []string{".envrc", "pkg/.vscode", ".codex"}}
	_, ph := mustBuild(t, l)
	wsfd, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(wsfd)
	pkg, err := unix.Openat(wsfd, "pkg", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pkg)
	parent, err := unix.Open(filepath.Dir(ws), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(parent)
	held := []struct {
		dirfd int
		name  string
	}{{wsfd, ".envrc"}, {pkg, ".vscode"}, {wsfd, "pkg"}, {wsfd, ".codex"}, {parent, filepath.Base(ws)}}
	for _, h := range held {
		if unlock, err := Claim(h.dirfd, h.name); !errors.Is(err, ErrHeld) {
			if unlock != nil {
				unlock()
			}
			t.Errorf("Claim(%s) while held: %v, want ErrHeld", h.name, err)
		}
	}
	unlock, err := Claim(wsfd, "free")
	if err != nil {
		t.Fatalf("Claim of a directory no mount sits on: %v", err)
	}
	unlock()
	for _, want := range []string{".", "pkg", "pkg/.vscode"} {
		if !slices.Contains(ph.locked, want) {
			t.Errorf("the plan cache's holds %v lack %s", ph.locked, want)
		}
	}
	if slices.Contains(ph.locked, ".envrc") {
		t.Errorf("the plan cache's holds %v name a placeholder (each cached run makes its own)", ph.locked)
	}
	ph.Unhold()
	for _, h := range held[1:] {
		unlock, err := Claim(h.dirfd, h.name)
		if err != nil {
			t.Errorf("Claim(%s) after Unhold: %v", h.name, err)
			continue
		}
		unlock()
	}
	// The placeholder stays held until Release (it removes it then).
	if unlock, err := Claim(wsfd, ".envrc"); !errors.Is(err, ErrHeld) {
		if unlock != nil {
			unlock()
		}
		t.Errorf("Claim of the placeholder before Release: %v, want ErrHeld", err)
	}
	ph.Release()
	if _, err := os.Lstat(filepath.Join(ws, ".envrc")); !os.IsNotExist(err) {
		t.Errorf("the placeholder stayed after Release: %v", err)
	}
}

// TestHolders: the process holding a flock is named.
func TestHolders(t *testing.T) {
	d := t.TempDir()
	fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	if got := Holders(fd); !slices.Contains(got, os.Getpid()) {
		t.Fatalf("Holders = %v, want this process (%d)", got, os.Getpid())
	}
}
