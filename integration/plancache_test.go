//go:build linux

package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
)

// The plan cache (docs/plan-cache.md): a repeated `jail run` is carried
// out by the binary's constructor from a stored plan. These tests attack
// what is new about that path: the entry as a target, a stale plan after
// the host changed, and the constructor's own supervision.

// cacheRun runs script in ws with the plan cache traced, its entries kept
// in cache.
func (r runner) cacheRun(t *testing.T, ws, cache, script string, extra ...string) (result, []string) {
	t.Helper()
	env := append([]string{"JAIL_PLAN_CACHE=trace", "XDG_CACHE_HOME=" + cache}, extra...)
	res := r.jail(t, call{args: []string{"run", "--", "/bin/sh", "-c", script}, dir: ws, env: env})
	var trace []string
	res.stderr, trace = cutTrace(res.stderr)
	return res, trace
}

func traced(trace []string, prefix string) bool {
	for _, l := range trace {
		if strings.HasPrefix(l, "jail: plan cache: "+prefix) {
			return true
		}
	}
	return false
}

// entries reads every file of the cache's plan directory.
func entries(t *testing.T, cache string) map[string]string {
	t.Helper()
	dir := filepath.Join(cache, "jail", "plans")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read the plan cache: %v", err)
	}
	m := map[string]string{}
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		m[e.Name()] = string(b)
	}
	return m
}

// TestPlanCacheCannotBePlanted: with the cache and the user's policy
// inside the workspace (a workspace that is $HOME), the sandbox tries to
// rewrite the stored entry, to move the directories aside and rebuild
// them, and to plant a user policy: all of it fails. An entry rewritten
// by someone who can write it (here the test, on the host) fails
// authentication (the key is in the kernel keyring), so /etc/shadow stays
// hidden.
func TestPlanCacheCannotBePlanted(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-pc-home-")
		cache := filepath.Join(ws, ".cache")
		config := "XDG_CONFIG_HOME=" + filepath.Join(ws, ".config")
		if res, trace := r.cacheRun(t, ws, cache, "true", config); res.code != 0 || !traced(trace, "stored") {
			t.Fatalf("first run: exit %d, trace %q, stderr %s", res.code, trace, res.stderr)
		}
		before := entries(t, cache)
		attack := `
for d in .cache .cache/jail .cache/jail/plans .config .config/jail; do
  mv "$d" "$d.old" 2>/dev/null && echo "moved $d"
done
rm -rf .cache/jail .config/jail 2>/dev/null
mkdir -p .config/jail 2>/dev/null
printf '[sandbox.env_set]\nPWNED = "1"\n' >.config/jail/policy.toml 2>/dev/null && echo "planted a policy"
for f in .cache/jail/plans/*.plan; do
  sed 's#/etc/shadow#/etc/shadoW#' "$f" >/tmp/entry && cat /tmp/entry >"$f" 2>/dev/null && echo "rewrote an entry"
done
echo planted >.cache/jail/plans/0000000000000000.plan 2>/dev/null && echo "planted an entry"
ln -s / .cache/jail/plans/link 2>/dev/null && echo "planted a link"
true`
		res, trace := r.cacheRun(t, ws, cache, attack, config)
		if res.code != 0 || !traced(trace, "used") {
			t.Fatalf("attack run: exit %d, trace %q, stderr %s", res.code, trace, res.stderr)
		}
		if strings.TrimSpace(res.stdout) != "" {
			t.Fatalf("the sandbox changed jail's own directories:\n%s", res.stdout)
		}
		after := entries(t, cache)
		for k, v := range before {
			if after[k] != v || len(after) != len(before) {
				t.Fatalf("the plan cache changed: entry %s", k)
			}
		}
		for _, p := range []string{".cache.old", ".config.old", ".config/jail/policy.toml"} {
			if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
				t.Fatalf("%s exists on the host", p)
			}
		}
		// Whoever can write the entry cannot make one jail accepts.
		for name, body := range after {
			path := filepath.Join(cache, "jail", "plans", name)
			if err := os.WriteFile(path, []byte(strings.ReplaceAll(body, "/etc/shadow\x00", "/etc/shadoW\x00")), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		res, trace = r.cacheRun(t, ws, cache, `echo "PWNED=$PWNED"; wc -c </etc/shadow`, config)
		if traced(trace, "used") || !traced(trace, "not used: the entry is not signed") {
			t.Fatalf("the rewritten entry was not refused: trace %q", trace)
		}
		if got := strings.Fields(res.stdout); len(got) != 2 || got[0] != "PWNED=" || got[1] != "0" {
			t.Fatalf("after the attack: %q (want no PWNED and an empty /etc/shadow)", res.stdout)
		}
		if _, trace := r.cacheRun(t, ws, cache, "true", config); !traced(trace, "used") {
			t.Fatalf("no good entry after the refused one: %q", trace)
		}
	})
}

