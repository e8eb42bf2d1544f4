//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The supervisor boundary (docs/supervisor.md): nothing jail does outside
// the sandbox trusts a path, a byte or a terminal the sandbox touched.

// TestFileToolsRefuseFIFO: a FIFO in the workspace is refused at once by
// the file tools instead of holding the worker until its deadline.
func TestFileToolsRefuseFIFO(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		fifo := filepath.Join(ws, "pipe")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		r.own(t, fifo)
		start := time.Now()
		res := r.jail(t, call{dir: ws, limit: 30 * time.Second, args: []string{"tool", "-w", ws, "read", `{"path":"pipe"}`}})
		if !strings.Contains(res.stdout, `"is_error":true`) || !strings.Contains(res.stdout, "not a regular file (a FIFO)") {
			t.Fatalf("read of a FIFO: %s\nstderr: %s", res.stdout, res.stderr)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("read of a FIFO took %s", took)
		}
	})
}

// TestApproverIgnoresWorkspace: the approver runs from "/" with a minimal
// environment, so a module the sandbox planted in the workspace (`python3
// -m NAME` loads one from the working directory) is not loaded.
func TestApproverIgnoresWorkspace(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("requires /usr/bin/python3 (scripts/deps.sh installs it)")
	}
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		cfg := r.dir(t, "jail-it-cfg-")
		marker := filepath.Join(cfg, "planted-ran")
		r.writeFile(t, filepath.Join(ws, "jailapprover.py"),
			"open("+strconv.Quote(marker)+", 'w').close()\nprint('{\"decision\":\"approve\",\"reason\":\"planted\"}')\n")
		pol := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, pol, fmt.Sprintf("[approval]\nrequire_approval = [\"bash\"]\napprover = [\"/usr/bin/python3\", \"-m\", \"jailapprover\"]\n[audit]\npath = %q\n", filepath.Join(cfg, "audit.jsonl")))
		res := r.jail(t, call{dir: ws, env: []string{"PYTHONPATH=" + ws}, args: []string{"tool", "--policy", pol, "-w", ws, "bash", `{"command":"echo ran"}`}})
		if !strings.Contains(res.stdout, `"is_error":true`) || !strings.Contains(res.stdout, "approver") || strings.Contains(res.stdout, "ran") {
			t.Fatalf("the call was not refused by the approver: %s\nstderr: %s", res.stdout, res.stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the approver loaded the module planted in the workspace")
		}
	})
}

// TestPolicyOfAnotherUserRefused: root with HOME kept (sudo without -H)
// must not load a policy file the invoking user could edit.
func TestPolicyOfAnotherUserRefused(t *testing.T) {
	if !suite.root {
		t.Skip("requires root: the case is root loading another user's policy")
	}
	r := runner{name: "root"}
	home := r.dir(t, "jail-it-home-")
	user := runner{uid: suite.uid, gid: suite.gid}
	pol := filepath.Join(home, ".config", "jail", "policy.toml")
	user.writeFile(t, pol, "[network]\nmode = \"host\"\n")
	user.own(t, home)
	ws := r.dir(t, "jail-it-ws-")
	res := r.jail(t, call{dir: ws, env: []string{"HOME=" + home}, args: []string{"run", "--", "/bin/true"}})
	if res.code != 2 || !strings.Contains(res.stderr, pol) || !strings.Contains(res.stderr, "not by you") || !strings.Contains(res.stderr, "sudo -H") {
		t.Fatalf("exit %d, want a refusal naming %s and the fix\nstderr: %s", res.code, pol, res.stderr)
	}
	// A file others may write is refused for everyone.
	forEach(t, func(t *testing.T, r runner) {
		cfg := r.dir(t, "jail-it-cfg-")
		p := filepath.Join(cfg, "p.toml")
		r.writeFile(t, p, "[limits]\n")
		os.Chmod(p, 0o666)
		res := r.jail(t, call{dir: cfg, args: []string{"run", "--policy", p, "--", "/bin/true"}})
		if res.code != 2 || !strings.Contains(res.stderr, "chmod go-w "+p) {
			t.Fatalf("exit %d, want a refusal of the world-writable policy\nstderr: %s", res.code, res.stderr)
		}
	})
}

