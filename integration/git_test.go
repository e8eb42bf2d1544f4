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

// The git tests plant code the way an attacker in the sandbox would and
// judge on the host: the planted code writes a marker file when anything
// runs it, and the host's own git (status, diff, log -p, commit) runs in
// the workspace afterwards. docs/git.md has the threat model.

// needGit skips a test on a host without git.
func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("requires git: not installed")
	}
}

// hostGit runs git as r on the host in dir, with a home of its own (no
// global config) and the identity a commit needs.
func (r runner) hostGit(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	home := r.dir(t, "jail-it-githome-")
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, args...)...)
	cmd.Dir = dir
	r.prepare(cmd, "GIT_AUTHOR_NAME=host", "GIT_AUTHOR_EMAIL=host@example.com", "GIT_COMMITTER_NAME=host",
		"GIT_COMMITTER_EMAIL=host@example.com", "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	cmd.Env = append(cmd.Env, "HOME="+home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// gitRepo makes ws a repository with one commit, as r, on the host.
func (r runner) gitRepo(t *testing.T, ws string) {
	t.Helper()
	r.writeFile(t, filepath.Join(ws, "file.txt"), "one\n")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "file.txt"}, {"commit", "-qm", "first"}} {
		if out, err := r.hostGit(t, ws, args...); err != nil {
			t.Fatalf("host git %v: %v\n%s", args, err, out)
		}
	}
}

// marker is a host path outside every sandbox's view that planted code
// creates when it runs; payload is a script in ws that does it.
func (r runner) marker(t *testing.T, ws string) (marker, payload string) {
	t.Helper()
	marker = filepath.Join(r.dir(t, "jail-it-marker-"), "ran")
	return marker, "printf '#!/bin/sh\\necho ran >>" + marker + "\\n' >" + ws + "/.payload; chmod +x " + ws + "/.payload"
}

// judge runs the host's git as a user would after the run and fails the
// test if anything the sandbox planted ran.
func (r runner) judge(t *testing.T, ws, marker string) {
	t.Helper()
	r.writeFile(t, filepath.Join(ws, "file.txt"), "two\n")
	for _, args := range [][]string{{"status"}, {"diff"}, {"log", "-p", "-2"}, {"add", "file.txt"},
		{"commit", "-qm", "host commit"}, {"checkout", "-q", "-b", "judge"}, {"status", "--porcelain"}} {
		out, err := r.hostGit(t, ws, args...)
		if err != nil {
			t.Errorf("host git %v after the run: %v\n%s", args, err, out)
		}
	}
	planted(t, marker, "the host's git in "+ws)
}

// planted fails the test if the code the sandbox planted ran (marker,
// from r.marker, exists) once the host did what (git status, ...).
func planted(t *testing.T, marker, what string) {
	t.Helper()
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("code planted by the sandbox ran on the host (%s): %q", what, b)
	}
}

// noHooks fails the test if the git directory gitDir of the host has a
// hook (other than git's samples).
func noHooks(t *testing.T, gitDir string) {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(gitDir, "hooks"))
	var names []string
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".sample") {
			names = append(names, e.Name())
		}
	}
	if len(names) > 0 {
		t.Errorf("hooks reached the host's %s: %v", gitDir, names)
	}
}