// TestPlanCacheSeesHostChanges: a stored plan is not used once what it was
// made from changed; each change is attacked through the next run.
func TestPlanCacheSeesHostChanges(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-pc-ws-")
		cache := r.dir(t, "jail-it-pc-cache-")
		outside := r.dir(t, "jail-it-pc-out-")
		canary, content := r.canary(t)
		r.writeFile(t, filepath.Join(ws, "secret.txt"), "SECRET-IN-WS")
		for i, want := range []string{"stored", "used"} {
			if res, trace := r.cacheRun(t, ws, cache, "cat secret.txt"); res.stdout != "SECRET-IN-WS" || !traced(trace, want) {
				t.Fatalf("run %d: output %q, trace %q, stderr %s", i, res.stdout, trace, res.stderr)
			}
		}

		// A protected path planted as a symlink to a host file.
		link := filepath.Join(ws, ".envrc")
		if err := os.Symlink(canary, link); err != nil {
			t.Fatal(err)
		}
		os.Lchown(link, r.uid, r.gid)
		res, trace := r.cacheRun(t, ws, cache, "echo pwned >.envrc; echo pwned >>.envrc; cat .envrc")
		if traced(trace, "used") {
			t.Fatalf("a plan made without .envrc was used with a symlink there: %q", trace)
		}
		checkCanary(t, canary, content)
		os.Remove(link)

		// .git replaced by a symlink to a directory outside.
		hooks := filepath.Join(outside, "git", "hooks")
		r.writeFile(t, filepath.Join(hooks, "README"), "hooks")
		if err := os.Symlink(filepath.Join(outside, "git"), filepath.Join(ws, ".git")); err != nil {
			t.Fatal(err)
		}
		os.Lchown(filepath.Join(ws, ".git"), r.uid, r.gid)
		res, trace = r.cacheRun(t, ws, cache, "echo evil >.git/hooks/pre-commit; echo evil >.git/config; true")
		if traced(trace, "used") {
			t.Fatalf("a plan made without .git was used with a symlink there: %q", trace)
		}
		if ents, _ := os.ReadDir(hooks); len(ents) != 1 {
			t.Fatalf("the sandbox wrote into a host directory through .git: %v", ents)
		}
		if _, err := os.Stat(filepath.Join(outside, "git", "config")); err == nil {
			t.Fatal("the sandbox created .git/config through a symlink")
		}
		os.Remove(filepath.Join(ws, ".git"))

		// The project policy tightened: the file must be hidden at once.
		r.cacheRun(t, ws, cache, "true") // a plan for the workspace as it is now
		r.writeFile(t, filepath.Join(ws, ".jail", "policy.toml"), "[sandbox]\nhide = [\""+filepath.Join(ws, "secret.txt")+"\"]\n")
		res, trace = r.cacheRun(t, ws, cache, "cat secret.txt")
		if strings.Contains(res.stdout, "SECRET-IN-WS") || traced(trace, "used") {
			t.Fatalf("a plan made before the project policy hid the file was used: output %q, trace %q", res.stdout, trace)
		}
		if !traced(trace, "not used: a policy file changed") {
			t.Fatalf("trace %q does not name the policy change", trace)
		}
		// The workspace afterwards holds no placeholder of any run.
		ents, _ := os.ReadDir(ws)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if strings.Join(names, " ") != ".jail secret.txt" {
			t.Fatalf("workspace after the runs: %v", names)
		}
	})
}

