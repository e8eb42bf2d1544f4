//go:build linux

package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jail-sandbox/jail/confine"
	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// bashScript is what a bash call's shell reads on its stdin (sh -s): one
// brace group, which the shell parses whole before it runs any of it, so
// the command cannot read the rest of the script (stdin is /dev/null from
// the group's first line). It moves the shell from its starting
// environment (base) to the session's (env; nil keeps base), enters the
// session's directory when it still exists, and runs the command with
// eval. On exit (a normal end or the command's own "exit") it writes the
// shell's directory, NUL-terminated, and its exported variables as
// `export -p` prints them to fd 3, so the next call starts where this one
// ended (the physical directory: cd -P . first, so a PWD the command set,
// or a path through a symlink, is not what the next call is judged in); a call killed by its timeout writes nothing and the session
// keeps its previous state. export -p is a builtin: `env -0` cost a fork
// and an exec per call, about 1.4 ms of a bash call's 3.8 ms here. The
// directory is entered by the shell, inside the sandbox: the supervisor
// never looks at a path the session named.
//
// A background call (relay, the jail binary's path inside the sandbox) reports no state: its
// fd 3 is a socket, handed to the loopback relay (relay_linux.go) started beside the command,
// and closed for the command itself.
func bashScript(command, cwd string, base, env []string, relay string) string {
	var b strings.Builder
	b.WriteString("{ exec </dev/null\n")
	if relay != "" {
		b.WriteString(shellQuote(relay) + " " + RelayCommand + " >/dev/null 2>&1 &\nexec 3>&-\n")
	} else {
		b.WriteString(`trap '__jail_s=$?; cd -P . 2>/dev/null; { printf "%s\0" "$PWD"; export -p; } >&3 2>/dev/null; exit $__jail_s' EXIT` + "\n")
	}
	if env != nil {
		want := map[string]bool{}
		for _, kv := range env {
			k, _, _ := strings.Cut(kv, "=")
			want[k] = true
		}
		// A readonly variable of the shell (bash's UID, PPID, SHELLOPTS)
		// cannot be set: `command` keeps that from ending a POSIX shell,
		// and the error is not shown.
		b.WriteString("{ ")
		for _, kv := range base {
			if k, _, _ := strings.Cut(kv, "="); !want[k] && isShellName(k) {
				b.WriteString("command unset " + k + "; ")
			}
		}
		for _, kv := range env {
			if k, v, _ := strings.Cut(kv, "="); isShellName(k) {
				b.WriteString("command export " + k + "=" + shellQuote(v) + "; ")
			}
		}
		b.WriteString("} 2>/dev/null\n")
	}
	if cwd != "" {
		// The command was judged as run in cwd, resolved: the directory is
		// entered physically (cd -P, symlinks followed) and must be cwd
		// itself, or the command does not run. A session that reported a
		// path through a symlink (PWD=$PWD/r with r a link to /, or its
		// own fd 3), or whose directory is gone or was swapped since, is
		// never run somewhere the rules did not judge; the trap above
		// reports where the shell really is, so the next call is judged
		// there.
		q := shellQuote(cwd)
		b.WriteString("cd -P -- " + q + " 2>/dev/null && [ \"$PWD\" = " + q + " ] || { printf 'jail: the session'\\''s directory %s is gone or is not the directory itself (a symlink, or swapped); the command did not run, and the session is now in %s (run it again to be judged there)\\n' " + q + " \"$PWD\" >&2; exit 126; }\n")
	}
	b.WriteString("__jail_c=" + shellQuote(command) + "\neval \"$__jail_c\"\n}\n")
	return b.String()
}

