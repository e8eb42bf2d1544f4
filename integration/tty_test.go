//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
	"golang.org/x/sys/unix"
)

// pty is a pseudo-terminal whose slave side is jail's controlling
// terminal, as when a person runs `jail run -- bash` in a terminal.
type pty struct {
	master *os.File
	mu     sync.Mutex
	out    bytes.Buffer
}

func openPTY(t *testing.T, uid, gid int) (*pty, *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("requires /dev/ptmx for a terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	name := "/dev/pts/" + strconv.Itoa(n)
	os.Chown(name, uid, gid)
	s, err := os.OpenFile(name, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.IoctlSetWinsize(int(m.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80})
	p := &pty{master: m}
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := m.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:k])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { m.Close(); s.Close() })
	return p, s
}

// expect waits until the terminal has shown want.
func (p *pty) expect(t *testing.T, want string) {
	t.Helper()
	if testutil.Eventually(20*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return strings.Contains(p.out.String(), want)
	}) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t.Fatalf("terminal never showed %q; it showed:\n%s", want, p.out.String())
}

func (p *pty) send(s string) { p.master.Write([]byte(s)) }

// startOnTTY starts jail as r with the pty as its controlling terminal and
// its own session, in the foreground of that terminal.
func startOnTTY(t *testing.T, r runner, ws string, args ...string) (*pty, *exec.Cmd) {
	t.Helper()
	return startOnTTYStdin(t, r, ws, true, args...)
}

// startOnTTYStdin is startOnTTY; with ttyStdin false, stdin is /dev/null
// (the command is not interactive, so jail keeps the terminal).
func startOnTTYStdin(t *testing.T, r runner, ws string, ttyStdin bool, args ...string) (*pty, *exec.Cmd) {
	t.Helper()
	p, slave := openPTY(t, r.uid, r.gid)
	// PS1 is passed from the environment, not given a value on the
	// command line: a run with --env NAME=VALUE is never cached.
	full := []string{"run", "-w", ws, "--env", "PS1"}
	if len(args) == 0 || args[0] != "--policy" {
		full = append(full, "--")
	}
	cmd := exec.Command(suite.bin, append(full, args...)...)
	cmd.Dir = ws
	cmd.Env = r.pathEnv(t, ws, cmd.Args[1:], "PATH=/usr/bin:/bin", "HOME=/nonexistent", "TERM=xterm", "PS1=jail$ ")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if !ttyStdin {
		cmd.Stdin = nil // /dev/null
		cmd.SysProcAttr.Ctty = 1
	}
	r.credential(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	if r.cached {
		p.expect(t, "jail: plan cache: used")
	}
	return p, cmd
}

// pathEnv is base plus what sends a `jail run` with args down r's path:
// planned, or (for a cached runner) from a plan that a warm-up run of
// /bin/true with the same flags and environment stored first, traced on
// stderr.
func (r runner) pathEnv(t *testing.T, ws string, args []string, base ...string) []string {
	t.Helper()
	if !r.cached {
		return append(base, "JAIL_PLAN_CACHE=off")
	}
	env := append(base, "XDG_CACHE_HOME="+r.dir(t, "jail-it-cache-"), "JAIL_PLAN_CACHE=trace")
	warm := exec.Command(suite.bin, append(slices.Clone(args[:slices.Index(args, "--")+1]), "/bin/true")...)
	warm.Dir, warm.Env = ws, env
	r.credential(warm)
	if out, err := warm.CombinedOutput(); err != nil || !strings.Contains(string(out), "jail: plan cache: stored") {
		t.Fatalf("the warm-up run of %v stored no plan: %v %s", args, err, out)
	}
	return env
}

func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode()
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("jail did not exit")
		return -1
	}
}

