//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
)

// TestSessionStateJudged attacks the bash tool's session through jail
// serve, with code:read and code:write auto-approved. A call approved as a
// read writes a forged state on the wrapper's state channel (fd 3, closed
// after so the real report cannot follow) that puts the workspace's bin
// ahead of the system in PATH, or sets TAR_OPTIONS to run a program of the
// workspace. The next `ls` and `tar xf` must be asked about, naming the
// session's variable, and nothing the workspace holds may have run (judged
// on the host: no marker file). The same holds for state set by `source`.
// A PATH that only adds a system directory and GIT_PAGER=cat leave the
// next `ls` auto-approved.
func TestSessionStateJudged(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-sess-")
		cfg := r.dir(t, "jail-it-sesscfg-")
		pol := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, pol, fmt.Sprintf("[approval]\nauto_approve = [\"code:read\", \"code:write\"]\n[audit]\npath = %q\n", filepath.Join(cfg, "audit.jsonl")))
		marker := filepath.Join(ws, "pwned")
		evil := fmt.Sprintf("#!/bin/sh\necho ran >> %s\necho fake\n", marker)
		for _, p := range []string{"bin/ls", "x"} {
			r.writeFile(t, filepath.Join(ws, p), evil)
			os.Chmod(filepath.Join(ws, p), 0o755)
		}
		r.writeFile(t, filepath.Join(ws, "data", "f.txt"), "data\n")
		if out, err := exec.Command("tar", "-C", ws, "-cf", filepath.Join(ws, "a.tar"), "data").CombinedOutput(); err != nil {
			t.Fatalf("tar: %v: %s", err, out)
		}
		r.own(t, ws)
		base := "/usr/local/bin:/usr/bin:/bin"
		r.writeFile(t, filepath.Join(ws, "path.state"), ws+"\x00export PATH='"+filepath.Join(ws, "bin")+":"+base+"'\n")
		r.writeFile(t, filepath.Join(ws, "tar.state"), ws+"\x00export PATH='"+base+"'\nexport TAR_OPTIONS='--to-command=./x'\n")
		r.writeFile(t, filepath.Join(ws, "env.sh"), "export TAR_OPTIONS=--to-command=./x\n")
		s := r.serve(t, ws, "--policy", pol)
		id := 0
		// call sends a bash call in the session task; an approval request
		// is answered with approve and its reason returned.
		call := func(task, cmd string, approve bool) (reason string, res resp) {
			t.Helper()
			id++
			s.send(fmt.Sprintf(`{"id":%d,"tool":"bash","args":{"command":%q},"context":{"task_id":%q}}`, id, cmd, task))
			res = s.next()
			if res.Type == "approval_request" {
				reason = res.Reason
				s.send(fmt.Sprintf(`{"id":%d,"type":"approval_response","approve":%v}`, id, approve))
				res = s.next()
			}
			if res.Type != "result" {
				t.Fatalf("%q: %+v", cmd, res)
			}
			return reason, res
		}
		ran := func(what string) {
			t.Helper()
			if b, err := os.ReadFile(marker); err == nil {
				t.Fatalf("%s: the workspace's program ran: %q", what, b)
			}
		}
		if why, res := call("forged-path", "cat path.state >&3; exec 3>&-", false); why != "" || res.Result.IsError {
			t.Fatalf("the forging call was not auto-approved as a read (%q): %+v", why, res.Result)
		}
		why, res := call("forged-path", "ls", false)
		if !strings.Contains(why, "PATH") || !strings.Contains(why, filepath.Join(ws, "bin")) || !res.Result.IsError {
			t.Errorf("ls after a forged PATH: asked %q, result %+v", why, res.Result)
		}
		ran("ls after a forged PATH")
		if why, res := call("forged-tar", "cat tar.state >&3; exec 3>&-", false); why != "" || res.Result.IsError {
			t.Fatalf("the forging call was not auto-approved as a read (%q): %+v", why, res.Result)
		}
		why, res = call("forged-tar", "tar xf a.tar", false)
		if !strings.Contains(why, "TAR_OPTIONS") || !res.Result.IsError {
			t.Errorf("tar xf after a forged TAR_OPTIONS: asked %q, result %+v", why, res.Result)
		}
		ran("tar xf after a forged TAR_OPTIONS")
		// Sourced: the person approves the source, not what it does later.
		if why, _ := call("sourced", ". ./env.sh", true); why == "" {
			t.Errorf(". ./env.sh was not asked about")
		}
		why, res = call("sourced", "tar xf a.tar", false)
		if !strings.Contains(why, "TAR_OPTIONS") || !res.Result.IsError {
			t.Errorf("tar xf after a sourced TAR_OPTIONS: asked %q, result %+v", why, res.Result)
		}
		ran("tar xf after a sourced TAR_OPTIONS")
		// A megabyte of nesting on the channel: the server survives it
		// (the shell parser's recursion overflowed its stack) and keeps
		// the session's state.
		call("bomb", "printf '%s\\0' \"$PWD\" >&3; head -c 1040000 /dev/zero | tr '\\0' '(' >&3; exec 3>&-", true)
		if _, res := call("bomb", "echo alive", true); res.Result.IsError || res.Result.Content != "alive\n" {
			t.Fatalf("after a nested state: %+v\nstderr: %s", res.Result, s.err.String())
		}
		// A command the guard cannot afford to parse is refused, and the
		// server stays (300000 "(" overflowed its stack in the parser).
		if why, res := call("deep", strings.Repeat("(", 300000)+"true", false); why != "" || !res.Result.IsError || !strings.Contains(res.Result.Content, "nests") {
			t.Fatalf("a deeply nested command: asked %q, %+v\nstderr: %s", why, res.Result, s.err.String())
		}
		// Closers the nesting count sees but the parser does not (in
		// quotes), and chains the parser nests (&&): 7 MB each, under the
		// line's bound, deeper than the stack held.
		for _, deep := range []string{strings.Repeat("( echo ')'; ", 600000) + "true" + strings.Repeat(")", 600000), strings.Repeat("a && ", 1400000) + "a"} {
			if why, res := call("deep", deep, false); why != "" || !res.Result.IsError || !strings.Contains(res.Result.Content, "the guard reads") {
				t.Fatalf("%.30q...: asked %q, %.300s\nstderr: %s", deep, why, res.Result.Content, s.err.String())
			}
		}
		// Controls: a system directory added to PATH, a pager set to cat.
		call("benign", "export PATH=/usr/local/go/bin:$PATH GIT_PAGER=cat", true)
		why, res = call("benign", "ls", false)
		if why != "" || res.Result.IsError || !strings.Contains(res.Result.Content, "a.tar") || strings.Contains(res.Result.Content, "fake") {
			t.Errorf("ls after a benign PATH: asked %q, result %+v", why, res.Result)
		}
		ran("ls after a benign PATH")
	})
}

