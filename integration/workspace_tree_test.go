//go:build linux

package integration

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostView is what the host's own tools see of a workspace: the names at
// its root (ls -A) and git's view of it (git status --porcelain).
type hostView struct {
	names []string
	git   string
}

func viewOf(t *testing.T, ws string) hostView {
	t.Helper()
	ents, err := os.ReadDir(ws)
	if err != nil {
		t.Fatal(err)
	}
	var v hostView
	for _, e := range ents {
		v.names = append(v.names, e.Name())
	}
	out, err := exec.Command("git", "-C", ws, "-c", "safe.directory=*", "status", "--porcelain", "--untracked-files=all").CombinedOutput()
	if err != nil {
		t.Fatalf("git status: %v %s", err, out)
	}
	v.git = string(out)
	return v
}

// gitRepo makes ws a repository with one committed file, owned by r.
func gitRepo(t *testing.T, r runner, ws string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("requires git: not installed")
	}
	os.WriteFile(filepath.Join(ws, "README"), []byte("hello\n"), 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"add", "README"}, {"-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "first"}} {
		if out, err := exec.Command("git", append([]string{"-C", ws, "-c", "safe.directory=*"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	r.own(t, ws)
}

// onlyEmptyDirsAdded fails unless during differs from before by empty
// directories only (the placeholders a run may hold while it lasts).
func onlyEmptyDirsAdded(t *testing.T, ws string, before, during []string) {
	t.Helper()
	for _, n := range during {
		if slices.Contains(before, n) {
			continue
		}
		p := filepath.Join(ws, n)
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			t.Errorf("%s appeared in the workspace during the run and is not a directory (%v)", n, fi.Mode())
			continue
		}
		if ents, _ := os.ReadDir(p); len(ents) != 0 {
			t.Errorf("%s appeared in the workspace during the run with %d entries", n, len(ents))
		}
	}
	for _, n := range before {
		if !slices.Contains(during, n) {
			t.Errorf("%s vanished from the workspace during the run", n)
		}
	}
}

// started is a `jail run` in progress whose command talks over pipes.
type started struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr strings.Builder
	cancel context.CancelFunc
}

// start starts `jail run ARGS` as r in ws (warmed first on the cached
// path, so this run is the cached one).
func (r runner) start(t *testing.T, ws string, args ...string) *started {
	t.Helper()
	c := call{dir: ws, args: args}
	if r.cached && !r.warm(t, c) {
		t.Fatalf("the warm-up run of %v stored no plan", args)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cmd := exec.CommandContext(ctx, suite.bin, args...)
	cmd.Dir = ws
	mode := "JAIL_PLAN_CACHE=off"
	if r.cached {
		mode = "JAIL_PLAN_CACHE=trace"
	}
	r.prepare(cmd, mode)
	s := &started{cmd: cmd, cancel: cancel}
	cmd.Stderr = &s.stderr
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
	s.in, s.out = in, bufio.NewReader(out)
	t.Cleanup(func() { cancel(); cmd.Wait() })
	return s
}

// line reads one line of the command's stdout.
func (s *started) line(t *testing.T) string {
	t.Helper()
	l, err := s.out.ReadString('\n')
	if err != nil {
		t.Fatalf("the sandbox's command ended early: %v\nstderr: %s", err, s.stderr.String())
	}
	return strings.TrimSuffix(l, "\n")
}

// finish closes stdin and waits for the run; the cached one must have
// used the cache.
func (s *started) finish(t *testing.T, r runner) {
	t.Helper()
	s.in.Close()
	rest, _ := io.ReadAll(s.out)
	err := s.cmd.Wait()
	s.cancel()
	if err != nil {
		t.Fatalf("jail run: %v\nstdout: %s\nstderr: %s", err, rest, s.stderr.String())
	}
	if r.cached && !strings.Contains(s.stderr.String(), "jail: plan cache: used") {
		t.Fatalf("the cached run did not use the cache: %s", s.stderr.String())
	}
}

// TestNothingAppearsInTheTree: before, during and after a run, the host's
// `git status --porcelain` is the same and `ls -A` shows at most empty
// directories more while the run lasts; the sandbox sees exactly what the
// host has; the user's editor can create .vscode/ during the run while the
// sandbox cannot write there.
func TestNothingAppearsInTheTree(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		// The workspace in a repository (its .git is held by a
		// placeholder: git looks past an empty .git) and, on the planned
		// path, the repository itself (a git view, never cached).
		for _, inRepo := range []bool{true, false} {
			if !inRepo && r.cached {
				continue
			}
			t.Run(map[bool]string{true: "in-repo", false: "repo"}[inRepo], func(t *testing.T) { nothingAppears(t, r, inRepo) })
		}
	})
}

