//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The places a sandbox writes that persist on the host past the launch
// walk's reach: its persistent home (docs/home.md), which the host's
// tools are led into by a symlink left in the workspace, and directories
// that existed at launch below the walk's depth (docs/git.md, "The
// sweep"). Each test plants a core.fsmonitor and judges with the host's
// own git status afterwards.

// TestHomeRepositoryNotReachable: the sandbox makes a repository with a
// core.fsmonitor in its persistent home and leaves symlinks to it in the
// workspace (absolute, relative, through a second link, six levels down):
// after the run none of them is there, and the host's git status where
// they were, and through what is left, runs nothing.
func TestHomeRepositoryNotReachable(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		for _, repo := range []bool{false, true} {
			ws := r.dir(t, "jail-it-ws-")
			if repo {
				r.gitRepo(t, ws)
			}
			os.MkdirAll(filepath.Join(ws, "vendor"), 0o755)
			os.MkdirAll(filepath.Join(ws, "a", "b", "c", "d", "e", "f"), 0o755)
			r.own(t, ws)
			marker, plant := r.marker(t, ws)
			res := r.sh(t, ws, plant+`
H=$(awk -v h="$HOME" '$5==h{print $4}' /proc/self/mountinfo | tail -1)
echo "HOME-ON-HOST=$H"
git init -q ~/r && git -C ~/r config core.fsmonitor "$PWD/.payload" || exit 1
ln -s "$H/r" vendor/lib
up=$(echo "$PWD" | sed 's|[^/]*|..|g; s|^/||')
ln -s "../$up$H/r" vendor/rel
ln -s "$(dirname "$H")" vendor/homes
ln -s "../vendor/homes/$(basename "$H")/r" a/chain
ln -s "$H/r" a/b/c/d/e/f/deep
echo SANDBOX-DONE`)
			mustExit(t, res, 0)
			home := ""
			for _, l := range strings.Split(res.stdout, "\n") {
				if h, ok := strings.CutPrefix(l, "HOME-ON-HOST="); ok {
					home = h
				}
			}
			if !strings.Contains(res.stdout, "SANDBOX-DONE") || !strings.Contains(home, "/jail/homes/") {
				t.Fatalf("the attack was not set up (home %q):\n%s\n%s", home, res.stdout, res.stderr)
			}
			if _, err := os.Stat(filepath.Join(home, "r", ".git", "config")); err != nil {
				t.Fatalf("the repository made in the home is not on the host, so nothing was attacked: %v", err)
			}
			links := []string{"vendor/lib", "vendor/rel", "vendor/homes", "a/chain", "a/b/c/d/e/f/deep"}
			for _, l := range links {
				if _, err := os.Lstat(filepath.Join(ws, l)); err == nil {
					t.Errorf("repo %v: the symlink %s into the sandbox's home is still in the workspace\n%s", repo, l, res.stderr)
				}
			}
			if !strings.Contains(res.stderr, "lead into jail's own directories") {
				t.Errorf("repo %v: no line names the symlinks removed:\n%s", repo, res.stderr)
			}
			dirs := []string{ws, filepath.Join(ws, "vendor"), filepath.Join(ws, "a")}
			for _, l := range links {
				dirs = append(dirs, filepath.Join(ws, l))
			}
			r.hostStatusIn(t, marker, dirs...)
		}
	})
}

