package policy

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Home modes of [Sandbox.Home].
const (
	HomePersistent = "persistent" // a directory of the workspace's own, kept between runs
	HomeEmpty      = "empty"      // a fresh empty tmpfs every run
)

func homeModes() []string { return []string{HomeEmpty, HomePersistent} } // strictest first

// Profile is an agent profile: what an agent CLI needs besides the workspace, under
// [profiles.NAME]. A built-in profile (claude, codex, gemini, aider, opencode) is overridden key
// by key: a key the table sets replaces the built-in's value, the others stay. docs/agents.md
// describes each built-in and why its paths are split between rw and ro.
type Profile struct {
	// Commands are the command base names that choose the profile when --profile is not given.
	// Empty keeps the built-in's; a new profile without commands is chosen by --profile only.
	Commands []string `toml:"commands" json:"commands"`
	// Own lists the agent's directories under ~ that are the sandbox's own inside: a directory
	// of the workspace's persistent home (of the empty home without one), writable, in which
	// every entry the host's directory holds at launch is bound read-only from the host, except
	// the Private names, the RW and RWFiles paths (bound read-write) and the Seed files. So the
	// host's settings, hooks, instructions and plugins are seen and cannot be changed; anything
	// the agent writes or renames there reaches only the sandbox's copy, which lasts with the
	// workspace's home. Empty keeps the built-in's.
	Own []string `toml:"own" json:"own"`
	// Private lists entries of an Own directory that the host's do not show, though the host
	// has them: state the agent writes that the host's agent would later load, restore or run
	// (Claude Code's shell snapshots, session environments, memory under projects/, file
	// history). Inside, each is the sandbox's own. Each must be a direct entry of an Own
	// directory. Empty keeps the built-in's.
	Private []string `toml:"private" json:"private"`
	// RW lists directories under ~ bound read-write from the host: session state shared with
	// the host's agent, data it writes that no program later runs or loads as config. Created
	// private (0700) when missing. Empty keeps the built-in's.
	RW []string `toml:"rw" json:"rw"`
	// RWFiles lists files under ~ bound read-write from the host (login, history, an install
	// id): written in place, or by a rename the bind refuses (EBUSY) and the agent then falls
	// back from to a copy in place. A missing one is created empty (0600), except JSON, where
	// an empty file is not valid for every agent: that stays missing unless Create lists it,
	// and the agent writes the sandbox's own. Empty keeps the built-in's.
	RWFiles []string `toml:"rw_files" json:"rw_files"`
	// Create lists RWFiles that are created on the host when missing although they are JSON
	// (as "{}"), for an agent that reads that as no login (Claude Code's login file): a first
	// login inside then reaches the host's file. Empty keeps the built-in's.
	Create []string `toml:"create" json:"create"`
	// ConfigEnv lists the variables that move the agent's files, as NAME=~/path (the agent
	// uses $NAME where it would use ~/path) or NAME/REL=~/path (it uses $NAME/REL there).
	// When the caller sets NAME to a directory under its home, every profile path under
	// ~/path is taken at the same place under $NAME instead, and NAME is passed into the
	// sandbox. Set outside the home, the profile refuses to run. Empty keeps the built-in's.
	ConfigEnv []string `toml:"config_env" json:"config_env"`
	// SetEnv lists NAME=VALUE variables set in the sandbox (a VALUE starting with ~/ is under
	// the home): where the agent keeps state that must not reach the host's config directory,
	// such as Codex's databases (CODEX_SQLITE_HOME). A variable the caller sets with --env
	// wins. Empty keeps the built-in's.
	SetEnv []string `toml:"set_env" json:"set_env"`
	// RO lists paths under ~ bound read-only from the host, whole, when they exist: config
	// directories and files the agent only reads. A path listed here that lies beneath an RW
	// directory is kept read-only in place (a missing one created empty first). Empty keeps
	// the built-in's.
	RO []string `toml:"ro" json:"ro"`
	// Seed lists files under ~ copied from the host into the workspace's persistent home when
	// the home has none (the agent rewrites them by renaming a temporary file over them, and
	// they may steer the agent on the host: the sandbox gets its own copy). Empty keeps the
	// built-in's.
	Seed []string `toml:"seed" json:"seed"`
	// Allow lists the hosts the profile opens through the egress proxy (network.allow syntax).
	// Empty keeps the built-in's.
	Allow []string `toml:"allow" json:"allow"`
	// Env lists variables passed from the caller (pass-list syntax: NAME or PREFIX*).
	// Empty keeps the built-in's.
	Env []string `toml:"env" json:"env"`
	// Quiet lists hosts (network.allow syntax) the agent asks for telemetry, crash reports or
	// update checks, which the profile leaves closed where its SetEnv cannot turn them off
	// (Gemini's play.googleapis.com, Codex's update check): refused like any host not allowed,
	// they are named on stderr in one line for all of them, the first time one is refused,
	// rather than one line each on every run (the audit log has every refusal). An --allow or
	// [network] allow entry opens one as usual. Empty keeps the built-in's.
	Quiet []string `toml:"quiet" json:"quiet"`
	// Disabled turns the profile off: no command chooses it and --profile refuses it.
	// Absent means false.
	Disabled bool `toml:"disabled" json:"disabled"`

	// noAllow and noEnv are set where a project file narrowed Allow or Env to nothing, which
	// an empty list cannot say (it keeps the built-in's).
	noAllow, noEnv bool
}

