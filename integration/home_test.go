//go:build linux

package integration

// The persistent sandbox home (docs/home.md): $HOME inside lasts between runs of one
// workspace, is never another workspace's, is kept in jail's data directory on the host, and
// `jail clean` removes it by descriptor. Judged on the host side: the files in the homes
// directory, and what a second workspace's sandbox can see.

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// homeOf is r's passwd home, where its persistent homes live.
func (r runner) homeOf(t *testing.T) string {
	t.Helper()
	if r.uid == 0 {
		return "/root"
	}
	u, err := user.LookupId(strconv.Itoa(r.uid))
	if err != nil {
		t.Fatal(err)
	}
	return u.HomeDir
}

// sandboxHomes lists r's persistent homes by workspace, read on the host.
func (r runner) sandboxHomes(t *testing.T) map[string]string {
	t.Helper()
	return sandboxHomesIn(r.homeOf(t))
}

// sandboxHomesIn lists the persistent homes kept under home (a HOME the test set).
func sandboxHomesIn(home string) map[string]string {
	dir := filepath.Join(home, ".local/share/jail/homes")
	out := map[string]string{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var rec struct{ Workspace string }
		if json.Unmarshal(b, &rec) == nil {
			out[rec.Workspace] = filepath.Join(dir, strings.TrimSuffix(e.Name(), ".json"))
		}
	}
	return out
}

// cleanAfter removes ws's persistent home when the test ends.
func (r runner) cleanAfter(t *testing.T, ws string) {
	t.Cleanup(func() { r.jail(t, call{dir: ws, args: []string{"clean", "-w", ws}}) })
}

func TestPersistentHome(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws1, ws2 := r.dir(t, "jail-it-home1-"), r.dir(t, "jail-it-home2-")
		r.cleanAfter(t, ws1)
		r.cleanAfter(t, ws2)
		// The first run of ws1 leaves a cache file and plants a poisoned
		// rc file in its own home.
		res := r.sh(t, ws1, `mkdir -p "$HOME/.cache/tool" && echo kept > "$HOME/.cache/tool/entry" && echo 'echo POISON' > "$HOME/.bashrc" && echo ok`)
		mustExit(t, res, 0)
		res = r.sh(t, ws1, `cat "$HOME/.cache/tool/entry"`)
		mustExit(t, res, 0)
		if strings.TrimSpace(res.stdout) != "kept" {
			t.Fatalf("the second run of the workspace lost its home: %q\nstderr: %s", res.stdout, res.stderr)
		}
		// Another workspace gets a home of its own, and cannot reach the
		// first one's: jail's data directory is not in the sandbox.
		res = r.sh(t, ws2, `ls -A "$HOME"; cat "$HOME/.cache/tool/entry" "$HOME/.bashrc" 2>&1; ls "$HOME/.local/share/jail" 2>&1; find / -name entry -path '*tool*' 2>/dev/null; exit 0`)
		mustExit(t, res, 0)
		if strings.Contains(res.stdout, "kept") || strings.Contains(res.stdout, "POISON") {
			t.Fatalf("a second workspace saw the first one's home:\n%s", res.stdout)
		}
		homes := r.sandboxHomes(t)
		h1, h2 := homes[ws1], homes[ws2]
		if h1 == "" || h2 == "" || h1 == h2 {
			t.Fatalf("homes on the host: %v; want one each for %s and %s", homes, ws1, ws2)
		}
		if b, err := os.ReadFile(filepath.Join(h1, ".cache/tool/entry")); err != nil || string(b) != "kept\n" {
			t.Fatalf("host side of ws1's home: %q, %v", b, err)
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(h1, &st); err != nil || st.Mode&0o7777 != 0o700 || st.Mode&syscall.S_IFMT != syscall.S_IFDIR || int(st.Uid) != r.uid {
			t.Fatalf("home %s: mode %o uid %d (%v); want a 0700 directory of uid %d", h1, st.Mode, st.Uid, err, r.uid)
		}
		// jail clean: a dry run lists the home with its size and keeps it;
		// then it is removed, and the next run starts empty.
		res = r.jail(t, call{dir: ws1, args: []string{"clean", "--dry-run"}})
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "would remove") || !strings.Contains(res.stdout, ws1) {
			t.Fatalf("jail clean --dry-run:\n%s%s", res.stdout, res.stderr)
		}
		if _, err := os.Stat(filepath.Join(h1, ".cache/tool/entry")); err != nil {
			t.Fatalf("the dry run removed something: %v", err)
		}
		res = r.jail(t, call{dir: ws1, args: []string{"clean"}})
		mustExit(t, res, 0)
		if _, err := os.Lstat(h1); !os.IsNotExist(err) {
			t.Fatalf("jail clean left %s: %v\n%s", h1, err, res.stdout)
		}
		res = r.sh(t, ws1, `cat "$HOME/.cache/tool/entry" "$HOME/.bashrc" 2>/dev/null; exit 0`)
		mustExit(t, res, 0)
		if strings.TrimSpace(res.stdout) != "" {
			t.Fatalf("the home after jail clean still has what the runs before left: %q", res.stdout)
		}
	})
}

