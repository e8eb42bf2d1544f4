//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
)

// served is a running `jail serve` driven over its stdin and stdout.
type served struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
	err strings.Builder
}

// toolPolicy writes a policy that auto-approves bash and logs to audit.
func (r runner) toolPolicy(t *testing.T, dir, extra string) (file, audit string) {
	t.Helper()
	file = filepath.Join(dir, "policy.toml")
	audit = filepath.Join(dir, "audit", "audit.jsonl")
	r.writeFile(t, file, fmt.Sprintf("[approval]\nauto_approve = [\"bash\"]\n[audit]\npath = %q\n%s", audit, extra))
	return file, audit
}

// toolsIn starts jail serve as r in a fresh workspace, under a policy
// that auto-approves bash (plus extra), and returns the workspace and the
// server.
func (r runner) toolsIn(t *testing.T, extra string, args ...string) (string, *served) {
	t.Helper()
	ws := r.dir(t, "jail-it-ws-")
	pol, _ := r.toolPolicy(t, r.dir(t, "jail-it-cfg-"), extra)
	return ws, r.serve(t, ws, append([]string{"--policy", pol}, args...)...)
}

// serve starts `jail serve` as r in ws; it gives the server 20 s to exit
// once its stdin closes at the end of the test.
func (r runner) serve(t *testing.T, ws string, args ...string) *served {
	t.Helper()
	return r.startServe(t, ws, nil, 20*time.Second, args...)
}

// startServe starts `jail serve -w ws ARGS` as r with extra environment;
// the test fails if it has not exited within exit of its stdin closing.
func (r runner) startServe(t *testing.T, ws string, env []string, exit time.Duration, args ...string) *served {
	t.Helper()
	cmd := exec.Command(suite.bin, append([]string{"serve", "-w", ws}, args...)...)
	cmd.Dir = ws
	r.prepare(cmd, env...)
	s := &served{t: t, cmd: cmd}
	cmd.Stderr = &s.err
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.in = in
	s.out = bufio.NewScanner(out)
	s.out.Buffer(make([]byte, 1<<20), 64<<20)
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(exit):
			cmd.Process.Kill()
			<-done
			t.Errorf("jail serve did not exit within %s of stdin closing\nstderr: %s", exit, s.err.String())
		}
	})
	return s
}

func (s *served) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("send: %v\nstderr: %s", err, s.err.String())
	}
}

// resp is a response line of jail serve.
type resp struct {
	ID     json.RawMessage `json:"id"`
	Type   string          `json:"type"`
	Error  string          `json:"error"`
	Reason string          `json:"reason"` // of an approval_request
	Tools  []struct{ Name string }
	Result *struct {
		Content string         `json:"content"`
		IsError bool           `json:"is_error"`
		Meta    map[string]any `json:"meta"`
	} `json:"result"`
}

func (s *served) next() resp {
	s.t.Helper()
	line := make(chan bool, 1)
	go func() { line <- s.out.Scan() }()
	select {
	case ok := <-line:
		if !ok {
			s.t.Fatalf("jail serve ended: %v\nstderr: %s", s.out.Err(), s.err.String())
		}
	case <-time.After(30 * time.Second):
		s.t.Fatalf("no response within 30s\nstderr: %s", s.err.String())
	}
	var r resp
	if err := json.Unmarshal(s.out.Bytes(), &r); err != nil {
		s.t.Fatalf("bad response %q: %v", s.out.Bytes(), err)
	}
	return r
}

// call sends one call and waits for its result (no other call in flight).
func (s *served) call(id int, tool, args string) resp {
	s.t.Helper()
	s.send(fmt.Sprintf(`{"id":%d,"tool":%q,"args":%s}`, id, tool, args))
	r := s.next()
	if r.Type != "result" || string(r.ID) != strconv.Itoa(id) {
		s.t.Fatalf("call %d: %+v", id, r)
	}
	return r
}