// BuiltinProfiles are the profiles jail knows without a policy. The split of each agent's
// files between Own, Private, RW, RWFiles, RO and Seed is explained in docs/agents.md, from
// what each agent was seen to write in a session.
func BuiltinProfiles() map[string]Profile {
	return map[string]Profile{
		"claude": {
			Commands: []string{"claude"},
			Own:      []string{"~/.claude"},
			Private: claudePrivate("projects", "todos", "statsig", "debug", "file-history", "session-env", "plans",
				"shell-snapshots", "ide", "backups", "sessions", "cache", "jobs", "tasks", "teams", "telemetry",
				"usage-data", "startup-perf", "traces", "paste-cache", "shares", "feedback-bundles", "image-cache",
				"daemon", "daemon.log", "daemon.status.json", "daemon.scheduled.status.json", "mcp-needs-auth-cache.json",
				"gh-pr-status-cache.json", ".last-cleanup", ".last-update-result.json", ".update.lock", ".deep-link-register-failed"),
			RWFiles:   []string{"~/.claude/history.jsonl", "~/.claude/.credentials.json"},
			Create:    []string{"~/.claude/.credentials.json"},
			ConfigEnv: []string{"CLAUDE_CONFIG_DIR=~/.claude", "CLAUDE_CONFIG_DIR/.claude.json=~/.claude.json"},
			Seed:      []string{"~/.claude.json"},
			Allow:     []string{"api.anthropic.com:443", "console.anthropic.com:443", "claude.ai:443", "platform.claude.com:443"},
			Env:       []string{"ANTHROPIC_*", "CLAUDE_CODE_*", "DISABLE_*", "MAX_THINKING_TOKENS"},
			// Claude Code's own opt-outs: its telemetry, error reports, update checks and
			// release notes (raw.githubusercontent.com) go to hosts the profile does not open,
			// and the install is read-only inside. The three DISABLE_ variables are what
			// older versions read.
			SetEnv: []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_AUTOUPDATER=1"},
			Quiet:  []string{"statsig.anthropic.com:443", "*.sentry.io:443", "*.datadoghq.com:443", "browser-intake-us5-datadoghq.com:443", "cdn.growthbook.io:443", "storage.googleapis.com:443"},
		},
		"codex": {
			Commands:  []string{"codex"},
			Own:       []string{"~/.codex"},
			Private:   []string{"~/.codex/tmp", "~/.codex/.tmp", "~/.codex/shell_snapshots", "~/.codex/.sandbox_migration", "~/.codex/memories"},
			RW:        []string{"~/.codex/sessions", "~/.codex/archived_sessions", "~/.codex/log", "~/.codex/thread-writer-locks"},
			RWFiles:   []string{"~/.codex/history.jsonl", "~/.codex/auth.json", "~/.codex/installation_id"},
			ConfigEnv: []string{"CODEX_HOME=~/.codex"},
			SetEnv:    []string{"CODEX_SQLITE_HOME=~/.local/state/jail-codex"},
			Allow:     []string{"api.openai.com:443", "auth.openai.com:443", "chatgpt.com:443"},
			Env:       []string{"OPENAI_*", "CODEX_API_KEY", "RUST_LOG"},
			// Codex has no variable for these: its update check, its metrics, the tip it fetches
			// at start (raw.githubusercontent.com/openai/codex/main/announcement_tip.toml) and
			// github.com, which it asks at start too.
			Quiet: []string{"api.github.com:443", "ab.chatgpt.com:443", "raw.githubusercontent.com:443", "github.com:443"},
		},
		"gemini": {
			Commands:  []string{"gemini"},
			Own:       []string{"~/.gemini"},
			Private:   []string{"~/.gemini/tmp", "~/.gemini/history", "~/.gemini/projects.json", "~/.gemini/antigravity"},
			RWFiles:   []string{"~/.gemini/oauth_creds.json", "~/.gemini/google_accounts.json", "~/.gemini/installation_id", "~/.gemini/user_id"},
			ConfigEnv: []string{"GEMINI_CLI_HOME=~"},
			Allow: []string{"generativelanguage.googleapis.com:443", "cloudcode-pa.googleapis.com:443", "oauth2.googleapis.com:443",
				"accounts.google.com:443", "www.googleapis.com:443"},
			Env: []string{"GEMINI_*", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GEMINI_BASE_URL"},
			// Gemini CLI's usage statistics and update notice are settings only (the host's
			// settings.json, read-only inside), no variable.
			Quiet: []string{"play.googleapis.com:443", "registry.npmjs.org:443"},
		},
		"aider": {
			Commands: []string{"aider"},
			Own:      []string{"~/.aider"},
			Private:  []string{"~/.aider/caches", "~/.aider/analytics.json"},
			RO:       []string{"~/.aider.conf.yml", "~/.aider.model.settings.yml", "~/.aider.model.metadata.json", "~/.env"},
			Allow:    []string{"api.openai.com:443", "api.anthropic.com:443", "openrouter.ai:443"},
			Env:      []string{"AIDER_*", "OPENAI_*", "ANTHROPIC_*", "OPENROUTER_API_KEY"},
			// aider reads every option from AIDER_*: no update check, no analytics.
			SetEnv: []string{"AIDER_CHECK_UPDATE=false", "AIDER_ANALYTICS=false"},
			Quiet:  []string{"pypi.org:443", "*.posthog.com:443", "api.mixpanel.com:443"},
		},
		"opencode": {
			Commands: []string{"opencode"},
			Own:      []string{"~/.local/share/opencode", "~/.config/opencode"},
			Private: []string{"~/.config/opencode/.gitignore", "~/.config/opencode/package.json", "~/.config/opencode/bun.lock", "~/.config/opencode/node_modules",
				"~/.local/share/opencode/opencode.db", "~/.local/share/opencode/opencode.db-shm", "~/.local/share/opencode/opencode.db-wal",
				"~/.local/share/opencode/storage", "~/.local/share/opencode/log", "~/.local/share/opencode/snapshot",
				"~/.local/share/opencode/repos", "~/.local/share/opencode/tool-output"},
			RO:        []string{"~/.cache/opencode"},
			RWFiles:   []string{"~/.local/share/opencode/auth.json"},
			ConfigEnv: []string{"XDG_DATA_HOME=~/.local/share", "XDG_CONFIG_HOME=~/.config", "XDG_CACHE_HOME=~/.cache"},
			Allow:     []string{"api.anthropic.com:443", "api.openai.com:443", "opencode.ai:443", "models.dev:443", "openrouter.ai:443"},
			Env:       []string{"OPENCODE_*", "ANTHROPIC_*", "OPENAI_*", "OPENROUTER_API_KEY"},
			SetEnv:    []string{"OPENCODE_DISABLE_AUTOUPDATE=1"},
		},
	}
}

// claudePrivate is Claude Code's private state: names in ~/.claude.
func claudePrivate(names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "~/.claude/" + n
	}
	return out
}