func nothingAppears(t *testing.T, r runner, inRepo bool) {
	{
		ws := r.dir(t, "jail-it-ws-")
		gitRepo(t, r, ws)
		if inRepo {
			ws = filepath.Join(ws, "sub")
			r.writeFile(t, filepath.Join(ws, "f"), "tracked\n")
			exec.Command("git", "-C", ws, "-c", "safe.directory=*", "add", "f").Run()
			exec.Command("git", "-C", ws, "-c", "safe.directory=*", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "sub").Run()
		}
		before := viewOf(t, ws)
		s := r.start(t, ws, "run", "--", "/bin/sh", "-c", `
ls -A | tr '\n' ' '; echo
read go
mkdir -p .vscode/inside 2>/dev/null && echo MKDIR-INSIDE
echo evil > .vscode/x 2>/dev/null && echo WROTE-X
cat .vscode/x
read go
exit 0`)
		inside := strings.Fields(s.line(t))
		during := viewOf(t, ws)
		if during.git != before.git {
			t.Errorf("git status during the run:\n%s\nbefore:\n%s", during.git, before.git)
		}
		onlyEmptyDirsAdded(t, ws, before.names, during.names)
		if !slices.Equal(inside, during.names) {
			t.Errorf("ls -A inside %v, on the host %v", inside, during.names)
		}
		// The user's editor, on the host, during the run.
		if err := os.MkdirAll(filepath.Join(ws, ".vscode"), 0o755); err != nil {
			t.Fatalf("the host cannot make .vscode during a run: %v", err)
		}
		if err := os.WriteFile(filepath.Join(ws, ".vscode", "x"), []byte("from the editor\n"), 0o644); err != nil {
			t.Fatalf("the host cannot write .vscode/x during a run: %v", err)
		}
		io.WriteString(s.in, "go\n")
		if l := s.line(t); l != "from the editor" {
			t.Errorf("the sandbox wrote into .vscode or does not see the editor's file: %q", l)
		}
		s.finish(t, r)
		if b, _ := os.ReadFile(filepath.Join(ws, ".vscode", "x")); string(b) != "from the editor\n" {
			t.Errorf(".vscode/x after the run: %q", b)
		}
		os.RemoveAll(filepath.Join(ws, ".vscode"))
		after := viewOf(t, ws)
		if after.git != before.git || !slices.Equal(after.names, before.names) {
			t.Errorf("after the run: %v %q; before: %v %q", after.names, after.git, before.names, before.git)
		}
	}
}

// TestNothingRemainsAfterServeAndTool: jail serve and jail tool leave the
// workspace as they found it, and git sees nothing while serve runs.
func TestNothingRemainsAfterServeAndTool(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		gitRepo(t, r, ws)
		pol, _ := r.toolPolicy(t, r.dir(t, "jail-it-cfg-"), "")
		before := viewOf(t, ws)
		s := r.serve(t, ws, "--policy", pol)
		res := s.call(1, "bash", `{"command":"ls -A"}`)
		during := viewOf(t, ws)
		if during.git != before.git {
			t.Errorf("git status while serving:\n%s", during.git)
		}
		onlyEmptyDirsAdded(t, ws, before.names, during.names)
		if res.Result == nil || !strings.Contains(res.Result.Content, "README") {
			t.Errorf("ls -A in a tool call: %+v, on the host %v", res.Result, during.names)
		}
		s.in.Close()
		s.cmd.Wait()
		if after := viewOf(t, ws); !slices.Equal(after.names, before.names) || after.git != before.git {
			t.Errorf("after jail serve: %v %q; before %v", after.names, after.git, before.names)
		}
		out := r.jail(t, call{dir: ws, args: []string{"tool", "-w", ws, "--policy", pol, "bash", `{"command":"ls -A"}`}})
		mustExit(t, out, 0)
		if after := viewOf(t, ws); !slices.Equal(after.names, before.names) || after.git != before.git {
			t.Errorf("after jail tool: %v %q; before %v", after.names, after.git, before.names)
		}
	})
}