// TestDeepRepositoryReduced: in directories that existed at launch six
// levels down (past the launch walk's depth), the sandbox makes a
// repository, makes a directory a bare-shaped one, renames an old
// directory into place as a .git, leaves a .git gitfile naming a git
// directory it filled, and writes a core.fsmonitor into a repository that
// was there at launch: after the run the host's git status in each runs
// nothing, and the repository it made keeps its commit.
func TestDeepRepositoryReduced(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		for _, repo := range []bool{false, true} {
			ws := r.dir(t, "jail-it-ws-")
			if repo {
				r.gitRepo(t, ws)
			}
			deep := filepath.Join("a", "b", "c", "d", "e")
			for _, d := range []string{"new", "bare", "moved", "gf", "old", "spare"} {
				os.MkdirAll(filepath.Join(ws, deep, d), 0o755)
			}
			r.own(t, ws)
			if out, err := r.hostGit(t, filepath.Join(ws, deep, "old"), "init", "-q"); err != nil {
				t.Fatalf("host git init: %v\n%s", err, out)
			}
			marker, plant := r.marker(t, ws)
			res := r.sh(t, ws, plant+plantRepo+`
cd a/b/c/d/e || exit 1
git init -q new && git -C new config core.fsmonitor "$OLDPWD/.payload" &&
  git -C new -c user.name=a -c user.email=a@b commit -q --allow-empty -m inside || exit 1
plant bare "$PWD/bare" || exit 1
git init -q --bare spare && git --git-dir=spare config core.fsmonitor "$OLDPWD/.payload" && mv spare moved/.git || exit 1
plant gd "$PWD/gf" && echo "gitdir: $PWD/gd" > gf/.git || exit 1
git -C old config core.fsmonitor "$OLDPWD/.payload" || exit 1
echo SANDBOX-DONE`)
			mustExit(t, res, 0)
			if !strings.Contains(res.stdout, "SANDBOX-DONE") {
				t.Fatalf("script did not finish:\n%s\n%s", res.stdout, res.stderr)
			}
			var dirs []string
			for _, d := range []string{"new", "bare", "moved", "gf", "old"} {
				dirs = append(dirs, filepath.Join(ws, deep, d))
			}
			r.hostStatusIn(t, marker, dirs...)
			if out, err := r.hostGit(t, filepath.Join(ws, deep, "new"), "log", "--oneline", "-1"); err != nil || !strings.Contains(out, "inside") {
				t.Errorf("repo %v: the repository made six levels down lost its commit: %v %s\n%s", repo, err, out, res.stderr)
			}
			if repo {
				r.judge(t, ws, marker)
			}
		}
	})
}

// TestProtectedNamesPastCap: a workspace with more editor files below the
// root than the git view holds read-only (32, a mount each): the sandbox
// rewrites every one it can, and after the run each .vscode/tasks.json
// the host's editor would read is the user's, the ones past the bound
// moved aside and named.
func TestProtectedNamesPastCap(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		const n = 35
		for i := 0; i < n; i++ {
			r.writeFile(t, filepath.Join(ws, "pkg", fmt.Sprintf("p%02d", i), ".vscode", "tasks.json"), "user's\n")
		}
		r.own(t, ws)
		res := r.sh(t, ws, `for f in pkg/*/.vscode/tasks.json; do echo planted > "$f" 2>/dev/null && echo "WROTE $f"; done; echo SANDBOX-DONE`)
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "SANDBOX-DONE") || !strings.Contains(res.stdout, "WROTE") {
			t.Fatalf("the sandbox wrote none past the bound, so nothing was attacked:\n%s\n%s", res.stdout, res.stderr)
		}
		if !strings.Contains(res.stderr, "the rest are writable while the run lasts") || !strings.Contains(res.stderr, "were moved aside") {
			t.Errorf("no line names the files past the bound and what became of them:\n%s", res.stderr)
		}
		for i := 0; i < n; i++ {
			p := filepath.Join(ws, "pkg", fmt.Sprintf("p%02d", i), ".vscode", "tasks.json")
			if b, err := os.ReadFile(p); err == nil && string(b) != "user's\n" {
				t.Errorf("%s reads %q after the run: the sandbox's tasks reach the host's editor", p, b)
			}
		}
	})
}

// TestExplainListsProtectedAfterRun: jail policy explain names the paths
// protected from the run's end with those held while it lasts, for a
// person and in --json.
func TestExplainListsProtectedAfterRun(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		ex := r.jail(t, call{dir: ws, args: []string{"policy", "explain", "-w", ws}})
		mustExit(t, ex, 0)
		if !strings.Contains(ex.stdout, "after run") || !strings.Contains(ex.stdout, ".husky") || !strings.Contains(ex.stdout, ".pre-commit-config.yaml") {
			t.Errorf("explain omits the paths protected after the run:\n%s", ex.stdout)
		}
		js := r.jail(t, call{dir: ws, args: []string{"policy", "explain", "--json", "-w", ws}})
		mustExit(t, js, 0)
		var got struct {
			Confinement struct {
				After []string `json:"protected_after_run"`
			} `json:"confinement"`
		}
		if err := json.Unmarshal([]byte(js.stdout), &got); err != nil || !slices.Contains(got.Confinement.After, ".husky") {
			t.Errorf("explain --json: protected_after_run %v (%v)\n%s", got.Confinement.After, err, js.stdout)
		}
	})
}