// Profile returns the effective profile name: the built-in with the policy's overrides, or a
// profile the policy defines. ok is false for an unknown or disabled name.
func (p *Policy) Profile(name string) (prof Profile, ok bool) {
	b, builtin := BuiltinProfiles()[name]
	o, set := p.Profiles[name]
	if !builtin && !set {
		return Profile{}, false
	}
	if set {
		for _, f := range []struct{ dst, src *[]string }{
			{&b.Commands, &o.Commands}, {&b.Own, &o.Own}, {&b.Private, &o.Private}, {&b.RW, &o.RW}, {&b.RWFiles, &o.RWFiles}, {&b.Create, &o.Create},
			{&b.ConfigEnv, &o.ConfigEnv}, {&b.SetEnv, &o.SetEnv}, {&b.RO, &o.RO}, {&b.Seed, &o.Seed}, {&b.Allow, &o.Allow}, {&b.Env, &o.Env}, {&b.Quiet, &o.Quiet},
		} {
			if len(*f.src) > 0 {
				*f.dst = slices.Clone(*f.src)
			}
		}
		b.Disabled = o.Disabled
		if o.noAllow {
			b.Allow = nil
		}
		if o.noEnv {
			b.Env = nil
		}
	}
	if b.Disabled {
		return Profile{}, false
	}
	return b, true
}