// TestJSONOutNotFollowed: --json-out never writes through a symlink a
// sandbox planted. Inside a writable bind it is refused before the sandbox
// starts; elsewhere a link planted by an earlier sandbox (that had the
// directory bound read-write) is replaced, not followed, and the captured
// `$(...)` is written escaped.
func TestJSONOutNotFollowed(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		home := r.dir(t, "jail-it-home-")
		bashrc := filepath.Join(home, ".bashrc")
		r.writeFile(t, bashrc, "# the user's rc\n")
		ws := r.dir(t, "jail-it-ws-")
		marker := filepath.Join(ws, "marker")
		script := "ln -sf " + bashrc + " result.json; echo '$(touch " + marker + ")' '`touch " + marker + "`'"
		res := r.jail(t, call{dir: ws, args: []string{"run", "--capture", "--json-out", filepath.Join(ws, "result.json"), "--", "/bin/sh", "-c", script}})
		if res.code != 2 || !strings.Contains(res.stderr, "lies inside the sandbox's writable bind "+ws) {
			t.Fatalf("--json-out inside the workspace: exit %d\nstderr: %s", res.code, res.stderr)
		}
		out := r.dir(t, "jail-it-out-")
		plant := r.jail(t, call{dir: ws, args: []string{"run", "--rw", out, "--", "/bin/ln", "-s", bashrc, filepath.Join(out, "result.json")}})
		mustExit(t, plant, 0)
		res = r.jail(t, call{dir: ws, args: []string{"run", "--capture", "--json-out", filepath.Join(out, "result.json"), "--", "/bin/sh", "-c", "echo '$(touch " + marker + ")' '`touch " + marker + "`'; printf '\\033]52;c;Zm9v\\007'"}})
		mustExit(t, res, 0)
		if b, _ := os.ReadFile(bashrc); string(b) != "# the user's rc\n" {
			t.Fatalf("the user's rc file changed: %q", b)
		}
		b, err := os.ReadFile(filepath.Join(out, "result.json"))
		if err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Lstat(filepath.Join(out, "result.json")); !fi.Mode().IsRegular() {
			t.Fatalf("result.json is %s", fi.Mode())
		}
		if strings.ContainsAny(string(b), "$`\x1b\x07") || !strings.Contains(string(b), `\u0024(touch`) {
			t.Fatalf("the result holds shell or terminal syntax raw: %s", b)
		}
		// What jail wrote, sourced by a shell, runs nothing.
		sh := exec.Command("/bin/sh", "-c", ". "+filepath.Join(out, "result.json")+" 2>/dev/null; true")
		sh.Run()
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("sourcing the result ran the sandbox's command")
		}
	})
}

