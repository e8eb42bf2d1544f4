//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The routes into the host's git other than the workspace's own git
// directory: directories git takes for bare repositories, gitfiles and
// .git symlinks into what the sandbox wrote, gitlink paths at any depth,
// uninitialised submodules. Each test plants a core.fsmonitor (run by
// the host's git status) the way an attacker in the sandbox would and
// judges with the host's own git afterwards (docs/git.md).

// plantRepo is shell that makes $1 a git directory whose work tree is $2
// and whose core.fsmonitor is the payload: a repository git in $2 uses.
const plantRepo = `
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
git config --global --add safe.directory '*' 2>/dev/null
plant() {
  git init -q --bare "$1" || return 1
  git --git-dir="$1" config core.bare false && git --git-dir="$1" config core.worktree "$2" &&
  git --git-dir="$1" config core.fsmonitor "$PWD/.payload"
}
`

// hostStatusIn runs the host's git status in each directory (whatever it
// finds there: a repository, or none) and fails the test if the planted
// payload ran.
func (r runner) hostStatusIn(t *testing.T, marker string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		r.hostGit(t, d, "status")
		planted(t, marker, "the host's git status in "+d)
	}
}

// TestBareShapedDirectory: the sandbox makes directories git takes for
// bare repositories (HEAD, objects/, refs/ and a config whose
// core.worktree points back), one new and one that existed at launch, a
// .git gitfile and a .git symlink naming a git directory it wrote, and
// tries the workspace's root itself; the host's git status in each runs
// nothing afterwards. A bare clone made inside keeps its history.
func TestBareShapedDirectory(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		r = r.requireCache()
		for _, repo := range []bool{false, true} {
			ws := r.dir(t, "jail-it-ws-")
			if repo {
				r.gitRepo(t, ws)
			}
			os.MkdirAll(filepath.Join(ws, "existing", "deeper"), 0o755)
			r.own(t, ws)
			marker, plant := r.marker(t, ws)
			res := r.sh(t, ws, plant+plantRepo+`
plant newbare "$PWD/newbare"
plant existing "$PWD/existing"
mkdir -p gf ln && plant gd "$PWD/gf" && echo "gitdir: $PWD/gd" > gf/.git
plant gd2 "$PWD/ln" && ln -s ../gd2 ln/.git
plant . "$PWD" 2>/dev/null && echo ROOT-MADE-BARE
if [ -d .git/objects ]; then git clone -q --bare . mirror.git || echo CLONE-FAILED; fi
echo SANDBOX-DONE`)
			mustExit(t, res, 0)
			if strings.Contains(res.stdout, "ROOT-MADE-BARE") && !repo || strings.Contains(res.stdout, "CLONE-FAILED") {
				t.Errorf("repo %v:\n%s\n%s", repo, res.stdout, res.stderr)
			}
			r.hostStatusIn(t, marker, ws, filepath.Join(ws, "newbare"), filepath.Join(ws, "existing"),
				filepath.Join(ws, "existing", "deeper"), filepath.Join(ws, "gf"), filepath.Join(ws, "ln"),
				filepath.Join(ws, "gd"), filepath.Join(ws, "gd2"))
			if repo {
				if out, err := r.hostGit(t, filepath.Join(ws, "mirror.git"), "log", "--oneline", "-1"); err != nil || !strings.Contains(out, "first") {
					t.Errorf("the bare clone made inside lost its history: %v %s\n%s", err, out, res.stderr)
				}
				r.judge(t, ws, marker)
			}
		}
	})
}