// TestServeTools drives jail serve as a harness would: every tool, the
// protocol's error paths, concurrency, cancellation, idempotency, the
// bash session, and the audit log, as root and as a user.
func TestServeTools(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-tools-")
		cfg := r.dir(t, "jail-it-toolcfg-")
		pol, audit := r.toolPolicy(t, cfg, "")
		r.writeFile(t, filepath.Join(ws, "src", "a.go"), "package a\n\nfunc Hello() string { return \"hi\" }\n")
		r.writeFile(t, filepath.Join(ws, ".gitignore"), "gen/\n")
		r.writeFile(t, filepath.Join(ws, "gen", "x.go"), "func Hello()\n")
		s := r.serve(t, ws, "--policy", pol, "--max-concurrency", "3")

		s.send(`{"id":1,"type":"list_tools"}`)
		lt := s.next()
		var names []string
		for _, d := range lt.Tools {
			names = append(names, d.Name)
		}
		if strings.Join(names, ",") != "read,ls,glob,grep,write,edit,bash,bash_output,bash_kill" {
			t.Fatalf("list_tools: %+v", lt)
		}
		res := s.call(2, "read", `{"path":"src/a.go"}`)
		if res.Result.IsError || !strings.Contains(res.Result.Content, "     3\tfunc Hello()") {
			t.Fatalf("read: %+v", res.Result)
		}
		if res = s.call(3, "write", `{"path":"new/dir/f.txt","content":"one\ntwo\n"}`); res.Result.IsError {
			t.Fatalf("write: %+v", res.Result)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "new/dir/f.txt")); string(b) != "one\ntwo\n" {
			t.Fatalf("written: %q", b)
		}
		if st, _ := os.Stat(filepath.Join(ws, "new/dir/f.txt")); st.Sys().(*syscall.Stat_t).Uid != uint32(r.uid) {
			t.Fatalf("written file owned by %d, want %d", st.Sys().(*syscall.Stat_t).Uid, r.uid)
		}
		edit := `{"id":%d,"tool":"edit","args":{"path":"new/dir/f.txt","old_string":"two","new_string":"two two"},"context":{"idempotency_key":"e1"}}`
		s.send(fmt.Sprintf(edit, 4))
		e1 := s.next()
		s.send(fmt.Sprintf(edit, 5))
		e2 := s.next()
		if e1.Result.IsError || e2.Result.Meta["idempotent_replay"] != true {
			t.Fatalf("idempotent edit: %+v / %+v", e1.Result, e2.Result)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "new/dir/f.txt")); string(b) != "one\ntwo two\n" {
			t.Fatalf("edit applied twice: %q", b)
		}
		if res = s.call(6, "grep", `{"pattern":"Hello","output_mode":"files_with_matches"}`); res.Result.Content != "src/a.go\n" {
			t.Fatalf("grep (gitignore): %+v", res.Result)
		}
		if res = s.call(7, "glob", `{"pattern":"**/*.txt"}`); res.Result.Content != "new/dir/f.txt\n" {
			t.Fatalf("glob: %+v", res.Result)
		}
		if res = s.call(8, "ls", `{"path":"new"}`); !strings.Contains(res.Result.Content, "dir/") {
			t.Fatalf("ls: %+v", res.Result)
		}
		// bash: a session's directory and environment carry over.
		s.call(9, "bash", `{"command":"cd new && export GREETING=hello"}`)
		if res = s.call(10, "bash", `{"command":"echo $GREETING from $(pwd)"}`); res.Result.Content != "hello from "+filepath.Join(ws, "new")+"\n" {
			t.Fatalf("bash session: %+v", res.Result)
		}
		// Protocol errors: the server answers and goes on.
		s.send(`{"id":11,"tool":"read","args":`)
		if e := s.next(); e.Type != "error" || !strings.Contains(e.Error, "malformed") {
			t.Fatalf("malformed: %+v", e)
		}
		s.send(`{"id":12,"tool":"write","args":{"path":"huge","content":"` + strings.Repeat("x", 9<<20) + `"}}`)
		if e := s.next(); e.Type != "error" || !strings.Contains(e.Error, "longer than") {
			t.Fatalf("huge line: %+v", e)
		}
		if res = s.call(13, "read", `{"path":"../../etc/passwd"}`); !res.Result.IsError || !strings.Contains(res.Result.Content, "outside the workspace") {
			t.Fatalf("escape: %+v", res.Result)
		}
		if res = s.call(14, "read", `{"limit":"x"}`); !res.Result.IsError || !strings.Contains(res.Result.Content, "invalid arguments") {
			t.Fatalf("validation: %+v", res.Result)
		}

		// Concurrency and cancellation: a long bash call, reads answered
		// meanwhile, then the bash call cancelled.
		s.send(`{"id":"long","tool":"bash","args":{"command":"sleep 60"}}`)
		for i := 100; i < 110; i++ {
			s.send(fmt.Sprintf(`{"id":%d,"tool":"read","args":{"path":"src/a.go"}}`, i))
		}
		for range 10 {
			if rr := s.next(); rr.Result == nil || rr.Result.IsError {
				t.Fatalf("read during a long call: %+v", rr)
			}
		}
		start := time.Now()
		s.send(`{"id":"c1","type":"cancel","target":"long"}`)
		got := map[string]resp{}
		for range 2 {
			rr := s.next()
			got[string(rr.ID)] = rr
		}
		if got[`"c1"`].Type != "cancelled" || got[`"long"`].Result == nil || !strings.Contains(got[`"long"`].Result.Content, "cancelled") {
			t.Fatalf("cancel: %+v", got)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("cancel took %s", time.Since(start))
		}
		if res = s.call(15, "bash", `{"command":"echo still here"}`); res.Result.Content != "still here\n" {
			t.Fatalf("after cancel: %+v", res.Result)
		}

		// Every call left one audit record naming the policy's hash.
		s.in.Close()
		s.cmd.Wait()
		chk := r.jail(t, call{dir: ws, args: []string{"policy", "check", pol}})
		b, err := os.ReadFile(audit)
		if err != nil {
			t.Fatalf("audit log: %v", err)
		}
		var tools []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var rec struct {
				Tool, Decision string
				PolicyHash     string `json:"policy_hash"`
			}
			json.Unmarshal([]byte(l), &rec)
			if rec.PolicyHash == "" || !strings.Contains(chk.stdout, rec.PolicyHash) {
				t.Fatalf("audit record without the policy's hash (%s): %s", chk.stdout, l)
			}
			tools = append(tools, rec.Tool)
		}
		sort.Strings(tools)
		// reads 2, 13, 14 and ten concurrent; write 3; edits 4 and 5 (the
		// replay); grep, glob, ls; bash 9, 10, long and 15. The malformed
		// and the huge line never became calls.
		if len(tools) != 23 {
			t.Fatalf("%d audit records, want 23: %v", len(tools), tools)
		}
	})
}

