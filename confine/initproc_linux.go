//go:build linux

package confine

import (
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// initProc is the sandbox's init as the supervisor sees it: the process
// outside the new pid namespace that waits for pid 1. It was either
// exec'd by the supervisor (an os.Process, signalled through its pidfd) or
// forked before the Go runtime started (an early child, known by pid).
type initProc struct {
	pid  int
	exec *os.Process
	// early marks `jail run`'s early child, which the process exits
	// without waiting for once pid 1 reported.
	early bool

	mu     sync.Mutex
	reaped bool // the pid may name another process now
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
	if p.exec != nil {
		st, err := p.exec.Wait()
		if err != nil {
			return 0, err
		}
		return st.Sys().(syscall.WaitStatus), nil
	}
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