// TestPersistentHomeCleanDoesNotFollow: what a sandbox leaves in its home (a symlink to a host
// file of the user's, read-only directories as Go's module cache makes them) is removed by
// `jail clean` without following the symlink.
func TestPersistentHomeCleanDoesNotFollow(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-homeclean-")
		r.cleanAfter(t, ws)
		path, content := r.canary(t)
		res := r.sh(t, ws, `ln -s `+filepath.Dir(path)+` "$HOME/link" && ln -s `+path+` "$HOME/file" && mkdir -p "$HOME/ro/sub" && echo x > "$HOME/ro/sub/f" && chmod 0444 "$HOME/ro/sub/f" && chmod 0555 "$HOME/ro/sub" "$HOME/ro" && mkdir -p "$HOME/locked/in" && chmod 0 "$HOME/locked/in" "$HOME/locked" && echo ok`)
		mustExit(t, res, 0)
		res = r.jail(t, call{dir: ws, args: []string{"clean"}})
		mustExit(t, res, 0)
		checkCanary(t, path, content)
		if h := r.sandboxHomes(t)[ws]; h != "" {
			t.Fatalf("home %s still recorded after jail clean", h)
		}
	})
}

// TestPersistentHomeGoCaches: Go's build and module caches live in the home, so the second
// build of a module compiles nothing, and after `go get` (through the proxy, to the module
// proxy this machine is configured with) `go test` works with the network off.
func TestPersistentHomeGoCaches(t *testing.T) {
	goBin := "/usr/local/go/bin/go"
	if _, err := os.Stat(goBin); err != nil {
		t.Skipf("requires Go at %s (inside the sandbox, /usr is the system's): %v", goBin, err)
	}
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-gocache-")
		r.cleanAfter(t, ws)
		r.writeFile(t, filepath.Join(ws, "go.mod"), "module example.com/m\n\ngo 1.22\n")
		r.writeFile(t, filepath.Join(ws, "main.go"), "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"built\") }\n")
		// A project in a git repository, as most are (go build stamps the VCS state).
		gitInit := exec.Command("git", "init", "-q", ws)
		r.prepare(gitInit)
		if out, err := gitInit.CombinedOutput(); err != nil {
			t.Fatalf("git init: %v: %s", err, out)
		}
		build := func() result {
			return r.jail(t, call{dir: ws, limit: 5 * time.Minute, args: []string{"run", "--", goBin, "build", "-x", "-o", "/tmp/m", "."}})
		}
		first := build()
		mustExit(t, first, 0)
		second := build()
		mustExit(t, second, 0)
		if n := strings.Count(second.stderr, "/compile "); n != 0 {
			t.Fatalf("the second go build compiled %d packages (the build cache did not last)", n)
		}
		t.Logf("go build in jail: first %s, second %s", first.elapsed.Round(time.Millisecond), second.elapsed.Round(time.Millisecond))
	})
}

// TestPolicyPathMissing: a ro or rw path that a policy file names and that does not exist is
// reported at FILE:LINE and key, with the fix, by jail run and by jail policy check; the
// message never names a flag the user did not type.
func TestPolicyPathMissing(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-missing-")
		cfg := r.dir(t, "jail-it-missingcfg-")
		missing := filepath.Join(cfg, "not-yet")
		file := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, file, "[sandbox]\n# caches\nrw = [\""+missing+"\"]\n")
		want := file + ":3: sandbox.rw: " + missing + " does not exist: create it (mkdir -p " + missing
		res := r.jail(t, call{dir: ws, args: []string{"run", "--policy", file, "--", "/bin/true"}})
		mustExit(t, res, 2)
		if !strings.Contains(res.stderr, want) || strings.Contains(res.stderr, "--rw") {
			t.Fatalf("jail run stderr:\n%s\nwant a line with %q and no --rw", res.stderr, want)
		}
		res = r.jail(t, call{dir: ws, args: []string{"policy", "check", file}})
		mustExit(t, res, 2)
		if !strings.Contains(res.stderr, want) {
			t.Fatalf("jail policy check stderr:\n%s\nwant %q", res.stderr, want)
		}
		// Created, the same policy runs and binds it.
		if err := os.Mkdir(missing, 0o755); err != nil {
			t.Fatal(err)
		}
		r.own(t, missing)
		res = r.jail(t, call{dir: ws, args: []string{"run", "--policy", file, "--", "/bin/sh", "-c", "echo w > " + missing + "/f"}})
		mustExit(t, res, 0)
		if b, _ := os.ReadFile(filepath.Join(missing, "f")); string(b) != "w\n" {
			t.Fatalf("the created rw path was not bound: %q", b)
		}
	})
}