// TestAuditLogBoundary: the audit log cannot be swapped for a symlink by a
// sandbox that sees it (it is guarded), one swapped by other means is
// refused before any sandbox starts, and a host name a sandbox chose is
// written escaped: no `$(`, backtick or terminal control survives raw.
func TestAuditLogBoundary(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		home := r.dir(t, "jail-it-home-")
		bashrc := filepath.Join(home, ".bashrc")
		r.writeFile(t, bashrc, "# rc\n")
		ws := r.dir(t, "jail-it-ws-")
		cfg := r.dir(t, "jail-it-cfg-")
		audit := filepath.Join(ws, "logs", "audit.jsonl")
		pol := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, pol, fmt.Sprintf("[approval]\nauto_approve = [\"bash\"]\n[network]\nmode = \"proxy\"\nallow = []\n[audit]\npath = %q\n", audit))
		// A tool call whose workspace holds the log tries to swap it.
		swap := fmt.Sprintf(`{"command":"cd logs; mv audit.jsonl a.old; ln -sf %s audit.jsonl; rm -f audit.jsonl; echo x >> audit.jsonl; ls -la"}`, bashrc)
		res := r.jail(t, call{dir: ws, args: []string{"tool", "--policy", pol, "-w", ws, "bash", swap}})
		if res.code != 0 {
			t.Fatalf("jail tool: exit %d\nstderr: %s", res.code, res.stderr)
		}
		if fi, err := os.Lstat(audit); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("the audit log was swapped: %v %v\n%s", fi, err, res.stdout)
		}
		if b, _ := os.ReadFile(audit); strings.Contains(string(b), "x\n") && !strings.HasPrefix(string(b), "{") {
			t.Fatalf("the sandbox wrote the audit log: %q", b)
		}
		// A host name of the sandbox's choosing, through the proxy.
		evil := "a$(touch " + filepath.Join(ws, "pwned") + ")`id`\x1b]52;c;Zm9v\x07\x1b[2J.example"
		script := `/usr/bin/python3 -c '
import socket, os
h = os.environb[b"EVIL"]
s = socket.create_connection(("127.0.0.1", 1080)); s.sendall(b"\x05\x01\x00"); s.recv(2)
s.sendall(b"\x05\x01\x00\x03" + bytes([len(h)]) + h + b"\x01\xbb"); s.recv(64)'`
		res = r.jail(t, call{dir: ws, args: []string{"run", "--policy", pol, "--env", "EVIL=" + evil, "--", "/bin/sh", "-c", script}})
		b, _ := os.ReadFile(audit)
		if !strings.Contains(string(b), `"type":"network"`) {
			t.Fatalf("no network record (exit %d): %s\nstderr: %s", res.code, b, res.stderr)
		}
		if strings.ContainsAny(string(b), "$`\x1b\x07") {
			t.Fatalf("the audit log holds shell or terminal syntax raw: %q", b)
		}
		if strings.ContainsAny(res.stderr, "\x1b\x07") {
			t.Fatalf("jail's stderr relays the sandbox's terminal controls: %q", res.stderr)
		}
		// A log swapped for a symlink while no sandbox ran is refused.
		os.Remove(audit)
		os.Symlink(bashrc, audit)
		res = r.jail(t, call{dir: ws, args: []string{"tool", "--policy", pol, "-w", ws, "bash", `{"command":"true"}`}})
		if res.code == 0 || !strings.Contains(res.stderr, "symlink") {
			t.Fatalf("a symlinked audit log was used: exit %d\nstderr: %s", res.code, res.stderr)
		}
		if b, _ := os.ReadFile(bashrc); string(b) != "# rc\n" {
			t.Fatalf("the rc file changed: %q", b)
		}
		if _, err := os.Stat(filepath.Join(ws, "pwned")); err == nil {
			t.Fatal("the host name's command ran")
		}
	})
}

// TestStateHidden: jail's state directories (plan cache, audit log,
// persistent data) are hidden, not merely read-only, wherever a bind shows
// them: the workspace is the home, or a bind of a parent.
func TestStateHidden(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		home := r.dir(t, "jail-it-home-")
		for _, f := range []string{".local/state/jail/audit.jsonl", ".local/share/jail/homes/other/.secret"} {
			r.writeFile(t, filepath.Join(home, f), "STATE-SECRET\n")
		}
		for _, d := range []string{".local/state/jail", ".local/share/jail", ".local/share/jail/homes", ".local/share/jail/homes/other"} {
			os.Chmod(filepath.Join(home, d), 0o700) // jail's own state directories are private
		}
		r.own(t, home)
		env := []string{"HOME=" + home}
		// The plan cache fills ~/.cache/jail of this home (a run in a
		// project of it: the home itself is a workspace by name only).
		proj := filepath.Join(home, "p")
		os.Mkdir(proj, 0o755)
		r.own(t, proj)
		mustExit(t, r.jail(t, call{dir: proj, env: env, args: []string{"run", "--", "/bin/true"}}), 0)
		script := `for d in .cache/jail .local/state/jail .local/share/jail; do
  echo "$d: $(ls -A $d 2>&1 | tr '\n' ' ')"
done
cat .local/state/jail/audit.jsonl .local/share/jail/homes/other/.secret 2>/dev/null
grep -rl STATE-SECRET .local .cache 2>/dev/null
mv .local/state/jail .local/state/x 2>/dev/null && echo "moved the state"
mv .local/state .local/y 2>/dev/null && echo "moved its parent"
true`
		res := r.jail(t, call{dir: home, env: env, args: []string{"run", "--home-workspace", "--", "/bin/sh", "-c", script}})
		mustExit(t, res, 0)
		for _, d := range []string{".cache/jail", ".local/state/jail", ".local/share/jail"} {
			if !strings.Contains(res.stdout, d+": \n") && !strings.Contains(res.stdout, d+": ls: cannot access") {
				t.Errorf("%s is visible in the sandbox:\n%s", d, res.stdout)
			}
		}
		if strings.Contains(res.stdout, "STATE-SECRET") || strings.Contains(res.stdout, "moved") {
			t.Fatalf("the sandbox read or moved jail's state:\n%s", res.stdout)
		}
		// A bind of a parent, elsewhere than the workspace.
		ws := r.dir(t, "jail-it-ws-")
		res = r.jail(t, call{dir: ws, env: env, args: []string{"run", "--rw", filepath.Join(home, ".local"), "--", "/bin/sh", "-c",
			"ls -A " + filepath.Join(home, ".local/state/jail") + "; cat " + filepath.Join(home, ".local/share/jail/homes/other/.secret") + " 2>/dev/null; true"}})
		if res.code != 0 || strings.TrimSpace(res.stdout) != "" {
			t.Fatalf("through --rw ~/.local: exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
	})
}

