package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestConfigTargetsInEveryWorkTree: the host's git resolves a relative
// core.hooksPath, and the programs its config names, against the top of
// the work tree it runs in. Each such path of every work tree in the
// workspace, existing or not, is unwritable from the sandbox: a linked
// worktree's (wt/.githooks), a nested repository's own, a submodule's,
// the root config's hooks directory inside a nested repository, a nested
// repository's core.fsmonitor file, and a core.fsmonitor file that does
// not exist at launch. A missing one is held by an empty directory that
// is gone after the run. Judged by the host's git in each work tree.
func TestConfigTargetsInEveryWorkTree(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		lib := r.dir(t, "jail-it-lib-")
		r.gitRepo(t, ws)
		r.gitRepo(t, lib)
		git := func(dir string, args ...string) {
			t.Helper()
			if out, err := r.hostGit(t, dir, args...); err != nil {
				t.Fatalf("host git %v in %s: %v\n%s", args, dir, err, out)
			}
		}
		git(ws, "config", "core.hooksPath", ".githooks")
		git(ws, "config", "core.fsmonitor", "tools/fsmon")
		git(ws, "worktree", "add", "-q", "wt")
		vendor := filepath.Join(ws, "vendor", "lib")
		r.gitRepo(t, vendor)
		git(vendor, "config", "core.hooksPath", ".githooks")
		other := filepath.Join(ws, "other")
		r.gitRepo(t, other)
		git(other, "config", "core.fsmonitor", "bin/fsmon")
		r.writeFile(t, filepath.Join(other, "bin", "fsmon"), "#!/bin/sh\nexit 1\n")
		os.Chmod(filepath.Join(other, "bin", "fsmon"), 0o755)
		git(ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "sm")
		git(ws, "commit", "-qm", "sm")
		git(filepath.Join(ws, "sm"), "config", "core.hooksPath", ".githooks")
		before := strings.Join(lsA(t, ws), " ")
		marker, plant := r.marker(t, ws)
		res := r.sh(t, ws, plant+`
for d in wt/.githooks vendor/lib/.githooks sm/.githooks .githooks; do
  mkdir -p $d 2>/dev/null; cp .payload $d/pre-commit 2>/dev/null && echo PLANTED $d
done
mkdir -p tools 2>/dev/null; cp .payload tools/fsmon 2>/dev/null && echo PLANTED tools/fsmon
cp .payload other/bin/fsmon 2>/dev/null && echo PLANTED other/bin/fsmon
mv wt/.githooks wt/.g2 2>/dev/null && echo MOVED
echo SANDBOX-DONE`)
		mustExit(t, res, 0)
		if strings.Contains(res.stdout, "PLANTED") || strings.Contains(res.stdout, "MOVED") {
			t.Errorf("a config target of the host's git was written:\n%s", res.stdout)
		}
		if !strings.Contains(res.stdout, "SANDBOX-DONE") {
			t.Fatalf("the script did not run:\n%s\n%s", res.stdout, res.stderr)
		}
		for _, d := range []string{".githooks", "tools"} {
			if _, err := os.Lstat(filepath.Join(ws, d)); err == nil {
				t.Errorf("%s, missing at launch, is in the user's tree after the run", d)
			}
		}
		if after := strings.Join(slices.DeleteFunc(lsA(t, ws), func(n string) bool { return n == ".payload" }), " "); after != before {
			t.Errorf("the workspace's root changed: %q, then %q", before, after)
		}
		for _, dir := range []string{ws, filepath.Join(ws, "wt"), vendor, other, filepath.Join(ws, "sm")} {
			r.writeFile(t, filepath.Join(dir, "judge.txt"), "j\n")
			for _, args := range [][]string{{"status"}, {"add", "judge.txt"}, {"commit", "-qm", "host"}} {
				if out, err := r.hostGit(t, dir, args...); err != nil {
					t.Errorf("host git %v in %s: %v\n%s", args, dir, err, out)
				}
			}
			planted(t, marker, "the host's git in "+dir)
		}
	})
}

