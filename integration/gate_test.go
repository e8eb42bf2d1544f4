//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The approval gate's attacks: each case drives `jail serve` as a
// harness would, one session, every question answered no, and is judged
// on the host: MARK in the workspace, which what the sandbox planted
// writes when it runs, and the questions asked.

// gateCall is one call of a gate case: the bash command (or, with tool,
// the tool's JSON arguments) and whether it must be asked about.
type gateCall struct {
	cmd, tool string
	asked     bool
	// why, when asked: a piece of the question's reason.
	why string
}

// gateCase is one attack: files to make in the workspace (a value
// ending in "\x00x" is made executable), the policy, the calls.
type gateCase struct {
	name   string
	policy string
	files  map[string]string
	// prep runs in the workspace on the host once the files are made
	// (tar cf, diff): sh -c, as the test's own identity.
	prep  string
	calls []gateCall
	// absent are files of the workspace that must not exist at the end.
	absent []string
}

const (
	gateCodeRead = "[approval]\nauto_approve = [\"code\", \"vcs:read\"]\n"
	gateStandard = "[approval]\nauto_approve = [\"code\", \"test\", \"build\", \"vcs:read\", \"vcs:fetch\", \"vcs:branch\", \"vcs:commit\"]\n"
	gateRestrict = "[access]\nlevel = \"restricted\"\n"
)

// mark is the shell text that records in the workspace's MARK that what
// the sandbox planted ran.
func mark(ws, what string) string {
	return fmt.Sprintf("echo %s-ran >> %s/MARK", what, ws)
}

func runGate(t *testing.T, r runner, c gateCase) {
	ws := r.dir(t, "jail-it-gate-")
	cfg := r.dir(t, "jail-it-gatecfg-")
	pol := filepath.Join(cfg, "policy.toml")
	r.writeFile(t, pol, c.policy)
	os.Chmod(pol, 0o600)
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "a@b"}, {"config", "user.name", "a"},
		{"commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	for name, content := range c.files {
		p := filepath.Join(ws, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		mode := os.FileMode(0o644)
		if s, ok := strings.CutSuffix(content, "\x00x"); ok {
			content, mode = s, 0o755
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(content, "$WS", ws)), mode); err != nil {
			t.Fatal(err)
		}
	}
	if c.prep != "" {
		cmd := exec.Command("sh", "-c", strings.ReplaceAll(c.prep, "$WS", ws))
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: prep: %v: %s", c.name, err, out)
		}
	}
	r.own(t, ws)
	s := r.serve(t, ws, "--policy", pol, "--prewarm", "0", "--max-concurrency", "1")
	for i, cl := range c.calls {
		id := i + 1
		tool, args := "bash", fmt.Sprintf(`{"command":%q}`, strings.ReplaceAll(cl.cmd, "$WS", ws))
		if cl.tool != "" {
			tool, args = cl.tool, strings.ReplaceAll(cl.cmd, "$WS", ws)
		}
		s.send(fmt.Sprintf(`{"id":%d,"tool":%q,"args":%s,"context":{"task_id":"t1"}}`, id, tool, args))
		res, why := s.next(), ""
		if res.Type == "approval_request" {
			why = res.Reason
			s.send(fmt.Sprintf(`{"id":%d,"type":"approval_response","approve":false}`, id))
			res = s.next()
		}
		if res.Type != "result" {
			t.Fatalf("%s: call %d %q: %+v\nstderr: %s", c.name, id, cl.cmd, res, s.err.String())
		}
		switch {
		case cl.asked && why == "":
			t.Errorf("%s: call %d %q was not asked about (%+v)", c.name, id, cl.cmd, res.Result)
		case !cl.asked && why != "":
			t.Errorf("%s: call %d %q (the control) was asked about: %s", c.name, id, cl.cmd, why)
		case cl.asked && cl.why != "" && !strings.Contains(why, cl.why):
			t.Errorf("%s: call %d %q: the question %q does not name %q", c.name, id, cl.cmd, why, cl.why)
		}
	}
	for _, f := range c.absent {
		if _, err := os.Lstat(filepath.Join(ws, f)); err == nil {
			t.Errorf("%s: the sandbox wrote %s unasked", c.name, f)
		}
	}
	if data, err := os.ReadFile(filepath.Join(ws, "MARK")); err == nil {
		t.Errorf("%s: what the sandbox planted ran on the host's workspace: %s", c.name, data)
	}
}