// TestGlobalConfigIncludes: the user's ~/.gitconfig keeps user.name in a
// file it includes (relative, and ~/ for the next one): git inside reads
// them as the host's git does (git config, a commit's author), and an
// include into the home's secrets stays hidden.
func TestGlobalConfigIncludes(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		// Not in /tmp: the sandbox's /tmp is its own, and a home there is
		// not shown.
		home, err := os.MkdirTemp("/var/tmp", "jail-it-home-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(home) })
		os.Chmod(home, 0o755)
		r.own(t, home)
		r.writeFile(t, filepath.Join(home, ".gitconfig"), "[include]\n\tpath = .gitconfig.d/id ; the identity\n[includeIf \"gitdir:/nowhere/\"]\n\tpath = ~/.ssh/gitcfg\n[core]\n\tabbrev = 9\n")
		r.writeFile(t, filepath.Join(home, ".gitconfig.d", "id"), "[user]\n\tname = Included Name\n[include]\n\tpath = ~/.gitconfig.d/mail\n")
		r.writeFile(t, filepath.Join(home, ".gitconfig.d", "mail"), "[user]\n\temail = inc@example.com\n")
		r.writeFile(t, filepath.Join(home, ".ssh", "gitcfg"), "[user]\n\tsigningkey = SECRET\n")
		res := r.jail(t, call{dir: ws, env: []string{"HOME=" + home}, args: []string{"run", "-w", ws, "--", "/bin/sh", "-c", `
echo "NAME=$(git config user.name)"
echo "MAIL=$(git config --global --includes user.email)"
echo "IDENT=$(git var GIT_AUTHOR_IDENT)"
cat ~/.ssh/gitcfg 2>/dev/null
echo SANDBOX-DONE`}})
		mustExit(t, res, 0)
		for _, w := range []string{"NAME=Included Name", "MAIL=inc@example.com", "IDENT=Included Name <inc@example.com>"} {
			if !strings.Contains(res.stdout, w) {
				t.Errorf("git inside does not read the included config as the host's does (want %q):\n%s\n%s", w, res.stdout, res.stderr)
			}
		}
		if strings.Contains(res.stdout, "SECRET") {
			t.Errorf("an include into ~/.ssh was shown:\n%s", res.stdout)
		}
	})
}

// TestCloneLocalPathRemote: git clone /local/path sub inside: after the
// run the clone keeps its commits, has no half remote (a fetch refspec
// without a url, a branch tracking a remote that is not there), and a
// jail line names the URL left out and how to add it on the host.
func TestCloneLocalPathRemote(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		for _, repo := range []bool{false, true} {
			ws := r.dir(t, "jail-it-ws-")
			src := r.dir(t, "jail-it-src-")
			r.gitRepo(t, src)
			if repo {
				r.gitRepo(t, ws)
			}
			res := r.jail(t, call{dir: ws, args: []string{"run", "-w", ws, "--ro", src, "--", "/bin/sh", "-c", "git clone -q " + src + " sub && echo CLONED"}})
			mustExit(t, res, 0)
			if !strings.Contains(res.stdout, "CLONED") {
				t.Fatalf("the clone failed inside:\n%s\n%s", res.stdout, res.stderr)
			}
			sub := filepath.Join(ws, "sub")
			if out, err := r.hostGit(t, sub, "log", "--oneline", "-1"); err != nil || !strings.Contains(out, "first") {
				t.Errorf("repo %v: the clone lost its commit: %v %s", repo, err, out)
			}
			cfg, _ := r.hostGit(t, sub, "config", "--local", "-l")
			if strings.Contains(cfg, "remote.origin") || strings.Contains(cfg, "branch.main.remote") {
				t.Errorf("repo %v: half a remote was left:\n%s", repo, cfg)
			}
			if out, err := r.hostGit(t, sub, "status"); err != nil {
				t.Errorf("repo %v: host git status in the clone: %v\n%s", repo, err, out)
			}
			if !strings.Contains(res.stderr, "git remote add origin") || !strings.Contains(res.stderr, src) {
				t.Errorf("repo %v: no jail line names the URL left out and what to do:\n%s", repo, res.stderr)
			}
		}
	})
}

