//go:build linux

package confine

import (
	"bufio"
	"encoding/binary"
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
	// Terminal, for an interactive run, is the pty the command gets instead
	// of the caller's terminal (OpenTerminal): wherever Stdin, Stdout or
	// Stderr is that terminal, the command gets the pty's slave, and the
	// relay starts with the command. The caller closes it after Wait.
	Terminal *Terminal
	// Notice receives the lines the sandbox's init reports for a person
	// while the command runs (Spec.OffDNS), from the goroutine that calls
	// Wait. Nil: they are dropped.
	Notice func(line string)

	pre       prestart
	proc      *initProc // outside the sandbox; waits for pid 1
	pid1      int       // the sandbox's pid 1, as the host sees it
	sockets   []*os.File
	status    *bufio.Reader
	statusF   *os.File
	cg        *cgroup
	start     time.Time
	timer     *time.Timer
	watch     *time.Timer // the next check of the process limit (startWatch)
	census    *censusState
	pidsEnded bool   // the watch ended the sandbox at its process limit
	memEnded  bool   // the watch ended the sandbox above its memory bound (rlimits)
	memSeen   census // what the census found then
	mu        sync.Mutex
	timedOut  bool
	exited    bool
	waitOnce  sync.Once
	result    *Result
	resultErr error
	// header and setup are what a plan cache entry keeps of an early
	// child's plan (CachedPlan); protectAt locates each Protect mount's
	// identity in setup.
	header, setup []byte
	protectAt     map[string]int
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
	// OOMKilled says the memory limit was hit and the sandbox lost a
	// process for it: the kernel killed one in its cgroup, or (rlimits)
	// jail ended it (MemoryEnded). PidsLimited says a fork or clone failed
	// at the process limit: a cgroup counts the refusals; with rlimits
	// only a sandbox jail ended says so.
	OOMKilled   bool `json:"oom_killed,omitempty"`
	PidsLimited bool `json:"pids_limited,omitempty"`
	// PidsEnded says jail ended the sandbox because it stayed at its
	// process limit with forks failing (a fork bomb: watch_linux.go);
	// ExitCode is then 137 and Signal SIGKILL.
	PidsEnded bool `json:"pids_ended,omitempty"`
	// MemoryEnded says jail ended the sandbox because the census found it
	// holding more memory than its bound (the rlimit fallback, where no
	// cgroup's OOM killer can: watch_linux.go); ExitCode is then 137 and
	// Signal SIGKILL, and MemoryHeld says what it held.
	MemoryEnded bool       `json:"memory_ended,omitempty"`
	MemoryHeld  *MemoryUse `json:"-"`
	// Killed says the sandbox was ended (Signal, Abort or the timeout)
	// before its init reported how the command ended.
	Killed bool `json:"-"`
}