// reachable skips unless rawURL answers from this host, and returns what a policy needs to let
// the sandbox reach its host through the proxy: the allow entry, and the host's addresses that
// are not public (a machine may reach a registry through a mirror or gateway at a private or
// reserved address; the policy then allows exactly those, as its operator would).
func reachable(t *testing.T, rawURL string) (allow string, private []string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 15 * time.Second}
	resp, err := client.Get(rawURL)
	if err != nil {
		t.Skipf("requires %s reachable from this host: %v", rawURL, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Skipf("requires %s reachable from this host: %s", rawURL, resp.Status)
	}
	addrs, err := net.DefaultResolver.LookupNetIP(t.Context(), "ip", u.Hostname())
	if err != nil {
		t.Skipf("requires %s to resolve on this host: %v", u.Hostname(), err)
	}
	for _, a := range addrs {
		if !publicAddr(a) {
			private = append(private, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()).String())
		}
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return u.Hostname() + ":" + port, private
}

// caEnv passes the certificate authority this machine's tools are configured with, if any.
func caEnv() []string {
	if ca := os.Getenv("NODE_EXTRA_CA_CERTS"); ca != "" {
		return []string{"NODE_EXTRA_CA_CERTS=" + ca}
	}
	return nil
}

// TestPersistentHomeOffline: what a run downloaded into its home is there for the next run of
// the workspace with the network off: Go modules after `go get` (go test runs offline), and
// the package npx fetched (npx runs it again without the registry). The downloads go through
// jail's proxy to the Go module proxy and the npm registry this machine is configured with.
func TestPersistentHomeOffline(t *testing.T) {
	goBin := "/usr/local/go/bin/go"
	if _, err := os.Stat(goBin); err != nil {
		t.Skipf("requires Go at %s: %v", goBin, err)
	}
	goAllow, goPrivate := reachable(t, "https://proxy.golang.org/github.com/google/go-cmp/@v/list")
	out, err := exec.Command("npm", "config", "get", "registry").Output()
	if err != nil {
		t.Skipf("requires npm's registry setting: %v", err)
	}
	registry := strings.TrimSuffix(strings.TrimSpace(string(out)), "/")
	npmAllow, npmPrivate := reachable(t, registry+"/semver")
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-offline-")
		r.cleanAfter(t, ws)
		cfg := r.dir(t, "jail-it-offlinecfg-")
		policyFile := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, policyFile, netPolicy("proxy", "", filepath.Join(cfg, "audit.jsonl"),
			[]string{goAllow, npmAllow}, append(append([]string{}, goPrivate...), npmPrivate...)))
		r.writeFile(t, filepath.Join(ws, "go.mod"), "module example.com/m\n\ngo 1.22\n")
		r.writeFile(t, filepath.Join(ws, "m_test.go"), "package m\n\nimport (\n\t\"testing\"\n\n\t\"github.com/google/go-cmp/cmp\"\n)\n\nfunc TestDiff(t *testing.T) {\n\tif d := cmp.Diff(1, 1); d != \"\" {\n\t\tt.Fatal(d)\n\t}\n}\n")
		gitInit := exec.Command("git", "init", "-q", ws)
		r.prepare(gitInit)
		if out, err := gitInit.CombinedOutput(); err != nil {
			t.Fatalf("git init: %v: %s", err, out)
		}
		online := func(argv ...string) result {
			args := append([]string{"run", "--policy", policyFile, "--env", "npm_config_registry=" + registry + "/", "--"}, argv...)
			return r.jail(t, call{dir: ws, env: caEnv(), args: args, limit: 5 * time.Minute})
		}
		offline := func(argv ...string) result {
			args := append([]string{"run", "--net", "none", "--env", "GOPROXY=off", "--env", "npm_config_registry=" + registry + "/", "--"}, argv...)
			return r.jail(t, call{dir: ws, env: caEnv(), args: args, limit: 5 * time.Minute})
		}
		res := online(goBin, "get", "github.com/google/go-cmp@v0.6.0")
		mustExit(t, res, 0)
		res = offline(goBin, "test", "./...")
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "ok") {
			t.Fatalf("go test offline: %q\n%s", res.stdout, res.stderr)
		}
		res = online("npx", "--yes", "semver@7.6.3", "1.2.3")
		mustExit(t, res, 0)
		res = offline("npx", "--yes", "semver@7.6.3", "1.2.3")
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "1.2.3") {
			t.Fatalf("npx offline: %q\n%s", res.stdout, res.stderr)
		}
		// Host side: the module and npx's package are in the workspace's persistent home.
		h := r.sandboxHomes(t)[ws]
		for _, p := range []string{"go/pkg/mod/cache/download/github.com/google/go-cmp/@v/v0.6.0.zip", ".npm/_npx"} {
			if _, err := os.Stat(filepath.Join(h, p)); err != nil {
				t.Errorf("not in the persistent home %s: %v", h, err)
			}
		}
	})
}