// TestPlanCacheTrustsOnlyPrivateEntries: an entry that someone else could
// have written is not used.
func TestPlanCacheTrustsOnlyPrivateEntries(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-pc-ws-")
		cache := r.dir(t, "jail-it-pc-cache-")
		r.cacheRun(t, ws, cache, "true")
		dir := filepath.Join(cache, "jail", "plans")
		var entry string
		for name := range entries(t, cache) {
			entry = filepath.Join(dir, name)
		}
		breaks := []struct {
			name    string
			do      func()
			needsRt bool
		}{
			{"entry writable by the group", func() { os.Chmod(entry, 0o664) }, false},
			{"directory open to others", func() { os.Chmod(dir, 0o755) }, false},
			{"entry of another user", func() { os.Chown(entry, r.uid+1, r.gid) }, true},
			{"directory replaced by a symlink", func() {
				os.Rename(dir, dir+".real")
				os.Symlink(dir+".real", dir)
			}, false},
		}
		for _, b := range breaks {
			if b.needsRt && !suite.root {
				continue
			}
			if res, trace := r.cacheRun(t, ws, cache, "true"); !traced(trace, "used") {
				t.Fatalf("%s: the intact entry was not used: %q %s", b.name, trace, res.stderr)
			}
			b.do()
			res, trace := r.cacheRun(t, ws, cache, "true")
			if res.code != 0 || traced(trace, "used") || !traced(trace, "not used") {
				t.Fatalf("%s: exit %d, trace %q", b.name, res.code, trace)
			}
			// Repair what the Go path does not (it rewrites the entry).
			if fi, err := os.Lstat(dir); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				os.Remove(dir)
				os.Rename(dir+".real", dir)
			}
			os.Chmod(dir, 0o700)
			r.cacheRun(t, ws, cache, "true")
		}
	})
}

// TestPlanCacheSignalDuringStart: a SIGTERM that reaches jail while the
// cached sandbox starts ends the command; it is neither lost nor followed
// by a second start, and nothing is left behind.
func TestPlanCacheSignalDuringStart(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-pc-ws-")
		cache := r.dir(t, "jail-it-pc-cache-")
		marker := "pcsig" + strings.ReplaceAll(filepath.Base(ws), "-", "")
		script := "sleep 0.6; echo RAN-" + marker
		r.cacheRun(t, ws, cache, script)
		for i := 0; i < 16; i++ {
			cmd := exec.Command(suite.bin, "run", "--", "/bin/sh", "-c", script)
			cmd.Dir = ws
			r.prepare(cmd, "XDG_CACHE_HOME="+cache)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(i%8) * time.Millisecond)
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
			if strings.Contains(out.String(), "RAN-") {
				t.Fatalf("SIGTERM after %d ms was lost: the command ran to its end: %q", i%8, out.String())
			}
		}
		if pids := testutil.Processes(marker); len(pids) > 0 {
			t.Fatalf("processes left behind: %v", pids)
		}
		if ents, _ := os.ReadDir(ws); len(ents) != 0 {
			t.Fatalf("the workspace kept %d entries (placeholders?)", len(ents))
		}
	})
}

