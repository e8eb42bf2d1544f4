//go:build linux

package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// childArg0 is the whole argv of the re-executed child. The supervisor
// passes the Spec on fd 3 and reads reports on fd 4.
const (
	childArg0 = "jail-init"
	specFd    = 3
	statusFd  = 4
	socketFd  = 5 // a unix socket for handing Spec.Sockets to the supervisor
)

// IsChild reports whether this process is the sandbox's init, started by a
// supervisor. main checks it first, before any flag parsing.
func IsChild() bool {
	if len(os.Args) != 1 || os.Args[0] != childArg0 {
		return false
	}
	var st unix.Stat_t
	return unix.Fstat(specFd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
}

// report is one line the child writes on the status pipe.
type report struct {
	Stage    string      `json:"stage"` // "started", "exit" or "error"
	Err      *LayerError `json:"err,omitempty"`
	ExecPath string      `json:"exec_path,omitempty"`
	Status   int         `json:"status,omitempty"`
	Signal   int         `json:"signal,omitempty"`
	MaxRSSKB int64       `json:"max_rss_kb,omitempty"`
}

// ChildMain is the sandbox's pid 1. It never returns.
func ChildMain() {
	// Every confinement step below applies to the calling thread, and the
	// command is forked from it, so the goroutine must stay on it.
	runtime.LockOSThread()
	status := os.NewFile(statusFd, "status")
	enc := json.NewEncoder(status)
	code, r := childRun(enc)
	if r != nil {
		enc.Encode(r)
	}
	os.Exit(code)
}

func fail(layer Layer, stage string, err error, fix string) (int, *report) {
	return 125, &report{Stage: "error", Err: &LayerError{Layer: layer, Stage: stage, Errno: errnoOf(err), Msg: err.Error(), Fix: fix}}
}

// childRun performs the steps of the launch in their fixed order and then
// serves as pid 1 until the command exits.
func childRun(enc *json.Encoder) (int, *report) {
	specFile := os.NewFile(specFd, "spec")
	b, err := io.ReadAll(specFile)
	specFile.Close()
	if err != nil {
		return fail(LayerMount, "read spec", err, "")
	}
	s, err := DecodeSpec(b)
	if err != nil {
		return fail(LayerMount, "decode spec", err, "")
	}

	// 0. Not dumpable: /proc/1 becomes unreadable to the command, and
	//    nothing can ptrace pid 1 or open /proc/1/exe, the jail binary on the
	//    host (CVE-2019-5736 was a container overwriting its runtime
	//    through /proc/self/exe).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail(LayerPrivs, "set not dumpable", err, "")
	}
	if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
		return fail(LayerUserNS, "set host name", err, "")
	}
	if s.Net != NetHost {
		if err := LoopbackUp(); err != nil {
			return fail(LayerNet, "bring loopback up", err, "")
		}
	}
	if len(s.Sockets) > 0 {
		if err := sendSockets(s.Sockets); err != nil {
			return fail(LayerNet, "open proxy sockets", err, "")
		}
	}
	last, err := lastCap()
	if err != nil {
		return fail(LayerPrivs, "read capability count", err, "")
	}

	// 1. The new root: binds, private /tmp /dev /proc $HOME, protected
	//    paths, then pivot_root and the old root detached.
	if err := buildRoot(s); err != nil {
		return fail(LayerMount, "build the file-system view", err, mountFix(err))
	}

	// 2. Landlock mirrors the mounts, so a mistake in one layer is caught
	//    by the other. no_new_privs first: it is what allows an
	//    unprivileged thread to restrict itself.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail(LayerPrivs, "set no_new_privs", err, "")
	}
	abi, err := landlockABI()
	switch {
	case err != nil && s.Degraded(LayerLandlock):
	case err != nil:
		return fail(LayerLandlock, "landlock", err, landlockFix)
	default:
		if err := applyLandlock(s, abi); err != nil {
			return fail(LayerLandlock, "landlock", err, landlockFix)
		}
	}

	// 3. Resource limits (the fallback where no cgroup is usable) are set
	//    on the command right after the fork (lockRLimits), not here: pid
	//    1's own Go runtime already maps more than a small RLIMIT_DATA and
	//    would die creating its next thread.

	// 4. Only stdin, stdout and stderr reach the command.
	if err := markFdsCloexec(); err != nil {
		return fail(LayerPrivs, "close inherited descriptors", err, "")
	}

	// 5. No capability survives, and none can come back.
	if err := dropPrivileges(last); err != nil {
		return fail(LayerPrivs, "drop privileges", err, "")
	}

	path, err := lookPath(s.Argv[0], s.Env, s.Dir)
	if err != nil {
		return 127, &report{Stage: "error", ExecPath: s.Argv[0], Err: &LayerError{Layer: LayerExec, Stage: "exec", Errno: errnoOf(err), Msg: s.Argv[0]}}
	}
	// Signals are caught before the fork, so none sent in between is lost.
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs, forwardedSignals()...)
	signal.Notify(sigs, unix.SIGCHLD)

	// 6. seccomp last, as close to execve as Go allows: the fork below is
	//    the only code that runs after it.
	if len(s.Seccomp) > 0 || !s.Degraded(LayerSeccomp) {
		if err := loadSeccomp(s.Seccomp); err != nil {
			return fail(LayerSeccomp, "seccomp", err, seccompFix)
		}
	}

	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: unix.SIGKILL}
	if s.Foreground {
		attr.Foreground = true
		attr.Ctty = 0
	}
	proc, err := os.StartProcess(path, s.Argv, &os.ProcAttr{
		Dir:   s.Dir,
		Env:   s.Env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   attr,
	})
	if err != nil {
		return 126, &report{Stage: "error", ExecPath: path, Err: &LayerError{Layer: LayerExec, Stage: "exec", Errno: errnoOf(err), Msg: path}}
	}
	if err := lockRLimits(proc.Pid, s.RLimits); err != nil {
		proc.Kill()
		return fail(LayerLimits, "lock rlimits", err, "")
	}
	enc.Encode(report{Stage: "started"})
	return reap(proc.Pid, sigs)
}

