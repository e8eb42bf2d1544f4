//go:build linux

package integration

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRefusedRunMakesNothing: a run jail refuses (a bad flag value, a
// refused workspace, a bind that does not exist, an unknown profile or
// agent, a policy that does not load, an agent's directory moved outside
// the home) exits 2 and makes nothing on disk: no persistent home under
// the homes directory, none of an agent profile's files in the home, no
// state. Each refusal is checked against a home and XDG directories of the
// test's own, walked before and after, as root and as an unprivileged
// user. Before, the home was made before the workspace and the binds were
// checked (-w /tmp, --ro /missing, --profile nosuch each left a home), and
// jail mcp --agent nosuch left one too.
func TestRefusedRunMakesNothing(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		root := r.dir(t, "jail-it-refused-")
		home := filepath.Join(root, "home")
		ws := filepath.Join(home, "proj")
		bad := filepath.Join(home, "bad")
		for _, d := range []string{ws, filepath.Join(bad, ".jail"), filepath.Join(root, "data"), filepath.Join(root, "state"), filepath.Join(root, "cache"), filepath.Join(root, "config")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		os.WriteFile(filepath.Join(bad, ".jail", "policy.toml"), []byte("[network]\nmode = \"bogus\"\n"), 0o644)
		missing := filepath.Join(root, "missing.toml")
		os.WriteFile(missing, []byte("[sandbox]\nro = [\""+filepath.Join(root, "nonexistent")+"\"]\n"), 0o644)
		r.own(t, root)
		env := []string{"HOME=" + home, "XDG_DATA_HOME=" + filepath.Join(root, "data"), "XDG_STATE_HOME=" + filepath.Join(root, "state"),
			"XDG_CACHE_HOME=" + filepath.Join(root, "cache"), "XDG_CONFIG_HOME=" + filepath.Join(root, "config")}
		before := tree(t, root)
		for _, c := range []struct {
			name string
			dir  string
			args []string
			env  []string
		}{
			{"bad --timeout", ws, []string{"run", "--timeout", "soon", "--", "true"}, nil},
			{"bad --memory", ws, []string{"run", "--memory", "1Q", "--", "true"}, nil},
			{"bad --net", ws, []string{"run", "--net", "wifi", "--", "true"}, nil},
			{"--allow with --net none", ws, []string{"run", "--net", "none", "--allow", "example.com", "--", "true"}, nil},
			{"workspace /tmp", ws, []string{"run", "-w", "/tmp", "--", "true"}, nil},
			{"workspace /tmp, claude", ws, []string{"run", "-w", "/tmp", "--", "claude", "--version"}, nil},
			{"workspace that is not a directory", ws, []string{"run", "-w", missing, "--", "true"}, nil},
			{"--ro that does not exist", ws, []string{"run", "--ro", filepath.Join(root, "nonexistent"), "--", "true"}, nil},
			{"--rw that does not exist", ws, []string{"run", "--rw", filepath.Join(root, "nonexistent"), "--", "true"}, nil},
			{"unknown profile", ws, []string{"run", "--profile", "nosuch", "--", "true"}, nil},
			{"claude's directory outside the home", ws, []string{"run", "--", "claude", "--version"}, []string{"CLAUDE_CONFIG_DIR=/var/lib/elsewhere"}},
			{"project policy that does not load", bad, []string{"run", "--", "true"}, nil},
			{"policy binds a missing path", ws, []string{"run", "--policy", missing, "--", "true"}, nil},
			{"mcp, unknown agent", ws, []string{"mcp", "--agent", "nosuch"}, nil},
			{"tool, unknown agent", ws, []string{"tool", "--agent", "nosuch", "read", `{"path":"x"}`}, nil},
			{"mcp, workspace /tmp", ws, []string{"mcp", "-w", "/tmp"}, nil},
		} {
			res := r.jail(t, call{args: c.args, dir: c.dir, env: append(slices.Clone(env), c.env...)})
			if res.code != 2 {
				t.Errorf("%s: jail %q: exit %d, want 2 (refused)\nstderr: %s", c.name, c.args, res.code, res.stderr)
			}
			if !strings.Contains(res.stderr, "jail") {
				t.Errorf("%s: the refusal does not say it is jail's: %q", c.name, res.stderr)
			}
			if after := tree(t, root); !slices.Equal(after, before) {
				t.Errorf("%s: jail %q was refused but made %q", c.name, c.args, added(before, after))
				before = after
			}
		}
	})
}

// tree lists every path under root.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func added(before, after []string) []string {
	var out []string
	for _, p := range after {
		if !slices.Contains(before, p) {
			out = append(out, p)
		}
	}
	return out
}

