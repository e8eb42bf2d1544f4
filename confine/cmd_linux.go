//go:build linux

package confine

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Cmd is one sandboxed command, started and waited for by the supervisor.
type Cmd struct {
	Spec *Spec
	// Stdin, Stdout and Stderr are passed to the command as they are; nil
	// means /dev/null.
	Stdin, Stdout, Stderr *os.File
	// Timeout, if set, kills the whole sandbox when it passes.
	Timeout time.Duration
	// Limits bound memory and processes; see LimitMethod.
	Limits Limits
	// OnStart runs after the sandbox's namespaces exist and before the
	// child builds its root: the network modes open their listeners in the
	// sandbox's network namespace here. pid is the child's host pid.
	OnStart func(pid int) error

	proc      *os.Process
	sockets   []*os.File
	status    *bufio.Reader
	statusF   *os.File
	cg        *cgroup
	start     time.Time
	timer     *time.Timer
	mu        sync.Mutex
	timedOut  bool
	exited    bool
	waitOnce  sync.Once
	result    *Result
	resultErr error
}

// Result is what a finished sandbox reports. Its JSON form is the
// documented result of `jail run --json` (docs/result.md).
type Result struct {
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended the command, if one did.
	Signal   string `json:"signal,omitempty"`
	TimedOut bool   `json:"timed_out"`
	// DurationMS is wall time from launch to exit.
	DurationMS int64 `json:"duration_ms"`
	// MaxRSSKB is the peak resident set of the largest process of the
	// command's tree that was waited for.
	MaxRSSKB int64 `json:"max_rss_kb"`
	// Limits says how --memory and --pids were enforced, and LimitsNote
	// why a cgroup could not be used.
	Limits     LimitMethod `json:"limits"`
	LimitsNote string      `json:"limits_note,omitempty"`
}

// cloneFlags are the namespaces of every sandbox; the network namespace is
// added unless the caller asked for the host's network by name.
const cloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// initCaps are the capabilities (in the sandbox's own user namespace) pid 1
// keeps across its execve to build the root: mount and pivot_root, the
// loopback interface, and emptying the bounding set. It drops them all
// before the command starts.
func initCaps() []uintptr {
	return []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP, unix.CAP_NET_ADMIN}
}

// Start launches the sandbox and returns once the command runs, or with the
// error of the stage that failed.
func (c *Cmd) Start() error {
	s := c.Spec
	if err := s.Validate(); err != nil {
		return err
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("spec pipe: %w", err)
	}
	defer specR.Close()
	defer specW.Close()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("status pipe: %w", err)
	}
	defer statusW.Close()

	c.cg = newCgroup(c.Limits, "jail-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if c.cg.method == LimitRLimit {
		s.RLimits = append(s.RLimits, rlimitsFor(c.Limits)...)
	}
	abi, _ := landlockABI()
	wire, err := compilePlan(s, abi)
	if err != nil {
		c.cg.cleanup()
		return err
	}

	uid, gid := os.Getuid(), os.Getgid()
	flags := uintptr(cloneFlags)
	if s.Net != NetHost {
		flags |= unix.CLONE_NEWNET
	}
	attr := &syscall.SysProcAttr{
		Cloneflags:                 flags,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: s.UID, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: s.GID, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		AmbientCaps:                initCaps(),
		Pdeathsig:                  unix.SIGKILL,
		Setpgid:                    true,
	}
	if c.cg.fd >= 0 {
		attr.UseCgroupFD = true
		attr.CgroupFD = c.cg.fd
	}
	sockPair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket pair: %w", err)
	}
	sockMine, sockChild := os.NewFile(uintptr(sockPair[0]), "sockets"), os.NewFile(uintptr(sockPair[1]), "sockets-child")
	defer sockMine.Close()
	defer sockChild.Close()
	files := []*os.File{orNull(c.Stdin), orNull(c.Stdout), orNull(c.Stderr), specR, statusW, sockChild}
	c.start = time.Now()
	proc, err := os.StartProcess("/proc/self/exe", []string{childArg0}, &os.ProcAttr{Env: []string{}, Files: files, Sys: attr})
	if err != nil {
		c.cg.cleanup()
		return userNSError(err)
	}
	c.proc = proc
	c.statusF = statusR
	c.status = bufio.NewReader(statusR)
	specR.Close()
	statusW.Close()

	abort := func(e error) error {
		proc.Kill()
		proc.Wait()
		statusR.Close()
		c.cg.cleanup()
		return e
	}
	if err := c.cg.attach(proc.Pid); err != nil {
		return abort(&LayerError{Layer: LayerLimits, Stage: "cgroup", Errno: errnoOf(err), Msg: err.Error()})
	}
	if c.OnStart != nil {
		if err := c.OnStart(proc.Pid); err != nil {
			return abort(err)
		}
	}
	if _, err := specW.Write(wire); err != nil {
		return abort(fmt.Errorf("send spec: %w", err))
	}
	specW.Close()
	sockChild.Close()
	if len(s.Sockets) > 0 {
		socks, err := receiveSockets(sockMine, len(s.Sockets))
		if err != nil {
			// The child's own report says why, if it failed first.
			var r report
			if line, rerr := c.status.ReadBytes('\n'); rerr == nil && json.Unmarshal(line, &r) == nil && r.Err != nil {
				return abort(withFix(r.Err))
			}
			return abort(fmt.Errorf("receive proxy sockets: %w", err))
		}
		c.sockets = socks
	}

	var r report
	line, err := c.status.ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &r)
	}
	if err != nil || r.Stage != "started" {
		proc.Wait()
		statusR.Close()
		c.cg.cleanup()
		switch {
		case r.Err != nil && r.Err.Layer == LayerExec:
			return &ExecError{Path: r.Err.Msg, Errno: r.Err.Errno}
		case r.Err != nil:
			return withFix(r.Err)
		case errors.Is(err, io.EOF):
			return &LayerError{Layer: LayerMount, Stage: "start", Msg: "the sandbox's init exited before reporting"}
		default:
			return fmt.Errorf("read sandbox status: %w", err)
		}
	}
	if c.Timeout > 0 {
		c.timer = time.AfterFunc(c.Timeout, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if !c.exited {
				c.timedOut = true
				// pid 1 dying takes the whole namespace with it.
				proc.Signal(unix.SIGKILL)
			}
		})
	}
	return nil
}