// cloneFlags are the namespaces of every sandbox, created by the child
// (op_unshare); the network namespace is added unless the caller asked
// for the host's network by name.
const cloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// Start launches the sandbox and returns once the command runs, or with the
// error of the stage that failed.
func (c *Cmd) Start() error {
	s := c.Spec
	if err := s.Validate(); err != nil {
		c.Abort()
		return err
	}
	if c.proc == nil {
		if err := c.Prestart(); err != nil {
			return err
		}
	} else if c.pre.net != s.Net || c.pre.uid != s.UID || c.pre.gid != s.GID {
		c.Abort()
		return fmt.Errorf("confine: Spec.Net, UID or GID changed between Prestart and Start")
	}
	if c.cg.method == LimitRLimit {
		s.RLimits = append(s.RLimits, rlimitsFor(c.Limits)...)
	}
	abi, _ := landlockABI()
	if s.Degraded(LayerSeccomp) && !seccompAvailable() {
		// Asked for by name: run without the filter this kernel cannot load.
		s.Seccomp = nil
	}
	body, setup, protectAt, err := compilePlanIDs(s, abi)
	if err != nil {
		c.Abort()
		return err
	}
	if c.proc.early && !s.Hold && len(s.Sockets) == 0 {
		// The rlimits are the command's (op_exec, after the setup); a
		// cached run adds them from the entry's limits.
		c.setup = body[:setup:setup]
		c.protectAt = protectAt
	}
	proc, statusR, sockMine := c.proc, c.statusF, c.pre.sockets
	if !s.Hold {
		defer sockMine.Close()
	}
	abort := func(e error) error {
		c.Abort()
		return e
	}
	if _, err := c.pre.plan.Write(body); err != nil {
		// A child that failed first (its namespaces refused: a jail
		// inside a jail) closed the plan's pipe: its report says why.
		if r, rerr := c.next(); rerr == nil && r.Err != nil {
			return abort(withFix(r.Err))
		}
		return abort(fmt.Errorf("send the plan: %w", err))
	}
	c.pre.plan.Close()
	if len(s.Sockets) > 0 {
		socks, err := receiveSockets(sockMine, len(s.Sockets))
		if err != nil {
			// The child's own report says why, if it failed first.
			if r, rerr := c.next(); rerr == nil && r.Err != nil {
				return abort(withFix(r.Err))
			}
			return abort(fmt.Errorf("receive proxy sockets: %w", err))
		}
		c.sockets = socks
	}

	want := stageStarted
	if s.Hold {
		want = stageHeld
	}
	if r, err := c.next(); err != nil || r.Stage != want {
		proc.wait()
		statusR.Close()
		sockMine.Close()
		c.cg.cleanup()
		c.proc = nil
		return startFailure(r, err)
	}
	if !s.Hold {
		c.startTimer()
		c.startWatch()
		if c.Terminal != nil {
			c.Terminal.Start()
		}
	}
	return nil
}

// startFailure is the error of a sandbox whose init reported r (or failed
// to report, with err) instead of running the command.
func startFailure(r report, err error) error {
	switch {
	case r.Err != nil && r.Err.Layer == LayerExec:
		return &ExecError{Path: r.Err.Msg, Errno: r.Err.Errno}
	case r.Err != nil:
		return withFix(r.Err)
	case err == nil:
		return fmt.Errorf("read sandbox status: unexpected stage %q", r.Stage)
	case errors.Is(err, io.EOF):
		return &LayerError{Layer: LayerMount, Stage: "start", Msg: "the sandbox's init exited before reporting"}
	default:
		return fmt.Errorf("read sandbox status: %w", err)
	}
}

// Exec gives a held sandbox (Spec.Hold, started) its command: argv, run in
// dir with env, with files as its descriptors 0, 1, 2 and, when there is
// a fourth, 3. It returns once the command runs; Timeout counts from
// here, and Wait waits for the command. The sandbox was made before the
// command was known, so Exec costs only the command's own fork and exec.
func (c *Cmd) Exec(argv, env []string, dir string, files []*os.File) error {
	if !c.Spec.Hold || c.proc == nil || c.pre.sockets == nil {
		return errors.New("confine: Exec needs a sandbox started with Spec.Hold, once")
	}
	// A held sandbox that cannot be given its command is ended: its pid 1
	// would wait for one for ever.
	if len(files) < 3 || len(files) > 4 {
		c.Abort()
		return fmt.Errorf("confine: Exec takes 3 or 4 descriptors, not %d", len(files))
	}
	if !isCleanAbs(dir) {
		c.Abort()
		return fmt.Errorf("spec: working directory %q must be an absolute clean path", dir)
	}
	x := *c.Spec
	x.Argv, x.Env, x.Dir = argv, env, dir
	p := &plan{}
	if err := p.exec(&x); err != nil {
		c.Abort()
		return err
	}
	msg := binary.NativeEndian.AppendUint32(make([]byte, 0, 4+len(p.b)), uint32(len(p.b)))
	msg = append(msg, p.b...)
	fds := make([]int, len(files))
	for i, f := range files {
		if f == nil {
			if f = orNull(nil); f == nil {
				c.Abort()
				return fmt.Errorf("open %s for the command", os.DevNull)
			}
			defer f.Close()
		}
		fds[i] = int(f.Fd())
	}
	sock := c.pre.sockets
	c.pre.sockets = nil
	defer sock.Close()
	if err := sendAll(int(sock.Fd()), msg, unix.UnixRights(fds...)); err != nil {
		c.Abort()
		return fmt.Errorf("send the command: %w", err)
	}
	if r, err := c.next(); err != nil || r.Stage != stageStarted {
		c.Abort()
		return startFailure(r, err)
	}
	c.start = time.Now()
	c.startTimer()
	c.startWatch()
	return nil
}