// TestConfigTargetsOfNewWorkTrees: a work tree the sandbox makes (a linked
// worktree, git worktree add wt; a repository, git init sub) is one no
// launch knew of, so what the user's config names relative to its top
// (core.hooksPath = .githooks, core.fsmonitor = tools/fsmon) is moved
// aside when the run ends, and the host's git there runs none of it.
// At the workspace's root the same names, missing at launch, are held
// and gone after the run.
func TestConfigTargetsOfNewWorkTrees(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		home := r.dir(t, "jail-it-home-")
		r.gitRepo(t, ws)
		r.writeFile(t, filepath.Join(home, ".gitconfig"), "[core]\n\thooksPath = .githooks\n\tfsmonitor = tools/fsmon\n[user]\n\tname = u\n\temail = u@example.com\n[safe]\n\tdirectory = *\n")
		before := strings.Join(lsA(t, ws), " ")
		marker, plant := r.marker(t, ws)
		res := r.jail(t, call{dir: ws, env: []string{"HOME=" + home}, args: []string{"run", "-w", ws, "--", "/bin/sh", "-c", plant + `
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
mkdir -p .githooks 2>/dev/null; cp .payload .githooks/pre-commit 2>/dev/null && echo PLANTED-ROOT
mkdir -p tools 2>/dev/null; cp .payload tools/fsmon 2>/dev/null && echo PLANTED-ROOT
git -c core.fsmonitor=false worktree add -q wt || echo NO-WORKTREE
git init -q sub && (cd sub && echo a > a && git -c core.fsmonitor=false add a && git -c core.hooksPath=/dev/null -c core.fsmonitor=false commit -qm s) || echo NO-REPO
for d in wt sub; do
  mkdir -p $d/.githooks $d/tools && cp .payload $d/.githooks/pre-commit && cp .payload $d/.githooks/post-checkout && cp .payload $d/tools/fsmon || echo NOT-PLANTED $d
done
echo SANDBOX-DONE`}})
		mustExit(t, res, 0)
		for _, w := range []string{"PLANTED-ROOT", "NO-WORKTREE", "NO-REPO", "NOT-PLANTED"} {
			if strings.Contains(res.stdout, w) {
				t.Errorf("%s:\n%s\n%s", w, res.stdout, res.stderr)
			}
		}
		if !strings.Contains(res.stdout, "SANDBOX-DONE") {
			t.Fatalf("the script did not run:\n%s\n%s", res.stdout, res.stderr)
		}
		if after := strings.Join(slices.DeleteFunc(lsA(t, ws), func(n string) bool { return n == ".payload" || n == "wt" || n == "sub" }), " "); after != before {
			t.Errorf("the workspace's root changed: %q, then %q", before, after)
		}
		for _, p := range []string{"wt/.githooks", "wt/tools/fsmon", "sub/.githooks", "sub/tools/fsmon"} {
			if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
				t.Errorf("%s, which the sandbox made in a work tree it made, stayed", p)
			}
		}
		if !strings.Contains(res.stderr, "moved aside") {
			t.Errorf("no line names what was moved aside:\n%s", res.stderr)
		}
		for _, dir := range []string{ws, filepath.Join(ws, "wt"), filepath.Join(ws, "sub")} {
			r.writeFile(t, filepath.Join(dir, "judge.txt"), "j\n")
			for _, args := range [][]string{{"status"}, {"add", "judge.txt"}, {"commit", "-qm", "host"}, {"checkout", "-q", "-b", "judge"}} {
				cmd := exec.Command("git", args...)
				cmd.Dir = dir
				r.prepare(cmd, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
				cmd.Env = append(cmd.Env, "HOME="+home, "XDG_CONFIG_HOME=")
				cmd.CombinedOutput()
			}
			planted(t, marker, "the host's git in "+dir)
		}
	})
}

// TestDeepRepositoryConfigTargets: a repository below the launch walk's
// depth is not shown, so its relative core.hooksPath (tools/hooks, no
// protected name) was writable while
// the run lasted; the sweep after the run (and the plan cache's, which
// then runs the adopter) takes the HEAD of one whose hooks directory
// changed, and the host's git there runs nothing the sandbox put in it.
func TestDeepRepositoryConfigTargets(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		deep := filepath.Join(ws, "a", "b", "c", "d", "e", "lib")
		r.gitRepo(t, deep)
		if out, err := r.hostGit(t, deep, "config", "core.hooksPath", "tools/hooks"); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		marker, plant := r.marker(t, ws)
		res := r.sh(t, ws, plant+`
mkdir -p a/b/c/d/e/lib/tools/hooks && cp .payload a/b/c/d/e/lib/tools/hooks/pre-commit && echo PLANTED
echo SANDBOX-DONE`)
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "SANDBOX-DONE") {
			t.Fatalf("the script did not run:\n%s\n%s", res.stdout, res.stderr)
		}
		r.writeFile(t, filepath.Join(deep, "judge.txt"), "j\n")
		for _, args := range [][]string{{"status"}, {"add", "judge.txt"}, {"commit", "-qm", "host"}} {
			r.hostGit(t, deep, args...)
		}
		planted(t, marker, "the host's git in "+deep)
	})
}

// TestConfigTargetsPastShownRepositories: past the bound of repositories
// shown as overlays (24) a nested repository's git directory is
// read-only as a whole, and what its config names relative to its work
// tree is held like a shown one's.
func TestConfigTargetsPastShownRepositories(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		var script strings.Builder
		for i := 0; i < 27; i++ {
			d := filepath.Join(ws, "r", strconv.Itoa(i))
			r.gitRepo(t, d)
			if out, err := r.hostGit(t, d, "config", "core.hooksPath", "hooks"); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			fmt.Fprintf(&script, "mkdir -p r/%d/hooks 2>/dev/null; cp .payload r/%d/hooks/pre-commit 2>/dev/null && echo PLANTED %d\n", i, i, i)
		}
		marker, plant := r.marker(t, ws)
		res := r.sh(t, ws, plant+"\n"+script.String()+"echo SANDBOX-DONE\n")
		mustExit(t, res, 0)
		if strings.Contains(res.stdout, "PLANTED") || !strings.Contains(res.stdout, "SANDBOX-DONE") {
			t.Errorf("a hooks directory of a nested repository was written:\n%s\n%s", res.stdout, res.stderr)
		}
		for i := 0; i < 27; i++ {
			d := filepath.Join(ws, "r", strconv.Itoa(i))
			r.writeFile(t, filepath.Join(d, "judge.txt"), "j\n")
			r.hostGit(t, d, "add", "judge.txt")
			r.hostGit(t, d, "commit", "-qm", "host")
		}
		planted(t, marker, "the host's git in the nested repositories")
	})
}
