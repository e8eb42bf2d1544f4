//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
)

// tmuxPane is one tmux session on a server of the test's own (-L), driven
// the way a person at a terminal emulator would: keys in, screen out.
type tmuxPane struct {
	sock, name string
}

func newTmux(t *testing.T, width, height int, shell string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("requires tmux: not installed (scripts/deps.sh)")
	}
	p := &tmuxPane{sock: fmt.Sprintf("jail-it-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6), name: "t"}
	if out, err := exec.Command("tmux", "-L", p.sock, "-f", "/dev/null", "new-session", "-d", "-s", p.name,
		"-x", strconv.Itoa(width), "-y", strconv.Itoa(height), shell).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-L", p.sock, "kill-server").Run() })
	return p
}

// keys sends tmux key names (Enter, C-z, Escape) or literal text.
func (p *tmuxPane) keys(t *testing.T, keys ...string) {
	t.Helper()
	if out, err := exec.Command("tmux", append([]string{"-L", p.sock, "send-keys", "-t", p.name}, keys...)...).CombinedOutput(); err != nil {
		t.Fatalf("tmux send-keys: %v %s", err, out)
	}
}

func (p *tmuxPane) screen() string {
	out, _ := exec.Command("tmux", "-L", p.sock, "capture-pane", "-p", "-S", "-200", "-t", p.name).Output()
	return string(out)
}

func (p *tmuxPane) value(t *testing.T, format string) string {
	out, err := exec.Command("tmux", "-L", p.sock, "display-message", "-p", "-t", p.name, format).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// expect waits until the screen shows want (count times).
func (p *tmuxPane) expect(t *testing.T, want string, count int) {
	t.Helper()
	if !testutil.Eventually(20*time.Second, func() bool { return strings.Count(p.screen(), want) >= count }) {
		t.Fatalf("the terminal never showed %q (%d times); it shows:\n%s", want, count, p.screen())
	}
}

// descendants are the processes below pid: the children of each of its threads (a Go
// program forks from whichever thread runs the goroutine).
func descendants(pid int) []int {
	var out []int
	var b []byte
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, task := range tasks {
		c, _ := os.ReadFile(task)
		b = append(append(b, c...), ' ')
	}
	for _, f := range strings.Fields(string(b)) {
		c, _ := strconv.Atoi(f)
		out = append(out, c)
		out = append(out, descendants(c)...)
	}
	return out
}

// TestInteractiveTerminal drives `jail run -- bash` in tmux, on both launch
// paths, as root and unprivileged: vim, ^Z to the shell inside, jobs, fg,
// :wq (the file lands in the workspace); less; a resize; ^Z at the prompt
// stops nothing; and no process of the sandbox holds the caller's terminal
// (host side: the pane's tty), which is jail's alone.
func TestInteractiveTerminal(t *testing.T) {
	needPrograms(t, "bash", "vim", "less", "setpriv")
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		home := r.paneHome()
		mode := "off"
		if r.cached {
			mode = "trace"
		}
		args := []string{"run", "--", "bash", "--norc", "--noprofile", "-i"}
		if r.cached && !r.warm(t, call{dir: ws, args: args}) {
			t.Fatal("the warm-up run stored no plan")
		}
		env := fmt.Sprintf("env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=%s LANG=C.UTF-8 TERM=xterm JAIL_PLAN_CACHE=%s", home, mode)
		as := r.paneAs()
		p := newTmux(t, 100, 30, fmt.Sprintf("cd %s && %s%s %s %s; echo JAIL-EXIT-$?; sleep 600", ws, as, env, suite.bin, strings.Join(args, " ")))
		p.expect(t, "bash-", 1)
		if r.cached && !strings.Contains(p.screen(), "jail: plan cache: used") {
			t.Fatalf("not on the plan cache's path:\n%s", p.screen())
		}
		// vim, stopped with ^Z by the shell inside, listed, resumed, saved.
		p.keys(t, "vim -u NONE -N note.txt", "Enter")
		p.expect(t, "note.txt", 1)
		p.keys(t, "ihello from vim", "Escape")
		time.Sleep(300 * time.Millisecond)
		p.keys(t, "C-z")
		p.expect(t, "Stopped", 1)
		p.keys(t, "jobs; echo JOBS-LISTED", "Enter")
		p.expect(t, "JOBS-LISTED", 2)
		p.keys(t, "fg", "Enter")
		p.expect(t, "hello from vim", 1)
		p.keys(t, ":wq", "Enter")
		if !testutil.Eventually(10*time.Second, func() bool {
			b, _ := os.ReadFile(filepath.Join(ws, "note.txt"))
			return string(b) == "hello from vim\n"
		}) {
			t.Fatalf("vim's file is not in the workspace:\n%s", p.screen())
		}
		// vim discards what was typed ahead as it leaves (TCSAFLUSH).
		time.Sleep(time.Second)
		p.keys(t, "echo VIM-DONE", "Enter")
		p.expect(t, "VIM-DONE", 2)
		// less pages and quits.
		p.keys(t, "seq 1 300 | less", "Enter")
		p.expect(t, "\n29\n", 1)
		p.keys(t, "G")
		p.expect(t, "300", 1)
		p.keys(t, "q")
		time.Sleep(500 * time.Millisecond)
		p.keys(t, "clear; stty size", "Enter")
		p.expect(t, "30 100", 1)
		// The window shrinks: the command's terminal follows.
		exec.Command("tmux", "-L", p.sock, "resize-window", "-t", p.name, "-x", "90", "-y", "25").Run()
		time.Sleep(500 * time.Millisecond)
		p.keys(t, "clear; stty size", "Enter")
		p.expect(t, "25 90", 1)
		// Back at the prompt (stty has exited: under load it may still be
		// running when its output shows, and ^Z would stop it).
		p.keys(t, "echo AT-PROMPT", "Enter")
		p.expect(t, "AT-PROMPT", 2)
		// ^Z at the prompt: the shell inside ignores it, and jail is never
		// stopped by its command.
		p.keys(t, "C-z")
		time.Sleep(time.Second)
		panePID, _ := strconv.Atoi(p.value(t, "#{pane_pid}"))
		paneTTY := p.value(t, "#{pane_tty}")
		var tty syscall.Stat_t
		if err := syscall.Stat(paneTTY, &tty); err != nil {
			t.Fatal(err)
		}
		var jailPID int
		for _, pid := range descendants(panePID) {
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe == suite.bin {
				jailPID = pid
				break
			}
		}
		if jailPID == 0 {
			t.Fatalf("no jail process under the pane")
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", jailPID))
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) == 0 || f[0] == "T" {
			t.Fatalf("jail is stopped: %s", stat)
		}
		// Host side: only jail holds the caller's terminal; every process
		// of the sandbox (below its pid 1) has the pty instead.
		p.keys(t, "sleep 300 & echo STARTED", "Enter")
		p.expect(t, "STARTED", 2)
		inside := 0
		for _, pid := range descendants(jailPID) {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if !strings.HasPrefix(string(cmdline), "bash") && !strings.HasPrefix(string(cmdline), "sleep") {
				continue
			}
			inside++
			fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
			for _, fd := range fds {
				var st syscall.Stat_t
				if syscall.Stat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFCHR && st.Rdev == tty.Rdev {
					t.Fatalf("a process of the sandbox (%d %q) holds the caller's terminal as %s", pid, cmdline, fd)
				}
			}
		}
		if inside < 2 {
			t.Fatalf("found %d processes of the sandbox, want the shell and sleep", inside)
		}
		p.keys(t, "kill %1; exit 7", "Enter")
		p.expect(t, "JAIL-EXIT-7", 1)
	})
}