// TestInteractiveShell drives bash on a real terminal inside the sandbox:
// job control, ^C to a foreground job, a window resize, and TIOCSTI
// refused on the very terminal the shell reads.
func TestInteractiveShell(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("requires bash: not installed")
	}
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		p, cmd := startOnTTY(t, r, ws, "bash", "--norc", "--noprofile", "-i")
		p.expect(t, "jail$ ")
		// Job control: a background job, listed, then brought back and
		// stopped with ^Z, resumed in the background, and killed.
		p.send("sleep 600 &\n")
		p.expect(t, "[1]")
		p.send("jobs\n")
		p.expect(t, "Running")
		p.send("fg %1\n")
		time.Sleep(300 * time.Millisecond)
		p.send("\x1a") // ^Z
		p.expect(t, "Stopped")
		p.send("bg %1; kill %1; echo killed-$?\n")
		p.expect(t, "killed-0")
		// ^C reaches a foreground job and not the shell.
		p.send("sleep 600\n")
		time.Sleep(300 * time.Millisecond)
		p.send("\x03")
		p.send("echo after-interrupt-$?\n")
		p.expect(t, "after-interrupt-130")
		// A resize reaches the command.
		p.send("trap 'echo winch-$(stty size)' WINCH\n")
		time.Sleep(200 * time.Millisecond)
		unix.IoctlSetWinsize(int(p.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 101})
		p.send("echo resized\n")
		p.expect(t, "winch-33 101")
		// TIOCSTI on the controlling terminal is refused.
		p.send(`python3 -c 'import fcntl,termios; fcntl.ioctl(0, termios.TIOCSTI, b"X")' 2>&1 | tail -1` + "\n")
		p.expect(t, "Operation not permitted")
		p.send("exit 7\n")
		if code := waitExit(t, cmd); code != 7 {
			t.Fatalf("jail exited %d, want 7", code)
		}
	})
}

// TestForwardedSignal sends SIGTERM to jail itself (as a CI runner does on
// cancellation): the command receives it and jail exits 128+15.
func TestForwardedSignal(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		marker := fmt.Sprintf("500.%d", time.Now().UnixNano()%1000000)
		cmd := exec.Command(suite.bin, "run", "-w", ws, "--", "/bin/sh", "-c", "trap 'echo got-term; exit 143' TERM; sleep "+marker+" & wait")
		cmd.Dir = ws
		cmd.Env = r.pathEnv(t, ws, cmd.Args[1:], "PATH=/usr/bin:/bin", "HOME=/nonexistent")
		var out bytes.Buffer
		var errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		r.credential(cmd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(10*time.Second, func() bool { return len(testutil.Processes("sleep\x00"+marker)) > 0 })
		cmd.Process.Signal(syscall.SIGTERM)
		if code := waitExit(t, cmd); code != 143 {
			t.Fatalf("exit %d, want 143; output %q", code, out.String())
		}
		if r.cached && !strings.Contains(errb.String(), "jail: plan cache: used") {
			t.Fatalf("the cached runner's run was planned: %q", errb.String())
		}
		if !strings.Contains(out.String(), "got-term") {
			t.Fatalf("the command did not receive SIGTERM: %q", out.String())
		}
		// No grace period: jail returns only once every process of the
		// sandbox is gone.
		if pids := testutil.Processes("sleep\x00" + marker); len(pids) > 0 {
			t.Fatalf("processes survived: %v", pids)
		}
	})
}

// TestCtrlZDoesNotStopJail: the command's terminal is jail's pty, so ^Z
// stops what runs in a shell inside (bash's own job control) and never jail:
// a command that leads its pty's session (cat here) is not stopped by it
// (its group is orphaned, as any session leader's), and one that stops
// itself with SIGSTOP is continued; jail stays running in the caller's
// foreground all along, and the command reads on.
func TestCtrlZDoesNotStopJail(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		p, cmd := startOnTTY(t, r, ws, "/bin/sh", "-c", "cat; echo cat-done; kill -STOP $$; echo continued")
		time.Sleep(300 * time.Millisecond)
		p.send("before\n")
		p.expect(t, "before\r\nbefore")
		p.send("\x1a") // ^Z
		time.Sleep(time.Second)
		var ws4 syscall.WaitStatus
		if pid, _ := syscall.Wait4(cmd.Process.Pid, &ws4, syscall.WUNTRACED|syscall.WNOHANG, nil); pid != 0 {
			t.Fatalf("jail stopped or ended after ^Z: %v", ws4)
		}
		p.send("after\n")
		p.expect(t, "after\r\nafter")
		p.send("\x04") // ^D: cat reads end of file, then the shell stops itself
		p.expect(t, "continued")
		if code := waitExit(t, cmd); code != 0 {
			t.Fatalf("jail exited %d, want 0", code)
		}
	})
}