// TestGitDirCannotBeReplaced: .git cannot be moved aside, copied back and
// filled with hooks; the hooks and config the sandbox writes into the git
// directory it sees never reach the host's.
func TestGitDirCannotBeReplaced(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		r = r.requireCache()
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		marker, plant := r.marker(t, ws)
		res := r.sh(t, ws, plant+`
mv .git .g && echo MOVED
cp -a .git .g2 && rm -rf .git && echo REMOVED
cp -a .g2/. .git/ 2>/dev/null
for h in pre-commit post-commit post-checkout pre-auto-gc reference-transaction post-index-change; do
  cp .payload .git/hooks/$h
done
git config core.fsmonitor "$PWD/.payload"
git config core.hooksPath "$PWD/.g2/hooks"
mkdir -p .g2/hooks && cp .payload .g2/hooks/pre-commit
git config diff.external "$PWD/.payload"
git config alias.status '!'"$PWD/.payload"
echo '* filter=evil' > .git/info/attributes
git config filter.evil.clean "$PWD/.payload"
echo SANDBOX-DONE`)
		mustExit(t, res, 0)
		if strings.Contains(res.stdout, "MOVED") || strings.Contains(res.stdout, "REMOVED") {
			t.Fatalf("the sandbox moved or removed .git:\n%s", res.stdout)
		}
		if !strings.Contains(res.stdout, "SANDBOX-DONE") {
			t.Fatalf("script did not finish:\n%s\n%s", res.stdout, res.stderr)
		}
		noHooks(t, filepath.Join(ws, ".git"))
		cfg, _ := os.ReadFile(filepath.Join(ws, ".git", "config"))
		for _, k := range []string{"fsmonitor", "hooksPath", "external", "alias", "filter"} {
			if strings.Contains(string(cfg), k) {
				t.Errorf("config key %s reached the host's .git/config:\n%s", k, cfg)
			}
		}
		if _, err := os.Stat(filepath.Join(ws, ".git", "info", "attributes")); err == nil {
			t.Error(".git/info/attributes reached the host")
		}
		r.judge(t, ws, marker)
	})
}

// TestGitCommondirDropped: a commondir naming a directory the sandbox
// wrote (which would give git its config and hooks) never reaches the
// host, nor does a config.worktree.
func TestGitCommondirDropped(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		r = r.requireCache()
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		marker, plant := r.marker(t, ws)
		res := r.sh(t, ws, plant+`
mkdir -p evil && cp -a .git/. evil/
printf '[core]\n\tfsmonitor = %s/.payload\n\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n' "$PWD" > evil/config
mkdir -p evil/hooks && cp .payload evil/hooks/pre-commit
echo "$PWD/evil" > .git/commondir
printf '[core]\n\tfsmonitor = %s/.payload\n' "$PWD" > .git/config.worktree
echo SANDBOX-DONE`)
		mustExit(t, res, 0)
		for _, f := range []string{"commondir", "config.worktree"} {
			if _, err := os.Lstat(filepath.Join(ws, ".git", f)); err == nil {
				t.Errorf(".git/%s reached the host", f)
			}
		}
		// The planted directory stays: it is ordinary workspace content,
		// which git on the host must simply not use.
		r.judge(t, ws, marker)
	})
}

// TestGitWorksInside: everyday git works inside, and what it does to
// refs, the index and harmless config reaches the host when the run ends.
func TestGitWorksInside(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		r = r.requireCache()
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		before, _ := r.hostGit(t, ws, "status", "--porcelain")
		if out, err := r.hostGit(t, ws, "update-ref", "refs/remotes/origin/y", "HEAD"); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		home := "/root"
		if r.uid != 0 {
			home = "/home/" + testUser
		}
		globalBefore, _ := os.ReadFile(filepath.Join(home, ".gitconfig"))
		res := r.sh(t, ws, `set -e
git config --global user.name inside-global
git checkout -qb x origin/y && git checkout -q main
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
git config --global --add safe.directory '*' 2>/dev/null || true
git config user.email inside@example.com
git remote add origin https://example.com/x.git
echo two > file.txt && echo new > new.txt
git add file.txt new.txt && git commit -qm inside
git checkout -qb feature
echo three > file.txt && git commit -qam feature
git checkout -q main
git log --oneline | wc -l`)
		mustExit(t, res, 0)
		if strings.TrimSpace(res.stdout) != "2" {
			t.Fatalf("git in the sandbox:\n%s\n%s", res.stdout, res.stderr)
		}
		out, err := r.hostGit(t, ws, "log", "--oneline", "main")
		if err != nil || !strings.Contains(out, "inside") {
			t.Fatalf("the sandbox's commit is not on the host's main: %v\n%s\n%s", err, out, res.stderr)
		}
		out, _ = r.hostGit(t, ws, "log", "--oneline", "feature")
		if !strings.Contains(out, "feature") {
			t.Errorf("the sandbox's branch is not on the host: %s", out)
		}
		out, _ = r.hostGit(t, ws, "config", "user.email")
		if strings.TrimSpace(out) != "inside@example.com" {
			t.Errorf("user.email set inside is %q on the host", out)
		}
		// The host had no remote: the one added inside would become the
		// remote of the host's plain git push (docs/git-adoption.md), so
		// it is left out and the line says how to add it.
		if out, err := r.hostGit(t, ws, "remote", "get-url", "origin"); err == nil {
			t.Errorf("the remote added inside, which would take the host's plain push, is %q on the host", out)
		}
		if !strings.Contains(res.stderr, "git remote add origin URL") {
			t.Errorf("no line says how to add the remote on the host:\n%s", res.stderr)
		}
		if out, _ := r.hostGit(t, ws, "rev-parse", "--verify", "-q", "refs/heads/x"); strings.TrimSpace(out) == "" {
			t.Errorf("the branch checked out inside from origin/y is not on the host")
		}
		if globalAfter, _ := os.ReadFile(filepath.Join(home, ".gitconfig")); string(globalAfter) != string(globalBefore) {
			t.Errorf("git config --global inside changed the host's ~/.gitconfig: %q", globalAfter)
		}
		after, _ := r.hostGit(t, ws, "status", "--porcelain")
		if after != before {
			t.Errorf("host git status changed: before %q, after %q", before, after)
		}
	})
}