// TestProtectedEntries: every default protected entry is refused inside,
// whether it exists at launch or not, and the host's copy is unchanged.
func TestProtectedEntries(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		for _, exist := range []bool{false, true} {
			ws := r.dir(t, "jail-it-ws-")
			existing := map[string]string{
				".vscode/tasks.json": "{}", ".idea/workspace.xml": "<x/>", ".devcontainer/devcontainer.json": "{}",
				"p.code-workspace": "{}", ".claude/settings.json": "{}", ".claude/settings.local.json": "{}",
				".claude/settings.extra.json": "{}", ".claude/commands/c.md": "c", ".claude/agents/a.md": "a",
				".claude/hooks/h.sh": "h", ".mcp.json": "{}", ".codex/config.toml": "x", ".envrc": "use nix", ".jail/policy.toml": "",
			}
			if exist {
				for p, c := range existing {
					r.writeFile(t, filepath.Join(ws, p), c)
				}
			}
			var script strings.Builder
			for p := range existing {
				if strings.HasSuffix(p, ".code-workspace") && !exist {
					continue // a new workspace file is not opened by itself: only existing ones are protected
				}
				dir := filepath.Dir(p)
				script.WriteString("mkdir -p " + dir + " 2>/dev/null; echo evil > " + p + " 2>/dev/null && echo 'WROTE " + p + "'\n")
				script.WriteString("rm -f " + p + " 2>/dev/null; mv " + p + " moved-file 2>/dev/null && echo 'MOVED " + p + "'\n")
				if dir != "." {
					script.WriteString("rm -rf " + dir + "/* 2>/dev/null; mv " + dir + " moved-away 2>/dev/null && echo 'MOVED " + dir + "'\n")
				}
			}
			script.WriteString("mv .claude .c2 2>/dev/null && echo MOVED-CLAUDE; echo ok > plain.txt && echo PLAIN\n")
			res := r.sh(t, ws, script.String())
			if !strings.Contains(res.stdout, "PLAIN") {
				t.Fatalf("exist=%v: an ordinary write failed:\n%s\n%s", exist, res.stdout, res.stderr)
			}
			for _, l := range strings.Split(res.stdout, "\n") {
				if strings.HasPrefix(l, "WROTE") || strings.HasPrefix(l, "MOVED") {
					t.Errorf("exist=%v: %s", exist, l)
				}
			}
			for p, c := range existing {
				b, err := os.ReadFile(filepath.Join(ws, p))
				switch {
				case exist && string(b) != c:
					t.Errorf("%s changed on the host: %q %v", p, b, err)
				case !exist && err == nil:
					t.Errorf("%s was created on the host: %q", p, b)
				}
			}
		}
	})
}