// TestToolWorkerIsConfined: the file tools and bash in a worker see what a
// jail run command sees, and nothing outside the workspace.
func TestToolWorkerIsConfined(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-tools-")
		cfg := r.dir(t, "jail-it-toolcfg-")
		pol, _ := r.toolPolicy(t, cfg, "")
		canary, content := r.canary(t)
		os.Symlink(canary, filepath.Join(ws, "out-link"))
		os.Symlink(filepath.Dir(canary), filepath.Join(ws, "out-dir"))
		os.Lchown(filepath.Join(ws, "out-link"), r.uid, r.gid)
		os.Lchown(filepath.Join(ws, "out-dir"), r.uid, r.gid)
		tool := func(name, args string) resp {
			t.Helper()
			res := r.jail(t, call{dir: ws, args: []string{"tool", "--policy", pol, "-w", ws, name, args}})
			mustExit(t, res, 0)
			var out resp
			out.Result = &struct {
				Content string         `json:"content"`
				IsError bool           `json:"is_error"`
				Meta    map[string]any `json:"meta"`
			}{}
			if err := json.Unmarshal([]byte(res.stdout), out.Result); err != nil {
				t.Fatalf("jail tool output %q: %v", res.stdout, err)
			}
			return out
		}
		for _, p := range []string{canary, "out-link", "out-dir/canary", "../" + filepath.Base(filepath.Dir(canary)) + "/canary"} {
			if res := tool("read", fmt.Sprintf(`{"path":%q}`, p)); !res.Result.IsError || strings.Contains(res.Result.Content, content) {
				t.Fatalf("read %s: %+v", p, res.Result)
			}
			tool("write", fmt.Sprintf(`{"path":%q,"content":"PWNED"}`, p))
		}
		checkCanary(t, canary, content)
		// bash in the worker: no host file, no capability, seccomp on.
		res := tool("bash", fmt.Sprintf(`{"command":"cat %s; grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status; ls /proc | grep -c '^[0-9]'"}`, canary))
		c := res.Result.Content
		if strings.Contains(c, content) || !strings.Contains(c, "Seccomp:\t2") || !strings.Contains(c, "NoNewPrivs:\t1") || !strings.Contains(c, "CapEff:\t0000000000000000") {
			t.Fatalf("bash in the worker: %s", c)
		}
		// An error result still exits 0; jail's own failure does not.
		if res := r.jail(t, call{dir: ws, args: []string{"tool", "--policy", pol, "-w", ws, "read", `{"path":"nope"}`}}); res.code != 0 || !strings.Contains(res.stdout, `"is_error":true`) {
			t.Fatalf("error result: %+v", res)
		}
		if res := r.jail(t, call{dir: ws, args: []string{"tool", "--policy", "/nonexistent.toml", "read", `{"path":"x"}`}}); res.code == 0 {
			t.Fatalf("a policy that does not load exited 0: %+v", res)
		}
		// Arguments from stdin.
		if res := r.jail(t, call{dir: ws, stdin: `{"path":".","all":true}`, args: []string{"tool", "--policy", pol, "-w", ws, "ls", "-"}}); res.code != 0 || !strings.Contains(res.stdout, "out-link") {
			t.Fatalf("args from stdin: %+v", res)
		}
	})
}