// TestJailLinesStartAtLeftEdge: while jail relays an interactive command's terminal (raw, no
// output processing), jail's own lines (here the network's refusals) still start at the left
// edge of the screen, instead of each starting where the last one ended.
func TestJailLinesStartAtLeftEdge(t *testing.T) {
	needPrograms(t, "bash", "curl", "setpriv")
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		home := r.paneHome()
		as := r.paneAs()
		p := newTmux(t, 120, 30, fmt.Sprintf("cd %s && %senv -i PATH=/usr/local/bin:/usr/bin:/bin HOME=%s TERM=xterm %s run --allow allowed.invalid -- bash --norc --noprofile -i; sleep 600",
			ws, as, home, suite.bin))
		p.expect(t, "bash-", 1)
		p.keys(t, "curl -s -m 5 http://one.invalid/; curl -s -m 5 http://two.invalid/; echo CURLS-DONE", "Enter")
		p.expect(t, "CURLS-DONE", 2)
		seen := 0
		for _, line := range strings.Split(p.screen(), "\n") {
			if i := strings.Index(line, "jail:"); i >= 0 {
				if strings.Contains(line, "jail: network: refused") {
					seen++
				}
				if i != 0 {
					t.Errorf("jail's line starts at column %d, not at the left edge: %q", i, line)
				}
			}
		}
		if seen < 2 {
			t.Fatalf("want both refusals on the screen, saw %d:\n%s", seen, p.screen())
		}
	})
}

