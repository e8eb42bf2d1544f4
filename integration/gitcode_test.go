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

// TestGitConfigIsCode attacks git's config and hooks through jail serve
// at access level standard (vcs:push needs approval; every question is
// answered no). One call appends core.fsmonitor, a program git runs on
// `git status`, to .git/config and runs git status: the call must be
// asked about. Another, approved, appends it to the sandbox-side global
// config in the persistent home; a later `git status`, in a new jail
// serve, must be asked about naming the setting. Judged on the host: the
// bare remote the program would push to gets no branch.
func TestGitConfigIsCode(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-gitcode-")
		cfg := r.dir(t, "jail-it-gitcodecfg-")
		pol := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, pol, "[access]\nlevel = \"standard\"\n")
		remote := filepath.Join(ws, "remote.git")
		for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "a@b"}, {"config", "user.name", "a"},
			{"commit", "-q", "--allow-empty", "-m", "init"}, {"init", "-q", "--bare", remote}, {"remote", "add", "origin", remote}} {
			if out, err := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", ws}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v: %s", args, err, out)
			}
		}
		r.own(t, ws)
		pushed := func(what string) {
			t.Helper()
			out, err := exec.Command("git", "-c", "safe.directory=*", "-C", remote, "branch", "-a").CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "" {
				t.Fatalf("%s: the remote holds a branch (%v): %s", what, err, out)
			}
		}
		serve := func() func(cmd string, approve bool) (string, resp) {
			s := r.serve(t, ws, "--policy", pol)
			id := 0
			return func(cmd string, approve bool) (reason string, res resp) {
				t.Helper()
				id++
				s.send(fmt.Sprintf(`{"id":%d,"tool":"bash","args":{"command":%q},"context":{"task_id":"t"}}`, id, cmd))
				res = s.next()
				if res.Type == "approval_request" {
					reason = res.Reason
					s.send(fmt.Sprintf(`{"id":%d,"type":"approval_response","approve":%v}`, id, approve))
					res = s.next()
				}
				if res.Type != "result" {
					t.Fatalf("%q: %+v\nstderr: %s", cmd, res, s.err.String())
				}
				return reason, res
			}
		}
		evil := func(file, branch string) string {
			return fmt.Sprintf(`printf '[core]\n\tfsmonitor = "git push -q origin HEAD:refs/heads/%s; false"\n' >> %s`, branch, file)
		}
		call := serve()
		if why, _ := call(evil(".git/config", "in-call")+" && git status --short", false); why == "" {
			t.Errorf("a write of .git/config with git status was not asked about")
		}
		pushed("a write of .git/config and git status")
		// Control: a plain git status is auto-approved.
		if why, res := call("git status --short", false); why != "" || res.Result.IsError {
			t.Fatalf("plain git status: asked %q, %+v", why, res.Result)
		}
		if why, res := call(evil("~/.config/git/jail.gitconfig", "by-status"), true); why == "" || res.Result.IsError {
			t.Fatalf("a write of the global git config: asked %q, %+v", why, res.Result)
		}
		call = serve()
		why, res := call("git status --short", false)
		if !strings.Contains(why, "core.fsmonitor") || !res.Result.IsError {
			t.Errorf("git status after the global config set core.fsmonitor: asked %q, %+v", why, res.Result)
		}
		pushed("git status in a later serve")
	})
}