// TestGateGitConfigParsedAsGit: the sandbox-side global config in the
// persistent home is read as git reads it. A value ending in an escaped
// backslash is not continued, so git reads the [core] after it; a
// reader that continued it would not see core.fsmonitor.
func TestGateGitConfigParsedAsGit(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		runGate(t, r, gateCase{name: "B", policy: gateCodeRead,
			files: map[string]string{"pl/.config/git/jail.gitconfig": "[user]\n\tnote = foo\\\\\n[core]\n\tfsmonitor = \"" + mark("$WS", "fsmonitor") + "; false\"\n"},
			calls: []gateCall{{cmd: "cp -r pl/. ~/"}, {cmd: "git status --short", asked: true, why: "core.fsmonitor"}}})
	})
}

// fsmonitorConfig is a repository config whose core.fsmonitor records
// that it ran: what `git status` runs.
func fsmonitorConfig() string {
	return "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = \"" + mark("$WS", "fsmonitor") + "; false\"\n"
}

// TestGateUnknownDestinations: a write whose destination the classifier
// cannot enumerate (an archive's members, patch's targets, a recursive
// copy, a reader's output operand, sed's w) is a write to an unknown
// path, and beside git it makes git's commands process:run: each line
// plants .git/config's core.fsmonitor and runs git status.
func TestGateUnknownDestinations(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		runGate(t, r, gateCase{name: "A", policy: gateCodeRead,
			files: map[string]string{"st/.git/config": fsmonitorConfig()},
			prep: `tar cf a.tar -C st .git/config && (cd st && python3 -c "import zipfile;z=zipfile.ZipFile('../a.zip','w');z.write('.git/config');z.close()") && ` +
				`xxd st/.git/config > cfg.hex && cp .git/config o.cfg && cp st/.git/config n.cfg && ` +
				`{ diff -u o.cfg n.cfg | sed '1s#.*#--- a/.git/config#; 2s#.*#+++ b/.git/config#' > p.diff; true; }`,
			calls: []gateCall{
				{cmd: "cat st/.git/config && git status --short"},
				{cmd: "tar xf a.tar && git status", asked: true},
				{cmd: "unzip -o a.zip && git status", asked: true},
				{cmd: "cp -r st/. . && git status", asked: true},
				{cmd: "uniq st/.git/config .git/config && git status", asked: true},
				{cmd: "xxd -r cfg.hex .git/config && git status", asked: true},
				{cmd: `sed -n "w .git/config" st/.git/config && git status`, asked: true},
				{cmd: `awk "{print > \".git/config\"}" st/.git/config && git status`, asked: true},
				{cmd: "patch -p1 < p.diff && git status", asked: true},
				{cmd: "git status --short"},
			}})
	})
}

// TestGateReadersThatWriteOrRun: under the restricted level (code:read
// and vcs:read pass), a reader's option or operand that writes a file or
// runs a program is asked about: git grep -O, sort --compress-program,
// git log --output=.git/config, sort -o, uniq's output operand, git diff
// --output, yq -i, less --lesskey-src, kubectl with an exec plugin in
// its kubeconfig, sqlite3's .shell.
func TestGateReadersThatWriteOrRun(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		runGate(t, r, gateCase{name: "E", policy: gateRestrict,
			files: map[string]string{
				"hello.txt": "hello\n",
				"ev.sh":     "#!/bin/sh\n" + mark("$WS", "compress-program") + "\n\x00x",
				"f.yaml":    "a: 1\n",
				"keys.txt":  "#env\nLESSOPEN=|" + mark("$WS", "lesskey-src") + "; cat %s\n",
				"init.sql":  ".shell " + mark("$WS", "sqlite-init") + "\n",
				"deploy/kubeconfig": "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:1\"}\n" +
					"contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\nusers:\n- name: u\n  user:\n    exec:\n" +
					"      apiVersion: client.authentication.k8s.io/v1beta1\n      command: /bin/sh\n      args: [\"-c\", \"" + mark("$WS", "kubectl-exec") + "; exit 1\"]\n      interactiveMode: Never\n",
			},
			prep: "git add hello.txt && seq 1 200000 > big.txt",
			calls: []gateCall{
				{cmd: "sort hello.txt && uniq hello.txt && git grep hello && less hello.txt; yq . f.yaml"},
				{cmd: `git grep -O"` + mark("$WS", "git-grep-O") + `; true" hello`, asked: true},
				{cmd: "sort -S64K --compress-program=./ev.sh big.txt >/dev/null", asked: true},
				{cmd: `git log -1 --format='[core]%n%x09fsmonitor = "` + mark("$WS", "git-log-output") + `; false"' --output=.git/config && git status --short`, asked: true},
				{cmd: "sort -o w1 hello.txt", asked: true},
				{cmd: "sort -uo w1 hello.txt", asked: true},
				{cmd: "uniq hello.txt w2", asked: true},
				{cmd: "git diff --output=w3 HEAD", asked: true},
				{cmd: `yq -y -i '.a="x"' f.yaml`, asked: true},
				{cmd: "less --lesskey-src=keys.txt hello.txt", asked: true},
				{cmd: "kubectl get pods --kubeconfig=deploy/kubeconfig", asked: true},
				{cmd: "sqlite3 -cmd '.shell " + mark("$WS", "sqlite-cmd") + "' :memory: 'SELECT 1'", asked: true},
				{cmd: "sqlite3 -init init.sql :memory: 'SELECT 2'", asked: true},
			},
			absent: []string{"w1", "w2", "w3"}})
	})
}

