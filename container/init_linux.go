package container

import (
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

// InitMain is jail's init inside a container, its pid 1: it runs the command with the
// container's stdout and stderr, relays the container's stdin to it, and reaps whatever is
// orphaned in the container. It is pid 1 itself, not a child of Docker's init, because pid 1
// holds the container's stdin and stdout: Docker's init runs with the container's uid and is
// dumpable, so the app under test could open its /proc/1/fd/0 and /proc/1/fd/1 and read the
// supervisor's requests or write answers of its own. When the
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
	done := make(chan unix.WaitStatus, 1)
	// Lifetime: until the command exits. As pid 1 this process inherits every orphan of the
	// container, so it waits for any child (a zombie left unreaped would count against the
	// pids limit) and reports only the command's status; Cmd.Wait is never called, since it
	// waits for one pid and this loop may reap it first.
	go func() {
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, 0, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "jail init: wait:", err)
				done <- ws
				return
			}
			if pid == pgid {
				done <- ws
				return
			}
		}
	}()
	stdinEnded := make(chan struct{})
	// Lifetime: until the container's stdin ends; the process exits soon after either way.
	go func() {
		io.Copy(in, os.Stdin)
		in.Close()
		close(stdinEnded)
	}()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	var deadline <-chan time.Time
	for {
		select {
		case ws := <-done:
			// Whatever the command left behind goes with it.
			syscall.Kill(-pgid, syscall.SIGKILL)
			switch {
			case ws.Signaled():
				return 128 + int(ws.Signal())
			case ws.Exited():
				return ws.ExitStatus()
			default:
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
