package container

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// InitCommand is argv[1] of jail's init inside a container (argv[0] is [BinaryPath]).
const InitCommand = "__container-init"

// InitMain is jail's init inside a container, the child of Docker's: it runs the command
// with the container's stdout and stderr and relays the container's stdin to it. When the
// container's stdin ends (the supervisor released the container, or died: the engine closes
// a StdinOnce container's stdin when its attached client goes away), it closes the command's
// stdin, gives it the grace period to exit, then kills its whole process group. It exits
// with the command's status, which ends the container.
//
// args: -grace DURATION -- COMMAND [ARG...]
func InitMain(args []string) int {
	fs := flag.NewFlagSet(InitCommand, flag.ContinueOnError)
	grace := fs.Duration("grace", DefaultGrace, "how long the command has after stdin closed")
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "jail init: usage: "+InitCommand+" -grace D -- COMMAND [ARG...]")
		return 2
	}
	// Whatever runs in the container has this uid: not dumpable, the container's stdin and
	// stdout held here cannot be opened through /proc/PID/fd, nor this process ptraced.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "jail init: prctl(PR_SET_DUMPABLE):", err)
		return 1
	}
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// Its own process group, so the kill reaches whatever it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "jail init:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "jail init: start %s: %v\n", fs.Arg(0), err)
		return 127
	}
	pgid := cmd.Process.Pid
	stdinEnded := make(chan struct{})
	// Lifetime: until the container's stdin ends; the process exits soon after either way.
	go func() {
		io.Copy(in, os.Stdin)
		in.Close()
		close(stdinEnded)
	}()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	done := make(chan error, 1)
	// Lifetime: until the command exits.
	go func() { done <- cmd.Wait() }()
	var deadline <-chan time.Time
	for {
		select {
		case err := <-done:
			// Whatever the command left behind goes with it.
			syscall.Kill(-pgid, syscall.SIGKILL)
			var ee *exec.ExitError
			switch {
			case err == nil:
				return 0
			case errors.As(err, &ee):
				if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
					return 128 + int(st.Signal())
				}
				return ee.ExitCode()
			default:
				fmt.Fprintln(os.Stderr, "jail init: wait:", err)
				return 1
			}
		case <-stdinEnded:
			stdinEnded = nil
			deadline = time.After(*grace)
		case s := <-sigs:
			syscall.Kill(-pgid, s.(syscall.Signal))
			if deadline == nil {
				deadline = time.After(*grace)
			}
		case <-deadline:
			fmt.Fprintf(os.Stderr, "jail init: the command did not exit within %v of its stdin closing: killed\n", *grace)
			syscall.Kill(-pgid, syscall.SIGKILL)
			deadline = nil
		}
	}
}
