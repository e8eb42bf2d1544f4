//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
)

// bgMarker is a sleep duration no other process on the host has, so the
// test finds the background process among the host's processes.
func bgMarker(n int) string {
	return fmt.Sprintf("%d.%d", 600+n, time.Now().UnixNano()%1000000)
}

// bashOutput waits (up to 30s in bash_output calls) until the process's
// output contains want, and returns all that was read.
func (s *served) bashOutput(t *testing.T, id *int, bg, want string) (string, resp) {
	t.Helper()
	var all strings.Builder
	var last resp
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		*id++
		last = s.call(*id, "bash_output", fmt.Sprintf(`{"id":%q,"wait":2}`, bg))
		if last.Result.IsError {
			t.Fatalf("bash_output %s: %+v", bg, last.Result)
		}
		all.WriteString(last.Result.Content)
		if strings.Contains(all.String(), want) {
			return all.String(), last
		}
	}
	t.Fatalf("bash_output %s: %q never appeared in %q", bg, want, all.String())
	return "", last
}

// TestBackgroundProcesses drives bash's run_in_background through jail
// serve as root and as a user: the call returns at once while the process
// keeps running on the host, in a sandbox of its own (its own pid
// namespace, invisible to the next call) that starts in the session's
// directory and variables; bash_output reads its new output, bash_kill
// ends it and everything it started (judged by the host's process list);
// another caller can neither read nor end it; limits.background bounds
// them; a hard guard refuses the start like any bash call; and every
// background process ends with the session.
func TestBackgroundProcesses(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws, s := r.toolsIn(t, "[limits]\nbackground = 2\n")
		os.Mkdir(filepath.Join(ws, "sub"), 0o755)
		r.own(t, filepath.Join(ws, "sub"))
		id := 1
		if res := s.call(id, "bash", `{"command":"cd sub; export BG_VAR=carried"}`); res.Result.IsError {
			t.Fatalf("set up the session: %+v", res.Result)
		}

		m1 := bgMarker(1)
		id++
		start := time.Now()
		res := s.call(id, "bash", fmt.Sprintf(`{"command":"echo \"in $PWD with $BG_VAR\"; readlink /proc/self/ns/pid; echo to-stderr >&2; (sleep %s; echo never) & sleep %s; echo never","run_in_background":true}`, m1, m1))
		if res.Result.IsError || res.Result.Meta["bash_id"] == nil {
			t.Fatalf("start in the background: %+v", res.Result)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Fatalf("the call waited for its background process: %s", d)
		}
		bg1 := res.Result.Meta["bash_id"].(string)
		out, _ := s.bashOutput(t, &id, bg1, "to-stderr")
		if !strings.Contains(out, "in "+filepath.Join(ws, "sub")+" with carried\n") || !strings.Contains(out, "[stderr]\nto-stderr") || !strings.Contains(out, "running for") {
			t.Fatalf("bash_output: %q", out)
		}
		if !testutil.Eventually(10*time.Second, func() bool { return len(testutil.LiveProcesses(m1)) == 2 }) {
			t.Fatalf("not seen within 10s: %s", "the background process and its child running on the host")
		}

		// Its own sandbox: a call made meanwhile has another pid
		// namespace and does not see it.
		id++
		fg := s.call(id, "bash", fmt.Sprintf(`{"command":"readlink /proc/self/ns/pid; grep -l %s /proc/[0-9]*/cmdline 2>/dev/null | wc -l"}`, "["+m1[:1]+"]"+m1[1:]))
		lines := strings.Split(strings.TrimSpace(fg.Result.Content), "\n")
		if fg.Result.IsError || len(lines) != 2 || strings.Contains(out, lines[0]) || lines[1] != "0" {
			t.Fatalf("a foreground call shares the background's sandbox: %q, background said %q", fg.Result.Content, out)
		}

		// Another caller (here a role) can neither read nor end it, nor
		// learn that it exists.
		id++
		s.send(fmt.Sprintf(`{"id":%d,"tool":"bash_kill","args":{"id":%q},"context":{"role":"build"}}`, id, bg1))
		if other := s.next(); !other.Result.IsError || !strings.Contains(other.Result.Content, "no background process") {
			t.Fatalf("another caller's bash_kill: %+v", other.Result)
		}
		id++
		s.send(fmt.Sprintf(`{"id":%d,"tool":"bash_output","context":{"role":"build"}}`, id))
		if other := s.next(); other.Result.IsError || other.Result.Content != "no background processes" {
			t.Fatalf("another caller's list: %+v", other.Result)
		}

		// A process that ends by itself reports its exit code, then is
		// forgotten once its output is read.
		id++
		res = s.call(id, "bash", `{"command":"echo bye; exit 3","run_in_background":true}`)
		bg2, _ := res.Result.Meta["bash_id"].(string)
		_, last := s.bashOutput(t, &id, bg2, "exited with code 3")
		if last.Result.Meta["exit_code"] != float64(3) || last.Result.Meta["state"] != "exited" {
			t.Fatalf("ended process: %+v", last.Result)
		}

		// limits.background = 2: with bg1 and one more alive, a third is
		// refused, naming the key.
		m3 := bgMarker(3)
		id++
		res = s.call(id, "bash", fmt.Sprintf(`{"command":"exec sleep %s","run_in_background":true}`, m3))
		bg3, _ := res.Result.Meta["bash_id"].(string)
		id++
		if res = s.call(id, "bash", `{"command":"sleep 1","run_in_background":true}`); !res.Result.IsError || !strings.Contains(res.Result.Content, "limits.background = 2") {
			t.Fatalf("a third background process: %+v", res.Result)
		}
		// The guard sees a background command as it sees any other.
		id++
		if res = s.call(id, "bash", `{"command":"rm -rf ~","run_in_background":true}`); !res.Result.IsError || !strings.Contains(res.Result.Content, "hard block") {
			t.Fatalf("a hard-guarded background command: %+v", res.Result)
		}
		id++
		list := s.call(id, "bash_output", `{}`)
		if !strings.Contains(list.Result.Content, bg1+"  running") || !strings.Contains(list.Result.Content, bg3+"  running") || strings.Contains(list.Result.Content, bg2) {
			t.Fatalf("list: %q", list.Result.Content)
		}

		// bash_kill ends the process and the child it started.
		id++
		res = s.call(id, "bash_kill", fmt.Sprintf(`{"id":%q}`, bg1))
		if res.Result.IsError || res.Result.Meta["state"] != "killed" || strings.Contains(res.Result.Content, "never") {
			t.Fatalf("bash_kill: %+v", res.Result)
		}
		if pids := testutil.LiveProcesses(m1); len(pids) > 0 {
			t.Fatalf("processes of the killed background process live on: %v", pids)
		}
		id++
		if res = s.call(id, "bash_output", fmt.Sprintf(`{"id":%q}`, bg1)); !res.Result.IsError {
			t.Fatalf("a killed process is still listed: %+v", res.Result)
		}

		// The end of the session ends the rest.
		if !testutil.Eventually(10*time.Second, func() bool { return len(testutil.LiveProcesses(m3)) == 1 }) {
			t.Fatalf("not seen within 10s: %s", "the third background process running")
		}
		s.in.Close()
		done := make(chan error, 1)
		go func() { done <- s.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("jail serve did not end with its background processes\nstderr: %s", s.err.String())
		}
		if pids := testutil.LiveProcesses(m3); len(pids) > 0 {
			t.Fatalf("a background process outlived its session: %v", pids)
		}
	})
}