// ProfileFor returns the profile a command chooses by its base name ("" for none).
func (p *Policy) ProfileFor(command string) string {
	base := filepath.Base(command)
	names := slices.Sorted(maps.Keys(BuiltinProfiles()))
	for n := range p.Profiles {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range names {
		if prof, ok := p.Profile(n); ok && slices.Contains(prof.Commands, base) {
			return n
		}
	}
	return ""
}

// ProfileNames lists every profile that can be chosen.
func (p *Policy) ProfileNames() []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(BuiltinProfiles())) {
		if _, ok := p.Profile(n); ok {
			out = append(out, n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(p.Profiles)) {
		if _, builtin := BuiltinProfiles()[n]; !builtin {
			if _, ok := p.Profile(n); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// validateProfiles checks [profiles.*] and expands their paths. Profile paths must lie under
// ~: a profile shows an agent its own files in the home, nothing else of the host.
func (v *validator) validateProfiles(p *Policy) {
	for _, name := range slices.Sorted(maps.Keys(p.Profiles)) {
		prof := p.Profiles[name]
		key := "profiles." + name
		for _, l := range []struct {
			key  string
			list []string
		}{{"own", prof.Own}, {"private", prof.Private}, {"rw", prof.RW}, {"rw_files", prof.RWFiles}, {"create", prof.Create}, {"ro", prof.RO}, {"seed", prof.Seed}} {
			for i, x := range l.list {
				if !strings.HasPrefix(x, "~/") || strings.ContainsAny(x, "*?[") || slices.Contains(strings.Split(x, "/"), "..") {
					v.add(key+"."+l.key, "%q must be a path under ~/ without globs or .. (a profile shows an agent its own files in the home)", x)
					continue
				}
				l.list[i] = filepath.Clean(x)
			}
		}
		for _, h := range prof.Allow {
			if err := checkAllowHost(h); err != nil {
				v.add(key+".allow", "%v", err)
			}
		}
		for _, h := range prof.Quiet {
			if err := checkAllowHost(h); err != nil {
				v.add(key+".quiet", "%v", err)
			}
		}
		for _, c := range prof.Commands {
			if c == "" || strings.Contains(c, "/") {
				v.add(key+".commands", "%q is not a command base name (accepted: \"claude\")", c)
			}
		}
		for _, x := range prof.Private {
			if len(prof.Own) > 0 && !slices.ContainsFunc(prof.Own, func(d string) bool { return filepath.Dir(filepath.Clean(x)) == filepath.Clean(d) }) {
				v.add(key+".private", "%q is not a direct entry of a directory in own", x)
			}
		}
		for _, e := range prof.ConfigEnv {
			n, d, ok := strings.Cut(e, "=")
			name, rel, _ := strings.Cut(n, "/")
			if !ok || name == "" || !envPattern(name) || strings.Contains(name, "*") || !(d == "~" || strings.HasPrefix(d, "~/")) ||
				rel != "" && (filepath.Clean(rel) != rel || filepath.IsAbs(rel) || strings.HasPrefix(rel, "..")) {
				v.add(key+".config_env", "%q is not NAME=~/path or NAME/REL=~/path (accepted: \"CLAUDE_CONFIG_DIR=~/.claude\")", e)
			}
		}
		for _, e := range prof.SetEnv {
			if n, _, ok := strings.Cut(e, "="); !ok || n == "" || strings.ContainsAny(n, "*") || !envPattern(n) {
				v.add(key+".set_env", "%q is not NAME=VALUE (accepted: \"CODEX_SQLITE_HOME=~/.local/state/jail-codex\")", e)
			}
		}
		for _, e := range prof.Env {
			if !envPattern(e) {
				v.add(key+".env", "%q is not a variable name (accepted: NAME or a prefix like LC_*)", e)
			}
		}
	}
}

// ExpandProfilePath turns a profile's "~/x" into a path under home.
func ExpandProfilePath(p, home string) string {
	return filepath.Join(home, strings.TrimPrefix(p, "~/"))
}

// recordOrigins remembers where the file wrote each sandbox.ro and sandbox.rw entry.
func (f *parsed) recordOrigins() {
	p := f.policy
	if p.origins == nil {
		p.origins = map[string]origin{}
	}
	for _, l := range []struct {
		key  string
		list []string
	}{{"sandbox.ro", p.Sandbox.RO}, {"sandbox.rw", p.Sandbox.RW}} {
		for _, x := range l.list {
			p.origins[l.key+"\x00"+x] = origin{f.name, f.line(l.key)}
		}
	}
}

// MissingPaths reports each sandbox.ro and sandbox.rw path written in a policy file that does
// not exist, at the file, line and key it was written on, with the fix. A bind needs something
// to bind; jail will not create a path a policy names. Globs (which match what exists) and the
// default system directories (some systems lack /lib32 or /nix/store) are not reported.
func (p *Policy) MissingPaths() []error {
	var errs []error
	for _, l := range []struct {
		key  string
		list []string
	}{{"sandbox.ro", p.Sandbox.RO}, {"sandbox.rw", p.Sandbox.RW}} {
		for _, x := range l.list {
			o, ok := p.origins[l.key+"\x00"+x]
			if !ok || hasGlob(x) || slices.Contains(DefaultRO(), x) {
				continue
			}
			if _, err := os.Stat(x); errors.Is(err, os.ErrNotExist) {
				fix := fmt.Sprintf("create it (mkdir -p %s, or the file) or remove it from %s", x, l.key)
				errs = append(errs, &FieldError{File: o.file, Line: o.line, Key: l.key, Msg: fmt.Sprintf("%s does not exist: %s", x, fix)})
			}
		}
	}
	return errs
}
