//go:build linux && cgo

package confine

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
	"golang.org/x/sys/unix"
)

// nsInode is the inode of a user namespace file.
func nsInode(t *testing.T, fd int) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestMountsLocked checks from the host that the command runs in a user
// namespace nested in the sandbox's own: the mount namespace it uses was
// copied into a less privileged user namespace, which is what makes the
// kernel lock every mount and its read-only flag.
func TestMountsLocked(t *testing.T) {
	c := startSandbox(t, nil, "/bin/sleep", "30")
	defer func() {
		c.Signal(unix.SIGTERM)
		c.Wait()
	}()
	// The command is pid 1's only child.
	var cmdPid int
	testutil.Eventually(5*time.Second, func() bool {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(c.pid1) + "/task/" + strconv.Itoa(c.pid1) + "/children")
		if f := strings.Fields(string(b)); len(f) > 0 {
			cmdPid, _ = strconv.Atoi(f[0])
		}
		return cmdPid != 0
	})
	if cmdPid == 0 {
		t.Fatal("no command process under pid 1")
	}
	outer, err := unix.Open("/proc/"+strconv.Itoa(c.Pid())+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(outer)
	inner, err := unix.Open("/proc/"+strconv.Itoa(cmdPid)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(inner)
	parent, err := unix.IoctlRetInt(inner, unix.NS_GET_PARENT)
	if err != nil {
		t.Fatalf("NS_GET_PARENT: %v", err)
	}
	defer unix.Close(parent)
	if nsInode(t, inner) == nsInode(t, outer) {
		t.Fatal("the command shares the sandbox's first user namespace: its mounts are not locked")
	}
	if nsInode(t, parent) != nsInode(t, outer) {
		t.Fatal("the command's user namespace is not nested in the sandbox's")
	}
}

// startSandbox starts argv in a default sandbox (system directories, a
// temporary workspace, the default filter) with out as stdout and stderr.
func startSandbox(t *testing.T, out *os.File, argv ...string) *Cmd {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := &Layout{Workspace: ws, System: DefaultSystem(), Secrets: DefaultSecrets()}
	ms, ph, err := l.Build()
	t.Cleanup(ph.Release)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := CompileSeccomp(SeccompOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &Cmd{Stdout: out, Stderr: out, Spec: &Spec{Argv: argv, Env: []string{"PATH=/usr/bin:/bin", "LANG=C"}, Dir: ws,
		UID: os.Getuid(), GID: os.Getgid(), Hostname: "jail", Mounts: ms, Net: NetNone, Seccomp: prog, Hold: argv[0] == "unused"}}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}