// TestPlanCacheSameEnvironment: the command's environment from the cache
// is the one the Go supervisor builds: pass-list, --env NAME, the
// policy's env_set, the defaults for PATH and TMPDIR. (A run with
// --env NAME=VALUE is not cached: TestNoSecretsOnDisk.)
func TestPlanCacheSameEnvironment(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-pc-ws-")
		cache := r.dir(t, "jail-it-pc-cache-")
		cfg := r.dir(t, "jail-it-pc-cfg-")
		r.writeFile(t, filepath.Join(cfg, "jail", "policy.toml"), "[sandbox.env_set]\nSET = \"given\"\n")
		args := []string{"run", "--env", "PASSED", "--env", "UNSET", "--", "/usr/bin/env"}
		env := []string{"XDG_CACHE_HOME=" + cache, "XDG_CONFIG_HOME=" + cfg, "LC_ALL=C", "LC_TIME=POSIX", "TERM=xterm", "TZ=UTC",
			"API_TOKEN=secret", "PASSED=from-caller", "SHELL=/bin/sh"}
		var outs []string
		for i, mode := range []string{"off", "trace", "trace"} {
			res := r.jail(t, call{args: args, dir: ws, env: append([]string{"JAIL_PLAN_CACHE=" + mode}, env...)})
			rest, trace := cutTrace(res.stderr)
			if res.code != 0 || (i == 2 && !traced(trace, "used")) {
				t.Fatalf("run %d (%s): exit %d, trace %q, stderr %s", i, mode, res.code, trace, rest)
			}
			outs = append(outs, res.stdout)
		}
		if outs[0] != outs[2] {
			t.Fatalf("environment differs:\nplanned:\n%s\ncached:\n%s", outs[0], outs[2])
		}
		for _, want := range []string{"SET=given\n", "PASSED=from-caller\n", "TMPDIR=/tmp\n", "LC_TIME=POSIX\n"} {
			if !strings.Contains(outs[2], want) {
				t.Fatalf("cached environment lacks %q:\n%s", want, outs[2])
			}
		}
		if strings.Contains(outs[2], "API_TOKEN") || strings.Contains(outs[2], "UNSET") {
			t.Fatalf("cached environment has what it must not:\n%s", outs[2])
		}
	})
}

// TestPlanCacheFallsBack: a cached sandbox whose command cannot be
// executed hands the run to the Go supervisor, which reports the error
// once, with the status a shell gives; the command never runs twice, and
// an entry whose sandbox failed that way is kept.
func TestPlanCacheFallsBack(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-pc-ws-")
		cache := r.dir(t, "jail-it-pc-cache-")
		r.cacheRun(t, ws, cache, "true")
		before := entries(t, cache)
		env := []string{"JAIL_PLAN_CACHE=trace", "XDG_CACHE_HOME=" + cache}
		res := r.jail(t, call{args: []string{"run", "--", "no-such-command-here"}, dir: ws, env: env})
		rest, trace := cutTrace(res.stderr)
		if res.code != 127 || !traced(trace, "used") || !traced(trace, "the cached plan failed") {
			t.Fatalf("exit %d, trace %q, stderr %s", res.code, trace, rest)
		}
		if n := strings.Count(rest, "no-such-command-here"); n != 1 {
			t.Fatalf("the error was reported %d times: %q", n, rest)
		}
		after := entries(t, cache)
		for k, v := range before {
			if after[k] != v {
				t.Fatalf("the entry %s was removed or changed by a failed exec", k)
			}
		}
		// A command that appends once to a file shows one run.
		res, trace = r.cacheRun(t, ws, cache, "echo run >>runs; cat runs")
		if !traced(trace, "used") || res.stdout != "run\n" {
			t.Fatalf("trace %q, output %q", trace, res.stdout)
		}
	})
}

// TestUserPolicyGuarded: with the workspace as $HOME, the user's policy
// file kept elsewhere in the home through a symlink (as dotfile managers
// do) can be written neither through the link nor at its target; a policy
// file with a second hard link is refused, since the other name could be
// written.
func TestUserPolicyGuarded(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-home-")
		config := filepath.Join(ws, ".config")
		policy := "[sandbox]\nhide = [\"" + filepath.Join(ws, "nothing") + "\"]\n"
		r.writeFile(t, filepath.Join(ws, "dotfiles", "jail", "policy.toml"), policy)
		os.MkdirAll(filepath.Join(config, "jail"), 0o755)
		link := filepath.Join(config, "jail", "policy.toml")
		if err := os.Symlink("../../dotfiles/jail/policy.toml", link); err != nil {
			t.Fatal(err)
		}
		r.own(t, config)
		env := []string{"XDG_CONFIG_HOME=" + config, "XDG_CACHE_HOME=" + r.dir(t, "jail-it-pc-cache-")}
		res := r.jail(t, call{args: []string{"run", "--", "/bin/sh", "-c", `
echo '[sandbox.env_set]' >>.config/jail/policy.toml 2>/dev/null && echo "wrote through the link"
echo '[sandbox.env_set]' >>dotfiles/jail/policy.toml 2>/dev/null && echo "wrote the target"
rm -f .config/jail/policy.toml 2>/dev/null; ln -s /tmp/p .config/jail/policy.toml 2>/dev/null && echo "replaced the link"
mv dotfiles dotfiles.old 2>/dev/null && echo "moved dotfiles"
true`}, dir: ws, env: env})
		if res.code != 0 || strings.TrimSpace(res.stdout) != "" {
			t.Fatalf("exit %d, the sandbox changed the user's policy:\n%s%s", res.code, res.stdout, res.stderr)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "dotfiles", "jail", "policy.toml")); string(b) != policy {
			t.Fatalf("the policy changed on the host: %q", b)
		}
		// A second hard link of the policy: refused, with the fix.
		if err := os.Link(filepath.Join(ws, "dotfiles", "jail", "policy.toml"), filepath.Join(ws, "policy-copy.toml")); err != nil {
			t.Fatal(err)
		}
		res = r.jail(t, call{args: []string{"run", "--", "true"}, dir: ws, env: env})
		if res.code != 2 || !strings.Contains(res.stderr, "hard links") {
			t.Fatalf("a hard-linked policy: exit %d, %s", res.code, res.stderr)
		}
	})
}

