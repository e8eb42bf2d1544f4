//go:build linux && cgo

package confine

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// heldSandbox starts a default sandbox with Spec.Hold.
func heldSandbox(t *testing.T) *Cmd {
	t.Helper()
	c := startSandbox(t, nil, "unused")
	t.Cleanup(c.Abort)
	return c
}

// TestHoldThenExec runs a command in a held sandbox with four descriptors:
// the fourth is the command's fd 3, and nothing else of the supervisor's
// reaches it.
func TestHoldThenExec(t *testing.T) {
	c := heldSandbox(t)
	outR, outW, _ := os.Pipe()
	extraR, extraW, _ := os.Pipe()
	leak, _ := os.Open("/etc/hostname")
	defer leak.Close()
	err := c.Exec([]string{"/bin/sh", "-c", `echo "$X in $PWD"; echo state >&3; ls /proc/self/fd | wc -l`}, []string{"X=held", "PATH=/usr/bin:/bin"},
		"/", []*os.File{nil, outW, outW, extraW})
	if err != nil {
		t.Fatal(err)
	}
	outW.Close()
	extraW.Close()
	res, err := c.Wait()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("wait: %v %+v", err, res)
	}
	out, _ := io.ReadAll(outR)
	extra, _ := io.ReadAll(extraR)
	// fds of ls: 0-3 and the directory it reads.
	if string(out) != "held in /\n5\n" || string(extra) != "state\n" {
		t.Fatalf("stdout %q, fd 3 %q", out, extra)
	}
}

// TestHoldRefusesMisuse: Exec without Hold, twice, with the wrong number
// of descriptors or a relative directory is an error, and a missing
// command is an ExecError; a held sandbox refused its command is ended,
// not left waiting.
func TestHoldRefusesMisuse(t *testing.T) {
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	for _, bad := range []struct {
		name  string
		dir   string
		files []*os.File
	}{
		{"one descriptor", "/", []*os.File{null}},
		{"five descriptors", "/", []*os.File{null, null, null, null, null}},
		{"a relative directory", "rel", []*os.File{null, null, null}},
	} {
		c := heldSandbox(t)
		pid := c.Pid()
		if err := c.Exec([]string{"/bin/true"}, nil, bad.dir, bad.files); err == nil {
			t.Fatalf("%s accepted", bad.name)
		}
		if unix.Kill(pid, 0) == nil {
			if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status"); !strings.Contains(string(b), "State:\tZ") {
				t.Errorf("%s: the held sandbox (pid %d) was left running", bad.name, pid)
			}
		}
	}
	c := heldSandbox(t)
	err := c.Exec([]string{"/no/such/command"}, nil, "/", []*os.File{null, null, null})
	var ee *ExecError
	if !errors.As(err, &ee) || ee.ExitCode() != 127 {
		t.Fatalf("missing command: %v", err)
	}
	if err := c.Exec([]string{"/bin/true"}, nil, "/", []*os.File{null, null, null}); err == nil {
		t.Fatal("a second Exec accepted")
	}
	plain := startSandbox(t, nil, "/bin/true")
	plain.Wait()
	if err := plain.Exec([]string{"/bin/true"}, nil, "/", []*os.File{null, null, null}); err == nil || !strings.Contains(err.Error(), "Hold") {
		t.Fatalf("Exec on a sandbox without Hold: %v", err)
	}
}

// TestHeldTimeoutCountsFromExec: a held sandbox may wait longer than its
// Timeout; the command then gets the whole of it.
func TestHeldTimeoutCountsFromExec(t *testing.T) {
	c := heldSandbox(t)
	c.Timeout = 200 * time.Millisecond
	time.Sleep(300 * time.Millisecond)
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	if err := c.Exec([]string{"/bin/sleep", "10"}, nil, "/", []*os.File{null, null, null}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Wait()
	if err != nil || !res.TimedOut || res.ExitCode != 124 {
		t.Fatalf("want a timeout: %v %+v", err, res)
	}
}