// TestServeSurvivesSwappedJailDir: a sandbox of the parent directory (whose
// view does not protect the inner workspace's .jail) exchanges that .jail
// with a symlink to a directory of its own, in a loop, while jail serve
// starts in the inner workspace and makes its sandboxes ahead. Each server
// must keep serving (a sandbox it cannot make now is refused, with the
// reason, never made on what the name holds), answer every call, and once
// the swapping stops run calls again; on the host, nothing was made in the
// symlink's target.
func TestServeSurvivesSwappedJailDir(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("requires python3 for the racing sandbox")
	}
	forEach(t, func(t *testing.T, r runner) {
		outer := r.dir(t, "jail-it-outer-")
		proj := filepath.Join(outer, "proj")
		r.writeFile(t, filepath.Join(proj, "README"), "inner\n")
		r.writeFile(t, filepath.Join(outer, "decoy", "keep"), "decoy\n")
		pol, _ := r.toolPolicy(t, r.dir(t, "jail-it-cfg-"), "")
		wait := r.attacker(t, outer, "mkdir -p proj/.jail && ln -s ../decoy proj/.jail-swap", "proj/.jail", "proj/.jail-swap", 6)
		if !testutil.Eventually(10*time.Second, func() bool {
			_, err := os.Lstat(filepath.Join(proj, ".jail-swap"))
			return err == nil
		}) {
			t.Fatalf("the racing sandbox did not start: %s", wait())
		}
		for i := range 4 {
			s := r.serve(t, proj, "--policy", pol)
			res := s.call(1, "bash", `{"command":"echo alive"}`)
			if res.Result == nil {
				t.Fatalf("server %d: no result: %+v\nstderr: %s", i, res, s.err.String())
			}
			s.in.Close()
			if err := s.cmd.Wait(); err != nil {
				t.Fatalf("server %d did not end well: %v\nstderr: %s", i, err, s.err.String())
			}
		}
		out := wait()
		if !strings.Contains(out, "swaps") {
			t.Fatalf("the racing sandbox did not swap: %s", out)
		}
		s := r.serve(t, proj, "--policy", pol)
		if res := s.call(1, "bash", `{"command":"cat README"}`); res.Result.IsError || res.Result.Content != "inner\n" {
			t.Fatalf("after the swapping: %+v\nstderr: %s", res.Result, s.err.String())
		}
		ents, _ := os.ReadDir(filepath.Join(outer, "decoy"))
		if len(ents) != 1 || ents[0].Name() != "keep" {
			t.Fatalf("jail made something in the symlink's target: %v", ents)
		}
	})
}