// TestBackgroundRefused: jail tool (one call) and a policy with
// limits.background = -1 refuse run_in_background with the reason, and
// nothing is left running.
func TestBackgroundRefused(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		pol, _ := r.toolPolicy(t, r.dir(t, "jail-it-cfg-"), "")
		m := bgMarker(4)
		res := r.jail(t, call{args: []string{"tool", "--policy", pol, "-w", ws, "bash", fmt.Sprintf(`{"command":"exec sleep %s","run_in_background":true}`, m)}, dir: ws})
		var out struct {
			Content string `json:"content"`
			IsError bool   `json:"is_error"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || !out.IsError || !strings.Contains(out.Content, "jail tool ends with its one call") {
			t.Fatalf("jail tool: %v %+v\nstderr: %s", err, out, res.stderr)
		}
		if pids := testutil.LiveProcesses(m); len(pids) > 0 {
			t.Fatalf("jail tool left a background process: %v", pids)
		}

		_, s := r.toolsIn(t, "[limits]\nbackground = -1\n")
		if got := s.call(1, "bash", `{"command":"true","run_in_background":true}`); !got.Result.IsError || !strings.Contains(got.Result.Content, "limits.background is negative") {
			t.Fatalf("limits.background = -1: %+v", got.Result)
		}
	})
}

// TestBackgroundOverMCP starts a background process through jail mcp
// (JSON-RPC on stdio, as an MCP client speaks it), reads it with
// bash_output, and checks that closing the connection ends it.
func TestBackgroundOverMCP(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		pol, _ := r.toolPolicy(t, r.dir(t, "jail-it-cfg-"), "")
		cmd := exec.Command(suite.bin, "mcp", "-w", ws, "--policy", pol)
		cmd.Dir = ws
		r.prepare(cmd)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		in, _ := cmd.StdinPipe()
		outPipe, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() {
			in.Close()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
			}
		})
		sc := bufio.NewScanner(outPipe)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		send := func(s string) {
			if _, err := io.WriteString(in, s+"\n"); err != nil {
				t.Fatalf("send: %v\nstderr: %s", err, stderr.String())
			}
		}
		// next returns the response with the id, skipping notifications.
		next := func(id int) map[string]any {
			t.Helper()
			for {
				line := make(chan bool, 1)
				go func() { line <- sc.Scan() }()
				select {
				case ok := <-line:
					if !ok {
						t.Fatalf("jail mcp ended\nstderr: %s", stderr.String())
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("no response within 30s\nstderr: %s", stderr.String())
				}
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatalf("bad line %q", sc.Bytes())
				}
				if m["id"] == float64(id) {
					return m
				}
			}
		}
		callTool := func(id int, name, args string) (string, bool) {
			t.Helper()
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, args))
			m := next(id)
			res, _ := m["result"].(map[string]any)
			if res == nil {
				t.Fatalf("%s: %v", name, m)
			}
			return resultText(res), res["isError"] == true
		}
		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"jail-it","version":"1"}}}`)
		next(1)
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		m := bgMarker(5)
		text, isErr := callTool(2, "bash", fmt.Sprintf(`{"command":"echo up; exec sleep %s","run_in_background":true}`, m))
		if isErr || !strings.Contains(text, "started background process bg-1") {
			t.Fatalf("bash in the background over MCP: %q", text)
		}
		var got string
		for i := 3; i < 20 && !strings.Contains(got, "up\n"); i++ {
			text, isErr = callTool(i, "bash_output", `{"id":"bg-1","wait":2}`)
			if isErr {
				t.Fatalf("bash_output: %q", text)
			}
			got += text
		}
		if !strings.Contains(got, "up\n") {
			t.Fatalf("bash_output over MCP: %q", got)
		}
		if !testutil.Eventually(10*time.Second, func() bool { return len(testutil.LiveProcesses(m)) == 1 }) {
			t.Fatalf("not seen within 10s: %s", "the background process running")
		}
		in.Close()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("jail mcp did not end\nstderr: %s", stderr.String())
		}
		if pids := testutil.LiveProcesses(m); len(pids) > 0 {
			t.Fatalf("a background process outlived the MCP session: %v", pids)
		}
	})
}