// TestBashTimeoutInWorker: a timed-out bash call kills what it started,
// a daemon in its own session included, and the worker serves on.
func TestBashTimeoutInWorker(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		_, s := r.toolsIn(t, "", "--max-concurrency", "1")
		marker := "400." + strconv.FormatInt(time.Now().UnixNano()%1000000, 10)
		s.send(fmt.Sprintf(`{"id":1,"tool":"bash","args":{"timeout":1,"command":"(setsid sh -c 'sleep %s; :' >/dev/null 2>&1 &); sleep %s"}}`, marker, marker))
		// setsid is a soft guard: the harness is asked, and approves.
		if ask := s.next(); ask.Type != "approval_request" {
			t.Fatalf("want an approval request for setsid: %+v", ask)
		}
		s.send(`{"id":1,"type":"approval_response","approve":true}`)
		res := s.next()
		if !res.Result.IsError || res.Result.Meta["timed_out"] != true {
			t.Fatalf("timeout: %+v", res.Result)
		}
		if !testutil.Eventually(5*time.Second, func() bool { return len(testutil.Processes(marker)) == 0 }) {
			t.Fatalf("processes left after the timeout: %v", testutil.Processes(marker))
		}
		if res = s.call(2, "bash", `{"command":"echo alive"}`); res.Result.Content != "alive\n" {
			t.Fatalf("after a timeout: %+v", res.Result)
		}
	})
}