// shellQuote quotes s for the shell: inside single quotes nothing is
// special but the quote itself.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isShellName reports whether k can be a shell variable's name; other
// environment entries pass through a shell untouched.
func isShellName(k string) bool {
	if k == "" || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for _, c := range k {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// DefaultBashTimeout is bash's timeout when the call names none (under
// the tool's maximum).
const DefaultBashTimeout = 2 * time.Minute

func bashTool(max time.Duration) *Tool {
	return &Tool{
		Name:        "bash",
		Description: "Run a shell command (/bin/sh -c) in the sandbox. The working directory and exported variables carry over between calls. timeout is in seconds. run_in_background: see bash_output.",
		Schema: `{"type":"object","additionalProperties":false,"required":["command"],"properties":{
"command":{"type":"string","minLength":1},
"timeout":{"type":"number","exclusiveMinimum":0,"description":"seconds"},
"run_in_background":{"type":"boolean","description":"keep it running in a sandbox of its own after the call returns (a dev server, a watcher); returns a bash_id for bash_output and bash_kill; no timeout"},
"description":{"type":"string","description":"what the command does, for the approval prompt and logs"}}}`,
		Risk:         2,
		Capabilities: []string{"process.exec"},
		Timeout:      max,
		OutputCap:    30000,
		// The sandbox binds the system directories as they are, so the
		// host's /bin/sh is the one the worker will run.
		Ready: func() error {
			if err := unix.Access("/bin/sh", unix.X_OK); err != nil {
				return fmt.Errorf("/bin/sh is not executable on this machine: %w", err)
			}
			return nil
		},
		run: func(ctx context.Context, x *execCtx, raw json.RawMessage) Result {
			a, err := decode[struct {
				Command         string
				RunInBackground bool `json:"run_in_background"`
			}](raw)
			if err != nil {
				return errorf("%v", err)
			}
			if a.RunInBackground {
				// The supervisor starts background processes; a worker's
				// bash ends with its call.
				return errorf("bash: run_in_background is refused here: bash calls run in the tool worker, whose processes end with the call")
			}
			return runBash(ctx, x, a.Command)
		},
	}
}

// BashTimeout is the timeout of one bash call: the call's own (seconds),
// else the default, never above max.
func BashTimeout(args json.RawMessage, max time.Duration) time.Duration {
	var a struct{ Timeout float64 }
	json.Unmarshal(args, &a)
	d := DefaultBashTimeout
	if a.Timeout > 0 {
		d = time.Duration(a.Timeout * float64(time.Second))
	}
	if max > 0 && d > max {
		d = max
	}
	return d
}

// shellEnd is how a bash call's shell ended.
type shellEnd struct {
	code                int
	timedOut, cancelled bool
}

// maxSessionState bounds what the shell may report as its state (its
// directory and exported variables) on fd 3, which the supervisor reads:
// a command writing more there loses the session's new state, not the
// supervisor's memory.
const maxSessionState = 1 << 20

// shellLauncher runs script in a shell (sh -s, starting in base, which it
// returns), copies the shell's stdout, stderr and fd 3 into out, and
// returns once the shell and everything it started are gone and the
// output is copied.
type shellLauncher interface {
	base() []string
	// writable reports whether the shell's sandbox can write a directory
	// (nil: not known, every place but the system's counts as writable).
	writable() func(dir string) bool
	launch(ctx context.Context, script string, out [3]io.Writer, timeout time.Duration) (shellEnd, error)
}

// copyOut copies each of r into the matching out and returns a wait for
// the copies, which end when every holder of the write ends is gone.
func copyOut(r [3]*os.File, out [3]io.Writer) (wait func()) {
	var copies sync.WaitGroup
	for i := range r {
		if r[i] == nil {
			continue // not copied: its holder reads it (a background's relay)
		}
		copies.Add(1)
		go func() {
			// Lifetime: until the pipe's last writer is gone, which the
			// launcher guarantees.
			defer copies.Done()
			defer r[i].Close()
			io.Copy(out[i], r[i])
		}()
	}
	return copies.Wait
}

// bashCall runs one bash call through l: the session's directory and
// environment in, the output captured under outputCap, and the session's
// new state out (nil after a timeout or cancellation, which keep the old
// one).
func bashCall(ctx context.Context, l shellLauncher, command string, sess *Session, outputCap int, timeout time.Duration) (Result, *Session) {
	if strings.ContainsRune(command, 0) {
		// A shell drops the byte and runs something else than was asked.
		return errorf("bash: the command contains a NUL byte (\\u0000), which no shell can run: remove it"), nil
	}
	start := time.Now()
	var cwd string
	var env []string
	if sess != nil {
		cwd, env = sess.Cwd, sess.Env
	}
	stdout, stderr := &confine.Capture{Limit: outputCap}, &confine.Capture{Limit: outputCap}
	state := &confine.Capture{Limit: maxSessionState}
	end, err := l.launch(ctx, bashScript(command, cwd, l.base(), env, ""), [3]io.Writer{stdout, stderr, state}, timeout)
	if err != nil {
		return errorf("bash: %v", err), nil
	}
	var next *Session
	if !end.timedOut && !end.cancelled && state.Truncated() == 0 {
		// What the command left, and chose: the next call is judged
		// against it (policy.Shell), never trusted for being here.
		if next = parseState([]byte(state.String())); next != nil {
			next.base, next.writable = l.base(), l.writable()
		}
	}
	var content strings.Builder
	content.WriteString(stdout.String())
	if s := stderr.String(); s != "" {
		if content.Len() > 0 && !strings.HasSuffix(content.String(), "\n") {
			content.WriteString("\n")
		}
		content.WriteString("[stderr]\n" + s)
	}
	meta := map[string]any{"exit_code": end.code, "duration_ms": time.Since(start).Milliseconds(),
		"stdout_truncated_chars": stdout.Truncated(), "stderr_truncated_chars": stderr.Truncated()}
	if next != nil {
		meta["cwd"] = next.Cwd
	}
	res := Result{Meta: meta}
	switch {
	case end.timedOut:
		meta["timed_out"] = true
		fmt.Fprintf(&content, "\n[timed out after %s: the command and every process it started were killed]", timeout)
		res.IsError = true
	case end.cancelled:
		meta["cancelled"] = true
		content.WriteString("\n[cancelled: the command and every process it started were killed]")
		res.IsError = true
	case end.code != 0:
		fmt.Fprintf(&content, "\n[exit code %d]", end.code)
		res.IsError = true
	}
	res.Content = content.String()
	return res, next
}

// runBash runs one command in this worker's sandbox and, when it ends or
// ctx is done, kills every process it started (see killTree), so nothing
// a call starts outlives it.
func runBash(ctx context.Context, x *execCtx, command string) Result {
	x.bash.Lock()
	defer x.bash.Unlock()
	res, next := bashCall(ctx, workerShell{dir: x.ws.path}, command, x.session, x.outputCap, x.timeout)
	if next != nil && x.session != nil {
		*x.session = *next
	}
	return res
}

// workerShell is the shellLauncher of a worker: the shell is its child,
// in its own session, and killTree sweeps up after it.
type workerShell struct{ dir string }

func (workerShell) base() []string { return os.Environ() }

func (workerShell) writable() func(string) bool { return nil }

func (w workerShell) launch(ctx context.Context, script string, out [3]io.Writer, timeout time.Duration) (shellEnd, error) {
	var r, wr [3]*os.File
	for i := range r {
		var err error
		if r[i], wr[i], err = os.Pipe(); err != nil {
			for j := range i {
				r[j].Close()
				wr[j].Close()
			}
			return shellEnd{}, err
		}
	}
	cmd := exec.Command("/bin/sh", "-s")
	cmd.Dir, cmd.Env = w.dir, os.Environ()
	cmd.Stdin = strings.NewReader(script)
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = wr[0], wr[1], wr[2:]
	// Its own session and process group: the first sweep kills the group
	// with one signal, and no terminal signal of the worker reaches it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err := cmd.Start()
	for _, f := range wr {
		f.Close()
	}
	wait := copyOut(r, out)
	if err != nil {
		wait()
		return shellEnd{}, fmt.Errorf("start /bin/sh: %w", err)
	}
	exited := make(chan *os.ProcessState, 1)
	go func() {
		// Lifetime: until the shell exits (killTree ends it at the latest).
		st, _ := cmd.Process.Wait()
		exited <- st
	}()
	var ps *os.ProcessState
	var end shellEnd
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case ps = <-exited:
	case <-timer.C:
		end.timedOut = true
	case <-ctx.Done():
		end.cancelled = true
	}
	killTree(cmd.Process.Pid)
	if ps == nil {
		ps = <-exited
	}
	wait()
	end.code = ps.ExitCode()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		end.code = 128 + int(ws.Signal())
	}
	return end, nil
}

