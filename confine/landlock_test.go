//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

func TestLandlockRules(t *testing.T) {
	s := &Spec{Mounts: []Mount{
		{Kind: Bind, Source: "/etc", Dest: "/etc"},
		{Kind: Bind, Source: "/usr", Dest: "/usr", Exec: true},
		{Kind: Symlink, Source: "usr/bin", Dest: "/bin"},
		{Kind: Hide, Dest: "/etc/shadow"},
		{Kind: Proc, Dest: "/proc"},
		{Kind: Dev, Dest: "/dev"},
		{Kind: Tmpfs, Dest: "/tmp", Writable: true, Exec: true},
		{Kind: Tmpfs, Dest: "/ro-tmpfs"},
		{Kind: Bind, Source: "/srv/w", Dest: "/w", Writable: true, Exec: true},
		{Kind: Bind, Source: "/srv/data", Dest: "/data", Writable: true},
		{Kind: Protect, Dest: "/w/.git"},
	}}
	want := []landlockRule{
		{"/", ll.AccessFSReadDir},
		{"/etc", llRead},
		{"/usr", llRead | ll.AccessFSExecute},
		{"/proc", llRead | ll.AccessFSWriteFile},
		{"/dev", llRead | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev},
		{"/dev/shm", llRead | llWrite},
		{"/tmp", llRead | llWrite | ll.AccessFSExecute},
		{"/ro-tmpfs", llRead},
		{"/w", llRead | llWrite | ll.AccessFSExecute},
		{"/data", llRead | llWrite},
	}
	got := landlockRules(s)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("landlockRules:\n got %s\nwant %s", fmtRules(got), fmtRules(want))
	}
	for _, r := range got {
		// Device nodes can never be made, whatever the mounts say.
		if r.Access&(ll.AccessFSMakeChar|ll.AccessFSMakeBlock) != 0 {
			t.Errorf("rule %s grants creating device nodes", r.Path)
		}
	}
}

func TestLandlockRightGroups(t *testing.T) {
	all := landlockFSRights(99)
	if llRead&llWrite != 0 {
		t.Errorf("read and write groups overlap: %#x", llRead&llWrite)
	}
	if (llRead|llWrite)&ll.AccessFSExecute != 0 {
		t.Error("execute is in the read or write group; it must come from Mount.Exec only")
	}
	if llWrite&(ll.AccessFSMakeChar|ll.AccessFSMakeBlock|ll.AccessFSIoctlDev) != 0 {
		t.Error("the write group grants device rights")
	}
	// Every right the newest ABI knows is either granted by some group or
	// deliberately never granted (device nodes; ioctl outside /dev).
	known := uint64(llRead | llWrite | ll.AccessFSExecute | ll.AccessFSMakeChar | ll.AccessFSMakeBlock | ll.AccessFSIoctlDev)
	if known != all {
		t.Errorf("rights %#x are neither grouped nor deliberately withheld", all&^known)
	}
}

func TestLandlockFSRights(t *testing.T) {
	cases := []struct {
		abi  int
		want uint64
	}{
		{-1, 0},
		{0, 0},
		{1, 0x1fff},  // execute .. make_sym
		{2, 0x3fff},  // + refer
		{3, 0x7fff},  // + truncate
		{4, 0x7fff},  // network rights only
		{5, 0xffff},  // + ioctl_dev
		{6, 0xffff},  // scopes only
		{7, 0xffff},  // audit flags only
		{8, 0xffff},  // tsync only
		{9, 0x1ffff}, // + resolve_unix
		{10, 0x1ffff},
		{42, 0x1ffff},
	}
	for _, c := range cases {
		if got := landlockFSRights(c.abi); got != c.want {
			t.Errorf("landlockFSRights(%d) = %#x, want %#x", c.abi, got, c.want)
		}
	}
	for abi, right := range map[int]uint64{2: ll.AccessFSRefer, 3: ll.AccessFSTruncate, 5: ll.AccessFSIoctlDev, 9: ll.AccessFSResolveUnix} {
		if landlockFSRights(abi-1)&right != 0 || landlockFSRights(abi)&right == 0 {
			t.Errorf("right %#x must first be handled at ABI %d", right, abi)
		}
	}
}

func fmtRules(rs []landlockRule) string {
	s := ""
	for _, r := range rs {
		s += fmt.Sprintf("\n  %s %#x", r.Path, r.Access)
	}
	return s
}

// landlockChildEnv carries the test directory to the re-executed test
// binary, which applies Landlock to itself: a restriction cannot be undone,
// so it must not happen in the process running the other tests.
const landlockChildEnv = "JAIL_TEST_LANDLOCK_DIR"

// TestLandlockEnforced applies the rules of a small view for real and
// checks the kernel holds them: read-only stays read-only, writable is
// writable, and a path no mount covers cannot be read.
func TestLandlockEnforced(t *testing.T) {
	if dir := os.Getenv(landlockChildEnv); dir != "" {
		landlockChild(t, dir)
		return
	}
	abi, err := landlockABI()
	if err != nil {
		t.Skipf("requires Landlock ABI >= 1: %v", err)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"ro", "rw", "none"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d, "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLandlockEnforced$", "-test.v")
	cmd.Env = append(os.Environ(), landlockChildEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child under Landlock ABI %d: %v\n%s", abi, err, out)
	}
	// The host side: the refused write left nothing behind.
	if _, err := os.Lstat(filepath.Join(dir, "ro", "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a write to the read-only tree reached the disk: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "rw", "new")); err != nil || string(b) != "y" {
		t.Errorf("the write to the writable tree is missing: %q, %v", b, err)
	}
}

func landlockChild(t *testing.T, dir string) {
	runtime.LockOSThread() // the restriction is per thread; never unlocked
	abi, err := landlockABI()
	if err != nil {
		t.Fatal(err)
	}
	s := &Spec{Mounts: []Mount{
		{Kind: Bind, Source: dir + "/ro", Dest: dir + "/ro"},
		{Kind: Bind, Source: dir + "/rw", Dest: dir + "/rw", Writable: true},
	}}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := applyLandlock(s, abi); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(dir + "/ro/f"); err != nil {
		t.Errorf("read in the read-only tree: %v", err)
	}
	if err := os.WriteFile(dir+"/ro/new", []byte("y"), 0o644); !errors.Is(err, unix.EACCES) {
		t.Errorf("write in the read-only tree: got %v, want EACCES", err)
	}
	if err := os.WriteFile(dir+"/ro/f", []byte("y"), 0o644); !errors.Is(err, unix.EACCES) {
		t.Errorf("overwrite in the read-only tree: got %v, want EACCES", err)
	}
	if err := os.WriteFile(dir+"/rw/new", []byte("y"), 0o644); err != nil {
		t.Errorf("write in the writable tree: %v", err)
	}
	if _, err := os.ReadFile(dir + "/none/f"); !errors.Is(err, unix.EACCES) {
		t.Errorf("read outside every rule: got %v, want EACCES", err)
	}
	if _, err := os.ReadDir(dir + "/none"); err != nil {
		t.Errorf("listing is granted beneath / for every directory: %v", err)
	}
}