// lockRLimits sets the limits on the command as soon as its execve
// returned (the fork is a vfork: pid 1 resumes only then). The command runs
// unbounded for those microseconds; the rlimit fallback is per process
// anyway (a tree of processes each under the limit is not bounded), which
// is why jail reports when it is in use.
func lockRLimits(pid int, rls []RLimit) error {
	for _, rl := range rls {
		lim := unix.Rlimit{Cur: rl.Cur, Max: rl.Max}
		if err := unix.Prlimit(pid, rl.Resource, &lim, nil); err != nil {
			return fmt.Errorf("prlimit %d on the command: %w", rl.Resource, err)
		}
	}
	return nil
}

// reap is pid 1's loop: forward signals to the command, reap every zombie
// (orphans are re-parented to pid 1), and return the command's status once
// it exits. Returning ends pid 1, and with it every process left in the
// namespace.
func reap(cmd int, sigs chan os.Signal) (int, *report) {
	for {
		for {
			var ws unix.WaitStatus
			var ru unix.Rusage
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, &ru)
			if err != nil || pid <= 0 {
				break
			}
			if pid != cmd {
				continue
			}
			r := &report{Stage: "exit", MaxRSSKB: ru.Maxrss}
			if ws.Signaled() {
				r.Signal = int(ws.Signal())
				r.Status = 128 + r.Signal
			} else {
				r.Status = ws.ExitStatus()
			}
			return r.Status, r
		}
		sig := <-sigs
		if sig != unix.SIGCHLD {
			unix.Kill(cmd, sig.(syscall.Signal))
		}
	}
}

// forwardedSignals are passed from the supervisor, through pid 1, to the
// command.
func forwardedSignals() []os.Signal {
	return []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH, unix.SIGUSR1, unix.SIGUSR2}
}

// lookPath finds argv0 in the command's PATH, as a shell would, inside the
// new root.
func lookPath(argv0 string, env []string, dir string) (string, error) {
	if strings.Contains(argv0, "/") {
		p := argv0
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := unix.Access(p, unix.X_OK); err != nil {
			return "", err
		}
		return p, nil
	}
	pathEnv := "/usr/local/bin:/usr/bin:/bin"
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			pathEnv = v
		}
	}
	found := error(unix.ENOENT)
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, argv0)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR {
			continue
		}
		if err := unix.Access(p, unix.X_OK); err != nil {
			found = err
			continue
		}
		return p, nil
	}
	return "", found
}

// sendSockets opens each listening socket in this (the sandbox's) network
// namespace and passes them to the supervisor in one message.
func sendSockets(socks []Socket) error {
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, so := range socks {
		ap, err := netip.ParseAddrPort(so.Addr)
		if err != nil {
			return err
		}
		typ := unix.SOCK_STREAM
		if so.Network == "udp" {
			typ = unix.SOCK_DGRAM
		}
		fd, err := unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("socket %s: %w", so.Addr, err)
		}
		fds = append(fds, fd)
		sa := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
		if err := unix.Bind(fd, sa); err != nil {
			return fmt.Errorf("bind %s: %w", so.Addr, err)
		}
		if typ == unix.SOCK_STREAM {
			if err := unix.Listen(fd, 128); err != nil {
				return fmt.Errorf("listen %s: %w", so.Addr, err)
			}
		}
	}
	if err := unix.Sendmsg(socketFd, []byte{1}, unix.UnixRights(fds...), nil, 0); err != nil {
		return fmt.Errorf("send sockets: %w", err)
	}
	return nil
}

// LoopbackUp brings the loopback interface of the current network
// namespace up; a fresh namespace has it down.
func LoopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("get lo flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("set lo up: %w", err)
	}
	return nil
}

const (
	landlockFix = "Landlock is off in this kernel: boot with lsm=landlock,... (check /sys/kernel/security/lsm) or a kernel built with CONFIG_SECURITY_LANDLOCK=y; or run with --allow-degraded=landlock"
	seccompFix  = "this kernel lacks seccomp filters (CONFIG_SECCOMP_FILTER=y is needed); or run with --allow-degraded=seccomp"
)

func mountFix(err error) string {
	switch {
	case errors.Is(err, unix.ENOSYS):
		return "jail needs openat2 (Linux 5.6) and mount_setattr (Linux 5.12); upgrade the kernel"
	case errors.Is(err, unix.ELOOP):
		return "a bind source changed into a symlink while jail started; check the path and run again"
	case errors.Is(err, unix.ENOENT):
		return "a path the sandbox needs does not exist; check --ro/--rw/-w paths"
	}
	return ""
}