// TestGitInitInside: in a workspace without a repository, git init and
// git commit work inside; the host sees the repository with its commits
// once the run ended, and nothing the sandbox put in its hooks or config
// runs on the host. While the run lasts the host sees at most an empty
// .git, which its git ignores.
func TestGitInitInside(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		r = r.requireCache()
		ws := r.dir(t, "jail-it-ws-")
		marker, plant := r.marker(t, ws)
		res := r.sh(t, ws, plant+`
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
git config --global --add safe.directory '*' 2>/dev/null
git init -q -b main || exit 1
echo one > file.txt && git add file.txt && git commit -qm inside || exit 1
cp .payload .git/hooks/pre-commit && cp .payload .git/hooks/post-checkout
git config core.fsmonitor "$PWD/.payload"
git config user.email inside@example.com
echo SANDBOX-DONE`)
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "SANDBOX-DONE") {
			t.Fatalf("script did not finish:\n%s\n%s", res.stdout, res.stderr)
		}
		out, err := r.hostGit(t, ws, "log", "--oneline")
		if err != nil || !strings.Contains(out, "inside") {
			t.Fatalf("the repository made inside is not on the host: %v\n%s\n%s", err, out, res.stderr)
		}
		noHooks(t, filepath.Join(ws, ".git"))
		out, _ = r.hostGit(t, ws, "config", "user.email")
		if strings.TrimSpace(out) != "inside@example.com" {
			t.Errorf("user.email set inside is %q on the host", out)
		}
		r.judge(t, ws, marker)
	})
}

// TestNoRepositoryLeavesNothing: a run in a directory without a
// repository leaves no .git (nor anything else) behind, and a second run
// meanwhile does not lose the first one's view.
func TestNoRepositoryLeavesNothing(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		r = r.requireCache()
		ws := r.dir(t, "jail-it-ws-")
		r.writeFile(t, filepath.Join(ws, "file.txt"), "x\n")
		mustExit(t, r.sh(t, ws, "test -d .git && ! ls -A .git | grep -q . && echo ok >/dev/null"), 0)
		if _, err := os.Lstat(filepath.Join(ws, ".git")); err == nil {
			t.Fatal(".git left behind by a run that made no repository")
		}
	})
}