// TestHomeWorkspace: a workspace that is or contains the home is refused
// with the alternatives; asked for by name, the home's secrets are
// unreadable and its persistence paths unwritable, and only the --rw
// project directory (with its own protected paths) is writable.
func TestHomeWorkspace(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		parent := r.dir(t, "jail-it-homes-")
		home := filepath.Join(parent, "me")
		persist := map[string]string{
			".ssh/authorized_keys": "ssh-ed25519 AAAA me\n", ".gitconfig": "[user]\n", ".bashrc": "# rc\n", ".profile": "# profile\n",
			".bash_aliases": "# aliases\n", ".local/bin/tool": "#!/bin/sh\n", ".config/systemd/user/x.service": "[Unit]\n",
			".config/autostart/x.desktop": "[Desktop Entry]\n",
		}
		secrets := map[string]string{".ssh/id_ed25519": "SECRET-SSH-KEY\n", ".aws/credentials": "SECRET-AWS\n", ".netrc": "SECRET-NETRC\n",
			".config/gh/hosts.yml": "SECRET-GH\n", ".docker/config.json": "SECRET-DOCKER\n", ".kube/config": "SECRET-KUBE\n"}
		for p, c := range persist {
			r.writeFile(t, filepath.Join(home, p), c)
		}
		for p, c := range secrets {
			r.writeFile(t, filepath.Join(home, p), c)
		}
		r.writeFile(t, filepath.Join(home, "proj", "main.c"), "int main;\n")
		r.own(t, parent)
		env := []string{"HOME=" + home}
		for _, ws := range []string{home, parent} {
			res := r.jail(t, call{dir: ws, env: env, args: []string{"run", "--", "/bin/true"}})
			if res.code != 2 || !strings.Contains(res.stderr, "home directory") || !strings.Contains(res.stderr, "--home-workspace") || !strings.Contains(res.stderr, "-w ~/project") {
				t.Fatalf("workspace %s: exit %d, want a refusal naming the opt-in and the alternative\n%s", ws, res.code, res.stderr)
			}
		}
		var script strings.Builder
		for p := range persist {
			script.WriteString("echo evil >> " + p + " 2>/dev/null && echo 'WROTE " + p + "'\n")
			script.WriteString("rm " + p + " 2>/dev/null && echo 'REMOVED " + p + "'\n")
		}
		for p := range secrets {
			script.WriteString("cat " + p + " 2>/dev/null\n")
		}
		script.WriteString(`mkdir -p .config/systemd/user/default.target.wants 2>/dev/null && echo WROTE-UNIT
mkdir .local/share/new 2>/dev/null && echo WROTE-SHARE
grep -rh SECRET- . 2>/dev/null
echo ok >> proj/main.c && echo PROJ-WRITABLE
mkdir proj/.vscode 2>/dev/null && echo WROTE-PROJ-VSCODE
true`)
		res := r.jail(t, call{dir: home, env: env, args: []string{"run", "--home-workspace", "--rw", filepath.Join(home, "proj"), "--", "/bin/sh", "-c", script.String()}})
		mustExit(t, res, 0)
		if strings.Contains(res.stdout, "SECRET-") || strings.Contains(res.stdout, "WROTE") || strings.Contains(res.stdout, "REMOVED") {
			t.Errorf("with --home-workspace the sandbox read a secret or changed the home:\n%s", res.stdout)
		}
		if !strings.Contains(res.stdout, "PROJ-WRITABLE") {
			t.Errorf("the named project directory is not writable:\n%s\n%s", res.stdout, res.stderr)
		}
		for p, c := range persist {
			if b, err := os.ReadFile(filepath.Join(home, p)); err != nil || string(b) != c {
				t.Errorf("%s changed on the host: %q %v", p, b, err)
			}
		}
		if _, err := os.Stat(filepath.Join(home, "proj", ".vscode")); err == nil {
			t.Error("proj/.vscode was left on the host")
		}
	})
}

// swapScript exchanges two names with renameat2(RENAME_EXCHANGE) in a
// loop for the given seconds: a second sandbox racing jail.
const swapScript = `import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b, end = sys.argv[1].encode(), sys.argv[2].encode(), time.time() + float(sys.argv[3])
n = 0
while time.time() < end:
    if libc.renameat2(-100, a, -100, b, 2) == 0:
        n += 1
print("swaps", n)
`

// attacker starts a sandbox in ws that protects nothing of jail's default
// list and swaps a and b for secs; wait returns its output.
func (r runner) attacker(t *testing.T, ws, setup, a, b string, secs int, extra ...string) (wait func() string) {
	t.Helper()
	cfg := r.dir(t, "jail-it-cfg-")
	pol := filepath.Join(cfg, "policy.toml")
	r.writeFile(t, pol, "[sandbox]\nprotected = [\"zz-unused\"]\n")
	r.writeFile(t, filepath.Join(cfg, "swap.py"), swapScript)
	script := setup + "; python3 " + filepath.Join(cfg, "swap.py") + " " + a + " " + b + " " + strconv.Itoa(secs)
	args := append([]string{"run", "--policy", pol, "--ro", cfg, "-w", ws}, extra...)
	cmd := exec.Command(suite.bin, append(args, "--", "/bin/sh", "-c", script)...)
	cmd.Dir = ws
	r.prepare(cmd, "JAIL_PLAN_CACHE=off")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() string {
		cmd.Wait()
		return out.String()
	}
}

