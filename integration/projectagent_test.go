//go:build linux

package integration

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestProjectNarrowsAgents: a project's .jail/policy.toml may narrow what an agent gets
// where the user policy leaves it to the defaults: [profiles.claude] allow keeps fewer of
// the profile's hosts (a host the profile has, but the project left out, is refused through
// the proxy; one the profile lacks is not added), disabled = true turns a profile off, and
// [agents.claude] grants and denies narrow the toolset jail tool, mcp and policy explain
// give --agent claude. What would widen (a path, a role, a new host) is ignored with a
// warning naming the user's file. Before, a project's [agents.claude] was ignored whenever
// the user policy had no [agents.claude], and [profiles.*] always.
func TestProjectNarrowsAgents(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-projagent-")
		home := r.dir(t, "jail-it-projagent-home-")
		r.writeFile(t, filepath.Join(ws, ".jail", "policy.toml"), `[agents.claude]
role = "fix"
grants = ["read", "glob", "grep"]
denies = ["grep"]
[profiles.claude]
allow = ["api.anthropic.com:443", "evil.example:443"]
own = ["~/.ssh"]
[profiles.codex]
disabled = true
`)
		env := []string{"HOME=" + home}
		res := r.jail(t, call{args: []string{"policy", "explain", "--agent", "claude", "--json"}, dir: ws, env: env})
		mustExit(t, res, 0)
		var ex struct {
			Toolset struct {
				Granted []struct {
					Tool struct{ Name string } `json:"tool"`
				} `json:"granted"`
				NarrowedBy string `json:"agent_narrowed_by"`
			} `json:"toolset"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &ex); err != nil {
			t.Fatalf("explain --json: %v\n%s", err, res.stdout)
		}
		var granted []string
		for _, g := range ex.Toolset.Granted {
			granted = append(granted, g.Tool.Name)
		}
		slices.Sort(granted)
		if !slices.Equal(granted, []string{"glob", "read"}) || ex.Toolset.NarrowedBy == "" {
			t.Errorf("--agent claude under the project's [agents.claude]: granted %v (narrowed by %q), want glob and read", granted, ex.Toolset.NarrowedBy)
		}
		for _, w := range []string{"agents.claude.role: ignored", "profiles.claude.own: ignored", "profiles.claude.allow: ignored: evil.example:443"} {
			if !strings.Contains(res.stderr, w) {
				t.Errorf("no warning %q:\n%s", w, res.stderr)
			}
		}
		res = r.jail(t, call{args: []string{"tool", "--agent", "claude", "grep", `{"pattern":"x"}`}, dir: ws, env: env})
		if !strings.Contains(res.stdout+res.stderr, "grep") || res.code == 0 && !strings.Contains(res.stdout, `"is_error":true`) {
			t.Errorf("jail tool --agent claude grep ran under a project that denies it: %d\n%s\n%s", res.code, res.stdout, res.stderr)
		}

		// The run: console.anthropic.com is one of the claude profile's hosts, which the
		// project left out; the refusal happens at the proxy, before any name lookup.
		res = r.jail(t, call{args: []string{"run", "--profile", "claude", "--", "curl", "-sS", "-m", "10", "-o", "/dev/null", "https://console.anthropic.com/"}, dir: ws, env: env})
		if res.code == 0 || !strings.Contains(res.stderr, "refused console.anthropic.com:443: not in allow") {
			t.Errorf("a host the project left out of the claude profile was not refused: exit %d\n%s", res.code, res.stderr)
		}
		res = r.jail(t, call{args: []string{"run", "--profile", "codex", "--", "true"}, dir: ws, env: env})
		if res.code != 2 || !strings.Contains(res.stderr, `unknown profile "codex"`) {
			t.Errorf("--profile codex under a project that turns it off: exit %d\n%s", res.code, res.stderr)
		}
	})
}