// TestServeHome: the tool workers and bash calls of `jail serve` and `jail tool` get the
// workspace's persistent home, as `jail run` does, while several of them run at once: what one
// bash call leaves in ~/.cache is there for the next session's calls and for `jail run`, and
// another workspace's sandboxes do not see it. Judged on the host side too: the files are in
// the workspace's home directory.
func TestServeHome(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws, other := r.dir(t, "jail-it-servehome-"), r.dir(t, "jail-it-servehome2-")
		r.cleanAfter(t, ws)
		r.cleanAfter(t, other)
		pol, _ := r.toolPolicy(t, r.dir(t, "jail-it-cfg-"), "")
		s := r.serve(t, ws, "--policy", pol, "--max-concurrency", "4")
		// Four bash calls at once, each in a sandbox of its own, all
		// making the same mountpoints and directories in the one home.
		const n = 4
		for i := 1; i <= n; i++ {
			s.send(fmt.Sprintf(`{"id":%d,"tool":"bash","args":{"command":"mkdir -p \"$HOME/.cache/serve\" && echo call-%d > \"$HOME/.cache/serve/%d\" && git config --global user.name served-%d && echo home=$HOME"}}`, i, i, i, i))
		}
		for range n {
			res := s.next()
			if res.Type != "result" || res.Result == nil || res.Result.IsError || !strings.Contains(res.Result.Content, "home=") {
				t.Fatalf("bash call: %+v\nstderr: %s", res, s.err.String())
			}
		}
		s.in.Close()
		s.cmd.Wait()
		host := r.sandboxHomes(t)[ws]
		if host == "" {
			t.Fatalf("jail serve made no persistent home for %s: %v", ws, r.sandboxHomes(t))
		}
		for i := 1; i <= n; i++ {
			if b, err := os.ReadFile(filepath.Join(host, ".cache/serve", strconv.Itoa(i))); err != nil || string(b) != fmt.Sprintf("call-%d\n", i) {
				t.Fatalf("host side of the home: file %d: %q, %v", i, b, err)
			}
		}
		// The next session, jail tool and jail run find what the calls left.
		s2 := r.serve(t, ws, "--policy", pol)
		if res := s2.call(1, "bash", `{"command":"cat $HOME/.cache/serve/1 $HOME/.cache/serve/4; git config --global user.name"}`); res.Result == nil ||
			!strings.Contains(res.Result.Content, "call-1") || !strings.Contains(res.Result.Content, "call-4") || !strings.Contains(res.Result.Content, "served-") {
			t.Fatalf("a second jail serve session lost the home: %+v", res)
		}
		res := r.jail(t, call{dir: ws, args: []string{"tool", "--policy", pol, "-w", ws, "bash", `{"command":"cat $HOME/.cache/serve/2"}`}})
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "call-2") {
			t.Fatalf("jail tool bash did not see the home:\n%s\n%s", res.stdout, res.stderr)
		}
		res = r.sh(t, ws, `cat "$HOME/.cache/serve/3"`)
		mustExit(t, res, 0)
		if strings.TrimSpace(res.stdout) != "call-3" {
			t.Fatalf("jail run did not see what jail serve left in the home: %q\n%s", res.stdout, res.stderr)
		}
		// Another workspace's server: a home of its own.
		s3 := r.serve(t, other, "--policy", pol)
		if res := s3.call(1, "bash", `{"command":"ls -A $HOME/.cache 2>&1; echo end"}`); res.Result == nil || strings.Contains(res.Result.Content, "serve") {
			t.Fatalf("another workspace's bash call saw the first one's home: %+v", res)
		}
	})
}
