//go:build linux

package tools

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
	"golang.org/x/sys/unix"
)

// subreaper makes the test process what WorkerMain makes the worker, so
// orphans of bash calls are reparented to it.
func subreaper(t *testing.T) {
	t.Helper()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
}

func TestBashResultAndSession(t *testing.T) {
	subreaper(t)
	f := newFixture(t)
	r := mustOK(t, f.call("bash", map[string]any{"command": "echo out; echo err >&2"}))
	if r.Content != "out\n[stderr]\nerr\n" || r.Meta["exit_code"] != 0 {
		t.Fatalf("bash: %q %v", r.Content, r.Meta)
	}
	r = f.call("bash", map[string]any{"command": "exit 3"})
	if !r.IsError || r.Meta["exit_code"] != 3 || !strings.Contains(r.Content, "[exit code 3]") {
		t.Fatalf("exit 3: %v", r)
	}
	// Working directory and exported variables carry over.
	os.Mkdir(f.dir+"/sub", 0o755)
	mustOK(t, f.call("bash", map[string]any{"command": "cd sub && export JAIL_T=42 && NOTEXPORTED=1"}))
	r = mustOK(t, f.call("bash", map[string]any{"command": "pwd; echo \"$JAIL_T\"; echo \"x${NOTEXPORTED}x\""}))
	if r.Content != f.dir+"/sub\n42\nxx\n" {
		t.Fatalf("session: %q", r.Content)
	}
	// An exit inside the command still records the state.
	mustOK(t, f.call("bash", map[string]any{"command": "cd ..; export JAIL_U=1; exit 0"}))
	r = mustOK(t, f.call("bash", map[string]any{"command": "pwd; echo $JAIL_U"}))
	if r.Content != f.dir+"\n1\n" {
		t.Fatalf("after exit: %q", r.Content)
	}
	// Output beyond the cap is cut with the marker.
	r = mustOK(t, f.call("bash", map[string]any{"command": "head -c 40000 /dev/zero | tr '\\0' x"}))
	if !strings.HasSuffix(r.Content, "... [10000 chars truncated]") {
		t.Fatalf("cap: %q", r.Content[len(r.Content)-60:])
	}
}

// TestBashTimeoutKillsEverything: a call that times out takes its whole
// tree down, a daemon that double-forked into its own session included,
// and the session keeps its previous state.
func TestBashTimeoutKillsEverything(t *testing.T) {
	subreaper(t)
	f := newFixture(t)
	// A unique sleep duration marks the test's processes (dash has no exec -a).
	marker := "300." + strconv.FormatInt(time.Now().UnixNano()%1000000, 10)
	start := time.Now()
	r := f.call("bash", map[string]any{"timeout": 0.5, "command": "cd /; (setsid sh -c 'sleep " + marker + "; :' &) ; sleep " + marker})
	if !r.IsError || r.Meta["timed_out"] != true || time.Since(start) > 5*time.Second {
		t.Fatalf("timeout: %v after %s", r, time.Since(start))
	}
	if !testutil.Eventually(5*time.Second, func() bool { return len(testutil.LiveProcesses(marker)) == 0 }) {
		t.Fatalf("processes left after the timeout: %v", testutil.LiveProcesses(marker))
	}
	r = mustOK(t, f.call("bash", map[string]any{"command": "pwd"}))
	if r.Content != f.dir+"\n" {
		t.Fatalf("a timed-out call changed the session: %q", r.Content)
	}
	// A call that ends normally also leaves nothing behind.
	mustOK(t, f.call("bash", map[string]any{"command": "(setsid sh -c 'sleep " + marker + "; :' > /dev/null 2>&1 &); true"}))
	if !testutil.Eventually(5*time.Second, func() bool { return len(testutil.LiveProcesses(marker)) == 0 }) {
		t.Fatalf("a background daemon outlived its call: %v", testutil.LiveProcesses(marker))
	}
}

// TestParseStateOfEveryShell feeds parseState what dash, bash in POSIX
// mode and bash print for export -p, with values that need every kind of
// quoting; each must come back byte for byte, and nothing in them runs.
func TestParseStateOfEveryShell(t *testing.T) {
	vals := map[string]string{
		"QUOTE":   "it's",
		"NEWLINE": "x\ny",
		"META":    `$HOME "q" \back $(touch /tmp/jail-parse-ran) ` + "`id`",
		"EMPTY":   "",
		"TAB":     "a\tb",
		"UTF8":    "héllo ✓",
	}
	var env []string
	for k, v := range vals {
		env = append(env, k+"="+v)
	}
	for _, sh := range [][]string{{"/bin/sh"}, {"/bin/bash", "--posix"}, {"/bin/bash"}} {
		if _, err := os.Stat(sh[0]); err != nil {
			t.Fatalf("%s: %v (the test image has dash and bash)", sh[0], err)
		}
		cmd := exec.Command(sh[0], append(sh[1:], "-c", `export UNSET_BUT_EXPORTED; __jail_s=1; printf '%s\0' "$PWD"; export -p`)...)
		cmd.Env, cmd.Dir = env, "/"
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", sh, err)
		}
		s := parseState(out)
		if s == nil {
			t.Fatalf("%v: no state from %q", sh, out)
		}
		got := map[string]string{}
		for _, kv := range s.Env {
			k, v, _ := strings.Cut(kv, "=")
			got[k] = v
		}
		for k, v := range vals {
			if got[k] != v {
				t.Errorf("%v: %s = %q, want %q", sh, k, got[k], v)
			}
		}
		for _, k := range []string{"UNSET_BUT_EXPORTED", "__jail_s", "SHLVL", "OLDPWD"} {
			if _, ok := got[k]; ok {
				t.Errorf("%v: %s is in the session", sh, k)
			}
		}
		if s.Cwd != "/" {
			t.Errorf("%v: cwd %q", sh, s.Cwd)
		}
	}
	if _, err := os.Stat("/tmp/jail-parse-ran"); err == nil {
		os.Remove("/tmp/jail-parse-ran")
		t.Fatal("parsing the state ran a command substitution")
	}
	if parseState([]byte("/\x00echo hi\n")) != nil {
		t.Error("a state that is not export -p's output was accepted")
	}
	// A megabyte of nesting written to the state descriptor is refused
	// before the shell parser recurses into it (which overflowed the
	// supervisor's stack).
	for _, bomb := range []string{"$(", "(", "${a:-", "{ ", "\"$(", "a|", "a&&", "if a; then ", "\nif a\nthen "} {
		if parseState([]byte("/\x00export A="+strings.Repeat(bomb, (1<<20)/len(bomb)))) != nil {
			t.Errorf("a state of %q nesting was accepted", bomb)
		}
	}
}

