//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The child is the jail binary re-executed with this whole argv. The
// supervisor passes the plan on fd 3, reads reports on fd 4 and receives
// Spec.Sockets on fd 5.
const childArg0 = "jail-init"

// IsChild reports whether this process is a sandbox's init. In a cgo build
// the constructor in child_linux.c has already taken such a process over
// before the Go runtime started, so IsChild is only true in a build
// without it. main checks it first, before any flag parsing.
func IsChild() bool {
	if len(os.Args) != 1 || os.Args[0] != childArg0 {
		return false
	}
	var st unix.Stat_t
	return unix.Fstat(3, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
}

// ChildMain reports that this build cannot be a sandbox's init and exits.
// It never returns.
func ChildMain() {
	fmt.Fprintf(os.NewFile(4, "status"), `{"stage":"error","err":{"layer":"mount","stage":"start","msg":"this jail binary was built without cgo; the sandbox's init is C code run before the Go runtime"}}`+"\n")
	os.Exit(125)
}

// report is one line the child writes on the status pipe.
type report struct {
	Stage    string      `json:"stage"` // "started", "exit" or "error"
	Err      *LayerError `json:"err,omitempty"`
	Status   int         `json:"status,omitempty"`
	Signal   int         `json:"signal,omitempty"`
	MaxRSSKB int64       `json:"max_rss_kb,omitempty"`
	Pid      int         `json:"pid,omitempty"`  // of pid 1, in a "pid1" report
	Text     string      `json:"text,omitempty"` // of a "notice" report (Spec.OffDNS)
}

const (
	landlockFix = "Landlock is off in this kernel: boot with lsm=landlock,... (check /sys/kernel/security/lsm) or a kernel built with CONFIG_SECURITY_LANDLOCK=y; or run with --allow-degraded=landlock"
	seccompFix  = "this kernel lacks seccomp filters (CONFIG_SECCOMP_FILTER=y is needed); or run with --allow-degraded=seccomp"
)

// withFix adds the remedy for a failure the child reported: the child
// only knows the stage and errno.
func withFix(e *LayerError) *LayerError {
	if e.Fix != "" {
		return e
	}
	switch e.Layer {
	case LayerLandlock:
		e.Fix = landlockFix
	case LayerSeccomp:
		e.Fix = seccompFix
	case LayerMount:
		e.Fix = mountFix(e.Errno)
	case LayerUserNS:
		e.Fix = userNSFix(e.Errno)
	}
	return e
}

func mountFix(errno unix.Errno) string {
	switch {
	case errors.Is(errno, unix.ENOSYS):
		return "jail needs openat2 (Linux 5.6) and mount_setattr (Linux 5.12); upgrade the kernel"
	case errors.Is(errno, unix.ELOOP):
		return "a bind source changed into a symlink while jail started; check the path and run again"
	case errors.Is(errno, unix.ENOENT):
		return "a path the sandbox needs does not exist; check --ro/--rw/-w paths"
	}
	return ""
}
