//go:build linux

package confine

import (
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// initProc is the sandbox's init as the supervisor sees it: the process
// outside the new pid namespace that waits for pid 1. It was exec'd by the
// supervisor (an os.Process, signalled through its pidfd), forked by the
// zygote (known by pid, and reaped as soon as it exits by a goroutine of
// its own, so that no sandbox, used or not, is ever left a zombie), or is
// `jail run`'s early child (known by pid, reaped by wait).
type initProc struct {
	pid  int
	exec *os.Process
	// early marks `jail run`'s early child, which the process exits
	// without waiting for once pid 1 reported.
	early bool
	// ended closes when a forked init has been reaped, with ws and err.
	ended chan struct{}
	ws    syscall.WaitStatus
	err   error

	mu     sync.Mutex
	reaped bool // the pid may name another process now
}

// forkedProc watches an init the zygote forked: it is reaped the moment
// it exits.
func forkedProc(pid int) *initProc {
	p := &initProc{pid: pid, ended: make(chan struct{})}
	go func() {
		// Lifetime: until the init exits (it dies with this process).
		p.ws, p.err = p.reap()
		close(p.ended)
	}()
	return p
}

// exited reports whether a forked init has already ended.
func (p *initProc) exited() bool {
	if p.ended == nil {
		return false
	}
	select {
	case <-p.ended:
		return true
	default:
		return false
	}
}

func (p *initProc) signal(sig syscall.Signal) error {
	if p.exec != nil {
		return p.exec.Signal(sig)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return os.ErrProcessDone
	}
	return unix.Kill(p.pid, sig)
}

// wait waits for the init to exit and reaps it.
func (p *initProc) wait() (syscall.WaitStatus, error) {
	switch {
	case p.exec != nil:
		st, err := p.exec.Wait()
		if err != nil {
			return 0, err
		}
		return st.Sys().(syscall.WaitStatus), nil
	case p.ended != nil:
		<-p.ended
		return p.ws, p.err
	}
	return p.reap()
}

// reap waits for the init known by pid to exit and reaps it.
func (p *initProc) reap() (syscall.WaitStatus, error) {
	p.mu.Lock()
	reaped := p.reaped
	p.mu.Unlock()
	if reaped {
		return 0, os.NewSyscallError("wait4", syscall.ECHILD)
	}
	// Wait without reaping first: signal holds mu while it sends, so a
	// signal never reaches a process that reused the pid.
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			return 0, os.NewSyscallError("waitid", err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped { // by a concurrent wait, while this one waited
		return 0, os.NewSyscallError("wait4", syscall.ECHILD)
	}
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(p.pid, &ws, 0, nil)
		if err == nil {
			break
		}
		if err != syscall.EINTR {
			return 0, os.NewSyscallError("wait4", err)
		}
	}
	p.reaped = true
	return ws, nil
}