// TestWorktreeAdd: git worktree add inside, in a workspace that is a
// repository and in one where the sandbox made it: a worktree in the
// workspace is the host's afterwards (its gitfile kept, git worktree list
// and git status in it work, its commit there), one outside the
// workspace is named with what to do, and the config.worktree planted in
// it (with core.fsmonitor) runs nothing on the host's git status there.
func TestWorktreeAdd(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		for _, repo := range []bool{false, true} {
			ws := r.dir(t, "jail-it-ws-")
			init := "git init -q -b main && echo one > file.txt && git add file.txt && git commit -qm first && "
			if repo {
				r.gitRepo(t, ws)
				init = ""
			}
			marker, plant := r.marker(t, ws)
			res := r.sh(t, ws, plant+`
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
`+init+`git worktree add -q wt || exit 1
git worktree add -q ../outside-$$ 2>/dev/null
(cd wt && echo two > new.txt && git add new.txt && git commit -qm "in the worktree") || exit 1
git config extensions.worktreeConfig true && git -C wt config --worktree core.fsmonitor "$PWD/.payload"
echo SANDBOX-DONE`)
			mustExit(t, res, 0)
			if !strings.Contains(res.stdout, "SANDBOX-DONE") {
				t.Fatalf("script did not finish:\n%s\n%s", res.stdout, res.stderr)
			}
			wt := filepath.Join(ws, "wt")
			if out, err := r.hostGit(t, ws, "worktree", "list"); err != nil || !strings.Contains(out, wt) {
				t.Errorf("repo %v: the host's git worktree list lacks the worktree: %v\n%s\n%s", repo, err, out, res.stderr)
			}
			if out, err := r.hostGit(t, wt, "log", "--oneline", "-1"); err != nil || !strings.Contains(out, "in the worktree") {
				t.Errorf("repo %v: the host's git in the worktree: %v %s\n%s", repo, err, out, res.stderr)
			}
			if out, err := r.hostGit(t, wt, "status", "--porcelain"); err != nil || out != "" {
				t.Errorf("repo %v: the host's git status in the worktree: %v %q", repo, err, out)
			}
			if !strings.Contains(res.stderr, "outside the workspace") || !strings.Contains(res.stderr, "git worktree add") {
				t.Errorf("repo %v: no line says why the worktree outside the workspace was not kept and what to do:\n%s", repo, res.stderr)
			}
			r.hostStatusIn(t, marker, wt, ws)
		}
	})
}

// TestKeptStateRunsNothing: objects the sandbox wrote are refused (a loose
// object whose content is not its name), so its git state is kept aside
// in jail's state directory, where the run's line sends the user: the
// host's git status there runs nothing of what the sandbox planted
// (core.worktree and core.fsmonitor in its config, a HEAD it wrote).
func TestKeptStateRunsNothing(t *testing.T) {
	needGit(t)
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		marker, plant := r.marker(t, ws)
		res := r.sh(t, ws, plant+`
git checkout -q -b other || exit 1
git config core.worktree "$PWD" && git config core.fsmonitor "$PWD/.payload" || exit 1
mkdir -p .git/objects/ab && echo garbage > .git/objects/ab/cdef0123456789abcdef0123456789abcdef01
echo abcdef0123456789abcdef0123456789abcdef01 > .git/refs/heads/bad
echo SANDBOX-DONE`)
		mustExit(t, res, 0)
		i := strings.Index(res.stderr, "kept in ")
		if i < 0 {
			t.Fatalf("the objects were not refused, so nothing was kept to attack:\n%s", res.stderr)
		}
		kept, _, _ := strings.Cut(res.stderr[i+len("kept in "):], " ")
		t.Cleanup(func() { os.RemoveAll(kept) })
		var dirs []string
		filepath.Walk(kept, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.IsDir() && !strings.Contains(p, "/objects") {
				dirs = append(dirs, p)
			}
			return nil
		})
		if len(dirs) < 2 {
			t.Fatalf("the kept state %s holds nothing: %v", kept, dirs)
		}
		r.hostStatusIn(t, marker, dirs...)
	})
}

// TestStagedSymlinkRemoved: a symlink into the sandbox's home made in
// node_modules (which no sweep lists) by one run and moved out by the
// next keeps the change time of its making; it is removed all the same.
func TestStagedSymlinkRemoved(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		os.MkdirAll(filepath.Join(ws, "node_modules", "pkg"), 0o755)
		os.MkdirAll(filepath.Join(ws, "vendor"), 0o755)
		r.own(t, ws)
		marker, plant := r.marker(t, ws)
		res := r.sh(t, ws, plant+`
H=$(awk -v h="$HOME" '$5==h{print $4}' /proc/self/mountinfo | tail -1)
git init -q ~/r && git -C ~/r config core.fsmonitor "$PWD/.payload" || exit 1
ln -s "$H/r" node_modules/pkg/lib && echo STAGED`)
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "STAGED") {
			t.Fatalf("not staged:\n%s\n%s", res.stdout, res.stderr)
		}
		res = r.sh(t, ws, `mv node_modules/pkg vendor/pkg && echo MOVED`)
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "MOVED") {
			t.Fatalf("not moved:\n%s\n%s", res.stdout, res.stderr)
		}
		if _, err := os.Lstat(filepath.Join(ws, "vendor", "pkg", "lib")); err == nil {
			t.Errorf("the staged symlink into the sandbox's home is in the workspace after the run\n%s", res.stderr)
		}
		r.hostStatusIn(t, marker, filepath.Join(ws, "vendor", "pkg"), filepath.Join(ws, "vendor", "pkg", "lib"))
	})
}