// TestGitlinksAnyDepth: a submodule six levels down (deeper than the
// launch walk) cannot have its gitfile replaced by a repository of the
// sandbox's, an uninitialised submodule's empty directory cannot be
// filled with one, and repositories the sandbox makes six levels down
// (in directories it made, and in one that existed below the walk's
// depth) and commits as gitlinks are reduced: after the host's git reset
// --hard (which stages the committed gitlinks), the host's git status at
// the top, which descends into every gitlink, runs nothing.
func TestGitlinksAnyDepth(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		r = r.requireCache()
		ws := r.dir(t, "jail-it-ws-")
		lib := r.dir(t, "jail-it-lib-")
		r.gitRepo(t, ws)
		r.gitRepo(t, lib)
		deep := "deep/a/b/c/d/e/lib"
		for _, args := range [][]string{
			{"-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, deep},
			{"-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "un"},
			{"commit", "-qm", "submodules"},
			{"submodule", "deinit", "-q", "-f", "un"},
		} {
			if out, err := r.hostGit(t, ws, args...); err != nil {
				t.Fatalf("host git %v: %v\n%s", args, err, out)
			}
		}
		// A directory deeper than the launch walk that exists (older
		// than the launch by more than the clock's tick): the walk after
		// the run does not enter it; the committed gitlink leads there.
		os.MkdirAll(filepath.Join(ws, "old/a/b/c/d/e"), 0o755)
		r.own(t, ws)
		time.Sleep(100 * time.Millisecond)
		marker, plant := r.marker(t, ws)
		res := r.sh(t, ws, plant+plantRepo+`
rm -f `+deep+`/.git 2>/dev/null && echo DEEP-REMOVED
echo "gitdir: $PWD/gd" > `+deep+`/.git 2>/dev/null && echo DEEP-REWRITTEN
mv `+deep+` deep/moved 2>/dev/null && echo DEEP-MOVED
plant un/.git "$PWD/un" 2>/dev/null && echo UN-FILLED
plant un "$PWD/un" 2>/dev/null && echo UN-BARE
mkdir -p n/a/b/c/d/e && git init -q n/a/b/c/d/e/f && (cd n/a/b/c/d/e/f && git commit -q --allow-empty -m inner)
git -C n/a/b/c/d/e/f config core.fsmonitor "$PWD/.payload"
git init -q old/a/b/c/d/e/f && (cd old/a/b/c/d/e/f && git commit -q --allow-empty -m inner-old)
git -C old/a/b/c/d/e/f config core.fsmonitor "$PWD/.payload"
git add n/a/b/c/d/e/f old/a/b/c/d/e/f && git commit -qm "deep gitlink" || echo GITLINK-COMMIT-FAILED
echo SANDBOX-DONE`)
		mustExit(t, res, 0)
		for _, w := range []string{"DEEP-", "UN-", "GITLINK-COMMIT-FAILED"} {
			if strings.Contains(res.stdout, w) {
				t.Errorf("%s:\n%s\n%s", w, res.stdout, res.stderr)
			}
		}
		if out, err := r.hostGit(t, ws, "log", "--oneline", "-1"); err != nil || !strings.Contains(out, "deep gitlink") {
			t.Fatalf("the commit made inside is not on the host: %v %s\n%s", err, out, res.stderr)
		}
		if out, err := r.hostGit(t, ws, "reset", "-q", "--hard"); err != nil {
			t.Fatalf("host git reset --hard: %v\n%s", err, out)
		}
		if out, _ := r.hostGit(t, ws, "ls-files", "-s", "n"); !strings.Contains(out, "160000") {
			t.Fatalf("the host's reset did not stage the committed gitlink: %s", out)
		}
		r.hostStatusIn(t, marker, ws, filepath.Join(ws, deep), filepath.Join(ws, "un"), filepath.Join(ws, "n/a/b/c/d/e/f"),
			filepath.Join(ws, "old/a/b/c/d/e/f"))
		if out, err := r.hostGit(t, filepath.Join(ws, "n/a/b/c/d/e/f"), "log", "--oneline"); err != nil || !strings.Contains(out, "inner") {
			t.Errorf("the repository made inside lost its commits: %v %s", err, out)
		}
		r.judge(t, ws, marker)
	})
}