// TestGateGitProgramKeys: git's keys and options that run programs,
// from `git help config`, are judged by one table wherever they are set:
// -c on the line, git config, the sandbox-side global config, git init
// --template.
func TestGateGitProgramKeys(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		runGate(t, r, gateCase{name: "D/H/M/M2", policy: gateStandard,
			files: map[string]string{
				"tpl/hooks/pre-commit": "#!/bin/sh\n" + mark("$WS", "init-template") + "\n\x00x",
				"ev.sh":                "#!/bin/sh\n" + mark("$WS", "gpg-ssh-defaultKeyCommand") + "\n\x00x",
				"pl/.config/git/jail.gitconfig": "[commit]\n\tgpgsign = true\n[gpg]\n\tformat = ssh\n[gpg \"ssh\"]\n\tdefaultKeyCommand = $WS/ev.sh\n" +
					"[trailer \"x\"]\n\tcmd = \"" + mark("$WS", "trailer-cmd") + "\"\n",
			},
			calls: []gateCall{
				{cmd: "git -c user.name=a -c user.email=a@b commit -q --allow-empty -m control"},
				{cmd: "git config --global init.templateDir ~/tpl", asked: true},
				{cmd: "git init -q --template=tpl sub && cd sub && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x", asked: true},
				{cmd: `git -c trailer.x.cmd="` + mark("$WS", "dash-c-trailer") + `" -c user.name=a -c user.email=a@b commit -q --allow-empty -m z --trailer "x: 1"`, asked: true},
				{cmd: "cp -r pl/. ~/"},
				{cmd: `git -c user.name=a -c user.email=a@b commit --allow-empty -m y --trailer "x: 1"`, asked: true, why: "gpg.ssh.defaultkeycommand"},
			}})
	})
}

// TestGateSessionState: what an earlier call left in the session is
// judged: an unset of GIT_CONFIG_GLOBAL (git then reads the persistent
// home's ~/.config/git/config), the session's directory inside .git (a
// relative write there is a hook's).
func TestGateSessionState(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		runGate(t, r, gateCase{name: "C", policy: gateCodeRead,
			files: map[string]string{"pl/.config/git/config": "[core]\n\tfsmonitor = \"" + mark("$WS", "xdg-fsmonitor") + "; false\"\n"},
			calls: []gateCall{
				{cmd: "cp -r pl/. ~/"},
				{cmd: "git status --short"},
				{cmd: "unset GIT_CONFIG_GLOBAL; ls"},
				{cmd: "git status", asked: true, why: "unsets GIT_CONFIG_GLOBAL"},
			}})
		runGate(t, r, gateCase{name: "N", policy: gateStandard,
			calls: []gateCall{
				{cmd: "cd .git && ls >/dev/null"},
				{cmd: "printf '#!/bin/sh\\n" + mark("$WS", "hook-via-session-dir") + "\\n' > hooks/pre-commit && chmod +x hooks/pre-commit && cd .. && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x", asked: true},
			},
			absent: []string{".git/hooks/pre-commit"}})
	})
}

// TestGateWriteThroughSymlink: the write tool's path is judged as the
// file it lands on: g/hooks/pre-commit with g -> .git (made by an
// auto-approved tar x) is refused by the tool, which judged the name.
func TestGateWriteThroughSymlink(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		runGate(t, r, gateCase{name: "F", policy: gateStandard,
			prep: "mkdir lnk && ln -s .git lnk/g && tar cf l.tar -C lnk g && rm -r lnk",
			calls: []gateCall{
				{cmd: "tar xf l.tar && ls -l g"},
				{tool: "write", cmd: `{"path":"g/hooks/pre-commit","content":"#!/bin/sh\n` + mark("$WS", "symlink-hook") + `\n"}`},
				{cmd: "chmod +x g/hooks/pre-commit; git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x"},
			},
			absent: []string{".git/hooks/pre-commit"}})
	})
}