// TestGitConfigReadBeforeEachCall attacks the git config a later call's
// git reads, through jail serve at access level standard (every question
// a call asks is answered as the test says). An approved call makes
// repositories whose config runs a program on git status where no
// reduction reaches (node_modules, the persistent home), and gives the
// persistent home an include of a file the sandbox then writes; a later
// `git status` there, which reads as a read, must be asked about naming
// the setting. Judged on the host: the program's marker file is not
// made while every such question is answered no, and is made once one is
// answered yes (the attack is real). The same for less, whose ~/.lesskey
// can set LESSOPEN.
func TestGitConfigReadBeforeEachCall(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-gitread-")
		cfg := r.dir(t, "jail-it-gitreadcfg-")
		pol := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, pol, "[access]\nlevel = \"standard\"\n")
		for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "a@b"}, {"config", "user.name", "a"},
			{"commit", "-q", "--allow-empty", "-m", "init"}} {
			if out, err := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", ws}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v: %s", args, err, out)
			}
		}
		r.own(t, ws)
		s := r.serve(t, ws, "--policy", pol)
		id := 0
		call := func(cmd string, approve bool) (reason string, res resp) {
			t.Helper()
			id++
			s.send(fmt.Sprintf(`{"id":%d,"tool":"bash","args":{"command":%q},"context":{"task_id":"t"}}`, id, cmd))
			res = s.next()
			if res.Type == "approval_request" {
				reason = res.Reason
				s.send(fmt.Sprintf(`{"id":%d,"type":"approval_response","approve":%v}`, id, approve))
				res = s.next()
			}
			if res.Type != "result" {
				t.Fatalf("%q: %+v\nstderr: %s", cmd, res, s.err.String())
			}
			return reason, res
		}
		ran := func(name string) bool {
			_, err := os.Stat(filepath.Join(ws, "ran-"+name))
			return err == nil
		}
		monitor := func(name string) string {
			return fmt.Sprintf(`[core]\n\tfsmonitor = "touch %s/ran-%s; false"\n`, ws, name)
		}
		// The control: git status at the top is a read.
		if why, res := call("git status --short", false); why != "" || res.Result.IsError {
			t.Fatalf("plain git status: asked %q, %+v", why, res.Result)
		}
		for _, c := range []struct{ name, setup, dir string }{
			{"nm", "git init -q node_modules/x && printf '" + monitor("nm") + "' >> node_modules/x/.git/config", "node_modules/x"},
			{"home", "git init -q ~/r && printf '" + monitor("home") + "' >> ~/r/.git/config", "~/r/sub"},
			{"include", "git config --global include.path ~/inc.cfg", ""},
		} {
			// Each case starts at the top: the session keeps the
			// directory the last call left.
			if why, res := call("cd "+ws+" && ls >/dev/null", false); why != "" || res.Result.IsError {
				t.Fatalf("back to the top: asked %q, %+v", why, res.Result)
			}
			if why, res := call(c.setup, true); why == "" || res.Result.IsError {
				t.Fatalf("%s: the setup was not asked about, or failed: %q, %+v", c.name, why, res.Result)
			}
			line := "mkdir -p " + c.dir + " && cd " + c.dir + " && git status --short"
			if c.name == "include" {
				// The include names a file the sandbox may create: asked
				// about before it exists, and once it does.
				line = "git status --short"
				if why, res := call(line, false); !strings.Contains(why, "inc.cfg") || !res.Result.IsError {
					t.Errorf("%s: git status with a missing include: asked %q, %+v", c.name, why, res.Result)
				}
				line = "printf '" + monitor("include") + "' > ~/inc.cfg && git status --short"
			}
			why, res := call(line, false)
			if !strings.Contains(why, "fsmonitor") && !strings.Contains(why, "inc.cfg") || !res.Result.IsError {
				t.Errorf("%s: git status after the config set core.fsmonitor: asked %q, %+v", c.name, why, res.Result)
			}
			if ran(c.name) {
				t.Errorf("%s: the fsmonitor ran while every question was answered no", c.name)
			}
			if why, _ := call(line, true); why == "" || !ran(c.name) {
				t.Errorf("%s: approved, the fsmonitor did not run (asked %q): the attack is not real", c.name, why)
			}
		}
		// less reads ~/.lesskey, whose #env section can set LESSOPEN, a
		// program less runs on every file, on a terminal or not.
		call(`printf '#env\nLESSOPEN=|touch `+ws+`/ran-less; cat %%s\n' > ~/.lesskey`, true)
		line := "less " + ws + "/.git/HEAD"
		if why, res := call(line, false); !strings.Contains(why, ".lesskey") || !res.Result.IsError {
			t.Errorf("less after a lesskey was written: asked %q, %+v", why, res.Result)
		}
		if ran("less") {
			t.Errorf("the lesskey's LESSOPEN ran while the question was answered no")
		}
		if why, _ := call(line, true); why == "" || !ran("less") {
			t.Errorf("approved, the lesskey's LESSOPEN did not run (asked %q): the attack is not real", why)
		}
	})
}