// TestProtectedNamesEverywhere: the editor and agent files held while a
// run lasts cannot be made at the workspace's root; everywhere else, and
// at the root for the agent CLI and hooks-manager files protected after
// the run, one that exists at launch cannot be changed, and one the
// sandbox makes (in a directory that existed or one it made, six levels
// down) is moved aside when the run ends, so no editor, agent or hooks
// manager opened there finds it.
func TestProtectedNamesEverywhere(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		for _, existing := range []bool{false, true} {
			ws := r.dir(t, "jail-it-ws-")
			os.MkdirAll(filepath.Join(ws, "pkg", "b"), 0o755)
			if existing {
				r.writeFile(t, filepath.Join(ws, "pkg", "a", ".vscode", "settings.json"), "{}\n")
				r.writeFile(t, filepath.Join(ws, ".husky", "pre-commit"), "npm test\n")
			}
			r.own(t, ws)
			before := lsA(t, ws)
			res := r.sh(t, ws, `
for n in .cursor .zed .vscode .claude/commands .codex; do mkdir $n 2>/dev/null && echo "ROOT-MADE $n"; done
for n in .mcp.json .envrc; do echo x > $n 2>/dev/null && echo "ROOT-MADE $n"; done
[ -d .husky ] || mkdir .gemini .opencode .husky .lefthook
for n in opencode.json .aider.conf.yml .pre-commit-config.yaml lefthook.yml lefthook-local.yml; do [ -f .husky/pre-commit ] || echo x > $n; done
[ -d pkg/a/.vscode ] && { echo '{"x":1}' > pkg/a/.vscode/settings.json 2>/dev/null && echo CHANGED-EXISTING; rm -rf pkg/a/.vscode 2>/dev/null && echo REMOVED-EXISTING; mv pkg/a pkg/a2 2>/dev/null && echo MOVED-EXISTING; }
[ -f .husky/pre-commit ] && { echo evil > .husky/pre-commit 2>/dev/null && echo CHANGED-EXISTING-HUSKY; mv .husky .h 2>/dev/null && echo MOVED-EXISTING-HUSKY; }
mkdir -p pkg/b/.vscode && echo '{}' > pkg/b/.vscode/tasks.json
echo 'echo hi' > pkg/b/.envrc; echo '{}' > pkg/b/x.code-workspace; echo x > pkg/b/.aider.conf.yml
mkdir -p n/a/b/c/d/e/.gemini n/a/b/c/d/e/.husky && echo x > n/a/b/c/d/e/.husky/pre-commit
echo SANDBOX-DONE`)
			mustExit(t, res, 0)
			for _, w := range []string{"ROOT-MADE", "-EXISTING"} {
				if strings.Contains(res.stdout, w) {
					t.Errorf("existing %v: %s:\n%s\n%s", existing, w, res.stdout, res.stderr)
				}
			}
			made := []string{"pkg/b/.vscode", "pkg/b/.envrc", "pkg/b/x.code-workspace", "pkg/b/.aider.conf.yml", "n/a/b/c/d/e/.gemini", "n/a/b/c/d/e/.husky"}
			rootLater := []string{".gemini", ".opencode", ".husky", ".lefthook", "opencode.json", ".aider.conf.yml", ".pre-commit-config.yaml", "lefthook.yml", "lefthook-local.yml"}
			if !existing {
				made = append(made, rootLater...)
			}
			for _, p := range made {
				if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
					t.Errorf("existing %v: %s the sandbox made is still there after the run\n%s", existing, p, res.stderr)
				}
				if m, _ := filepath.Glob(filepath.Join(ws, p+".jail-*")); len(m) != 1 {
					t.Errorf("existing %v: %s was not moved aside: %v", existing, p, m)
				}
			}
			if existing {
				if b, _ := os.ReadFile(filepath.Join(ws, "pkg", "a", ".vscode", "settings.json")); string(b) != "{}\n" {
					t.Errorf("the existing settings changed: %q", b)
				}
				if b, _ := os.ReadFile(filepath.Join(ws, ".husky", "pre-commit")); string(b) != "npm test\n" {
					t.Errorf("the existing husky hook changed: %q", b)
				}
			}
			want := append(before, "n")
			if !existing {
				for _, n := range rootLater {
					m, _ := filepath.Glob(filepath.Join(ws, n+".jail-*"))
					for _, x := range m {
						want = append(want, filepath.Base(x))
					}
				}
			}
			slices.Sort(want)
			if after := lsA(t, ws); !slices.Equal(after, want) {
				t.Errorf("existing %v: the root's entries were %v before the run and are %v after it", existing, before, after)
			}
		}
	})
}