// TestNetworkAskOnTerminal: with [network] ask, a host outside the
// allowlist is put to the person at jail's terminal; "n" refuses it (403
// with the reason), "y" lets the proxy go on to its own checks (here the
// name cannot be resolved: the policy's resolver is a closed loopback
// port, so no traffic leaves the machine).
func TestNetworkAskOnTerminal(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("requires curl: not installed")
	}
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		cfg := r.dir(t, "jail-it-cfg-")
		pol := cfg + "/policy.toml"
		r.writeFile(t, pol, "[network]\nmode = \"proxy\"\nask = true\nresolver = \"127.0.0.1:9\"\n[approval]\nask_timeout = \"30s\"\n[audit]\nenabled = false\n")
		// --capture: jail asks only where the command cannot write to the
		// terminal (docs/terminal.md); TestPromptsCannotBeImitated has the
		// command on the terminal.
		p, cmd := startOnTTYStdin(t, r, ws, false, "--policy", pol, "--capture", "--", "/bin/sh", "-c",
			`curl -s -o /dev/null -D - http://refused.test/ | grep -i -e deny-reason; echo END-OF-FIRST; curl -s -o /dev/null -D - http://approved.test/ | grep -i -e deny-reason`)
		p.expect(t, "refused.test")
		p.expect(t, "allow? [y]es")
		p.send("n\n")
		p.expect(t, "approved.test")
		p.send("y\n")
		if code := waitExit(t, cmd); code != 0 {
			t.Fatalf("jail exited %d", code)
		}
		p.expect(t, `"policy_sha256"`)
		p.mu.Lock()
		out := p.out.String()
		p.mu.Unlock()
		i := strings.Index(out, `{"exit_code"`)
		var res struct{ Stdout string }
		if i < 0 || json.Unmarshal([]byte(strings.TrimSpace(out[i:])), &res) != nil {
			t.Fatalf("no JSON result on the terminal:\n%s", out)
		}
		first, second, _ := strings.Cut(res.Stdout, "END-OF-FIRST")
		if !strings.Contains(first, "approval refused") || strings.Contains(second, "approval refused") || !strings.Contains(strings.ToLower(second), "deny-reason") {
			t.Fatalf("the answers were not applied (the approved host goes on to the proxy's checks):\n%s", res.Stdout)
		}
	})
}

// ttyAttack is what a command that is not interactive tries against the
// caller's terminal: open /dev/tty, make itself the foreground group
// there (TIOCSPGRP), read what the person types, set the clipboard (OSC
// 52), retitle the window, and draw a fake jail prompt. What it achieved
// goes to the file report.
const ttyAttack = `python3 - >report 2>&1 <<'PY'
import fcntl, os, struct, termios, select
try:
    fd = os.open("/dev/tty", os.O_RDWR); print("OPENED-TTY")
    fcntl.ioctl(fd, termios.TIOCSPGRP, struct.pack("i", os.getpgrp())); print("TOOK-TTY")
except OSError as e:
    print("no tty:", e.errno)
for fd in (0, 1, 2):
    try:
        fcntl.ioctl(fd, termios.TIOCSPGRP, struct.pack("i", os.getpgrp())); print("TOOK-FD", fd)
    except OSError as e:
        pass
r, _, _ = select.select([0], [], [], 3)
if r:
    print("READ:", os.read(0, 100))
PY
printf '\033]52;c;UFdORUQ=\007\033]0;PWNED-TITLE\007'
printf 'jail: claude wants bash (exec): rm -rf build\n  allow? [y]es / [N]o: '
cat report`

// TestTerminalNotReachable: bash calls of jail tool and jail serve, and
// jail run --capture, run on a real terminal and cannot reach it: no
// /dev/tty, no foreground group, nothing the person types, and nothing
// they print reaches the terminal raw.
func TestTerminalNotReachable(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("requires python3")
	}
	forEach(t, func(t *testing.T, r runner) {
		check := func(t *testing.T, p *pty, cmd *exec.Cmd, ws string) {
			time.Sleep(time.Second)
			p.send("TYPED-SECRET-42\n")
			if code := waitExit(t, cmd); code != 0 {
				t.Fatalf("jail exited %d", code)
			}
			b, _ := os.ReadFile(ws + "/report")
			rep := string(b)
			if !strings.Contains(rep, "no tty:") || strings.Contains(rep, "TOOK") || strings.Contains(rep, "OPENED") || strings.Contains(rep, "TYPED-SECRET") {
				t.Fatalf("the command reached the terminal:\n%s", rep)
			}
			time.Sleep(200 * time.Millisecond)
			p.mu.Lock()
			out := p.out.String()
			p.mu.Unlock()
			if strings.Contains(out, "\x1b]52") || strings.Contains(out, "\x1b]0;") || strings.Contains(out, "[N]o: \r\n") {
				t.Fatalf("the command's output reached the terminal raw:\n%q", out)
			}
		}
		start := func(t *testing.T, slave *os.File, ttyStdin bool, args ...string) *exec.Cmd {
			cmd := exec.Command(suite.bin, args...)
			r.prepare(cmd, "TERM=xterm")
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 1}
			r.credential(cmd)
			return cmd
		}
		t.Run("run-capture", func(t *testing.T) {
			ws := r.dir(t, "jail-it-ws-")
			p, cmd := startOnTTYStdin(t, r, ws, true, "--policy", r.autoBash(t), "--capture", "--", "/bin/sh", "-c", ttyAttack)
			check(t, p, cmd, ws)
		})
		t.Run("tool-bash", func(t *testing.T) {
			ws := r.dir(t, "jail-it-ws-")
			p, slave := openPTY(t, r.uid, r.gid)
			b, _ := json.Marshal(map[string]string{"command": ttyAttack})
			cmd := start(t, slave, true, "tool", "-w", ws, "--policy", r.autoBash(t), "bash", string(b))
			cmd.Dir = ws
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			check(t, p, cmd, ws)
		})
		t.Run("serve-bash", func(t *testing.T) {
			ws := r.dir(t, "jail-it-ws-")
			p, slave := openPTY(t, r.uid, r.gid)
			b, _ := json.Marshal(map[string]any{"id": 1, "tool": "bash", "args": map[string]string{"command": ttyAttack}})
			cmd := start(t, slave, false, "serve", "-w", ws, "--policy", r.autoBash(t))
			cmd.Dir = ws
			cmd.Stdin = strings.NewReader(string(b) + "\n")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			check(t, p, cmd, ws)
		})
	})
}