// TestNonInteractiveCannotReadTerminal: a command that is not interactive (its stdin is not
// the terminal) but whose stdout and stderr are, tries to read what the person types from
// them; jail gave it the terminal write-only, so the keys reach the person's shell, and the
// command's output still reaches the screen. Both launch paths.
func TestNonInteractiveCannotReadTerminal(t *testing.T) {
	needPrograms(t, "bash", "setpriv", "timeout")
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		home := r.paneHome()
		args := []string{"run", "--", "sh", "-c", "'timeout 4 dd bs=1 count=6 <&2 2>/dev/null; timeout 4 dd bs=1 count=6 <&1 2>/dev/null; echo READER-DONE'"}
		if r.cached && !r.warm(t, call{dir: ws, args: []string{"run", "--", "sh", "-c", "timeout 4 dd bs=1 count=6 <&2 2>/dev/null; timeout 4 dd bs=1 count=6 <&1 2>/dev/null; echo READER-DONE"}}) {
			t.Fatal("the warm-up run stored no plan")
		}
		as := r.paneAs()
		p := newTmux(t, 120, 30, "bash --norc --noprofile")
		// The pane's terminal is the user's own, as a real user's is.
		tty := strings.TrimSpace(p.value(t, "#{pane_tty}"))
		if err := os.Chown(tty, r.uid, r.gid); err != nil {
			t.Fatal(err)
		}
		p.keys(t, fmt.Sprintf("cd %s && %senv -i PATH=/usr/local/bin:/usr/bin:/bin HOME=%s %s %s </dev/null &", ws, as, home, suite.bin, strings.Join(args, " ")), "Enter")
		time.Sleep(700 * time.Millisecond)
		p.keys(t, "echo TYPED-BY-PERSON", "Enter")
		p.expect(t, "READER-DONE", 1)
		// The shell got every key: it ran the echo whole (the line as typed, echoed by the
		// terminal whoever reads it, and the echo's output).
		if !testutil.Eventually(5*time.Second, func() bool { return strings.Count(p.screen(), "TYPED-BY-PERSON") >= 2 }) {
			t.Fatalf("the person's keys did not all reach their shell (the sandbox read them):\n%s", p.screen())
		}
	})
}

