package confine

import (
	"errors"
	"fmt"
	"syscall"
)

// Sentinel errors. Callers test them with errors.Is.
var (
	// ErrUnsupported is returned on a platform or build without the kernel
	// interfaces jail needs (not Linux, or built without cgo).
	ErrUnsupported = errors.New("confinement is not supported on this platform or build")
	// ErrTimeout is returned by Wait when the timeout killed the sandbox.
	ErrTimeout = errors.New("timed out")
)

// LayerError says which layer could not be set up, why, and how to fix it.
// It is what the child sends over the status pipe when a stage fails and
// what the supervisor returns.
type LayerError struct {
	Layer Layer         `json:"layer"`
	Stage string        `json:"stage"`
	Errno syscall.Errno `json:"errno"`
	Msg   string        `json:"msg"`
	Fix   string        `json:"fix,omitempty"`
}

func (e *LayerError) Error() string {
	s := fmt.Sprintf("%s: %s", e.Stage, e.Msg)
	if e.Errno != 0 {
		s += ": " + e.Errno.Error()
	}
	if e.Fix != "" {
		s += "\n  fix: " + e.Fix
	}
	return s
}

func (e *LayerError) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}

// ExecError is returned when the sandbox was built but the command itself
// could not be started (not found, not executable).
type ExecError struct {
	Path  string
	Errno syscall.Errno
}

func (e *ExecError) Error() string {
	return fmt.Sprintf("exec %s: %s", e.Path, e.Errno.Error())
}

func (e *ExecError) Unwrap() error { return e.Errno }

// ExitCode is the status a shell would give for a command that could not be
// started: 127 not found, 126 found but not executable.
func (e *ExecError) ExitCode() int {
	if e.Errno == syscall.ENOENT {
		return 127
	}
	return 126
}

// errnoOf digs the errno out of err, or 0.
func errnoOf(err error) syscall.Errno {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return 0
}