// TestNestedRunRefused: jail run inside a jail sandbox cannot make a
// sandbox (seccomp refuses new namespaces there); it says so, as jail,
// with why and what to do, where it used to print a bare "unshare:
// operation not permitted". jail check inside says the same on its launch
// line.
func TestNestedRunRefused(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-nested-")
		res := r.jail(t, call{args: []string{"run", "--ro", suite.bin, "--", suite.bin, "run", "--", "true"}, dir: ws})
		if res.code != 125 {
			t.Fatalf("nested jail run: exit %d, want 125\nstderr: %s", res.code, res.stderr)
		}
		for _, want := range []string{"jail: cannot start the sandbox", "jail refuses to nest", "inside a jail sandbox", "fix: ", "run the command here without jail", "outside, on the host"} {
			if !strings.Contains(res.stderr, want) {
				t.Errorf("nested jail run: stderr lacks %q:\n%s", want, res.stderr)
			}
		}
		res = r.jail(t, call{args: []string{"run", "--ro", suite.bin, "--", suite.bin, "check"}, dir: ws})
		if !strings.Contains(res.stdout+res.stderr, "jail refuses to nest") {
			t.Errorf("jail check inside a sandbox does not say nesting is refused:\n%s%s", res.stdout, res.stderr)
		}
	})
}

// TestProjectWideningSaysWhereToAllow: a project file's key that would
// widen the user's policy is ignored with a warning that names where the
// user allows it (their policy file's path and key, or the flag), and shows
// each value in its own unit: approver_timeout = "30s" used to be
// "29296875K is above the user policy's 5000000000".
func TestProjectWideningSaysWhereToAllow(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-widen-")
		cfg := r.dir(t, "jail-it-widen-cfg-")
		r.writeFile(t, filepath.Join(ws, ".jail", "policy.toml"), "[sandbox]\nrw = [\"/etc\"]\n[limits]\npids = 99999\n[approval]\napprover_timeout = \"30s\"\n")
		res := r.jail(t, call{args: []string{"run", "--", "true"}, dir: ws, env: []string{"XDG_CONFIG_HOME=" + cfg}})
		mustExit(t, res, 0)
		user := filepath.Join(cfg, "jail", "policy.toml")
		for _, want := range []string{
			`sandbox.rw: ignored: /etc is not writable under the user policy; to allow it, add "/etc" to [sandbox] rw in ` + user + ", or pass --rw /etc to jail run",
			"limits.pids: ignored: 99999 is above the user policy's 4096; to allow it, set [limits] pids = 99999 in " + user + ", or pass --pids 99999",
			`approval.approver_timeout: ignored: 30s is above the user policy's 5s; to allow it, set [approval] approver_timeout = "30s" in ` + user,
		} {
			if !strings.Contains(res.stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
			}
		}
	})
}

// TestAgentTelemetryOneLine: an agent profile's telemetry and update hosts stay refused, and
// a run that asks for them gets one line for all of them, not one each (Gemini's
// play.googleapis.com on every run); another host keeps its own line. The claude profile
// turns Claude Code's telemetry, error reports and update checks off with its own variables.
// Judged on jail's stderr and the sandbox's environment, through the real proxy.
func TestAgentTelemetryOneLine(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		home, err := os.MkdirTemp("/home", "jail-it-telemetry-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(home) })
		os.Chmod(home, 0o755)
		ws := filepath.Join(home, "proj")
		os.Mkdir(ws, 0o755)
		r.own(t, home)
		env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
		script := `for h in play.googleapis.com registry.npmjs.org play.googleapis.com other.example; do curl -s -o /dev/null --max-time 10 https://$h/ ; done; true`
		res := r.jail(t, call{args: []string{"run", "--profile", "gemini", "--", "/bin/sh", "-c", script}, dir: ws, env: env})
		mustExit(t, res, 0)
		var refused []string
		for _, l := range strings.Split(res.stderr, "\n") {
			if strings.HasPrefix(l, "jail: network: refused") {
				refused = append(refused, l)
			}
		}
		if len(refused) != 2 || !strings.Contains(refused[0], "refused play.googleapis.com:443") || !strings.Contains(refused[0], "the gemini profile leaves closed") ||
			!strings.Contains(refused[0], "registry.npmjs.org:443") || !strings.Contains(refused[1], "refused other.example:443: not in allow (add --allow other.example)") {
			t.Errorf("want one line for gemini's telemetry and update hosts and one for other.example, got:\n%s", strings.Join(refused, "\n"))
		}
		res = r.jail(t, call{args: []string{"run", "--profile", "claude", "--", "/bin/sh", "-c", "env | grep -E '^(DISABLE_|CLAUDE_CODE_DISABLE_NONESSENTIAL)' | sort"}, dir: ws, env: env})
		mustExit(t, res, 0)
		if res.stdout != "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1\nDISABLE_AUTOUPDATER=1\nDISABLE_ERROR_REPORTING=1\nDISABLE_TELEMETRY=1\n" {
			t.Errorf("the claude profile's opt-outs: %q", res.stdout)
		}
	})
}