// TestNoSecretsOnDisk: no value of the caller's environment or of --env
// NAME=VALUE reaches a file jail writes (plan cache, audit log, result).
func TestNoSecretsOnDisk(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		home := r.dir(t, "jail-it-home-")
		ws := r.dir(t, "jail-it-ws-")
		out := r.dir(t, "jail-it-out-")
		const given, inherited = "GIVEN-SECRET-4f1e", "INHERITED-SECRET-9a2c"
		env := []string{"HOME=" + home, "JAIL_PLAN_CACHE=trace", "API_TOKEN=" + inherited}
		for i := 0; i < 2; i++ {
			res := r.jail(t, call{dir: ws, env: env, args: []string{"run", "--env", "TOKEN=" + given, "--env", "API_TOKEN", "--", "/bin/sh", "-c", `test "$TOKEN" = ` + given + ` && test "$API_TOKEN" = ` + inherited}})
			mustExit(t, res, 0)
			if strings.Contains(res.stderr, "plan cache: stored") || strings.Contains(res.stderr, "plan cache: used") {
				t.Fatalf("a run with --env NAME=VALUE was cached: %s", res.stderr)
			}
		}
		res := r.jail(t, call{dir: ws, env: env, args: []string{"run", "--json-out", filepath.Join(out, "r.json"), "--env", "TOKEN=" + given, "--", "/bin/true"}})
		mustExit(t, res, 0)
		mustExit(t, r.jail(t, call{dir: ws, env: env, args: []string{"tool", "-w", ws, "bash", `{"command":"echo $API_TOKEN"}`}}), 0)
		for _, root := range []string{home, ws, out} {
			filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					if b, _ := os.ReadFile(p); strings.Contains(string(b), given) || strings.Contains(string(b), inherited) {
						t.Errorf("%s holds a secret value", p)
					}
				}
				return nil
			})
		}
	})
}

// TestAliasBypassRefused: an alias that turns a read into a delete is not
// auto-approved as a read (through jail tool bash, policy auto-approving
// code:read), and the workspace keeps its files.
func TestAliasBypassRefused(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		cfg := r.dir(t, "jail-it-cfg-")
		r.writeFile(t, filepath.Join(ws, "data", "keep.txt"), "keep\n")
		pol := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, pol, fmt.Sprintf("[approval]\nauto_approve = [\"code:read\"]\n[audit]\npath = %q\n", filepath.Join(cfg, "audit.jsonl")))
		for _, cmd := range []string{"alias cat='rm -rf'\ncat data", "cat() { rm -rf \"$@\"; }\ncat data", "alias cat='rm -rf'\ncat ~"} {
			b, _ := json.Marshal(map[string]string{"command": cmd})
			res := r.jail(t, call{dir: ws, args: []string{"tool", "--policy", pol, "-w", ws, "bash", string(b)}})
			if !strings.Contains(res.stdout, `"is_error":true`) {
				t.Fatalf("%q was run: %s\nstderr: %s", cmd, res.stdout, res.stderr)
			}
			if _, err := os.Stat(filepath.Join(ws, "data", "keep.txt")); err != nil {
				t.Fatalf("%q deleted the workspace's files: %v", cmd, err)
			}
		}
		// The same read without the alias runs.
		res := r.jail(t, call{dir: ws, args: []string{"tool", "--policy", pol, "-w", ws, "bash", `{"command":"cat data/keep.txt"}`}})
		if !strings.Contains(res.stdout, "keep") || strings.Contains(res.stdout, `"is_error":true`) {
			t.Fatalf("a plain read: %s\nstderr: %s", res.stdout, res.stderr)
		}
	})
}