// TestHooksPathInWorkspace: a core.hooksPath the host's git uses (husky's
// .husky/_ from the repository's config, a directory named by the user's
// global config) cannot be filled by the sandbox.
func TestHooksPathInWorkspace(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		r = r.requireCache()
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		if out, err := r.hostGit(t, ws, "config", "core.hooksPath", ".husky/_"); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		// husky v9's layout: the hook git runs (.husky/_/pre-commit)
		// runs the user's .husky/pre-commit when there is one.
		r.writeFile(t, filepath.Join(ws, ".husky", "_", "h"), "#!/bin/sh\n")
		r.writeFile(t, filepath.Join(ws, ".husky", "_", "pre-commit"), "#!/bin/sh\nh=\"$(dirname \"$0\")/../pre-commit\"\n[ -f \"$h\" ] && sh \"$h\"\nexit 0\n")
		os.Chmod(filepath.Join(ws, ".husky", "_", "pre-commit"), 0o755)
		marker, plant := r.marker(t, ws)
		res := r.sh(t, ws, plant+`
cp .payload .husky/pre-commit && echo PLANTED-USER-HOOK
cp .payload .husky/_/pre-commit && echo PLANTED
rm -rf .husky && echo REMOVED
mv .husky .h2 && echo MOVED
echo SANDBOX-DONE`)
		mustExit(t, res, 0)
		for _, w := range []string{"PLANTED", "REMOVED", "MOVED"} {
			if strings.Contains(res.stdout, w) {
				t.Errorf("the hooks directory changed (%s):\n%s", w, res.stdout)
			}
		}
		if _, err := os.Stat(filepath.Join(ws, ".husky", "pre-commit")); err == nil {
			t.Fatal("a hook was planted in husky's directory")
		}
		r.judge(t, ws, marker)
	})
}

// TestGitWriteTool: the auto-approved write tool writing .git/commondir
// and a hook reaches the overlay only; nothing reaches the host.
func TestGitWriteTool(t *testing.T) {
	needGit(t)
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		marker, _ := r.marker(t, ws)
		r.writeFile(t, filepath.Join(ws, "evil", "HEAD"), "ref: refs/heads/main\n")
		r.writeFile(t, filepath.Join(ws, "evil", "config"), "[core]\n\tfsmonitor = "+ws+"/.payload\n")
		r.writeFile(t, filepath.Join(ws, ".payload"), "#!/bin/sh\necho ran >>"+marker+"\n")
		os.Chmod(filepath.Join(ws, ".payload"), 0o755)
		for _, args := range []string{
			`{"path":".git/commondir","content":"` + ws + `/evil\n"}`,
			`{"path":".git/hooks/pre-commit","content":"#!/bin/sh\necho ran >>` + marker + `\n"}`,
		} {
			res := r.jail(t, call{dir: ws, args: []string{"tool", "-w", ws, "write", args}})
			mustExit(t, res, 0)
		}
		for _, f := range []string{"commondir", "hooks/pre-commit"} {
			if _, err := os.Lstat(filepath.Join(ws, ".git", f)); err == nil {
				t.Errorf(".git/%s written by the write tool reached the host", f)
			}
		}
		r.judge(t, ws, marker)
	})
}

// TestUserConfigTargets: a hooks directory and an included config file
// that the user's global config names inside the workspace cannot be
// changed by the sandbox (the host's git would run and read them).
func TestUserConfigTargets(t *testing.T) {
	needGit(t)
	// Not requireCache: a workspace whose files the user's global config
	// names (held read-only since the config-named files are held) is
	// planned on every run (docs/plan-cache.md, Limits); the cached case
	// then checks that the fall-back keeps the protection.
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		home := r.dir(t, "jail-it-home-")
		r.gitRepo(t, ws)
		r.writeFile(t, filepath.Join(ws, "gitconfig.local"), "[user]\n\tname = local\n")
		r.writeFile(t, filepath.Join(home, ".gitconfig"), "[core]\n\thooksPath = "+ws+"/tools/hooks\n[include]\n\tpath = "+ws+"/gitconfig.local\n")
		res := r.jail(t, call{dir: ws, env: []string{"HOME=" + home}, args: []string{"run", "-w", ws, "--", "/bin/sh", "-c", `
mkdir -p tools/hooks && echo x > tools/hooks/pre-commit && echo PLANTED
printf '[core]\n\tfsmonitor = x\n' >> gitconfig.local && echo INCLUDED
mv tools tools2 && echo MOVED
echo SANDBOX-DONE`}})
		mustExit(t, res, 0)
		for _, w := range []string{"PLANTED", "INCLUDED", "MOVED"} {
			if strings.Contains(res.stdout, w) {
				t.Errorf("a config target of the host's git changed (%s):\n%s", w, res.stdout)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "gitconfig.local")); string(b) != "[user]\n\tname = local\n" {
			t.Errorf("the included config changed: %q", b)
		}
		if _, err := os.Stat(filepath.Join(ws, "tools", "hooks", "pre-commit")); err == nil {
			t.Error("a hook was planted in the global core.hooksPath")
		}
	})
}

