//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommittedCodeFilesHeld: the sandbox cannot write the hooks directory
// (core.hooksPath), .envrc or .vscode/ in the workspace, but it can write a
// blob and stage or commit it at such a path in its view of the git
// directory. Adopted, the host's next git restore, reset --hard or
// checkout would write the sandbox's file, and the host's next commit (or
// cd, or editor) would run it. Each case plants code that appends to a
// marker outside every sandbox, then the host does what a user does (git
// status, restore, reset --hard, stash, commit); the marker must stay
// absent, the host's branch must stay where it was and the sandbox's
// commit be kept under refs/jail/ (docs/git-adoption.md, "Commits that
// change files the host runs code from"). An ordinary commit beside them
// is adopted as before.
func TestCommittedCodeFilesHeld(t *testing.T) {
	needGit(t)
	const ident = "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b\n"
	forEachPath(t, func(t *testing.T, r runner) {
		for _, c := range []struct {
			name  string
			setup func(ws, marker string) // on the host, before the run
			stage string                  // the path the sandbox stages its file at
			body  string                  // the file, %M the marker
			mode  string
			// commit: the sandbox commits what it staged (else it only stages it).
			commit bool
		}{
			{name: "hooksPath hook committed", stage: ".githooks/pre-commit", mode: "100755", commit: true,
				body: "#!/bin/sh\necho hook >> %M\n",
				setup: func(ws, _ string) {
					r.writeFile(t, filepath.Join(ws, ".githooks", "pre-commit"), "#!/bin/sh\nexit 0\n")
					os.Chmod(filepath.Join(ws, ".githooks", "pre-commit"), 0o755)
					r.host(t, ws, "add", ".githooks")
					r.host(t, ws, "commit", "-qm", "hooks")
					r.host(t, ws, "config", "core.hooksPath", ".githooks")
				}},
			{name: "hooksPath hook staged", stage: ".githooks/pre-commit", mode: "100755",
				body: "#!/bin/sh\necho hook >> %M\n",
				setup: func(ws, _ string) {
					r.writeFile(t, filepath.Join(ws, ".githooks", "pre-commit"), "#!/bin/sh\nexit 0\n")
					os.Chmod(filepath.Join(ws, ".githooks", "pre-commit"), 0o755)
					r.host(t, ws, "add", ".githooks")
					r.host(t, ws, "commit", "-qm", "hooks")
					r.host(t, ws, "config", "core.hooksPath", ".githooks")
				}},
			{name: "envrc committed", stage: ".envrc", mode: "100644", commit: true, body: "echo envrc >> %M\n"},
			{name: "vscode tasks at depth committed", stage: "sub/dir/.vscode/tasks.json", mode: "100644", commit: true,
				body: `{"version":"2.0.0","tasks":[{"label":"x","type":"shell","command":"echo vscode >> %M","runOptions":{"runOn":"folderOpen"}}]}`},
			{name: "gitattributes filter committed", stage: ".gitattributes", mode: "100644", commit: true, body: "* filter=planted\n",
				setup: func(ws, marker string) {
					// A driver the host's config defines; the sandbox's
					// commit points it at every file.
					r.host(t, ws, "config", "filter.planted.smudge", "sh -c 'echo filter >> "+marker+"; cat'")
				}},
		} {
			t.Run(c.name, func(t *testing.T) {
				ws := r.dir(t, "jail-it-ws-")
				r.gitRepo(t, ws)
				marker := filepath.Join(r.dir(t, "jail-it-marker-"), "ran")
				if c.setup != nil {
					c.setup(ws, marker)
				}
				before := strings.TrimSpace(r.host(t, ws, "rev-parse", "HEAD"))
				body := strings.ReplaceAll(c.body, "%M", marker)
				script := ident + "printf '%s' '" + strings.ReplaceAll(body, "'", `'\''`) + "' > /tmp/planted && " +
					"B=$(git hash-object -w /tmp/planted) && git update-index --add --cacheinfo " + c.mode + ",$B," + c.stage
				if c.commit {
					script += " && git commit -qm work"
				}
				res := r.sh(t, ws, script)
				mustExit(t, res, 0)
				if c.commit && !strings.Contains(res.stderr, "held: refs/heads/main") {
					t.Errorf("no line says the branch was held:\n%s", res.stderr)
				}
				if !c.commit && !strings.Contains(res.stderr, "index: stages files the host's tools run code from") {
					t.Errorf("no line says the index was not adopted:\n%s", res.stderr)
				}
				if after := strings.TrimSpace(r.host(t, ws, "rev-parse", "HEAD")); after != before {
					t.Errorf("the host's HEAD moved to the sandbox's commit: %s -> %s", before, after)
				}
				if c.commit {
					if refs := r.host(t, ws, "for-each-ref", "--format=%(refname)", "refs/jail/"); !strings.Contains(refs, "/heads/main") {
						t.Errorf("the sandbox's commit is not kept under refs/jail/: %q", refs)
					}
				}
				// What a user does next on the host.
				r.hostGit(t, ws, "status")
				r.hostGit(t, ws, "restore", "--", c.stage)
				r.writeFile(t, filepath.Join(ws, "file.txt"), "host edit after restore\n")
				r.host(t, ws, "commit", "-qam", "host commit after restore")
				r.hostGit(t, ws, "checkout", "--", ".")
				r.hostGit(t, ws, "reset", "-q", "--hard")
				r.hostGit(t, ws, "stash")
				r.writeFile(t, filepath.Join(ws, "file.txt"), "host edit\n")
				r.host(t, ws, "commit", "-qam", "host commit")
				if b, err := os.ReadFile(filepath.Join(ws, c.stage)); err == nil && strings.Contains(string(b), marker) {
					t.Errorf("the sandbox's %s reached the host's work tree: %q", c.stage, b)
				}
				if b, err := os.ReadFile(marker); err == nil {
					t.Fatalf("code the sandbox committed ran on the host: %q", b)
				}
			})
		}
		t.Run("ordinary commit adopted", func(t *testing.T) {
			ws := r.dir(t, "jail-it-ws-")
			r.gitRepo(t, ws)
			res := r.sh(t, ws, ident+"echo more >> file.txt && mkdir -p src && echo x > src/main.go && git add -A && git commit -qm ordinary")
			mustExit(t, res, 0)
			if strings.Contains(res.stderr, "held") {
				t.Errorf("an ordinary commit was held:\n%s", res.stderr)
			}
			if log := r.host(t, ws, "log", "-1", "--format=%s"); strings.TrimSpace(log) != "ordinary" {
				t.Errorf("the host's HEAD is not the sandbox's commit: %q\n%s", log, res.stderr)
			}
		})
	})
}

// host runs the host's git as r in ws and fails the test if it fails.
func (r runner) host(t *testing.T, ws string, args ...string) string {
	t.Helper()
	out, err := r.hostGit(t, ws, args...)
	if err != nil {
		t.Fatalf("host git %v: %v\n%s", args, err, out)
	}
	return out
}