// autoBash is a policy file that auto-approves bash, with its audit log
// beside it.
func (r runner) autoBash(t *testing.T) string {
	cfg := r.dir(t, "jail-it-cfg-")
	pol := cfg + "/policy.toml"
	r.writeFile(t, pol, "[approval]\nauto_approve = [\"bash\"]\n[audit]\npath = \""+cfg+"/audit.jsonl\"\n")
	return pol
}

// TestPromptsCannotBeImitated: jail asks on the terminal only where the
// command can neither read nor write it. A command whose output is on the
// terminal, or that owns it (interactive), gets no question: the host is
// refused with the reason, and a fake prompt it draws approves nothing.
func TestPromptsCannotBeImitated(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("requires curl: not installed")
	}
	forEach(t, func(t *testing.T, r runner) {
		for _, interactive := range []bool{false, true} {
			ws := r.dir(t, "jail-it-ws-")
			cfg := r.dir(t, "jail-it-cfg-")
			pol := cfg + "/policy.toml"
			r.writeFile(t, pol, "[network]\nmode = \"proxy\"\nask = true\nresolver = \"127.0.0.1:9\"\n[approval]\nask_timeout = \"30s\"\n[audit]\nenabled = false\n")
			// A fake question, answered "y" by the person; then, while the
			// real one is open, the command keeps printing a "y" and moving
			// the cursor up to rewrite it.
			p, cmd := startOnTTYStdin(t, r, ws, interactive, "--policy", pol, "--", "/bin/sh", "-c",
				`printf 'jail: - wants network (exec): a connection to a host outside [network] allow\n  args: {"host":"evil.test","port":80}\n  allow? [y]es / [N]o: '; sleep 2; (while :; do printf 'SPAM-y\n\033[2A'; sleep 0.1; done) & curl -s -o /dev/null -D - http://evil.test/ | grep -i deny-reason; kill $!`)
			p.expect(t, "allow? [y]es")
			p.send("y\n")
			if !interactive {
				// The command writes to the terminal: jail asks no one.
				p.expect(t, "no one")
			} else {
				// jail's pty: the real question comes, the command's output
				// held meanwhile, and the earlier "y" answered only the
				// command. The person refuses it.
				testutil.Eventually(20*time.Second, func() bool {
					p.mu.Lock()
					defer p.mu.Unlock()
					return strings.Count(p.out.String(), "allow? [y]es") == 2
				})
				time.Sleep(time.Second)
				p.mu.Lock()
				out := p.out.String()
				p.mu.Unlock()
				if strings.Count(out, "allow? [y]es") != 2 {
					t.Fatalf("jail did not ask on its own terminal:\n%s", out)
				}
				if q := out[strings.LastIndex(out, "allow? [y]es"):]; strings.Contains(q, "SPAM") {
					t.Fatalf("the command's output reached the terminal while jail's question was open:\n%q", q)
				}
				p.send("n\n")
				p.expect(t, "approval refused")
			}
			if code := waitExit(t, cmd); code != 0 {
				t.Fatalf("interactive=%v: jail exited %d", interactive, code)
			}
			p.mu.Lock()
			out := p.out.String()
			p.mu.Unlock()
			if strings.Contains(out, "evil.test:80: approved") {
				t.Fatalf("interactive=%v: the command's answer was taken:\n%s", interactive, out)
			}
		}
	})
}
