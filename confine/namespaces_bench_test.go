//go:build linux

package confine

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkNamespaces is the kernel's own ceiling for sandboxes made per
// second on this machine: a process started in fresh namespaces that
// executes /bin/true and exits, on every CPU at once (RunParallel), with
// no mounts, no Landlock, no seccomp and no shell. A fresh sandbox per
// tool call (jail serve's bash) cannot be made faster than "all"; the
// difference to "all-but-net" is the network namespace's creation and
// teardown.
//
//	go test ./confine -run '^$' -bench Namespaces -benchtime 2000x
func BenchmarkNamespaces(b *testing.B) {
	base := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC |
		unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP)
	for _, c := range []struct {
		name  string
		flags uintptr
	}{{"none", 0}, {"all-but-net", base}, {"all", base | unix.CLONE_NEWNET}} {
		b.Run(c.name, func(b *testing.B) {
			if c.flags != 0 && !userNamespacesWork() {
				b.Skip("requires user namespaces: unshare(CLONE_NEWUSER) is refused here")
			}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					cmd := exec.Command("/bin/true")
					cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: c.flags}
					if c.flags != 0 {
						cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
						cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
					}
					if err := cmd.Run(); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sandboxes/s")
		})
	}
}

// userNamespacesWork reports whether this process may create a user
// namespace.
func userNamespacesWork() bool {
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}
	return cmd.Run() == nil
}
