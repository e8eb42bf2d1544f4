//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAgentConfigReadOnly: inside a profile, nothing a sandbox writes in the agent's config
// directories reaches the host's, so it cannot run or steer the agent when the user later
// starts it outside jail. Each name the review found writable is attempted, those that exist
// at launch (read-only inside: the host's, bound) and those that do not (the sandbox's own
// copy: written there, never on the host): env files the host's agent exports to its
// children, local settings with hooks, rules, instructions, memory, shell snapshots, plugin
// and binary directories, trusted-folder lists. The host's home is checked after; the state
// shared with the host (logins, histories, Codex's sessions) is written through, and the
// private state lands in the workspace's persistent home.
func TestAgentConfigReadOnly(t *testing.T) {
	type prof struct {
		name     string
		existing []string // files made on the host before the run
		attack   []string // files the sandbox tries to write (directories on the way made first)
		state    []string // files the sandbox must be able to write, on the host after
		private  []string // files the sandbox must be able to write, in its home and not on the host
		extra    string   // more of the attack, as shell
	}
	profs := []prof{
		{name: "codex",
			existing: []string{".codex/config.toml", ".codex/AGENTS.md", ".codex/auth.json"},
			attack: []string{".codex/.env", ".codex/AGENTS.override.md", ".codex/instructions.md", ".codex/hooks.json",
				".codex/config.toml", ".codex/AGENTS.md", ".codex/prompts/p.md", ".codex/rules/r.rules", ".codex/skills/s/SKILL.md",
				".codex/tmp/arg0/apply_patch", ".codex/new/x"},
			state:   []string{".codex/sessions/2026/s.jsonl", ".codex/log/codex-tui.log", ".codex/history.jsonl", ".codex/auth.json"},
			private: []string{".codex/shell_snapshots/s.sh", ".codex/tmp/arg0/apply_patch"},
			// The reviewer's exploit: a library the host's codex would preload into its children.
			extra: `printf 'void f(void){}\n' > /tmp/evil.c && gcc -shared -o ~/.codex/x.so /tmp/evil.c && echo WROTE:.codex/x.so
echo "LD_PRELOAD=$HOME/.codex/x.so" > ~/.codex/.env && echo WROTE:.codex/.env-preload`},
		{name: "claude",
			existing: []string{".claude/settings.json", ".claude/CLAUDE.md", ".claude/.credentials.json"},
			attack: []string{".claude/settings.local.json", ".claude/settings.json", ".claude/rules/r.md", ".claude/statusline-command.sh",
				".claude/keybindings.json", ".claude/hooks/h.sh", ".claude/commands/c.md", ".claude/agents/a.md", ".claude/skills/s/SKILL.md",
				".claude/plugins/p/plugin.json", ".claude/CLAUDE.md", ".claude/shell-snapshots/snapshot-bash-1.sh", ".claude/ide/1.lock",
				".claude/anything-new", ".claude/projects/p/memory/MEMORY.md", ".claude/session-env/s/hook.sh", ".claude/file-history/s/f@v1"},
			state:   []string{".claude/history.jsonl", ".claude/.credentials.json"},
			private: []string{".claude/projects/p/s.jsonl", ".claude/todos/t.json", ".claude/shell-snapshots/snapshot-bash-1.sh", ".claude/ide/1.lock"},
			extra: `mv ~/.claude/settings.json ~/.claude/moved && echo WROTE:.claude/moved
rm -f ~/.claude/settings.json && echo WROTE:rm-settings`},
		{name: "gemini",
			existing: []string{".gemini/settings.json"},
			attack: []string{".gemini/.env", ".gemini/trustedFolders.json", ".gemini/system.md", ".gemini/policies/p.toml",
				".gemini/settings.json", ".gemini/GEMINI.md", ".gemini/commands/c.toml", ".gemini/extensions/e/gemini-extension.json"},
			state:   []string{".gemini/installation_id"},
			private: []string{".gemini/tmp/h/logs.json", ".gemini/tmp/h/checkpoints/c.json"}},
		{name: "opencode",
			existing: []string{".local/share/opencode/auth.json"},
			attack: []string{".local/share/opencode/bin/rg", ".local/share/opencode/snapshot/x/config", ".cache/opencode/node_modules/p/index.js",
				".cache/opencode/package.json", ".config/opencode/opencode.json"},
			state: []string{".local/share/opencode/auth.json"},
			private: []string{".local/share/opencode/storage/s.json", ".local/share/opencode/log/l.log", ".local/share/opencode/opencode.db",
				".local/state/opencode/prompt-history.jsonl"}},
		{name: "aider",
			existing: []string{".aider.conf.yml", ".env"},
			attack:   []string{".aider/oauth-keys.env", ".aider.conf.yml", ".env"},
			private:  []string{".aider/caches/c"}},
	}
	forEach(t, func(t *testing.T, r runner) {
		for _, p := range profs {
			t.Run(p.name, func(t *testing.T) {
				home, err := os.MkdirTemp("/home", "jail-it-agentcfg-")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(home) })
				os.Chmod(home, 0o755)
				for _, f := range p.existing {
					r.writeFile(t, filepath.Join(home, f), "host\n")
				}
				// The opencode profile's cache and config exist on a host where it ran.
				for _, d := range []string{".cache/opencode", ".config/opencode", ".local/share/opencode/bin"} {
					os.MkdirAll(filepath.Join(home, d), 0o700)
				}
				r.own(t, home)
				ws := r.dir(t, "jail-it-agentcfg-ws-")
				r.cleanAfter(t, ws)
				var script strings.Builder
				for _, f := range p.attack {
					script.WriteString(`mkdir -p "$(dirname ~/` + f + `)" 2>/dev/null; echo pwn > ~/` + f + ` && echo WROTE:` + f + "\n")
				}
				for _, f := range append(slices.Clone(p.state), p.private...) {
					script.WriteString(`mkdir -p "$(dirname ~/` + f + `)" && echo state > ~/` + f + ` && echo STATE:` + f + "\n")
				}
				script.WriteString(p.extra + "\nexit 0\n")
				res := r.jail(t, call{dir: ws, env: []string{"HOME=" + home}, args: []string{"run", "--profile", p.name, "--net", "none", "--",
					"/bin/sh", "-c", script.String()}})
				mustExit(t, res, 0)
				// What the host has is read-only inside.
				for _, f := range p.existing {
					if strings.Contains(res.stdout, "WROTE:"+f+"\n") {
						t.Errorf("the host's ~/%s was writable inside the sandbox", f)
					}
				}
				for _, f := range p.attack {
					if b, err := os.ReadFile(filepath.Join(home, f)); err == nil && strings.Contains(string(b), "pwn") {
						t.Errorf("the host's ~/%s was written from inside", f)
					}
					if !slices.Contains(p.existing, f) {
						if _, err := os.Lstat(filepath.Join(home, f)); err == nil {
							t.Errorf("the host's ~/%s was made from inside", f)
						}
					}
				}
				for _, f := range []string{".codex/x.so", ".codex/.env", ".claude/moved"} {
					if _, err := os.Lstat(filepath.Join(home, f)); err == nil {
						t.Errorf("the host's ~/%s was made from inside", f)
					}
				}
				for _, f := range p.existing {
					if b, err := os.ReadFile(filepath.Join(home, f)); err != nil || string(b) != "host\n" && !strings.Contains(strings.Join(p.state, " "), f) {
						t.Errorf("the host's ~/%s: %q, %v", f, b, err)
					}
				}
				homeDir := sandboxHomesIn(home)[ws]
				for _, f := range p.private {
					if !strings.Contains(res.stdout, "STATE:"+f) {
						t.Errorf("private state ~/%s not writable inside:\n%s\n%s", f, res.stdout, res.stderr)
					} else if _, err := os.Lstat(filepath.Join(home, f)); err == nil {
						t.Errorf("private state ~/%s reached the host", f)
					} else if b, err := os.ReadFile(filepath.Join(homeDir, f)); err != nil || string(b) != "state\n" {
						t.Errorf("private state ~/%s not in the workspace's home: %q, %v", f, b, err)
					}
				}
				for _, f := range p.state {
					if !strings.Contains(res.stdout, "STATE:"+f) {
						t.Errorf("state ~/%s not writable inside:\n%s\n%s", f, res.stdout, res.stderr)
					} else if b, err := os.ReadFile(filepath.Join(home, f)); err != nil || string(b) != "state\n" {
						t.Errorf("state ~/%s not on the host: %q, %v", f, b, err)
					}
				}
			})
		}
	})
}