// sendAll sends b on a stream socket, the descriptors in oob with its
// first bytes.
func sendAll(fd int, b, oob []byte) error {
	for len(b) > 0 {
		n, err := unix.SendmsgN(fd, b, oob, nil, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b, oob = b[n:], nil
	}
	return nil
}

// startTimer arms Timeout once the command runs.
func (c *Cmd) startTimer() {
	if c.Timeout > 0 {
		c.timer = time.AfterFunc(c.Timeout, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if !c.exited {
				c.timedOut = true
				// pid 1 dying takes the whole namespace with it.
				c.killLocked()
			}
		})
	}
}

// seccompAvailable reports whether this kernel has seccomp: PR_GET_SECCOMP
// fails with EINVAL without CONFIG_SECCOMP.
func seccompAvailable() bool {
	_, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	return err == nil
}

// prestart is what Prestart set up for Start to finish.
type prestart struct {
	net      NetMode
	uid, gid int
	plan     *os.File // write end of the plan pipe
	sockets  *os.File // our end of the socket hand-over
}

// Prestart starts the sandbox's child before the Spec is complete: the
// child's exec and the creation of its namespaces then overlap the
// caller's own preparation (resolving paths, compiling the filter).
// Spec.Net, UID and GID, Limits and the stdio files must be final; the
// rest of the Spec is read by Start. After Prestart, either Start or Abort
// must be called. Calling Start alone does both steps.
func (c *Cmd) Prestart() error {
	s := c.Spec
	if t := c.Terminal; t != nil {
		for _, f := range []**os.File{&c.Stdin, &c.Stdout, &c.Stderr} {
			if t.IsTerminal(*f) {
				*f = t.Slave()
			}
		}
		s.PTY, s.Foreground = true, false
	}
	c.cg = newCgroup(c.Limits, "jail-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if e, ok := takeEarly(); ok {
		// An early child has the network namespace already; it is moved
		// into the cgroup (cgroup.procs) before it gets the header, so
		// pid 1 and everything after it start there.
		if namespaceFlags(s) == earlyFlags {
			if err := c.cg.attach(e.pid); err != nil {
				c.cg.cleanup()
				c.cg = newCgroupAgain(c.cg)
			}
			if c.cg.method == LimitNone || c.cg.method == LimitRLimit || c.cg.attached {
				ok, err := c.adopt(e)
				if ok || err != nil {
					return err
				}
				// The early child is gone (it could not start, say under a
				// low open-files limit): an exec'd one takes its place.
				c.proc, c.statusF, c.status, c.pre = nil, nil, nil, prestart{}
			}
		}
		discard(e)
	}
	planR, planW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("plan pipe: %w", err)
	}
	defer planR.Close()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		planW.Close()
		return fmt.Errorf("status pipe: %w", err)
	}
	defer statusW.Close()
	sockPair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		planW.Close()
		statusR.Close()
		return fmt.Errorf("socket pair: %w", err)
	}
	sockMine, sockChild := os.NewFile(uintptr(sockPair[0]), "sockets"), os.NewFile(uintptr(sockPair[1]), "sockets-child")
	defer sockChild.Close()

	// No namespace flags here: the child creates its namespaces itself
	// (op_unshare in pid1_linux.c), so this is a plain vfork+exec.
	attr := &syscall.SysProcAttr{
		Pdeathsig: unix.SIGKILL,
		Setpgid:   true,
	}
	if c.cg.fd >= 0 {
		attr.UseCgroupFD = true
		attr.CgroupFD = c.cg.fd
	}
	stdio := []*os.File{c.Stdin, c.Stdout, c.Stderr}
	files := make([]*os.File, fdSockets+1)
	files[0], files[1], files[2] = orNull(c.Stdin), orNull(c.Stdout), orNull(c.Stderr)
	files[fdPlan], files[fdReport], files[fdSockets] = planR, statusW, sockChild
	c.start = time.Now()
	// A zygote (jail serve, jail mcp) forks the init without an exec, but
	// cannot start it in a cgroup.
	pid, forked, err := 0, false, error(nil)
	if c.cg.fd < 0 {
		pid, forked, err = zygoteFork(files)
	}
	if forked && err == nil {
		c.proc = forkedProc(pid)
	} else if !forked {
		var proc *os.Process
		proc, err = os.StartProcess("/proc/self/exe", []string{childArg0}, &os.ProcAttr{Env: []string{}, Files: files, Sys: attr})
		if err == nil {
			c.proc = &initProc{pid: proc.Pid, exec: proc}
		}
	}
	for i, f := range stdio {
		if f == nil && files[i] != nil {
			files[i].Close() // the /dev/null opened for it
		}
	}
	if err != nil {
		planW.Close()
		statusR.Close()
		sockMine.Close()
		c.cg.cleanup()
		return fmt.Errorf("start the sandbox's init: %w", err)
	}
	c.statusF = statusR
	c.status = bufio.NewReader(statusR)
	c.pre = prestart{net: s.Net, uid: s.UID, gid: s.GID, plan: planW, sockets: sockMine}
	// The child must be in its cgroup before it forks pid 1, which it
	// does as soon as it has the header.
	if err := c.cg.attach(c.proc.pid); err != nil {
		c.Abort()
		return &LayerError{Layer: LayerLimits, Stage: "cgroup", Errno: errnoOf(err), Msg: err.Error()}
	}
	if _, err := planW.Write(planHeader(s, os.Getuid(), os.Getgid())); err != nil {
		c.Abort()
		return fmt.Errorf("send the plan header: %w", err)
	}
	return nil
}