// TestNpmTestQuietOffline: npm test in a project, with the network off (the default), runs
// and prints no jail line: npm's update notifier asked the registry on every command and made
// jail print that the network is off, on runs that need none. A command that does look a
// name up still gets the line.
func TestNpmTestQuietOffline(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-npmtest-")
		r.writeFile(t, filepath.Join(ws, "package.json"), `{"name":"p","version":"1.0.0","scripts":{"test":"node -e \"console.log('tests pass')\""}}`)
		res := r.jail(t, call{args: []string{"run", "--", "npm", "test"}, dir: ws})
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "tests pass") || strings.Contains(res.stderr, "jail: ") {
			t.Errorf("npm test offline: stdout %q, stderr %q (want no jail line)", res.stdout, res.stderr)
		}
		res = r.jail(t, call{args: []string{"run", "--", "npm", "view", "semver", "version"}, dir: ws})
		if !strings.Contains(res.stderr, "jail: network: registry.npmjs.org: the network is off") {
			t.Errorf("npm view offline does not say the network is off: %q", res.stderr)
		}
	})
}

// TestToolRefusalNamesThePass: jail tool bash with nobody to ask is refused, and says which
// policy key would let it run (it said only "no one to ask"); a guarded command names the
// guard.
func TestToolRefusalNamesThePass(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-toolpass-")
		cfg := r.dir(t, "jail-it-toolpass-cfg-")
		env := []string{"XDG_CONFIG_HOME=" + cfg, "XDG_STATE_HOME=" + cfg}
		res := r.jail(t, call{args: []string{"tool", "bash", `{"command":"ls"}`}, dir: ws, env: env})
		if !strings.Contains(res.stdout, "no one to ask") || !strings.Contains(res.stdout, `to run it without asking: approval.auto_approve = [\"bash\"]`) {
			t.Errorf("jail tool bash: %s%s", res.stdout, res.stderr)
		}
		res = r.jail(t, call{args: []string{"tool", "bash", `{"command":"rm -r x"}`}, dir: ws, env: env})
		if !strings.Contains(res.stdout, `[guards] disable = [\"rm-recursive\"]`) {
			t.Errorf("jail tool bash rm -r: %s%s", res.stdout, res.stderr)
		}
	})
}

// TestUnknownNamesRefused: every name jail does not know, given to
// --profile, --agent or --role of run, tool, mcp or policy explain, is
// refused with exit 2 in one line that names what is known, the flag that
// names one and the policy table that defines one. Before, --profile said
// "no such profile", --agent "unknown agent ... define one", and --role
// only "resolve: unknown role".
func TestUnknownNamesRefused(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-names-")
		for _, c := range []struct {
			args []string
			want []string
		}{
			{[]string{"run", "--profile", "cladue", "--", "true"}, []string{`jail run: unknown profile "cladue" (known: aider, claude,`, "none", "--profile names one", "[profiles.cladue]"}},
			{[]string{"tool", "--agent", "cluade", "read", `{"path":"x"}`}, []string{`jail tool: unknown agent "cluade" (known:`, "claude", "--agent", "[agents.cluade]"}},
			{[]string{"tool", "--role", "fixx", "read", `{"path":"x"}`}, []string{`jail tool: unknown role "fixx" (known: the built-in roles build, fix,`, "--role", "[roles.fixx]"}},
			{[]string{"policy", "explain", "--agent", "cluade"}, []string{`jail policy explain: unknown agent "cluade" (known:`, "--agent", "[agents.cluade]"}},
			{[]string{"policy", "explain", "--role", "fixx"}, []string{`jail policy explain: unknown role "fixx"`, "--role", "[roles.fixx]"}},
			{[]string{"mcp", "--agent", "cluade"}, []string{`jail mcp: unknown agent "cluade"`, "--agent", "[agents.cluade]"}},
		} {
			res := r.jail(t, call{args: c.args, dir: ws})
			if res.code != 2 {
				t.Errorf("jail %q: exit %d, want 2\n%s", c.args, res.code, res.stderr)
			}
			if strings.Count(strings.TrimSpace(res.stderr), "\n") != 0 {
				t.Errorf("jail %q: not one line: %q", c.args, res.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("jail %q: %q does not say %q", c.args, res.stderr, w)
				}
			}
		}
	})
}
