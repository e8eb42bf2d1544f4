//go:build linux

package integration

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGitAdoptionQuiet: git's everyday commands inside (status, a commit,
// a branch, git init and a commit in a workspace without a repository)
// print nothing of jail's: the adoption at the run's end applies what the
// user's own commands did and says nothing about it. Before, every run of
// `jail run -- git status` ended with "jail: git: adopted 1 (index)". What
// the user must know still gets its line: a key the adoption drops, and one it takes into the
// host's repository config.
func TestGitAdoptionQuiet(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-quiet-")
		r.gitRepo(t, ws)
		ident := []string{"--env", "GIT_AUTHOR_NAME=a", "--env", "GIT_AUTHOR_EMAIL=a@b", "--env", "GIT_COMMITTER_NAME=a", "--env", "GIT_COMMITTER_EMAIL=a@b"}
		for _, script := range []string{
			"git status --short",
			"touch file.txt && git status --short",
			"echo two > file.txt && git commit -qam two && git checkout -qb topic && git checkout -q main",
		} {
			res := r.sh(t, ws, script, ident...)
			mustExit(t, res, 0)
			if strings.Contains(res.stderr, "jail") {
				t.Errorf("%s: jail said something about git the user did themselves:\n%s", script, res.stderr)
			}
		}
		if out, _ := r.hostGit(t, ws, "log", "--oneline", "main"); !strings.Contains(out, "two") {
			t.Fatalf("the commit made inside is not on the host: %s", out)
		}
		res := r.sh(t, ws, "git config core.fsmonitor /bin/true", ident...)
		mustExit(t, res, 0)
		if !strings.Contains(res.stderr, "jail: git: ") || !strings.Contains(res.stderr, "core.fsmonitor") {
			t.Errorf("a dropped key is not named:\n%s", res.stderr)
		}
		// A key the adoption takes into the host's config is named too: it outlasts the run.
		res = r.sh(t, ws, "git config user.email inside@example.com", ident...)
		mustExit(t, res, 0)
		if !strings.Contains(res.stderr, "jail: git: adopted") || !strings.Contains(res.stderr, "config user.email") {
			t.Errorf("a config key adopted into the host's repository is not named:\n%s", res.stderr)
		}

		fresh := r.dir(t, "jail-it-quiet-new-")
		res = r.sh(t, fresh, "git init -q && echo a > a && git add a && git commit -qm a", ident...)
		mustExit(t, res, 0)
		if strings.Contains(res.stderr, "jail") {
			t.Errorf("git init and a commit: jail said something:\n%s", res.stderr)
		}
		if out, _ := r.hostGit(t, fresh, "log", "--oneline"); !strings.Contains(out, " a") {
			t.Errorf("the repository made inside is not on the host: %s (%s)", out, filepath.Join(fresh, ".git"))
		}
	})
}