// TestTerminalOfAnotherUser: as TestNonInteractiveCannotReadTerminal, on a terminal owned by
// root that the unprivileged user cannot open (as after su): the command's output goes
// through a pty of its own that jail copies to the terminal (which needs no open of the
// caller's terminal), so the keys still reach the person's shell, the output still reaches
// the screen, and it is still a terminal to the command, on both paths. Root opens every
// terminal, so only the user runs it.
func TestTerminalOfAnotherUser(t *testing.T) {
	needPrograms(t, "bash", "setpriv", "timeout")
	if !suite.root {
		t.Skip("requires root, to give the unprivileged user a terminal of root's")
	}
	forEachPath(t, func(t *testing.T, r runner) {
		if r.uid == 0 {
			t.Skip("root may open every terminal: the write-only open is never refused")
		}
		ws := r.dir(t, "jail-it-ws-")
		home := r.paneHome()
		script := "timeout 4 dd bs=1 count=6 <&2 2>/dev/null; timeout 4 dd bs=1 count=6 <&1 2>/dev/null; test -t 1 && echo OUT-tty-READER-DONE"
		if r.cached && !r.warm(t, call{dir: ws, args: []string{"run", "--", "sh", "-c", script}}) {
			t.Fatal("the warm-up run stored no plan")
		}
		p := newTmux(t, 160, 30, "bash --norc --noprofile")
		tty := strings.TrimSpace(p.value(t, "#{pane_tty}"))
		if err := os.Chown(tty, 0, 0); err != nil {
			t.Fatal(err)
		}
		os.Chmod(tty, 0o620)
		p.keys(t, fmt.Sprintf("cd %s && %senv -i PATH=/usr/local/bin:/usr/bin:/bin HOME=%s JAIL_PLAN_CACHE=trace %s run -- sh -c '%s' </dev/null &", ws, r.paneAs(), home, suite.bin, script), "Enter")
		time.Sleep(700 * time.Millisecond)
		p.keys(t, "echo TYPED-BY-PERSON", "Enter")
		// The output reached the screen, through jail's pty.
		p.expect(t, "OUT-tty-READER-DONE", 1)
		if !testutil.Eventually(5*time.Second, func() bool { return strings.Count(p.screen(), "TYPED-BY-PERSON") >= 2 }) {
			t.Fatalf("the person's keys did not all reach their shell (the sandbox read them):\n%s", p.screen())
		}
		if r.cached && strings.Contains(p.screen(), "plan cache: not used") {
			t.Fatalf("the plan cache's run left the terminal to the Go path:\n%s", p.screen())
		}
	})
}

// TestTerminalModesOutOfReach: a run that is not interactive, with the caller's terminal as
// its stdout, changes the modes and the size of the terminal it has (stty on its stdout:
// rows 5, no echo, no ^C) and locks it (TIOCEXCL), then exits. On the host afterwards the
// pane's terminal has its own size and modes (^C still interrupts) and the user can still
// open /dev/tty: the command's stdout was a pty of its own, never the caller's terminal.
func TestTerminalModesOutOfReach(t *testing.T) {
	needPrograms(t, "bash", "setpriv", "python3", "stty")
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		home := r.paneHome()
		script := `stty rows 5 cols 20 -isig intr undef -echo 0<&1; python3 -c "import fcntl,termios; fcntl.ioctl(1, termios.TIOCEXCL)"; echo SANDBOX-DONE-$?`
		if r.cached && !r.warm(t, call{dir: ws, args: []string{"run", "--", "sh", "-c", script}}) {
			t.Fatal("the warm-up run stored no plan")
		}
		p := newTmux(t, 120, 30, "bash --norc --noprofile --noediting") // no readline: the terminal echoes at the prompt
		tty := strings.TrimSpace(p.value(t, "#{pane_tty}"))
		if err := os.Chown(tty, r.uid, r.gid); err != nil {
			t.Fatal(err)
		}
		p.keys(t, fmt.Sprintf("cd %s && %senv -i PATH=/usr/local/bin:/usr/bin:/bin HOME=%s JAIL_PLAN_CACHE=trace %s run -- sh -c '%s' </dev/null", ws, r.paneAs(), home, suite.bin, script), "Enter")
		p.expect(t, "SANDBOX-DONE-0", 1)
		if r.cached && strings.Contains(p.screen(), "plan cache: not used") {
			t.Fatalf("the run did not take the plan cache's path:\n%s", p.screen())
		}
		// The host's side: the pane's terminal as it was, read on the host.
		out, err := exec.Command("stty", "-a", "-F", tty).CombinedOutput()
		if err != nil {
			t.Fatalf("stty -F %s: %v\n%s", tty, err, out)
		}
		for _, want := range []string{"rows 30;", "columns 120;", "intr = ^C;", " isig ", " echo "} {
			if !strings.Contains(" "+strings.ReplaceAll(string(out), "\n", " ")+" ", want) {
				t.Errorf("the caller's terminal lost %q after the run:\n%s", want, out)
			}
		}
		// The user opens their terminal again (TIOCEXCL would refuse it), and ^C still interrupts.
		p.keys(t, "python3 -c 'open(\"/dev/tty\"); print(\"TTY-\" + \"OPENS\")'", "Enter")
		p.expect(t, "TTY-OPENS", 1)
		p.keys(t, "sleep 60", "Enter")
		time.Sleep(500 * time.Millisecond)
		p.keys(t, "C-c")
		p.keys(t, "echo INTERRUPTED-\"OK\"", "Enter")
		p.expect(t, "INTERRUPTED-OK", 1)
	})
}

