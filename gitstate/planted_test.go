package gitstate

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlantedProgramsDoNotRun plants every kind of program git could run
// from its directory, adopts, then runs the host's own git the ways that
// would run each, and looks for the marker files they would write.
func TestPlantedProgramsDoNotRun(t *testing.T) {
	r := newRepo(t)
	r.git("remote", "add", "origin", "https://127.0.0.1:9/x.git")
	base := r.take()
	o := r.overlay()
	m := t.TempDir()
	touch := func(name string) string { return "touch " + filepath.Join(m, name) }
	// The sandbox also writes files in the work tree (it may); only config
	// in the git directory could make them matter.
	o.run(`set -e
g=.git
git config core.fsmonitor '` + touch("fsmonitor") + `'
mkdir -p .husky && printf '#!/bin/sh\n` + touch("hookspath") + `\n' > .husky/pre-commit && chmod +x .husky/pre-commit
git config core.hooksPath .husky
git config core.pager '` + touch("pager") + `; cat'
git config core.editor '` + touch("editor") + `'
git config core.sshCommand '` + touch("sshcommand") + `; false'
git config alias.st '!` + touch("alias") + `'
git config filter.x.clean '` + touch("filter") + `; cat'
echo '* filter=x' > .gitattributes
git config diff.external '` + touch("diffexternal") + `'
git config credential.helper '!` + touch("credential") + `'
printf '[core]\n\tfsmonitor = ` + touch("include") + `\n' > included.cfg
git config include.path "$PWD/included.cfg"
git config remote.origin.url 'ext::sh -c ` + strings.ReplaceAll(touch("ext"), " ", "% ") + `'
printf '#!/bin/sh\n` + touch("gpg") + `\nexit 1\n' > gpgprog && chmod +x gpgprog
git config gpg.program "$PWD/gpgprog"
printf '#!/bin/sh\n` + touch("hook") + `\n' > $g/hooks/pre-commit && chmod +x $g/hooks/pre-commit
printf '#!/bin/sh\n` + touch("posthook") + `\n' > $g/hooks/post-checkout && chmod +x $g/hooks/post-checkout
mkdir -p ../planted && git init -q ../planted && git -C ../planted config core.fsmonitor '` + touch("commondir") + `'
git config extensions.worktreeConfig true
printf '[core]\n\tfsmonitor = ` + touch("worktreeconfig") + `\n' > $g/config.worktree
mkdir -p $g/rebase-merge && echo "exec ` + touch("rebase") + `" > $g/rebase-merge/git-rebase-todo
echo refs/heads/main > $g/rebase-merge/head-name && git rev-parse HEAD > $g/rebase-merge/onto && git rev-parse HEAD > $g/rebase-merge/orig-head
: > $g/rebase-merge/interactive
git config protocol.ext.allow always
echo "$(cd ../planted && pwd)/.git" > $g/commondir
`)
	rep := o.adopt(base, Options{RunID: "p"})
	for _, want := range []string{"core.fsmonitor", "core.hookspath", "core.pager", "core.editor", "core.sshcommand",
		"alias.st", "filter.x.clean", "diff.external", "credential.helper", "include.path", "remote.origin.url",
		"gpg.program", "hooks/pre-commit", "commondir", "config.worktree", "rebase-merge/git-rebase-todo",
		"extensions.worktreeconfig", "protocol.ext.allow"} {
		if !contains(rep.Dropped, want) {
			t.Errorf("%s not reported dropped", want)
		}
	}
	for _, name := range triggerHostGit(t, r.dir, r.home, m) {
		t.Errorf("a planted program ran on the host: %s", name)
	}
	// The planted files in the work tree are the user's to see, and nothing
	// of the git directory's planted state is on the host.
	for _, p := range []string{"hooks/pre-commit", "hooks/post-checkout", "commondir", "config.worktree", "rebase-merge"} {
		if _, err := os.Lstat(filepath.Join(r.gitdir(), p)); err == nil {
			t.Errorf("%s reached the host's git directory", p)
		}
	}

	// The control: the same planted state put straight into a copy of the
	// repository does run, so the commands above would have noticed.
	ctl := filepath.Join(t.TempDir(), "ctl")
	if out, err := exec.Command("cp", "-a", r.dir, ctl).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	for _, f := range []string{"config", "hooks/pre-commit"} {
		if out, err := exec.Command("cp", filepath.Join(o.upper, f), filepath.Join(ctl, ".git", f)).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
	}
	ran := strings.Join(triggerHostGit(t, ctl, r.home, m), " ")
	for _, want := range []string{"hookspath", "pager", "editor", "sshcommand", "alias", "filter", "include", "credential", "gpg"} {
		if !strings.Contains(ran, want) {
			t.Errorf("control: planted %s did not run even unsanitised (ran: %s)", want, ran)
		}
	}
}

// triggerHostGit runs the host's git in dir the ways that would run each
// planted program, and returns the markers found in m (then removes them).
func triggerHostGit(t *testing.T, dir, home, m string) []string {
	env := append(gitEnv(home), "GIT_TERMINAL_PROMPT=0")
	run := func(stdin string, args ...string) {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = dir, env
		cmd.Stdin = strings.NewReader(stdin)
		out, _ := cmd.CombinedOutput()
		t.Logf("%s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	}
	run("", "git", "status")
	run("", "git", "st")
	run("", "git", "add", "-A")
	run("", "git", "commit", "-q", "-m", "host")
	run("", "git", "commit", "--allow-empty")
	run("", "script", "-qec", "git log -1", "/dev/null")
	run("", "git", "diff", "HEAD~1")
	run("", "git", "checkout", "-q", "-b", "other")
	run("protocol=https\nhost=example.com\n\n", "git", "credential", "fill")
	run("", "git", "ls-remote", "ssh://127.0.0.1:9/x")
	run("", "git", "fetch", "origin")
	run("", "git", "commit", "-S", "--allow-empty", "-m", "signed")
	run("", "git", "rebase", "--continue")
	ents, _ := os.ReadDir(m)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
		os.Remove(filepath.Join(m, e.Name()))
	}
	return out
}
