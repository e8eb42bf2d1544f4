//go:build linux && cgo

package confine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// FuzzPlanDecoder hands malformed plans to the sandbox's init: the real C
// decoder (plan_linux.c) in a child process, after a valid header, run as
// an unprivileged user (nobody when the test runs as root). Whatever the
// body holds, the init must end within seconds, never by a crash, and
// every line it reports must be one the supervisor reads (report). A body
// holding the exec opcode is skipped: it would run a command the fuzzer
// made up.
//
//	go test ./confine -run '^$' -fuzz FuzzPlanDecoder -fuzztime 3m
func FuzzPlanDecoder(f *testing.F) {
	s := validSpec()
	s.Argv, s.Dir = []string{"/bin/true"}, "/"
	s.Seccomp = []Program{{{Code: 6, K: 0x7fff0000}}} // return allow
	abi, _ := landlockABI()
	if body, setup, err := compilePlan(s, abi); err == nil {
		f.Add(body[:setup])
		f.Add(body[:setup/2])
	}
	f.Add([]byte{})
	f.Add(binary.NativeEndian.AppendUint32(nil, opEnd))
	f.Add(binary.NativeEndian.AppendUint32(nil, 9999))
	str := binary.NativeEndian.AppendUint32(binary.NativeEndian.AppendUint32(nil, opHostname), 1<<30)
	f.Add(str)
	init := initBinary(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		if bytes.Contains(body, binary.NativeEndian.AppendUint32(nil, opExec)) {
			t.Skip("the body would run a command")
		}
		runPlan(t, init, body)
	})
}

// initInvocation is how the fuzz target starts an init: the test binary
// (whose constructor is the init), as whom.
type initInvocation struct {
	path     string
	uid, gid int
	cred     *syscall.Credential
}

// initBinary finds the init to fuzz: this test binary, copied where nobody
// may run it when the test runs as root.
func initBinary(f testing.TB) initInvocation {
	self, err := os.Executable()
	if err != nil {
		f.Fatal(err)
	}
	if os.Getuid() != 0 {
		return initInvocation{path: self, uid: os.Getuid(), gid: os.Getgid()}
	}
	// Not f.TempDir, whose parent only root may enter.
	dir, err := os.MkdirTemp("", "jail-fuzz-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	b, err := os.ReadFile(self)
	if err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(dir, "init")
	if err := os.WriteFile(path, b, 0o755); err != nil {
		f.Fatal(err)
	}
	return initInvocation{path: path, uid: 65534, gid: 65534, cred: &syscall.Credential{Uid: 65534, Gid: 65534}}
}

// runPlan starts an init with body after a valid header and judges how it
// ends.
func runPlan(t *testing.T, in initInvocation, body []byte) {
	runPlanHolding(t, in, body, false)
}

// runPlanHolding is runPlan whose supervisor, with hold, keeps its side of
// the socket open and sends nothing: one that stopped. It returns the
// reports.
func runPlanHolding(t *testing.T, in initInvocation, body []byte, hold bool) []report {
	planR, planW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	socks, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	sockOurs, sockChild := os.NewFile(uintptr(socks[0]), "sock"), os.NewFile(uintptr(socks[1]), "sock-child")
	defer sockOurs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, in.path)
	cmd.Args = []string{childArg0}
	cmd.Env = []string{}
	cmd.ExtraFiles = []*os.File{planR, repW, sockChild} // fdPlan, fdReport, fdSockets
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: in.cred, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	planR.Close()
	repW.Close()
	sockChild.Close()
	if err != nil {
		t.Fatalf("start the init: %v", err)
	}
	plan := append(planHeader(&Spec{Net: NetNone}, in.uid, in.gid), body...)
	go func() {
		// Lifetime: one write; the init reads to EOF or dies, which
		// ends it.
		planW.Write(plan)
		planW.Close()
	}()
	// Nothing more comes from this supervisor on the socket: a held
	// sandbox (OP_HOLD) goes unused, a plan in two parts (OP_MORE) has no
	// second part. What the init sends (OP_SOCKETS) is still taken.
	if !hold {
		unix.Shutdown(socks[0], unix.SHUT_WR)
	}
	drained := make(chan struct{})
	go func() {
		// Lifetime: until the init's end of the socket closes. What
		// OP_SOCKETS sends is taken and closed, as a supervisor would.
		defer close(drained)
		buf, oob := make([]byte, 64), make([]byte, unix.CmsgSpace(253*4))
		for {
			n, oobn, _, _, err := unix.Recvmsg(socks[0], buf, oob, 0)
			if err != nil || n == 0 {
				return
			}
			if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, m := range msgs {
					fds, _ := unix.ParseUnixRights(&m)
					for _, fd := range fds {
						unix.Close(fd)
					}
				}
			}
		}
	}()
	var lines []report
	sc := bufio.NewScanner(repR)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r report
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Stage == "" {
			t.Errorf("the init reported a line the supervisor cannot read: %q (%v)", sc.Bytes(), err)
		}
		lines = append(lines, r)
	}
	io.Copy(io.Discard, repR)
	repR.Close()
	err = cmd.Wait()
	unix.Shutdown(socks[0], unix.SHUT_RDWR)
	<-drained
	if ctx.Err() != nil {
		t.Fatalf("the init did not end within 10s of a %d-byte plan body (reports %+v)", len(body), lines)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("the init died of %v on a %d-byte plan body (reports %+v)", ws.Signal(), len(body), lines)
		}
	}
	if len(lines) == 0 {
		t.Fatalf("the init ended (%v) without a report", err)
	}
	return lines
}

// TestPlanMoreWaitBounded: pid 1 waiting at OP_MORE for the rest of a plan
// in two parts gives up on a supervisor that stopped (its socket open,
// nothing sent) at the deadline the plan carries, and reports the wait by
// name; one that ended (EOF) is reported at once; a wait out of range is
// refused. None is a hang.
func TestPlanMoreWaitBounded(t *testing.T) {
	in := initBinary(t)
	more := func(ms uint32) []byte {
		return binary.NativeEndian.AppendUint32(binary.NativeEndian.AppendUint32(nil, opMore), ms)
	}
	for _, c := range []struct {
		name  string
		body  []byte
		hold  bool
		errno syscall.Errno
		msg   string
	}{
		{"stopped", more(300), true, syscall.ETIMEDOUT, "the supervisor sent no rest of the plan within 300 ms"},
		{"ended", more(60000), false, syscall.EPIPE, "the supervisor sent no rest of the plan"},
		{"no wait", more(0), true, syscall.EINVAL, "out of range"},
		{"too long", more(1 << 31), true, syscall.EINVAL, "out of range"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			lines := runPlanHolding(t, in, c.body, c.hold)
			var last report // the error (the outer process's pid1 report may come after it)
			for _, l := range lines {
				if l.Stage == stageError {
					last = l
				}
			}
			if last.Stage != stageError || last.Err == nil || last.Err.Errno != c.errno || !strings.Contains(last.Err.Msg, c.msg) {
				t.Fatalf("reports %+v, want an error %v %q", lines, c.errno, c.msg)
			}
			if c.errno == syscall.ETIMEDOUT && (last.Err.Stage != "wait for the rest of the plan" || time.Since(start) < 300*time.Millisecond) {
				t.Fatalf("error %+v after %v, want the wait's stage after its 300 ms", last.Err, time.Since(start))
			}
		})
	}
}