// TestNestedRepositories: a repository in a subdirectory at launch and a
// submodule (its checkout's .git a gitfile, its git directory in
// .git/modules) are shown like the top one: hooks and config planted in
// them never reach the host, the gitfile cannot be pointed elsewhere, and
// commits made in them inside reach the host.
func TestNestedRepositories(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		r = r.requireCache()
		ws := r.dir(t, "jail-it-ws-")
		lib := r.dir(t, "jail-it-lib-")
		r.gitRepo(t, ws)
		r.gitRepo(t, lib)
		nested := filepath.Join(ws, "vendor", "nested")
		r.gitRepo(t, nested)
		if out, err := r.hostGit(t, ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib"); err != nil {
			t.Fatalf("submodule add: %v\n%s", err, out)
		}
		if out, err := r.hostGit(t, ws, "commit", "-qm", "add lib"); err != nil {
			t.Fatalf("commit: %v\n%s", err, out)
		}
		marker, plant := r.marker(t, ws)
		res := r.sh(t, ws, plant+`
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
git config --global --add safe.directory '*' 2>/dev/null
for d in vendor/nested/.git .git/modules/lib; do
  cp .payload $d/hooks/pre-commit; cp .payload $d/hooks/post-checkout
  git --git-dir=$d config core.fsmonitor "$PWD/.payload"
done
mv vendor/nested/.git vendor/nested/.g && echo MOVED
mv vendor/nested vendor/n2 && echo MOVED-PARENT
mv vendor v2 && echo MOVED-GRANDPARENT
mv lib lib2 && echo MOVED-SUBMODULE
echo "gitdir: $PWD/evil" > lib/.git && echo GITFILE
(cd lib && git commit -q --no-verify --allow-empty -m inside-lib) || echo LIB-COMMIT-FAILED
(cd vendor/nested && git commit -q --no-verify --allow-empty -m inside-nested) || echo NESTED-COMMIT-FAILED
echo SANDBOX-DONE`)
		mustExit(t, res, 0)
		for _, w := range []string{"MOVED", "GITFILE", "COMMIT-FAILED"} { // MOVED-* included
			if strings.Contains(res.stdout, w) {
				t.Errorf("%s:\n%s\n%s", w, res.stdout, res.stderr)
			}
		}
		for _, d := range []string{nested, filepath.Join(ws, "lib")} {
			out, err := r.hostGit(t, d, "log", "--oneline", "-1")
			if err != nil || !strings.Contains(out, "inside-") {
				t.Errorf("the commit made inside %s is not on the host: %v %s\n%s", d, err, out, res.stderr)
			}
			r.judge(t, d, marker)
		}
		// The git directories the sandbox planted hooks in (it saw them
		// at these paths): the submodule's, and the nested repository's.
		noHooks(t, filepath.Join(ws, ".git", "modules", "lib"))
		noHooks(t, filepath.Join(nested, ".git"))
		noHooks(t, filepath.Join(ws, ".git"))
		r.judge(t, ws, marker)
	})
}