// adopt makes the early child this command's init: it sends the header,
// which the child has waited for with its namespaces already made, and the
// command's stdio, which the child could not inherit.
func (c *Cmd) adopt(e early) (ok bool, err error) {
	s := c.Spec
	c.start = time.Now()
	c.header = planHeader(s, os.Getuid(), os.Getgid())
	if _, err := e.plan.Write(c.header); err != nil {
		return false, nil // Prestart discards it
	}
	c.proc = &initProc{pid: e.pid, early: true}
	c.statusF = e.status
	c.status = bufio.NewReader(e.status)
	c.pre = prestart{net: s.Net, uid: s.UID, gid: s.GID, plan: e.plan, sockets: e.socket}
	var fds []int
	for _, f := range []*os.File{c.Stdin, c.Stdout, c.Stderr} {
		if f == nil {
			null := orNull(nil)
			if null == nil {
				c.Abort()
				return true, fmt.Errorf("open %s for the command's stdio", os.DevNull)
			}
			defer null.Close()
			f = null
		}
		fds = append(fds, int(f.Fd()))
	}
	if err := unix.Sendmsg(int(e.socket.Fd()), []byte{0}, unix.UnixRights(fds...), nil, 0); err != nil {
		// The child's own report says why, if it failed first.
		if r, rerr := c.next(); rerr == nil && r.Err != nil {
			c.Abort()
			return true, withFix(r.Err)
		}
		c.Abort()
		return true, fmt.Errorf("send the command's stdio: %w", err)
	}
	return true, nil
}

// discard ends an early child that this run cannot use.
func discard(e early) {
	e.plan.Close()
	e.status.Close()
	e.socket.Close()
	p := &initProc{pid: e.pid}
	p.signal(unix.SIGKILL)
	p.wait()
}

// Abort ends a sandbox that was prestarted but will not be started, or
// whose start failed. It is safe to call more than once.
func (c *Cmd) Abort() {
	if c.proc == nil {
		return
	}
	c.mu.Lock()
	c.killLocked()
	c.exited = true
	c.mu.Unlock()
	c.proc.wait()
	c.proc = nil
	if c.pre.plan != nil {
		c.pre.plan.Close()
	}
	if c.pre.sockets != nil {
		c.pre.sockets.Close()
	}
	if c.statusF != nil {
		c.statusF.Close()
	}
	if c.cg != nil {
		c.cg.cleanup()
	}
}