// raceMode is the plan cache setting of runs under attack: on for the
// cached runner (a swap makes some runs miss it, which is not a failure
// here), off otherwise.
func (r runner) raceMode() []string {
	if r.cached {
		return []string{"JAIL_PLAN_CACHE=on"}
	}
	return []string{"JAIL_PLAN_CACHE=off"}
}

// TestPlaceholderCleanupRace: while runs in one workspace make and remove
// placeholders inside .claude, a second sandbox swaps .claude with a
// symlink to a directory outside the workspace (a home stand-in) in a
// loop. Nothing there may be removed: jail removes placeholders through
// the parent it opened, and only empty directories.
func TestPlaceholderCleanupRace(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		canary := r.dir(t, "jail-it-home-")
		for _, f := range []string{"commands", "settings.json", "hooks", "settings.local.json"} {
			r.writeFile(t, filepath.Join(canary, f), "CANARY\n")
		}
		os.Mkdir(filepath.Join(canary, "agents"), 0o755)
		r.own(t, canary)
		os.Mkdir(filepath.Join(ws, ".claude"), 0o755)
		r.own(t, ws)
		wait := r.attacker(t, ws, "ln -s "+canary+" evil", ".claude", "evil", 6)
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			res := r.jail(t, call{dir: ws, env: r.raceMode(), args: []string{"run", "--", "/bin/true"}, limit: 30 * time.Second})
			if res.code != 0 && !strings.Contains(res.stderr, "changed") && !strings.Contains(res.stderr, "vanished") && !strings.Contains(res.stderr, "protected path") && !strings.Contains(res.stderr, "appeared") {
				t.Logf("a run under attack failed: %d %s", res.code, res.stderr)
			}
		}
		out := wait()
		if !strings.Contains(out, "swaps") {
			t.Fatalf("the attacker did not run: %s", out)
		}
		for _, f := range []string{"commands", "settings.json", "hooks", "settings.local.json"} {
			if b, err := os.ReadFile(filepath.Join(canary, f)); err != nil || string(b) != "CANARY\n" {
				t.Errorf("jail removed or changed %s outside the workspace: %q %v (%s)", f, b, err, out)
			}
		}
		if fi, err := os.Stat(filepath.Join(canary, "agents")); err != nil || !fi.IsDir() {
			t.Errorf("jail removed the empty directory agents outside the workspace: %v (%s)", err, out)
		}
	})
}

// TestHideSwapRace: runs hide a secret directory inside the workspace
// while a second sandbox under the same hide swaps its parent with a
// decoy's in a loop. The hiding run must never read the secret: the
// parents of a hide are pinned in every such sandbox, and the init hides
// the object the supervisor resolved or refuses to start.
func TestHideSwapRace(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		r.writeFile(t, filepath.Join(ws, "cfg", "secrets", "key"), "HIDE-SECRET\n")
		os.Chmod(filepath.Join(ws, "cfg", "secrets"), 0o700)
		r.writeFile(t, filepath.Join(ws, "other", "secrets", "key"), "DECOY\n")
		r.own(t, ws)
		wait := r.attacker(t, ws, "true", "cfg", "other", 6, "--hide", filepath.Join(ws, "cfg", "secrets"))
		deadline := time.Now().Add(5 * time.Second)
		started, refused := 0, 0
		for time.Now().Before(deadline) {
			res := r.jail(t, call{dir: ws, env: r.raceMode(), limit: 30 * time.Second, args: []string{"run", "--hide", filepath.Join(ws, "cfg", "secrets"), "--",
				"/bin/sh", "-c", "cat cfg/secrets/key other/secrets/key 2>/dev/null; true"}})
			if strings.Contains(res.stdout, "HIDE-SECRET") {
				t.Fatalf("the hiding run read the secret through a swapped parent:\n%s", res.stdout)
			}
			if res.code == 0 {
				started++
			} else {
				refused++
			}
		}
		out := wait()
		if !strings.Contains(out, "swaps") {
			t.Fatalf("the attacker did not run: %s", out)
		}
		t.Logf("%d runs started, %d refused under attack (%s)", started, refused, strings.TrimSpace(out))
	})
}