// TestKeyringCannotBeAllowed: [seccomp] allow cannot lift the rule that
// keeps the kernel keyring (the plan cache's key) out of the sandbox.
func TestKeyringCannotBeAllowed(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		pol := filepath.Join(r.dir(t, "jail-it-pol-"), "p.toml")
		r.writeFile(t, pol, "[seccomp]\nallow = [\"keyctl\"]\n")
		res := r.jail(t, call{args: []string{"run", "--policy", pol, "--", "true"}, dir: ws})
		if res.code == 0 || !strings.Contains(res.stderr, "cannot be lifted") {
			t.Fatalf("allow keyctl: exit %d, %s", res.code, res.stderr)
		}
	})
}

// TestPlanCacheFollowsNoSymlink: a cache directory replaced by a symlink
// to another directory of the user's is not used, and that directory is
// neither made private nor pruned.
func TestPlanCacheFollowsNoSymlink(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-pc-ws-")
		cache := r.dir(t, "jail-it-pc-cache-")
		shared := r.dir(t, "jail-it-shared-")
		for i := 0; i < 300; i++ {
			r.writeFile(t, filepath.Join(shared, fmt.Sprintf("%03d.plan", i)), "x")
		}
		os.MkdirAll(filepath.Join(cache, "jail"), 0o700)
		os.Symlink(shared, filepath.Join(cache, "jail", "plans"))
		r.own(t, cache)
		res, trace := r.cacheRun(t, ws, cache, "true")
		if res.code != 0 || traced(trace, "used") || traced(trace, "stored") {
			t.Fatalf("exit %d, trace %q", res.code, trace)
		}
		fi, _ := os.Stat(shared)
		ents, _ := os.ReadDir(shared)
		if fi.Mode().Perm() != 0o755 || len(ents) != 300 {
			t.Fatalf("the directory behind the symlink was changed: mode %v, %d entries", fi.Mode().Perm(), len(ents))
		}
	})
}