// next reads the child's next report, noting pid 1's host pid on the way.
func (c *Cmd) next() (report, error) {
	for {
		var r report
		line, err := c.status.ReadBytes('\n')
		if err != nil {
			return r, err
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return r, fmt.Errorf("read sandbox status %q: %w", line, err)
		}
		if r.Stage == stagePID1 {
			c.mu.Lock()
			c.pid1 = r.Pid
			c.mu.Unlock()
			continue
		}
		if r.Stage == stageNotice {
			if c.Notice != nil {
				c.Notice(r.Text)
			}
			continue
		}
		return r, nil
	}
}

// killLocked ends the sandbox: pid 1 first (its namespace goes with it),
// then the process outside that waits for it. c.mu is held.
func (c *Cmd) killLocked() {
	// pid 1 only, when known: the process outside waits for it, and pid
	// 1's exit waits for every process of its namespace, so once the
	// outside one is reaped nothing of the sandbox is left.
	if c.pid1 > 0 {
		unix.Kill(c.pid1, unix.SIGKILL)
		return
	}
	c.proc.signal(unix.SIGKILL)
}

// Sockets are the listening sockets of Spec.Sockets, in order, opened in
// the sandbox's network namespace. The caller owns them.
func (c *Cmd) Sockets() []*os.File { return c.sockets }

