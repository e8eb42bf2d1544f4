//go:build linux

package integration

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestNewRepositoryRemoteNotRouted: a repository the sandbox makes (at
// the root of a workspace without one, or in a subdirectory of one)
// gets a remote origin with a github URL and a pushurl of the sandbox's
// choosing (a listener on the host's loopback), and the keys that route
// the branch to it (branch.main.remote, pushRemote, remote.pushDefault,
// push.default current). The host had no remote there, so the remote
// would be the one its plain git push uses: it is left out, named with
// its URLs, and the host's git push afterwards reaches no listener
// (docs/git-adoption.md, Config).
func TestNewRepositoryRemoteNotRouted(t *testing.T) {
	needGit(t)
	const ident = "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b\n"
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		http.NotFound(w, nil)
	}))
	defer srv.Close()
	forEachPath(t, func(t *testing.T, r runner) {
		for _, c := range []struct {
			name, dir string
			repo      bool
		}{{"root", ".", false}, {"sub", "sub", true}} {
			t.Run(c.name, func(t *testing.T) {
				ws := r.dir(t, "jail-it-ws-")
				if c.repo {
					r.gitRepo(t, ws)
				}
				res := r.sh(t, ws, ident+"mkdir -p "+c.dir+" && cd "+c.dir+" && git init -q -b main && echo s > s && git add s && git commit -qm s && "+
					"git remote add origin https://github.com/example/legit.git && git config remote.origin.pushurl "+srv.URL+"/pushed && "+
					"git remote add up "+srv.URL+"/up && git config branch.main.remote origin && git config branch.main.merge refs/heads/main && "+
					"git config branch.main.pushRemote up && git config remote.pushDefault up && git config push.default current && echo MADE")
				mustExit(t, res, 0)
				if !strings.Contains(res.stdout, "MADE") {
					t.Fatalf("the repository was not made:\n%s\n%s", res.stdout, res.stderr)
				}
				if !strings.Contains(res.stderr, srv.URL+"/pushed") {
					t.Errorf("the run's lines do not name the pushurl the sandbox chose:\n%s", res.stderr)
				}
				top := filepath.Join(ws, c.dir)
				cfg, _ := os.ReadFile(filepath.Join(top, ".git", "config"))
				for _, k := range []string{srv.URL, "pushRemote", "pushremote", "pushDefault", "pushdefault", "remote = "} {
					if strings.Contains(string(cfg), k) {
						t.Errorf("the adopted config holds %q:\n%s\n%s", k, cfg, res.stderr)
					}
				}
				before := hits.Load()
				r.hostGit(t, top, "push")
				r.hostGit(t, top, "push", "origin")
				r.hostGit(t, top, "push", "-u", "origin", "main")
				if n := hits.Load() - before; n != 0 {
					t.Errorf("the host's git push reached the sandbox's pushurl (%d requests)\n%s", n, res.stderr)
				}
				if log := r.host(t, top, "log", "-1", "--format=%s"); strings.TrimSpace(log) != "s" {
					t.Errorf("the new repository's commit was not adopted: %q\n%s", log, res.stderr)
				}
			})
		}
	})
}