// Sockets are the listening sockets of Spec.Sockets, in order, opened in
// the sandbox's network namespace. The caller owns them.
func (c *Cmd) Sockets() []*os.File { return c.sockets }

// receiveSockets reads the one message carrying n descriptors.
func receiveSockets(f *os.File, n int) ([]*os.File, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*n))
	_, oobn, _, _, err := unix.Recvmsg(int(f.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("no descriptors received")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil {
		return nil, err
	}
	if len(fds) != n {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("received %d descriptors, want %d", len(fds), n)
	}
	out := make([]*os.File, n)
	for i, fd := range fds {
		out[i] = os.NewFile(uintptr(fd), "sandbox-socket")
	}
	return out, nil
}

// Pid is the host pid of the sandbox's init.
func (c *Cmd) Pid() int { return c.proc.Pid }

// Signal forwards sig to the command through the sandbox's init.
func (c *Cmd) Signal(sig os.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exited {
		return nil
	}
	return c.proc.Signal(sig)
}

// Wait waits for the command and returns its result. A nonzero exit of the
// command is not an error; a timeout sets TimedOut and ExitCode 124.
func (c *Cmd) Wait() (*Result, error) {
	c.waitOnce.Do(func() { c.result, c.resultErr = c.wait() })
	return c.result, c.resultErr
}

func (c *Cmd) wait() (*Result, error) {
	// The exit report arrives before init exits; EOF means init died
	// without one (killed by the timeout or from outside).
	var r report
	if line, err := c.status.ReadBytes('\n'); err == nil {
		json.Unmarshal(line, &r)
	}
	st, err := c.proc.Wait()
	c.mu.Lock()
	c.exited = true
	timedOut := c.timedOut
	c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
	c.statusF.Close()
	c.cg.cleanup()
	if c.Spec.Foreground {
		reclaimTerminal()
	}
	if err != nil {
		return nil, fmt.Errorf("wait for sandbox: %w", err)
	}
	res := &Result{
		DurationMS: time.Since(c.start).Milliseconds(),
		TimedOut:   timedOut,
		MaxRSSKB:   r.MaxRSSKB,
		Limits:     c.cg.method,
		LimitsNote: c.cg.why,
	}
	ws := st.Sys().(syscall.WaitStatus)
	switch {
	case timedOut:
		res.ExitCode = 124
		res.Signal = unix.SignalName(unix.SIGKILL)
	case r.Stage == "exit":
		res.ExitCode = r.Status
		if r.Signal != 0 {
			res.Signal = unix.SignalName(syscall.Signal(r.Signal))
		}
	case ws.Signaled():
		res.ExitCode = 128 + int(ws.Signal())
		res.Signal = unix.SignalName(ws.Signal())
	default:
		res.ExitCode = ws.ExitStatus()
	}
	return res, nil
}

// reclaimTerminal makes jail's own process group the terminal's foreground
// again after a foreground command ended, as a shell does after a job.
func reclaimTerminal() {
	signal.Ignore(unix.SIGTTOU)
	defer signal.Reset(unix.SIGTTOU)
	unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, unix.Getpgrp())
}

func orNull(f *os.File) *os.File {
	if f != nil {
		return f
	}
	n, err := os.Open(os.DevNull)
	if err != nil {
		return nil
	}
	return n
}

// userNSError explains a refused clone: which setting refuses user
// namespaces, and how to allow them.
func userNSError(err error) error {
	le := &LayerError{Layer: LayerUserNS, Stage: "create namespaces", Errno: errnoOf(err), Msg: err.Error()}
	if b, e := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); e == nil && string(b) == "1\n" {
		le.Fix = "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1): add an AppArmor profile for the jail binary with the 'userns' permission, or run: sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0"
		return le
	}
	if b, e := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); e == nil && string(b) == "0\n" {
		le.Fix = "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0): sudo sysctl kernel.unprivileged_userns_clone=1"
		return le
	}
	if b, e := os.ReadFile("/proc/sys/user/max_user_namespaces"); e == nil && string(b) == "0\n" {
		le.Fix = "user namespaces are disabled (user.max_user_namespaces=0): sudo sysctl user.max_user_namespaces=15000"
		return le
	}
	if errors.Is(err, unix.EINVAL) {
		le.Fix = "this kernel lacks a namespace jail needs (CONFIG_USER_NS, CONFIG_PID_NS, CONFIG_NET_NS, CONFIG_CGROUPS)"
	}
	return le
}