// receiveSockets reads n descriptors, sent in batches (at most 253 fit
// one message).
func receiveSockets(f *os.File, n int) ([]*os.File, error) {
	var out []*os.File
	fail := func(err error) ([]*os.File, error) {
		for _, f := range out {
			f.Close()
		}
		return nil, err
	}
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*253))
	for len(out) < n {
		_, oobn, _, _, err := unix.Recvmsg(int(f.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != nil {
			return fail(err)
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return fail(fmt.Errorf("no descriptors received"))
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil {
			return fail(err)
		}
		for _, fd := range fds {
			out = append(out, os.NewFile(uintptr(fd), "sandbox-socket"))
		}
	}
	if len(out) != n {
		return fail(fmt.Errorf("received %d descriptors, want %d", len(out), n))
	}
	return out, nil
}

// Exited reports whether a started sandbox has already ended (its init
// exited) without being waited for: a sandbox made ahead and left idle
// can end by itself, and must then not be used.
func (c *Cmd) Exited() bool { return c.proc != nil && c.proc.exited() }

// Pid is the host pid of the sandbox's init.
func (c *Cmd) Pid() int { return c.proc.pid }

// InitPid is the host pid of the sandbox's pid 1 once it reported
// (0 before): the pid whose end is the end of the sandbox's whole pid
// namespace.
func (c *Cmd) InitPid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pid1
}

// Signal forwards sig to the command through the sandbox's init.
func (c *Cmd) Signal(sig os.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exited {
		return nil
	}
	if c.Terminal != nil && sig == unix.SIGWINCH {
		// The command's terminal is jail's pty: it gets the new size, and
		// the kernel signals the command's foreground group.
		c.Terminal.Resize()
		return nil
	}
	if c.pid1 > 0 {
		// pid 1 forwards it to the command.
		return unix.Kill(c.pid1, sig.(syscall.Signal))
	}
	return c.proc.signal(sig.(syscall.Signal))
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
	r, _ := c.next()
	for r.Stage == stageStopped {
		c.suspend()
		r, _ = c.next()
	}
	var ws syscall.WaitStatus
	var err error
	reaped := false
	if r.Stage == stageExit && c.cg.method != LimitCgroup1 && c.cg.method != LimitCgroup2 {
		// pid 1 reports only after every process of the sandbox is gone;
		// what is left is the kernel taking the namespaces down, which the
		// caller need not wait for. The process outside is still reaped,
		// except an early child: only `jail run` has one, and it exits
		// now (a goroutine blocked in waitid would cost it a thread).
		if !c.proc.early {
			go c.proc.wait()
		}
	} else {
		// A cgroup can be removed only once pid 1 has exited too.
		ws, err = c.proc.wait()
		reaped = err == nil
	}
	c.mu.Lock()
	c.exited = true
	timedOut := c.timedOut
	c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
	c.stopWatch()
	pidsEnded, memEnded, memSeen := c.pidsEnded, c.memEnded, c.memSeen
	c.statusF.Close()
	oom, pidsHit := c.cg.events()
	c.cg.cleanup()
	if c.Spec.Foreground {
		reclaimTerminal()
	}
	if err != nil {
		return nil, fmt.Errorf("wait for sandbox: %w", err)
	}
	var held *MemoryUse
	if memEnded {
		held = &MemoryUse{Total: memSeen.Total, Anon: memSeen.Anon, Shmem: memSeen.Shmem, FdShm: memSeen.FdShm, Tmpfs: memSeen.Tmpfs, Files: memSeen.Files}
	}
	res := &Result{
		MemoryHeld:  held,
		OOMKilled:   oom || memEnded,
		PidsLimited: pidsHit || pidsEnded,
		PidsEnded:   pidsEnded,
		MemoryEnded: memEnded,
		DurationMS:  time.Since(c.start).Milliseconds(),
		TimedOut:    timedOut,
		MaxRSSKB:    r.MaxRSSKB,
		Limits:      c.cg.method,
		LimitsNote:  c.cg.why,
		Killed:      r.Stage != stageExit,
	}
	switch {
	case timedOut:
		res.ExitCode = 124
		res.Signal = unix.SignalName(unix.SIGKILL)
	case pidsEnded || memEnded:
		// Ended by jail, as a timeout is: the status of a kill.
		res.ExitCode = 128 + int(unix.SIGKILL)
		res.Signal = unix.SignalName(unix.SIGKILL)
	case r.Stage == stageExit:
		res.ExitCode = r.Status
		if r.Signal != 0 {
			res.Signal = unix.SignalName(syscall.Signal(r.Signal))
		}
	case reaped && ws.Signaled():
		res.ExitCode = 128 + int(ws.Signal())
		res.Signal = unix.SignalName(ws.Signal())
	default:
		res.ExitCode = ws.ExitStatus()
	}
	return res, nil
}

// suspend follows a stopped command: when it owns the terminal (^Z in an
// editor), jail takes the terminal back and stops its own process group,
// so the caller's shell sees the job stopped and gets its prompt; when the
// shell resumes jail (fg or bg), pid 1 gets SIGCONT and hands the terminal
// back to the command. Without a terminal the command stays stopped until
// a SIGCONT is forwarded to it.
func (c *Cmd) suspend() {
	if c.Terminal != nil {
		// The command leads its pty's session and stopped itself (a
		// SIGSTOP; ^Z's SIGTSTP the kernel drops for it, its group being
		// orphaned, as for any session leader). Nothing inside can
		// continue it, and the command must not be able to stop jail: it
		// is continued. Job control inside works in a shell of its own.
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.pid1 > 0 && !c.exited {
			unix.Kill(c.pid1, unix.SIGCONT)
		}
		return
	}
	if !c.Spec.Foreground {
		return
	}
	reclaimTerminal()
	unix.Kill(0, unix.SIGSTOP)
	// Running again: the shell continued us.
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pid1 > 0 && !c.exited {
		unix.Kill(c.pid1, unix.SIGCONT)
	}
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

// userNSFix explains a refused unshare: which setting refuses user
// namespaces, and how to allow them. Ubuntu's AppArmor restriction shows
// as EPERM or EACCES, the sysctls as EPERM or ENOSPC.
func userNSFix(errno unix.Errno) string {
	if b, e := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); e == nil && string(b) == "1\n" {
		return "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1): add an AppArmor profile for the jail binary with the 'userns' permission, or run: sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0"
	}
	if b, e := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); e == nil && string(b) == "0\n" {
		return "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0): sudo sysctl kernel.unprivileged_userns_clone=1"
	}
	if b, e := os.ReadFile("/proc/sys/user/max_user_namespaces"); e == nil && string(b) == "0\n" {
		return "user namespaces are disabled (user.max_user_namespaces=0): sudo sysctl user.max_user_namespaces=15000"
	}
	if errno == unix.ENOSPC {
		return "the limit on user namespaces is reached (user.max_user_namespaces): raise it or end other sandboxes"
	}
	if errno == unix.EINVAL {
		return "this kernel lacks a namespace jail needs (CONFIG_USER_NS, CONFIG_PID_NS, CONFIG_NET_NS, CONFIG_CGROUPS)"
	}
	return ""
}