// literalWord reports whether w is only quoted or plain text, which
// expands to itself: no tilde (which looks a user up), parameter, command
// or arithmetic expansion. export -p prints nothing else; a command that
// writes its own fd 3 can.
func literalWord(w *syntax.Word) bool {
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				return false
			}
		case *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// quotedWordsOnly reports whether b is made of words, quotes ('...',
// "...", $'...') and backslash escapes only, one statement per line, as
// export -p prints: no expansion, substitution, grouping or operator. The
// shell parser recurses into those, and a command that writes a megabyte
// of "$(" to its state descriptor would otherwise overflow the
// supervisor's stack (a fatal error no recover catches) before any word
// is checked.
func quotedWordsOnly(b []byte) bool {
	const (
		plain = iota
		single
		double
		dollarSingle
	)
	// Every statement is an export or a declare, so no compound command
	// (if, while, a function) can nest either.
	stmt := func(rest []byte) bool {
		return len(rest) == 0 || bytes.HasPrefix(rest, []byte("export ")) || bytes.HasPrefix(rest, []byte("declare "))
	}
	if !stmt(b) {
		return false
	}
	state := plain
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch state {
		case plain:
			switch {
			case c == '\n':
				if !stmt(b[i+1:]) {
					return false
				}
			case c == '\\':
				i++
			case c == '\'':
				state = single
			case c == '"':
				state = double
			case c == '$' && i+1 < len(b) && b[i+1] == '\'':
				state = dollarSingle
				i++
			case strings.IndexByte("$`(){}[];&|<>#!*?~", c) >= 0:
				return false
			}
		case single:
			if c == '\'' {
				state = plain
			}
		case double:
			switch c {
			case '\\':
				i++
			case '"':
				state = plain
			case '$', '`':
				return false
			}
		case dollarSingle:
			switch c {
			case '\\':
				i++
			case '\'':
				state = plain
			}
		}
	}
	return state == plain
}