// TestRepositoryMadeInSubdirectory: a repository the sandbox creates in
// a subdirectory (git init sub, as git clone URL sub would) is live on
// the host, but once the run ended its hooks and the config keys that run
// programs are gone, and the top-level index never gains a gitlink to it.
func TestRepositoryMadeInSubdirectory(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		r = r.requireCache()
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		marker, plant := r.marker(t, ws)
		res := r.sh(t, ws, plant+`
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
git config --global --add safe.directory '*' 2>/dev/null
git init -q sub && (cd sub && git commit -q --allow-empty -m made-inside)
cp .payload sub/.git/hooks/pre-commit
git -C sub config core.fsmonitor "$PWD/.payload"
git add sub 2>/dev/null; git commit -qm "gitlink" 2>/dev/null
echo SANDBOX-DONE`)
		mustExit(t, res, 0)
		out, err := r.hostGit(t, filepath.Join(ws, "sub"), "log", "--oneline")
		if err != nil || !strings.Contains(out, "made-inside") {
			t.Errorf("the repository made inside lost its commits: %v %s\n%s", err, out, res.stderr)
		}
		if out, _ := r.hostGit(t, ws, "ls-files", "-s"); strings.Contains(out, "160000") {
			t.Errorf("the host's index gained a gitlink to the sandbox's repository:\n%s", out)
		}
		r.judge(t, filepath.Join(ws, "sub"), marker)
		r.judge(t, ws, marker)
	})
}

// TestServeConcurrentCommits: two bash calls of one jail serve run at
// once (each waits until both moved their refs), each in a sandbox of its
// own with its own upper; each adopts when its sandbox ends. Both move
// refs (their own branches, and the same main): no ref is lost, the
// second main is kept aside under refs/jail/.
func TestServeConcurrentCommits(t *testing.T) {
	needGit(t)
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		pol, _ := r.toolPolicy(t, r.dir(t, "jail-it-cfg-"), "")
		s := r.serve(t, ws, "--policy", pol, "--max-concurrency", "2")
		script := func(n int) string {
			return fmt.Sprintf(`{"command":"export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b; k=0; until git config --global safe.directory '*' 2>/dev/null; do k=$((k+1)); [ $k -gt 100 ] && break; sleep 0.02; done; c=$(git commit-tree -m call%d -p HEAD HEAD^{tree}) && git update-ref refs/heads/b%d $c && git update-ref refs/heads/main $c && touch ready.%d && i=0; while [ ! -e ready.1 ] || [ ! -e ready.2 ]; do i=$((i+1)); [ $i -gt 200 ] && echo ALONE && break; sleep 0.05; done; echo $c"}`, n, n, n)
		}
		// Two tasks: calls of one task's bash session run in turn.
		s.send(`{"id":1,"tool":"bash","context":{"task_id":"t1"},"args":` + script(1) + `}`)
		s.send(`{"id":2,"tool":"bash","context":{"task_id":"t2"},"args":` + script(2) + `}`)
		var commits []string
		for range 2 {
			res := s.next()
			if res.Type != "result" || res.Result == nil || res.Result.IsError {
				t.Fatalf("bash call: %+v\nstderr: %s", res, s.err.String())
			}
			if strings.Contains(res.Result.Content, "ALONE") {
				t.Fatalf("the two calls did not run at once: %s", res.Result.Content)
			}
			commits = append(commits, strings.TrimSpace(res.Result.Content))
		}
		refs, err := r.hostGit(t, ws, "for-each-ref", "--format=%(objectname) %(refname)")
		if err != nil {
			t.Fatal(err, refs)
		}
		for _, want := range []string{"refs/heads/b1", "refs/heads/b2"} {
			if !strings.Contains(refs, want) {
				t.Errorf("the host lacks %s after two concurrent calls:\n%s\nstderr: %s", want, refs, s.err.String())
			}
		}
		// Each call's move of main is on the host: main contains it (the
		// later call built on the earlier's), or it is kept aside.
		for _, c := range commits {
			if len(c) < 40 {
				t.Fatalf("bash call printed %q", c)
			}
			c = c[len(c)-40:]
			_, err := r.hostGit(t, ws, "merge-base", "--is-ancestor", c, "main")
			if err != nil && !strings.Contains(refs, c+" refs/jail/") {
				t.Errorf("commit %s is neither on main nor kept aside under refs/jail/:\n%s\nstderr: %s", c, refs, s.err.String())
			}
		}
	})
}