// TestReadOnlyRoleCannotWrite: a role whose remit is to look (verify) gets
// a worker whose workspace is mounted read-only, so even its bash cannot
// change the project; a build role's bash can.
func TestReadOnlyRoleCannotWrite(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		cfg := r.dir(t, "jail-it-cfg-")
		file, _ := r.toolPolicy(t, cfg, "[agents.checker]\nrole = \"verify\"\n[agents.builder]\nrole = \"build\"\n")
		s := r.serve(t, ws, "--policy", file)
		bash := func(id int, agent, name string) resp {
			s.send(fmt.Sprintf(`{"id":%d,"tool":"bash","args":{"command":"echo x > %s; echo rc=$?"},"context":{"agent":%q}}`, id, name, agent))
			res := s.next()
			if res.Type != "result" || res.Result == nil {
				t.Fatalf("call %d: %+v\nstderr: %s", id, res, s.err.String())
			}
			return res
		}
		res := bash(1, "checker", "by-verify")
		if !strings.Contains(res.Result.Content, "Read-only file system") {
			t.Errorf("verify role's bash wrote to the workspace: %q", res.Result.Content)
		}
		if _, err := os.Stat(filepath.Join(ws, "by-verify")); err == nil {
			t.Fatal("a verify-role command created a file in the workspace")
		}
		res = bash(2, "builder", "by-build")
		if !strings.Contains(res.Result.Content, "rc=0") {
			t.Errorf("build role's bash could not write: %q", res.Result.Content)
		}
		if _, err := os.Stat(filepath.Join(ws, "by-build")); err != nil {
			t.Fatalf("the build role's file is missing: %v", err)
		}
	})
}

// TestServeDisclosure: [tools] disclosure through the built binary.
func TestServeDisclosure(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		cfg := r.dir(t, "jail-it-cfg-")
		file, _ := r.toolPolicy(t, cfg, "[tools]\ndisclosure = true\ndisclosure_budget = 400\n")
		s := r.serve(t, ws, "--policy", file)
		s.send(`{"id":1,"type":"list_tools"}`)
		line := s.next()
		if line.Type != "tools" || len(line.Tools) != 0 {
			t.Fatalf("disclosed list_tools carried full definitions: %+v", line)
		}
		s.send(`{"id":2,"type":"load_tool","name":"read"}`)
		if got := s.next(); got.Type != "tool" || len(got.Tools) != 1 || got.Tools[0].Name != "read" {
			t.Fatalf("load_tool read: %+v", got)
		}
		s.send(`{"id":3,"type":"load_tool_resource","name":"bash","resource":"schema"}`)
		if got := s.next(); got.Type != "resource" {
			t.Fatalf("load_tool_resource: %+v", got)
		}
		if res := s.call(4, "read", `{"path":"missing.txt"}`); !res.Result.IsError {
			t.Fatalf("a call after disclosure: %+v", res)
		}
	})
}