// needPrograms skips the test, naming the program, when one it drives is not installed.
func needPrograms(t *testing.T, progs ...string) {
	t.Helper()
	for _, prog := range progs {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("requires %s: not installed (scripts/deps.sh)", prog)
		}
	}
}

// paneHome is r's home directory, for the environment of a command typed into a pane.
func (r runner) paneHome() string {
	if u, err := user.LookupId(strconv.Itoa(r.uid)); err == nil {
		return u.HomeDir
	}
	return "/root"
}

// paneAs is the prefix that runs a command typed into a pane as r.
func (r runner) paneAs() string {
	if r.uid == 0 {
		return ""
	}
	return fmt.Sprintf("setpriv --reuid=%d --regid=%d --clear-groups ", r.uid, r.gid)
}

// TestTerminalName: in an interactive run, tty (ttyname(3)) names the command's terminal by
// the name the kernel gives its descriptor (ls -l /proc/self/fd/0: /dev/pts/N of jail's pty),
// on both launch paths, as root and unprivileged; a pty made inside (script) is named in the
// sandbox's own devpts. Before, tty said /dev/console while /proc/self/fd/0 named a
// /dev/pts/N that did not exist inside.
func TestTerminalName(t *testing.T) {
	needPrograms(t, "bash", "script", "setpriv")
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ttyname-")
		mode := "off"
		if r.cached {
			mode = "trace"
		}
		args := []string{"run", "--", "bash", "--norc", "--noprofile", "-i"}
		if r.cached && !r.warm(t, call{dir: ws, args: args}) {
			t.Fatal("the warm-up run stored no plan")
		}
		env := fmt.Sprintf("env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=%s LANG=C.UTF-8 TERM=xterm JAIL_PLAN_CACHE=%s", r.paneHome(), mode)
		p := newTmux(t, 120, 30, fmt.Sprintf("cd %s && %s%s %s %s; echo JAIL-EXIT-$?; sleep 600", ws, r.paneAs(), env, suite.bin, strings.Join(args, " ")))
		p.expect(t, "bash-", 1)
		if r.cached && !strings.Contains(p.screen(), "jail: plan cache: used") {
			t.Fatalf("not on the plan cache's path:\n%s", p.screen())
		}
		p.keys(t, `echo "TTY=$(tty) FD=$(readlink /proc/self/fd/0) ERR=$(readlink /proc/self/fd/2) IN=$(script -qc tty /dev/null | tr -d '\r')"`, "Enter")
		p.expect(t, "IN=/", 1)
		var line string
		for _, l := range strings.Split(p.screen(), "\n") {
			if strings.HasPrefix(l, "TTY=") {
				line = l
			}
		}
		f := map[string]string{}
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			f[k] = v
		}
		if !strings.HasPrefix(f["TTY"], "/dev/pts/") || f["TTY"] != f["FD"] || f["ERR"] != f["FD"] {
			t.Errorf("tty names %q, /proc/self/fd/0 %q, fd 2 %q: want the same /dev/pts/N\n%s", f["TTY"], f["FD"], f["ERR"], p.screen())
		}
		if !strings.HasPrefix(f["IN"], "/dev/pts/") || f["IN"] == f["TTY"] {
			t.Errorf("a pty made inside is named %q (the command's is %q)\n%s", f["IN"], f["TTY"], p.screen())
		}
		p.keys(t, "exit 3", "Enter")
		p.expect(t, "JAIL-EXIT-3", 1)
	})
}