// lsA lists a directory's names, as the host's ls -A does, sorted.
func lsA(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// TestCloneIntoWorkspace: `git clone URL .` in a workspace without a
// repository is refused by jail, which says why and what to do; what it
// says to do works and the repository reaches the host.
func TestCloneIntoWorkspace(t *testing.T) {
	needGit(t)
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		src := r.dir(t, "jail-it-src-")
		r.gitRepo(t, src)
		res := r.jail(t, call{args: []string{"run", "-w", ws, "--ro", src, "--", "git", "clone", "-q", src, "."}, dir: ws})
		if res.code != 2 || !strings.Contains(res.stderr, "jail") || !strings.Contains(res.stderr, "git clone into the workspace itself cannot work") {
			t.Fatalf("exit %d, want jail's refusal (2)\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
		}
		if names := lsA(t, ws); len(names) != 0 {
			t.Errorf("the refused run left %v", names)
		}
		res = r.sh(t, ws, `URL=`+src+`
git init -q && git remote add origin $URL && git fetch -q origin && git remote set-head -a origin >/dev/null && git checkout -q -t "$(git rev-parse --abbrev-ref origin/HEAD)"`, "--ro", src)
		mustExit(t, res, 0)
		if out, err := r.hostGit(t, ws, "log", "--oneline", "-1"); err != nil || !strings.Contains(out, "first") {
			t.Errorf("the repository made in place is not on the host: %v %s\n%s", err, out, res.stderr)
		}
		if b, err := os.ReadFile(filepath.Join(ws, "file.txt")); err != nil || string(b) != "one\n" {
			t.Errorf("the work tree is not checked out: %q %v", b, err)
		}
	})
}

// TestMoveAsideNameTaken: the sandbox reads its run id from its own mounts and makes
// NAME.jail-RUN before jail's move-aside, so that a plain rename would fail and its files
// stay live: a .envrc and a .vscode below the root, and a repository with core.fsmonitor
// set. Each is still moved aside (under a name the sandbox could not guess) and the
// repository reduced: the host's git status in it runs nothing.
func TestMoveAsideNameTaken(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		marker, _ := r.marker(t, ws)
		res := r.sh(t, ws, `
RUN=$(grep -o '/git/[0-9a-f]*/[0-9a-f]*/' /proc/self/mountinfo | head -1 | cut -d/ -f4)
[ -n "$RUN" ] || { echo NO-RUN-ID; exit 3; }
mkdir -p pkg/.vscode
echo 'echo evil' > pkg/.envrc && mkdir pkg/.envrc.jail-$RUN
echo '{}' > pkg/.vscode/tasks.json && mkdir pkg/.vscode.jail-$RUN
git init -q pkg/evil && git -C pkg/evil config core.fsmonitor 'echo ran >>`+marker+`; false' && mkdir pkg/evil/.git.jail-$RUN
echo SANDBOX-DONE`)
		mustExit(t, res, 0)
		for _, p := range []string{"pkg/.envrc", "pkg/.vscode"} {
			if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
				t.Errorf("%s the sandbox made stays live after the run (its move-aside name was taken)\n%s", p, res.stderr)
			}
		}
		r.hostStatusIn(t, marker, filepath.Join(ws, "pkg", "evil"))
		if out, err := r.hostGit(t, filepath.Join(ws, "pkg", "evil"), "config", "--get", "core.fsmonitor"); err == nil {
			t.Errorf("the repository the sandbox made keeps core.fsmonitor %q\n%s", out, res.stderr)
		}
	})
}
