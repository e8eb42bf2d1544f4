//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigNamedFilesHeld: the host's git config names work-tree files
// it reads config from or runs (include.path = ../.gitconfig,
// core.fsmonitor = tools/fsmon, a filter driver "sh scripts/clean.sh",
// in the repository's config or its config.worktree). The sandbox cannot
// write them in the workspace, and a commit that changes one is held: the
// host's reset --hard, status and add afterwards run none of the
// sandbox's code (docs/git-adoption.md, "Commits that change files the
// host runs code from").
func TestConfigNamedFilesHeld(t *testing.T) {
	needGit(t)
	const ident = "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b\n"
	forEachPath(t, func(t *testing.T, r runner) {
		for _, c := range []struct {
			name, path, mode string
			orig, body       string // %M the marker
			config           [][]string
		}{
			{name: "include.path target", path: ".gitconfig", mode: "100644",
				orig: "[alias]\n\tst = status\n", body: "[core]\n\tfsmonitor = \"echo include >> %M; false\"\n",
				config: [][]string{{"include.path", "../.gitconfig"}}},
			{name: "core.fsmonitor script", path: "tools/fsmon", mode: "100755",
				orig: "#!/bin/sh\nexit 1\n", body: "#!/bin/sh\necho fsmonitor >> %M\nexit 1\n",
				config: [][]string{{"core.fsmonitor", "tools/fsmon"}}},
			{name: "filter driver script", path: "scripts/clean.sh", mode: "100644",
				orig: "cat\n", body: "echo filter >> %M\ncat\n",
				config: [][]string{{"filter.x.clean", "sh scripts/clean.sh"}, {"filter.x.smudge", "sh scripts/clean.sh"}}},
			{name: "config.worktree fsmonitor", path: "tools/fsmon", mode: "100755",
				orig: "#!/bin/sh\nexit 1\n", body: "#!/bin/sh\necho worktree >> %M\nexit 1\n",
				config: [][]string{{"extensions.worktreeConfig", "true"}, {"--worktree", "core.fsmonitor", "tools/fsmon"}}},
		} {
			t.Run(c.name, func(t *testing.T) {
				ws := r.dir(t, "jail-it-ws-")
				r.gitRepo(t, ws)
				marker := filepath.Join(r.dir(t, "jail-it-marker-"), "ran")
				r.writeFile(t, filepath.Join(ws, c.path), c.orig)
				if c.mode == "100755" {
					os.Chmod(filepath.Join(ws, c.path), 0o755)
				}
				if strings.HasPrefix(c.name, "filter") {
					r.writeFile(t, filepath.Join(ws, ".gitattributes"), "*.txt filter=x\n")
					r.host(t, ws, "add", ".gitattributes")
				}
				r.host(t, ws, "add", c.path)
				r.host(t, ws, "commit", "-qm", "tools")
				for _, kv := range c.config {
					r.host(t, ws, append([]string{"config"}, kv...)...)
				}
				before := strings.TrimSpace(r.host(t, ws, "rev-parse", "HEAD"))
				body := strings.ReplaceAll(c.body, "%M", marker)
				q := "'" + strings.ReplaceAll(body, "'", `'\''`) + "'"
				res := r.sh(t, ws, ident+"printf '%s' "+q+" >> "+c.path+" 2>/dev/null; printf '%s' "+q+" > /tmp/planted && "+
					"B=$(git hash-object -w /tmp/planted) && git update-index --cacheinfo "+c.mode+",$B,"+c.path+" && git commit -qm work")
				mustExit(t, res, 0)
				if !strings.Contains(res.stderr, "held: refs/heads/main") || !strings.Contains(res.stderr, c.path) {
					t.Errorf("no line says the branch was held for %s:\n%s", c.path, res.stderr)
				}
				if after := strings.TrimSpace(r.host(t, ws, "rev-parse", "HEAD")); after != before {
					t.Errorf("the host's HEAD moved to the sandbox's commit: %s -> %s", before, after)
				}
				if b, _ := os.ReadFile(filepath.Join(ws, c.path)); string(b) != c.orig {
					t.Errorf("the sandbox wrote %s in the workspace: %q", c.path, b)
				}
				// What a user does next on the host.
				r.hostGit(t, ws, "reset", "-q", "--hard")
				r.hostGit(t, ws, "status")
				r.writeFile(t, filepath.Join(ws, "file.txt"), "host edit\n")
				r.hostGit(t, ws, "add", "file.txt")
				r.hostGit(t, ws, "status")
				if b, err := os.ReadFile(marker); err == nil {
					t.Fatalf("code the sandbox committed ran on the host: %q", b)
				}
			})
		}
	})
}