// TestWorkerCancels drives serveWorker's protocol: a cancel reaches a
// running call and a call still queued behind it (which then never runs),
// and a cancel for a call already answered changes nothing.
func TestWorkerCancels(t *testing.T) {
	subreaper(t)
	f := newFixture(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var bash sync.Mutex
	done := make(chan error, 1)
	go func() { done <- serveWorker(context.Background(), f.reg, f.ws, &bash, inR, outW) }()
	dec := json.NewDecoder(outR)
	send := func(r workerRequest) {
		b, _ := json.Marshal(r)
		inW.Write(append(b, '\n'))
	}
	send(workerRequest{ID: 1, Tool: "ls", Args: json.RawMessage(`{"path":"."}`), TimeoutMS: 60000, OutputCap: 1000})
	var r workerResponse
	if err := dec.Decode(&r); err != nil || r.ID != 1 || r.Result.IsError {
		t.Fatalf("ls: %v %+v", err, r)
	}
	send(workerRequest{Cancel: 1}) // answered already: moot
	marker := filepath.Join(f.dir, "ran")
	send(workerRequest{ID: 2, Tool: "bash", Args: json.RawMessage(`{"command":"sleep 30"}`), TimeoutMS: 60000, OutputCap: 1000})
	send(workerRequest{ID: 3, Tool: "bash", Args: json.RawMessage(`{"command":"touch ` + marker + `"}`), TimeoutMS: 60000, OutputCap: 1000})
	send(workerRequest{Cancel: 3})
	send(workerRequest{Cancel: 2})
	got := map[uint64]workerResponse{}
	for range 2 {
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		got[r.ID] = r
	}
	for _, id := range []uint64{2, 3} {
		if res := got[id].Result; !res.IsError || !strings.Contains(res.Content, "cancelled") {
			t.Errorf("call %d: %+v", id, res)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a call cancelled while queued ran anyway")
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestBashRefusesNUL: a NUL byte in a command is refused with a clear
// error; a shell would drop it and run another command than was asked.
func TestBashRefusesNUL(t *testing.T) {
	f := newFixture(t)
	r := f.call("bash", map[string]any{"command": "echo a\x00b"})
	if !r.IsError || !strings.Contains(r.Content, "NUL byte") {
		t.Fatalf("NUL in a command: %+v", r)
	}
}

// TestBashSessionDirectoryIsPhysical: the directory a call reports is the
// physical one (a PWD the command set, or a cd through a symlink, is not
// what the next call is judged in), and a session directory that is not
// itself a directory (a symlink to /, forged on fd 3) or is gone runs
// nothing.
func TestBashSessionDirectoryIsPhysical(t *testing.T) {
	subreaper(t)
	f := newFixture(t)
	r := mustOK(t, f.call("bash", map[string]any{"command": "ln -sfn / r; PWD=$PWD/r; true"}))
	if r.Meta["cwd"] != f.dir {
		t.Fatalf("PWD=$PWD/r reported %v, want %s", r.Meta["cwd"], f.dir)
	}
	r = mustOK(t, f.call("bash", map[string]any{"command": "cd r"}))
	if r.Meta["cwd"] != "/" {
		t.Fatalf("cd through a link to / reported %v, want /", r.Meta["cwd"])
	}
	for _, cwd := range []string{f.dir + "/r", f.dir + "/gone", f.dir + "/"} {
		res, next := bashCall(context.Background(), workerShell{dir: f.dir}, "echo ran", &Session{Cwd: cwd}, 1000, 5*time.Second)
		if !res.IsError || res.Meta["exit_code"] != 126 || strings.Contains(res.Content, "ran\n") || !strings.Contains(res.Content, "the command did not run") {
			t.Errorf("session in %s: %v %q", cwd, res.Meta, res.Content)
		}
		if next == nil || next.Cwd == cwd {
			t.Errorf("session in %s: next state %+v, want where the shell really is", cwd, next)
		}
	}
	res, _ := bashCall(context.Background(), workerShell{dir: "/"}, "echo ran", &Session{Cwd: f.dir}, 1000, 5*time.Second)
	if res.Content != "ran\n" {
		t.Errorf("session in its own directory: %q", res.Content)
	}
}