// TestBashFreshSandboxPerCall: every bash call runs in fresh namespaces.
// Nothing a call leaves in /tmp or /dev/shm, no process it starts and no
// mount namespace of it reaches the next call; the working directory and
// exported variables do, and a command reading stdin gets nothing of the
// script that runs it. Checked from the host too: no process is left once
// the call has answered (TestZygoteHoldsNothingOfTheCaller checks that
// none is left once the server has ended).
func TestBashFreshSandboxPerCall(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws, s := r.toolsIn(t, "")
		os.Mkdir(filepath.Join(ws, "sub"), 0o755)
		r.own(t, filepath.Join(ws, "sub"))
		marker := "401." + strconv.FormatInt(time.Now().UnixNano()%1000000, 10)
		first := s.call(1, "bash", fmt.Sprintf(`{"command":"echo $$; readlink /proc/self/ns/pid /proc/self/ns/mnt; touch /tmp/left /dev/shm/left; (sleep %s >/dev/null 2>&1 &); cd sub; export KEEP='a b'\"'\"'c'; unset LANG; cat; echo read-nothing"}`, marker))
		if first.Result.IsError {
			t.Fatalf("first call: %+v", first.Result)
		}
		lines := strings.Split(first.Result.Content, "\n")
		if len(lines) < 4 || lines[0] != "2" || lines[3] != "read-nothing" {
			t.Fatalf("first call: %q", first.Result.Content)
		}
		if pids := testutil.Processes(marker); len(pids) > 0 {
			t.Fatalf("a process of the first call outlived it: %v", pids)
		}
		second := s.call(2, "bash", `{"command":"echo $$; readlink /proc/self/ns/pid /proc/self/ns/mnt; ls /tmp /dev/shm; pwd; echo \"$KEEP\"; echo \"lang=${LANG-unset}\""}`)
		got := strings.Split(second.Result.Content, "\n")
		if len(got) < 3 || got[0] != "2" || got[1] == lines[1] || got[2] == lines[2] {
			t.Fatalf("the second call did not get fresh namespaces:\nfirst %q\nsecond %q", first.Result.Content, second.Result.Content)
		}
		for _, want := range []string{filepath.Join(ws, "sub") + "\n", "a b'c\n", "lang=unset\n"} {
			if !strings.Contains(second.Result.Content, want) {
				t.Errorf("session state lost: want %q in %q", want, second.Result.Content)
			}
		}
		if strings.Contains(second.Result.Content, "left") {
			t.Errorf("/tmp or /dev/shm of the first call reached the second: %q", second.Result.Content)
		}
	})
}

// TestZygoteHoldsNothingOfTheCaller checks from the host the zygote that
// jail serve forks before its Go runtime starts (and that forks every
// sandbox's init): it keeps neither the caller's environment, nor its
// command line, nor any descriptor of the caller's; and the inits it forks
// are the server's own children, which die with it.
func TestZygoteHoldsNothingOfTheCaller(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		cfg := r.dir(t, "jail-it-cfg-")
		pol, _ := r.toolPolicy(t, cfg, "")
		canary, _ := r.canary(t)
		leak, err := os.Open(canary)
		if err != nil {
			t.Fatal(err)
		}
		defer leak.Close()
		cmd := exec.Command(suite.bin, "serve", "-w", ws, "--policy", pol)
		cmd.Dir = ws
		var errb bytes.Buffer
		cmd.Stderr = &errb
		r.prepare(cmd, "GITHUB_TOKEN=topsecret-zygote")
		cmd.ExtraFiles = []*os.File{leak}
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		fmt.Fprintln(in, `{"id":1,"tool":"bash","args":{"command":"echo ok"}}`)
		if !sc.Scan() || !strings.Contains(sc.Text(), `"ok\n"`) {
			t.Fatalf("bash through jail serve: %q", sc.Text())
		}
		serve := strconv.Itoa(cmd.Process.Pid)
		// Every sandbox the server ended is reaped: no zombie piles up.
		for i := 2; i < 6; i++ {
			fmt.Fprintf(in, `{"id":%d,"tool":"bash","args":{"command":"true"}}`+"\n", i)
			if !sc.Scan() {
				t.Fatal("jail serve ended")
			}
			if !strings.Contains(sc.Text(), `"is_error":false`) {
				t.Errorf("bash call %d: %s", i, sc.Text())
			}
		}
		zombies := func() (z []string) {
			ents, _ := os.ReadDir("/proc")
			for _, e := range ents {
				st, err := os.ReadFile("/proc/" + e.Name() + "/status")
				if err == nil && strings.Contains(string(st), "\nPPid:\t"+serve+"\n") && strings.Contains(string(st), "State:\tZ") {
					stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
					z = append(z, e.Name()+":"+string(stat))
				}
			}
			return z
		}
		testutil.Eventually(3*time.Second, func() bool { return len(zombies()) == 0 })
		if z := zombies(); len(z) > 0 {
			t.Errorf("jail serve leaves its sandboxes' inits unreaped (pid:stat): %v\nstderr: %s", z, errb.String())
		}
		var zygote, inits []string
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			st, err := os.ReadFile("/proc/" + e.Name() + "/status")
			if err != nil || !strings.Contains(string(st), "\nPPid:\t"+serve+"\n") {
				continue
			}
			switch {
			case strings.HasPrefix(string(st), "Name:\tjail-zygote\n"):
				zygote = append(zygote, e.Name())
			case strings.HasPrefix(string(st), "Name:\tjail-init\n"):
				inits = append(inits, e.Name())
			}
		}
		if len(zygote) != 1 || len(inits) == 0 {
			t.Fatalf("jail serve's children: zygote %v, inits %v", zygote, inits)
		}
		z := "/proc/" + zygote[0]
		if env, _ := os.ReadFile(z + "/environ"); strings.Contains(string(env), "topsecret") {
			t.Error("the zygote keeps the caller's environment")
		}
		if cl, _ := os.ReadFile(z + "/cmdline"); strings.Contains(string(cl), "serve") || strings.Contains(string(cl), pol) {
			t.Errorf("the zygote keeps the caller's command line: %q", cl)
		}
		fds, _ := os.ReadDir(z + "/fd")
		for _, fd := range fds {
			target, _ := os.Readlink(z + "/fd/" + fd.Name())
			if n, _ := strconv.Atoi(fd.Name()); n > 3 || target == canary || (n < 3 && target != "/dev/null") {
				t.Errorf("the zygote holds fd %s -> %s", fd.Name(), target)
			}
		}
		in.Close()
		cmd.Wait()
		// They die with the server (SIGKILL on its death): give the kernel
		// a moment to carry that out.
		alive := func(pid string) bool {
			st, err := os.ReadFile("/proc/" + pid + "/status")
			return err == nil && !strings.Contains(string(st), "State:\tZ")
		}
		for _, pid := range append(zygote, inits...) {
			if !testutil.Eventually(2*time.Second, func() bool { return !alive(pid) }) {
				t.Errorf("process %s outlived jail serve", pid)
			}
		}
	})
}

