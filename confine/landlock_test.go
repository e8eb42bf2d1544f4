//go:build linux

package confine

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
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

// TestLandlockEnforced launches a real sandbox and reads the one file of its
// view that no Landlock rule covers: the empty file in the root tmpfs, which
// the mount alone would let anyone read (mode 0444). Landlock refuses it,
// so the layer holds where a mount is too permissive.
func TestLandlockEnforced(t *testing.T) {
	if _, err := landlockABI(); err != nil {
		t.Skipf("requires Landlock ABI >= 1: %v", err)
	}
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	c := startSandbox(t, out, "/bin/sh", "-c", "cat /.jail-empty && echo READ; ls / >/dev/null && echo LISTED; echo x > f && echo WROTE")
	if _, err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out.Name())
	got := string(b)
	if strings.Contains(got, "READ") || !strings.Contains(got, "Permission denied") {
		t.Errorf("a file outside every Landlock rule was readable:\n%s", got)
	}
	if !strings.Contains(got, "LISTED") || !strings.Contains(got, "WROTE") {
		t.Errorf("listing / or writing the workspace failed:\n%s", got)
	}
}
