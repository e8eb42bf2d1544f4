//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// The child is the jail binary re-executed with this whole argv. The
// supervisor passes the plan on fdPlan, reads reports on fdReport and
// receives Spec.Sockets on fdSockets. These and the report stages are
// shared with the C init (jail_linux.h; TestSharedHeader ties them).
const childArg0 = "jail-init"

// The init's descriptors beside stdio (JAIL_FD_*).
const (
	fdPlan    = 3
	fdReport  = 4
	fdSockets = 5
)

// The stages of the init's reports (JAIL_STAGE_*; report.Stage).
const (
	stagePID1    = "pid1"    // outside the pid namespace, with pid 1's host pid
	stageHeld    = "held"    // confined, waiting for its command (Spec.Hold)
	stageStarted = "started" // the command was executed
	stageNotice  = "notice"  // a line for the person (Cmd.Notice)
	stageStopped = "stopped" // the command stopped (^Z)
	stageExit    = "exit"    // the command's status; nothing of the sandbox is left
	stageError   = "error"   // a failure: report.Err
)

// ForwardedSignals are the signals a supervisor passes on to its sandbox
// (JAIL_FORWARDED_SIGNALS: the plan cache's run forwards the same).
func ForwardedSignals() []os.Signal {
	return []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH, unix.SIGUSR1, unix.SIGUSR2}
}

// IsChild reports whether this process is a sandbox's init. In a cgo build
// the constructor in child_linux.c has already taken such a process over
// before the Go runtime started, so IsChild is only true in a build
// without it. main checks it first, before any flag parsing.
func IsChild() bool {
	if len(os.Args) != 1 || os.Args[0] != childArg0 {
		return false
	}
	var st unix.Stat_t
	return unix.Fstat(fdPlan, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
}

// ChildMain reports that this build cannot be a sandbox's init and exits.
// It never returns.
func ChildMain() {
	fmt.Fprintf(os.NewFile(fdReport, "status"), `{"stage":"error","err":{"layer":"mount","stage":"start","msg":"this jail binary was built without cgo; the sandbox's init is C code run before the Go runtime"}}`+"\n")
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
		if e.Errno == unix.EPERM && Nested() {
			e.Msg = "jail refuses to nest: this runs inside a jail sandbox, whose seccomp filter refuses new namespaces"
			e.Fix = nestedFix
		}
	}
	return e
}

// nestedFix says what to do instead of a jail run inside a jail sandbox.
const nestedFix = "a sandbox cannot make another (seccomp refuses unshare, setns and clone with namespace flags in every jail sandbox, so nothing inside can build a file-system view or network of its own); run the command here without jail (it is confined by this sandbox already), or run jail outside, on the host, with what the command needs (--ro, --rw, --allow, a policy)"

// Nested reports whether this process runs inside a jail sandbox: its pid
// 1 is jail's init (named jail-init) and a seccomp filter applies. It
// only chooses a message; nothing is allowed or refused on it.
func Nested() bool {
	b, err := os.ReadFile("/proc/1/cmdline")
	if err != nil || strings.TrimRight(string(b), "\x00") != childArg0 {
		return false
	}
	st, err := os.ReadFile("/proc/self/status")
	return err == nil && strings.Contains(string(st), "\nSeccomp:\t2\n")
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