// TestBashCannotExhaustTheServer: a bash call's shell reports its state
// on fd 3 to the supervisor; a command that floods fd 3 must cost the
// supervisor bounded memory and lose only that call's new state. And bash
// calls are bounded by --max-concurrency like every other call: two
// sessions' calls that would collide if run together both succeed.
func TestBashCannotExhaustTheServer(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws, s := r.toolsIn(t, "", "--max-concurrency", "1")
		os.Mkdir(filepath.Join(ws, "sub"), 0o755)
		r.own(t, filepath.Join(ws, "sub"))
		s.call(1, "bash", `{"command":"cd sub"}`)
		flood := s.call(2, "bash", `{"command":"cd /; head -c 200000000 /dev/zero >&3; echo flooded"}`)
		if !strings.Contains(flood.Result.Content, "flooded") {
			t.Fatalf("flood: %+v", flood.Result)
		}
		st, err := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(st), "\n") {
			if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")))
				if n > 100<<10 {
					t.Errorf("jail serve's peak memory reached %d kB after a 200 MB flood of fd 3", n)
				}
			}
		}
		if res := s.call(3, "bash", `{"command":"pwd"}`); res.Result.Content != filepath.Join(ws, "sub")+"\n" {
			t.Errorf("after the flood the session is in %q, want the state before it", res.Result.Content)
		}
		lock := filepath.Join(ws, "lock")
		for id, task := range []string{"a", "b"} {
			s.send(fmt.Sprintf(`{"id":%d,"tool":"bash","args":{"command":"mkdir %s && sleep 0.5 && rmdir %s"},"context":{"task_id":%q}}`, 10+id, lock, lock, task))
		}
		for range 2 {
			if res := s.next(); res.Result == nil || res.Result.IsError {
				t.Errorf("two bash calls ran at once under --max-concurrency 1: %+v", res.Result)
			}
		}
	})
}