// TestRootOnlyFilesHidden: a caller that is root (CI) does not read what
// only root may read under /etc and /opt, as if it were an unprivileged
// user; [sandbox] root_only = "show" widens it again.
func TestRootOnlyFilesHidden(t *testing.T) {
	if !suite.root {
		t.Skip("requires root: files under /etc and /opt only root may read")
	}
	name := "jail-it-rootonly-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	secret := "ROOT-ONLY-" + name
	etcFile := filepath.Join("/etc", name+".conf")
	optDir := filepath.Join("/opt", name)
	os.WriteFile(etcFile, []byte(secret), 0o600)
	os.MkdirAll(filepath.Join(optDir, "private"), 0o755)
	os.Chmod(filepath.Join(optDir, "private"), 0o700)
	os.WriteFile(filepath.Join(optDir, "private", "token"), []byte(secret), 0o644)
	os.WriteFile(filepath.Join(optDir, "public.txt"), []byte("PUBLIC"), 0o644)
	t.Cleanup(func() { os.Remove(etcFile); os.RemoveAll(optDir) })
	script := "cat " + etcFile + " " + filepath.Join(optDir, "private", "token") + " " + filepath.Join(optDir, "public.txt") + " 2>/dev/null; echo; wc -c </etc/passwd"
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		res := r.sh(t, ws, script)
		if strings.Contains(res.stdout, secret) || !strings.Contains(res.stdout, "PUBLIC") {
			t.Fatalf("%s read what only root may read, or not what everyone may:\n%s\nstderr: %s", r.name, res.stdout, res.stderr)
		}
		if r.uid != 0 {
			return
		}
		cfg := r.dir(t, "jail-it-cfg-")
		pol := filepath.Join(cfg, "show.toml")
		r.writeFile(t, pol, "[sandbox]\nroot_only = \"show\"\n")
		res = r.jail(t, call{dir: ws, args: []string{"run", "--policy", pol, "--", "/bin/sh", "-c", script}})
		if !strings.Contains(res.stdout, secret) {
			t.Fatalf("root_only = \"show\" did not show the root-only files:\n%s\nstderr: %s", res.stdout, res.stderr)
		}
	})
}

// TestRootOnlyChangesSeenByCachedRun: the plan cache proves /etc and /opt
// unchanged from the walk's facts (docs/plan-cache.md) instead of walking
// them on every run, so each way a file becomes root-only after the plan
// was stored must send the next run down the Go path, which hides it: a
// new root-only file, a chmod of an existing file, a chmod of a directory
// and a file renamed into place. A run after that is cached again and
// still hides it.
func TestRootOnlyChangesSeenByCachedRun(t *testing.T) {
	if !suite.root {
		t.Skip("requires root: files under /etc and /opt only root may read")
	}
	r := runner{name: "root"}
	name := "jail-it-rootcache-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	secret := "ROOT-ONLY-" + name
	etcOld := filepath.Join("/etc", name+"-old.conf")
	etcNew := filepath.Join("/etc", name+"-new.conf")
	optDir := filepath.Join("/opt", name)
	optFile := filepath.Join(optDir, "private", "token")
	optMoved := filepath.Join(optDir, "moved.conf")
	os.WriteFile(etcOld, []byte(secret), 0o644)
	os.MkdirAll(filepath.Join(optDir, "private"), 0o755)
	os.WriteFile(optFile, []byte(secret), 0o644)
	staged := filepath.Join(filepath.Dir(optDir), "."+name+"-staged")
	t.Cleanup(func() { os.Remove(etcOld); os.Remove(etcNew); os.RemoveAll(optDir); os.Remove(staged) })
	ws := r.dir(t, "jail-it-ws-")
	run := func(path string) result {
		t.Helper()
		res := r.jail(t, call{dir: ws, args: []string{"run", "--", "/bin/cat", path}, env: []string{"JAIL_PLAN_CACHE=trace"}})
		if !strings.Contains(res.stderr, "plan cache:") {
			t.Fatalf("no plan cache trace:\n%s", res.stderr)
		}
		return res
	}
	// Stored, then used: both show the files everyone may read.
	for _, p := range []string{etcOld, optFile} {
		run(p)
		if res := run(p); !strings.Contains(res.stderr, "plan cache: used") || !strings.Contains(res.stdout, secret) {
			t.Fatalf("a file everyone may read, from the cache: %s\nstderr: %s", res.stdout, res.stderr)
		}
	}
	hidden := func(what, path string) {
		t.Helper()
		res := run(path)
		if strings.Contains(res.stdout, secret) || strings.Contains(res.stderr, "plan cache: used") {
			t.Fatalf("%s: the cached plan was used or %s was read:\nstdout: %s\nstderr: %s", what, path, res.stdout, res.stderr)
		}
		res = run(path)
		if strings.Contains(res.stdout, secret) || !strings.Contains(res.stderr, "plan cache: used") {
			t.Fatalf("%s: the next run was not cached or read %s:\nstdout: %s\nstderr: %s", what, path, res.stdout, res.stderr)
		}
	}
	os.Chmod(etcOld, 0o600)
	hidden("a chmod of a file in /etc", etcOld)
	os.WriteFile(etcNew, []byte(secret), 0o600)
	hidden("a new root-only file in /etc", etcNew)
	os.Chmod(filepath.Join(optDir, "private"), 0o700)
	hidden("a chmod of a directory in /opt", optFile)
	os.WriteFile(staged, []byte(secret), 0o600)
	run(optMoved)
	run(optMoved)
	if err := os.Rename(staged, optMoved); err != nil {
		t.Fatal(err)
	}
	hidden("a root-only file renamed into /opt", optMoved)
}