// TestGuardKeepsSymlinkedDirsUsable: a symlinked cache directory in a
// workspace that is $HOME stays a usable symlink (pinned, not covered),
// while jail's own directory beneath it stays read-only; `--rw ~` starts.
func TestGuardKeepsSymlinkedDirsUsable(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-home-")
		os.MkdirAll(filepath.Join(ws, "data", "cache"), 0o755)
		os.Symlink("data/cache", filepath.Join(ws, ".cache"))
		r.own(t, ws)
		env := []string{"XDG_CACHE_HOME=" + filepath.Join(ws, ".cache")}
		res := r.jail(t, call{args: []string{"run", "--", "/bin/sh", "-c", `
mkdir -p .cache/pip && echo pip-ok
test -L .cache && echo still-a-link
rm .cache 2>/dev/null || echo link-kept
touch .cache/jail/x 2>/dev/null || echo jail-dir-read-only`}, dir: ws, env: env})
		for _, want := range []string{"pip-ok", "still-a-link", "link-kept", "jail-dir-read-only"} {
			if !strings.Contains(res.stdout, want) {
				t.Fatalf("exit %d, output %q lacks %q; stderr %s", res.code, res.stdout, want, res.stderr)
			}
		}
		if _, err := os.Stat(filepath.Join(ws, "data", "cache", "pip")); err != nil {
			t.Fatalf("the write through the symlinked cache did not reach the host: %v", err)
		}
		// The runner's own home, as prepare sets HOME.
		home := "/root"
		if u, err := user.LookupId(strconv.Itoa(r.uid)); err == nil && r.uid != 0 {
			home = u.HomeDir
		}
		res = r.jail(t, call{args: []string{"run", "--rw", home, "--", "/bin/sh", "-c", "test -w \"$HOME\" && echo home-writable"}, dir: ws, env: env})
		if res.code != 0 || !strings.Contains(res.stdout, "home-writable") {
			t.Fatalf("--rw of the home: exit %d, %q, %s", res.code, res.stdout, res.stderr)
		}
	})
}

// TestUserPolicyGuardedWhenUncreatable: a policy directory jail cannot
// create (its parent is read-only to its owner) could still be created by
// a sandbox that chmods the parent: the parent is kept read-only instead.
// A read-only policy file with a second link is refused (the owner could
// chmod the other name), and the policy's approver command is guarded.
func TestUserPolicyGuardedWhenUncreatable(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		if r.uid == 0 {
			t.Skip("root writes a read-only directory anyway; the case is an unprivileged owner's")
		}
		ws := r.dir(t, "jail-it-home-")
		config := filepath.Join(ws, ".config")
		os.Mkdir(config, 0o500)
		r.own(t, ws)
		env := []string{"XDG_CONFIG_HOME=" + config, "XDG_CACHE_HOME=" + r.dir(t, "jail-it-pc-cache-")}
		res := r.jail(t, call{args: []string{"run", "--", "/bin/sh", "-c", `
chmod 700 .config 2>/dev/null && echo "chmod worked"
mkdir -p .config/jail 2>/dev/null && echo "planted a policy dir"
true`}, dir: ws, env: env})
		if res.code != 0 || strings.TrimSpace(res.stdout) != "" {
			t.Fatalf("exit %d: %s%s", res.code, res.stdout, res.stderr)
		}
		if _, err := os.Stat(filepath.Join(config, "jail")); err == nil {
			t.Fatal("the sandbox created the policy directory")
		}
		// A read-only policy with a second name is refused.
		os.Chmod(config, 0o700)
		pol := filepath.Join(config, "jail", "policy.toml")
		r.writeFile(t, pol, "[sandbox]\n")
		os.Chmod(pol, 0o444)
		if err := os.Link(pol, filepath.Join(ws, "pol-link")); err != nil {
			t.Fatal(err)
		}
		res = r.jail(t, call{args: []string{"run", "--", "true"}, dir: ws, env: env})
		if res.code != 2 || !strings.Contains(res.stderr, "hard links") {
			t.Fatalf("a read-only policy with two links: exit %d, %s", res.code, res.stderr)
		}
		os.Remove(filepath.Join(ws, "pol-link"))
		// The approver command the policy names is the supervisor's to
		// run: the sandbox cannot change it.
		appr := filepath.Join(ws, "bin", "appr")
		r.writeFile(t, appr, "#!/bin/sh\necho '{\"decision\":\"deny\"}'\n")
		os.Chmod(appr, 0o755)
		os.Chmod(pol, 0o644)
		r.writeFile(t, pol, "[approval]\napprover = [\""+appr+"\"]\n")
		res = r.jail(t, call{args: []string{"run", "--", "/bin/sh", "-c", "echo 'echo allow' >>bin/appr 2>/dev/null && echo rewrote-approver; true"}, dir: ws, env: env})
		if res.code != 0 || strings.Contains(res.stdout, "rewrote-approver") {
			t.Fatalf("exit %d: the sandbox changed the approver: %s%s", res.code, res.stdout, res.stderr)
		}
	})
}
