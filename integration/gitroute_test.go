//go:build linux

package integration

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAddedRemoteTakesNoPush: the sandbox adds a remote naming a server
// of its choosing (a git daemon on loopback here, accepting pushes) and
// points the host's branch at it (branch.main.pushremote, branch.main.remote,
// remote.pushDefault), or adds the only remote a branch without one would
// use. The host then does its usual commit and plain git push: nothing may
// arrive at the sandbox's server (docs/git-adoption.md, "Config").
func TestAddedRemoteTakesNoPush(t *testing.T) {
	needGit(t)
	// git-daemon itself, not git's wrapper, which would leave it running
	// when the test kills what it started.
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	daemon := filepath.Join(strings.TrimSpace(string(execPath)), "git-daemon")
	if _, err := os.Stat(daemon); err != nil {
		t.Fatalf("git-daemon: %v", err)
	}
	forEachPath(t, func(t *testing.T, r runner) {
		for _, c := range []struct {
			name string
			// hostRemote: the host's repository has origin (a bare
			// repository on disk) at launch.
			hostRemote bool
			sandbox    string // %U the server's URL
		}{
			{name: "pushremote", hostRemote: true, sandbox: "git remote add 0rigin %U && git config branch.main.pushremote 0rigin && git config push.default current"},
			{name: "branch remote", hostRemote: true, sandbox: "git remote add 0rigin %U && git config branch.main.remote 0rigin && git config branch.main.merge refs/heads/main"},
			{name: "pushdefault", hostRemote: true, sandbox: "git remote add 0rigin %U && git config remote.pushDefault 0rigin"},
			{name: "only remote", sandbox: "git remote add up %U && git config push.default current"},
		} {
			t.Run(c.name, func(t *testing.T) {
				srv := r.dir(t, "jail-it-srv-")
				if out, err := exec.Command("git", "init", "-q", "--bare", filepath.Join(srv, "loot.git")).CombinedOutput(); err != nil {
					t.Fatalf("git init: %v\n%s", err, out)
				}
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				port := l.Addr().(*net.TCPAddr).Port
				l.Close()
				d := exec.Command(daemon, "--reuseaddr", "--listen=127.0.0.1", fmt.Sprintf("--port=%d", port),
					"--base-path="+srv, "--export-all", "--enable=receive-pack", srv)
				if err := d.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { d.Process.Kill(); d.Wait() })
				for i := 0; ; i++ {
					if conn, err := net.Dial("tcp", l.Addr().String()); err == nil {
						conn.Close()
						break
					}
					if i == 100 {
						t.Fatal("git daemon does not listen")
					}
					time.Sleep(50 * time.Millisecond)
				}
				url := fmt.Sprintf("git://127.0.0.1:%d/loot.git", port)

				ws := r.dir(t, "jail-it-ws-")
				r.gitRepo(t, ws)
				if c.hostRemote {
					origin := filepath.Join(r.dir(t, "jail-it-origin-"), "origin.git")
					r.host(t, ws, "init", "-q", "--bare", origin)
					r.host(t, ws, "remote", "add", "origin", origin)
					r.host(t, ws, "push", "-q", "-u", "origin", "main")
				}
				res := r.sh(t, ws, strings.ReplaceAll(c.sandbox, "%U", url))
				mustExit(t, res, 0)
				if !strings.Contains(res.stderr, "dropped") {
					t.Errorf("no line names what was dropped:\n%s", res.stderr)
				}
				r.writeFile(t, filepath.Join(ws, "file.txt"), "the host's secret\n")
				r.host(t, ws, "commit", "-qam", "host commit")
				r.hostGit(t, ws, "push")
				r.hostGit(t, ws, "push", "-u")
				if out, _ := exec.Command("git", "--git-dir="+filepath.Join(srv, "loot.git"), "for-each-ref").CombinedOutput(); strings.TrimSpace(string(out)) != "" {
					t.Fatalf("the host's plain git push reached the sandbox's server:\n%s\nrun's lines:\n%s", out, res.stderr)
				}
			})
		}
	})
}