// TestDefaultBounds: with no policy, a run is bounded: processes (4096),
// memory (half the machine's) and each tmpfs, by a cgroup where jail can
// make one and by rlimits otherwise, on both launch paths.
// TestProjectFileCannotEnlargeBounds: a project file, which a sandbox may have written, asks
// for /tmp, /dev/shm and the memory bound far above the defaults (which are shares of the
// machine's memory); the sizes stay the defaults and jail names each key and the file.
func TestProjectFileCannotEnlargeBounds(t *testing.T) {
	b, _ := os.ReadFile("/proc/meminfo")
	var memKB int64
	fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:"), "%d", &memKB)
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		r.writeFile(t, filepath.Join(ws, ".jail/policy.toml"), "[sandbox]\ntmp = \"100G\"\nshm = \"100G\"\n[limits]\nmemory = \"100G\"\n")
		res := r.jail(t, call{dir: ws, args: []string{"run", "--", "/bin/sh", "-c", `df -k /tmp /dev/shm | awk 'NR>1 {print "size", $6, $2}'`}})
		mustExit(t, res, 0)
		for _, want := range []string{fmt.Sprintf("size /tmp %d", memKB/8), fmt.Sprintf("size /dev/shm %d", memKB/16)} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("want %q (the default) in:\n%s", want, res.stdout)
			}
		}
		for _, key := range []string{"sandbox.tmp", "sandbox.shm", "limits.memory"} {
			if !strings.Contains(res.stderr, ws+"/.jail/policy.toml") || !strings.Contains(res.stderr, key+": ignored: 100G is above the default") {
				t.Errorf("no warning naming %s and the file:\n%s", key, res.stderr)
			}
		}
	})
}

func TestDefaultBounds(t *testing.T) {
	b, _ := os.ReadFile("/proc/meminfo")
	var memKB int64
	fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:"), "%d", &memKB)
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		res := r.jail(t, call{dir: ws, args: []string{"run", "--json", "--", "/bin/sh", "-c",
			`df -k /tmp /var/tmp /dev/shm | awk 'NR>1 {print "size", $6, $2}'; grep -E '^Max (processes|data size)' /proc/self/limits; echo oom $(cat /proc/self/oom_score_adj)`}})
		mustExit(t, res, 0)
		for _, want := range []string{"oom 500",
			fmt.Sprintf("size /tmp %d", memKB/8), fmt.Sprintf("size /var/tmp %d", memKB/8), fmt.Sprintf("size /dev/shm %d", memKB/16),
		} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("want %q in:\n%s", want, res.stdout)
			}
		}
		switch {
		case strings.Contains(res.stderr, `"limits":"rlimit"`):
			if !regexp.MustCompile(`Max processes +4096 +4096`).MatchString(res.stdout) {
				t.Errorf("no default process rlimit:\n%s", res.stdout)
			}
			if strings.Contains(res.stderr, "enforced with rlimits") {
				t.Errorf("the default bounds are reported as if asked for:\n%s", res.stderr)
			}
		case strings.Contains(res.stderr, `"limits":"cgroup`):
		default:
			t.Fatalf("the default run has no limits:\n%s", res.stderr)
		}
	})
}