// parseState reads the wrapper's fd-3 report: the working directory,
// NUL-terminated, then export -p's output. That output is shell input
// (dash quotes with '...', bash with "..." and $'...'), so it is parsed as
// shell and each value expanded as a literal: nothing in it is run or
// looked up.
func parseState(b []byte) *Session {
	cwd, exports, ok := bytes.Cut(b, []byte{0})
	if !ok || len(cwd) == 0 || !quotedWordsOnly(exports) {
		return nil
	}
	f, err := syntax.NewParser().Parse(bytes.NewReader(exports), "")
	if err != nil {
		return nil
	}
	s := &Session{Cwd: string(cwd), Env: []string{}}
	cfg := &expand.Config{}
	for _, st := range f.Stmts {
		d, ok := st.Cmd.(*syntax.DeclClause)
		if !ok {
			return nil // not export -p's output
		}
		for _, a := range d.Args {
			if a.Name == nil || a.Naked {
				continue // declare's flags; exported but never set
			}
			if a.Value != nil && !literalWord(a.Value) {
				return nil // not what export -p prints: forged
			}
			k := a.Name.Value
			if k == "_" || k == "SHLVL" || k == "OLDPWD" || strings.HasPrefix(k, "__jail_") {
				continue // the shell's and the wrapper's own, not the session's
			}
			v := ""
			if a.Value != nil {
				if v, err = expand.Literal(cfg, a.Value); err != nil {
					return nil
				}
			}
			s.Env = append(s.Env, k+"="+v)
		}
	}
	return s
}

// killTree kills the shell pid and every process it started, daemons that
// double-forked and left its session included. The worker is a child
// subreaper (PR_SET_CHILD_SUBREAPER, set by WorkerMain), so a process
// whose parent dies is reparented to the worker, not to the sandbox's
// init: every process of the call stays a descendant of the worker, and
// bash calls run one at a time (bashMu). Sweeps repeat until one finds
// nothing, so a process forked during a sweep is caught by the next;
// orphans reparented here are reaped.
func killTree(pid int) {
	unix.Kill(-pid, unix.SIGKILL) // the call's process group: most of it, in one signal
	self := os.Getpid()
	for sweep := 0; sweep < 100; sweep++ {
		victims := descendants(self, pid)
		if len(victims) == 0 {
			return
		}
		for _, v := range victims {
			unix.Kill(v, unix.SIGKILL)
		}
		for _, v := range victims {
			if v != pid { // the shell is waited for by runBash
				var ws unix.WaitStatus
				unix.Wait4(v, &ws, unix.WNOHANG, nil)
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// descendants lists the living processes that belong to the running call:
// every descendant of self (the shell and, self being a subreaper, every
// orphan reparented here), and, should the subreaper be missing, every
// process still in the shell's session. Zombies are left out: they hold
// nothing, and their parent or the sweep's wait4 reaps them.
func descendants(self, shell int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	type proc struct{ ppid, sid int }
	procs := map[int]proc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name may hold spaces and parentheses: the fields
		// (state ppid pgrp session ...) start after the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 4 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		sid, _ := strconv.Atoi(f[3])
		procs[pid] = proc{ppid, sid}
	}
	var out []int
	for pid, p := range procs {
		if p.sid == shell {
			out = append(out, pid)
			continue
		}
		for q, hops := p, 0; hops < 4096; hops++ {
			if q.ppid == self {
				out = append(out, pid)
				break
			}
			next, ok := procs[q.ppid]
			if !ok {
				break
			}
			q = next
		}
	}
	return out
}