// TestSessionDirectoryResolved attacks the session's directory through
// jail serve, approving every question: a call sets PWD to a workspace
// symlink to / (the shell's report named the link), cds through it, or
// writes a state naming the link on the wrapper's channel. The next
// `rm -rf *` must be the hard rm-root block when the session really is in
// /, and must never run in / when it was judged elsewhere: on the host,
// the canary in a directory the sandbox may write survives.
func TestSessionDirectoryResolved(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		base := r.dir(t, "jail-it-sessdir-")
		ws, other := filepath.Join(base, "ws"), filepath.Join(base, "other")
		canary := filepath.Join(other, "canary")
		r.writeFile(t, canary, "canary\n")
		r.writeFile(t, filepath.Join(ws, "wfile"), "w\n")
		pol := filepath.Join(base, "policy.toml")
		r.writeFile(t, pol, fmt.Sprintf("[access]\nlevel = \"standard\"\n[sandbox]\nrw = [%q]\n", other))
		os.Chmod(pol, 0o600)
		r.own(t, base)
		s := r.serve(t, ws, "--policy", pol)
		id := 0
		call := func(task, cmd string) (reason string, res resp) {
			t.Helper()
			id++
			s.send(fmt.Sprintf(`{"id":%d,"tool":"bash","args":{"command":%q},"context":{"task_id":%q}}`, id, cmd, task))
			res = s.next()
			if res.Type == "approval_request" {
				reason = res.Reason
				s.send(fmt.Sprintf(`{"id":%d,"type":"approval_response","approve":true}`, id))
				res = s.next()
			}
			if res.Type != "result" {
				t.Fatalf("%q: %+v", cmd, res)
			}
			return reason, res
		}
		alive := func(what string) {
			t.Helper()
			if _, err := os.Stat(canary); err != nil {
				t.Fatalf("%s: the canary outside the workspace is gone (rm ran in /): %v", what, err)
			}
		}
		// PWD set to the link: reported as where the shell is (the
		// workspace), so rm -rf * is the workspace's, asked about.
		call("pwd", "ln -sfn / r; PWD=$PWD/r; true")
		why, _ := call("pwd", "rm -rf * 2>/dev/null; true")
		if !strings.Contains(why, "rm-recursive") {
			t.Errorf("rm -rf * in the workspace: asked %q, want the rm-recursive question", why)
		}
		alive("after PWD=$PWD/r")
		// cd through the link: the session is in /, and rm -rf * there is
		// the hard block, never asked.
		call("cd", "ln -sfn / r; cd r")
		why, res := call("cd", "rm -rf * 2>/dev/null; true")
		if why != "" || !res.Result.IsError || !strings.Contains(res.Result.Content, "rm-root") {
			t.Errorf("rm -rf * after cd into a link to /: asked %q, result %+v", why, res.Result)
		}
		alive("after cd r")
		// A state naming the link: judged as that string, but the shell
		// enters it physically and runs nothing when it is not itself.
		call("forged", "ln -sfn / r; printf '%s\\0' \"$PWD/r\" >&3; exec 3>&-")
		_, res = call("forged", "rm -rf * 2>/dev/null; true")
		if !res.Result.IsError || !strings.Contains(res.Result.Content, "the command did not run") {
			t.Errorf("rm -rf * in a forged linked directory: %+v", res.Result)
		}
		alive("after a forged state")
		if _, err := os.Lstat(filepath.Join(ws, "r")); err != nil {
			t.Errorf("the forged call's rm ran somewhere (the link is gone): %v", err)
		}
	})
}
