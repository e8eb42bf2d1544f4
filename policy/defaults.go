package policy

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The defaults. They are documented in policy.toml.example and README.md (Policy); change them
// together.
const (
	// No timeout by default: `jail run -- claude` is an interactive
	// session that may last hours. A policy sets one for CI; tool calls
	// carry their own per-call timeouts.
	DefaultTimeout = time.Duration(0)
	// DefaultMemory zero means half of the machine's memory
	// (DefaultMemoryFraction), applied at launch: a memory bomb leaves the
	// host the other half, and a large build still fits.
	DefaultMemory = Bytes(0)
	// DefaultPids bounds the sandbox's processes and threads: far above
	// what builds and agents use (make -j with compilers, language
	// servers, test runners: hundreds), far below what takes a host down;
	// a fork bomb stops there.
	DefaultPids           = 4096
	DefaultMemoryFraction = 2
	DefaultOutputChars    = 100000
	// DefaultBackground bounds the background processes of one server: a dev server, a
	// watcher and a database with room to spare, each a sandbox the host pays for.
	DefaultBackground = 4
	DefaultAskTimeout = 2 * time.Minute
	// DefaultRootOnly hides what only root may read under /etc and /opt from a root caller's
	// sandbox (docs/supervisor.md).
	DefaultRootOnly = RootOnlyHide
)

// The [docker] defaults: one container of the browser or desktop tools.
const (
	DefaultDockerMemory    = Bytes(2 << 30)
	DefaultDockerCPUs      = 2.0
	DefaultDockerPids      = 1024
	DefaultDockerTmpfs     = Bytes(512 << 20)
	DefaultDockerLifecycle = LifecycleAgent
	// DefaultDockerIdleGrace keeps an agent's desktop or browser warm between the calls of
	// one piece of work, and releases it when the agent has moved on.
	DefaultDockerIdleGrace = 10 * time.Minute
	DefaultDockerLogBytes  = Bytes(16 << 10)
	DefaultBrowserImage    = "jail-browser:local"
	DefaultDesktopImage    = "jail-desktop:local"
	DefaultDesktopSize     = "1280x800"
)

// [sandbox] root_only values.
const (
	RootOnlyHide = "hide"
	RootOnlyShow = "show"
)

// The private tmpfs sizes, as fractions of the machine's memory, when the policy sets none:
// without them each tmpfs may grow to half the memory (the kernel's default), and where no
// memory cgroup can be made (the rlimit fallback, which does not count tmpfs pages) /tmp,
// /var/tmp, /dev/shm and the home together could take the host down. Together these are
// 7/16 of the memory.
const (
	DefaultTmpFraction  = 8  // /tmp and /var/tmp, each
	DefaultShmFraction  = 16 // /dev/shm
	DefaultHomeFraction = 8  // the empty home
)

// TmpfsSizes returns the sizes of /tmp (and /var/tmp), /dev/shm and the home for a machine
// with memTotal bytes: the policy's values, or the default fractions. A zero memTotal (not
// known) leaves the kernel's defaults.
func (s Sandbox) TmpfsSizes(memTotal int64) (tmp, shm, home int64) {
	pick := func(set Bytes, frac int64) int64 {
		if set > 0 {
			return int64(set)
		}
		return memTotal / frac
	}
	return pick(s.Tmp, DefaultTmpFraction), pick(s.Shm, DefaultShmFraction), pick(s.HomeTmp, DefaultHomeFraction)
}

// DefaultRO returns the system directories bound read-only when the file names none. Entries
// missing on a host (/lib64 on arm64) are skipped by the confinement layer.
func DefaultRO() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc", "/opt", "/nix/store"}
}

// ProtectedPath is one entry of the default protected list and why it is there.
type ProtectedPath struct {
	Path string
	Why  string
	// Later marks an entry protected from the run's end on, not while it lasts: read-only where
	// it exists at launch, moved aside when the run ends where the sandbox made it, and no
	// placeholder held for it meanwhile (what reads it runs when an agent CLI starts, or on a
	// commit once its hooks are installed, rarely during a run: docs/workspace.md). Not in
	// DefaultProtected: such entries are DefaultProtectedLater.
	Later bool
}

// DefaultProtectedPaths is the default protected list: workspace paths the sandbox can neither
// create nor change, whether or not they exist at launch, because a program outside the
// sandbox reads them later and runs what they say. docs/workspace.md is generated from it.
// A glob is allowed in the last component only; it protects the names that match at launch.
// Below the workspace's root each entry's first component counts (gitview: read-only where it
// exists at launch, moved aside when the sandbox made it).
// Shell start-up files are not here: they matter only in a home, and a home as the workspace
// is read-only as a whole (sandbox.home_workspace). Git directories are not listed: the sandbox
// never writes them (docs/git.md).
func DefaultProtectedPaths() []ProtectedPath {
	return []ProtectedPath{
		{".vscode", "VS Code runs `tasks.json` tasks on folder open (`runOn: folderOpen`), and `settings.json` names programs it starts (terminal profiles, formatters, linters, language servers)", false},
		{".idea", "JetBrains IDEs run its run configurations, startup tasks and external tools on the host", false},
		{".devcontainer", "`devcontainer.json`'s `initializeCommand` runs on the host before the container is built", false},
		{".devcontainer.json", "the Dev Containers file under its other name: its `initializeCommand` runs on the host as `.devcontainer/`'s does", true},
		{"*.code-workspace", "a VS Code workspace file carries settings and tasks as `.vscode/` does (the ones at the workspace root at launch; VS Code opens none by itself)", false},
		{".claude/settings.json", "Claude Code's project settings: `hooks` run shell commands on the host, `permissions` and `env` change what it does unasked", false},
		{".claude/settings.local.json", "the same, the per-user file", false},
		{".claude/settings*.json", "any other settings file of Claude Code's present at launch", false},
		{".claude/commands", "Claude Code's custom slash commands: prompts that run tools with the user's rights", false},
		{".claude/agents", "Claude Code's subagents: their prompts and the tools they may use", false},
		{".claude/hooks", "scripts the project's Claude Code hooks run", false},
		{".claude/skills", "Claude Code's skills: instructions it loads on its own, whose `allowed-tools` run without asking", false},
		{".mcp.json", "MCP servers that Claude Code and other clients start on the host", false},
		{".codex", "Codex CLI's project configuration (MCP servers, profiles, sandbox mode) and prompts", false},
		{".envrc", "direnv runs it in the user's shell on `cd` (after `direnv allow`, which an allowed file keeps)", false},
		{".jail", "jail's own project policy (it may only tighten, but a sandbox must not choose how the next one is confined)", false},
		{".gemini", "Gemini CLI's project settings (MCP servers, tool discovery and call commands it runs, hooks) and custom commands", true},
		{".cursor", "Cursor's project MCP servers (`mcp.json`), rules and environment, started and read by the editor on the host", false},
		{".zed", "Zed's project `settings.json` (language server binaries, terminal shell) and `tasks.json`", false},
		{"opencode.json", "opencode's project config: MCP servers it starts, commands, plugins", true},
		{".opencode", "opencode's project agents, commands and plugins (JavaScript it loads and runs)", true},
		{"opencode.*", "opencode's config under its other names (`opencode.jsonc`), present at launch", true},
		{".aider.conf.yml", "aider's config: `lint-cmd` and `test-cmd` are commands aider runs after each edit", true},
		{".husky", "husky's hooks: git runs `.husky/_/*` (`core.hooksPath`), which runs `.husky/<hook>`; the host's `npm install` sets that up", true},
		{".pre-commit-config.yaml", "pre-commit's hooks: `repo: local` entries are commands the host's `git commit` runs once `pre-commit install` ran", true},
		{"lefthook.yml", "lefthook's commands, run by the git hooks lefthook installs", true},
		{"lefthook-local.yml", "lefthook's local overrides, merged over `lefthook.yml`", true},
		{".lefthook", "lefthook's script directories (`.lefthook/<hook>/*`)", true},
		{"lefthook*", "lefthook's config under its other names (`lefthook.yaml`, `.toml`, `.json`, `-local` variants), present at launch", true},
		{".lefthook*", "the same, with a leading dot (`.lefthook.yml`, `.lefthook-local`)", true},
	}
}

// DefaultProtected returns the paths of DefaultProtectedPaths held while a run lasts (the
// default of sandbox.protected).
func DefaultProtected() []string {
	var out []string
	for _, p := range DefaultProtectedPaths() {
		if !p.Later {
			out = append(out, p.Path)
		}
	}
	return out
}

// DefaultProtectedLater returns the paths of DefaultProtectedPaths protected from the run's end
// on (ProtectedPath.Later).
func DefaultProtectedLater() []string {
	var out []string
	for _, p := range DefaultProtectedPaths() {
		if p.Later {
			out = append(out, p.Path)
		}
	}
	return out
}

// DefaultEnv returns the variables passed through when the file names none. Everything else,
// tokens included, stays outside. TMPDIR is not passed: it is set to /tmp, the sandbox's own.
func DefaultEnv() []string {
	return []string{"PATH", "HOME", "LANG", "LC_*", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "COLORTERM"}
}

// Default returns the embedded policy used when no file is given: the workspace read-write,
// system directories read-only, $HOME hidden, no network, the protected paths read-only.
func Default(env Env) *Policy {
	p := &Policy{}
	p.applyDefaults(env)
	return p
}

// applyDefaults fills every field the file left at its zero value.
func (p *Policy) applyDefaults(env Env) {
	s := &p.Sandbox
	if s.Workspace == "" {
		s.Workspace = filepath.Clean(env.Workspace)
	}
	if len(s.RO) == 0 {
		s.RO = DefaultRO()
	}
	if len(s.Hide) == 0 && env.Home != "" {
		s.Hide = []string{filepath.Clean(env.Home)}
	}
	if len(s.Protected) == 0 {
		s.Protected = DefaultProtected()
	}
	if len(s.Env) == 0 {
		s.Env = DefaultEnv()
	}
	if s.EnvSet == nil {
		s.EnvSet = map[string]string{}
	}
	if _, ok := s.EnvSet["TMPDIR"]; !ok {
		s.EnvSet["TMPDIR"] = "/tmp"
	}
	if s.RootOnly == "" {
		s.RootOnly = DefaultRootOnly
	}
	if s.Home == "" {
		s.Home = HomePersistent
	}
	l := &p.Limits
	if l.Timeout == 0 {
		l.Timeout = DefaultTimeout
	}
	if l.Memory == 0 {
		l.Memory = DefaultMemory
	}
	if l.Pids == 0 {
		l.Pids = DefaultPids
	}
	if l.OutputChars == 0 {
		l.OutputChars = DefaultOutputChars
	}
	if l.Background == 0 {
		l.Background = DefaultBackground
	}
	if p.Network.Mode == "" {
		p.Network.Mode = NetNone
	}
	if p.Tools.Profile == "" {
		p.Tools.Profile = ProfileCoding
	}
	if p.Tools.DisclosureBudget == 0 {
		p.Tools.DisclosureBudget = DefaultDisclosureBudget
	}
	if p.Tools.Security == "" {
		p.Tools.Security = SecurityPersonal
	}
	a := &p.Approval
	if a.UnattendedPolicy == "" {
		a.UnattendedPolicy = "deny"
	}
	if a.AutoApproveReadOnly == nil {
		a.AutoApproveReadOnly = boolPtr(true)
	}
	if a.AutoApproveWrite == nil {
		a.AutoApproveWrite = boolPtr(true)
	}
	if a.AskTimeout == 0 {
		a.AskTimeout = DefaultAskTimeout
	}
	if a.ApproverTimeout == 0 {
		a.ApproverTimeout = DefaultApproverTimeout
	}
	if p.Access.Level == "" {
		p.Access.Level = LevelCustom
	}
	if p.Audit.Enabled == nil {
		p.Audit.Enabled = boolPtr(true)
	}
	if p.Audit.Path == "" {
		state := env.XDGStateHome
		if state == "" && env.Home != "" {
			state = filepath.Join(env.Home, ".local", "state")
		}
		if state != "" {
			p.Audit.Path = filepath.Join(state, "jail", "audit.jsonl")
		}
	}
	if p.Roles == nil {
		p.Roles = map[string]RoleSpec{}
	}
	if p.Agents == nil {
		p.Agents = map[string]Agent{}
	}
}

func boolPtr(b bool) *bool { return &b }

// UserFile is where the user's policy lives: $XDG_CONFIG_HOME/jail/policy.toml, falling back to
// ~/.config/jail/policy.toml. Empty if neither can be formed.
func UserFile(env Env) string {
	base := env.XDGConfigHome
	if base == "" || !filepath.IsAbs(base) {
		if env.Home == "" {
			return ""
		}
		base = filepath.Join(env.Home, ".config")
	}
	return filepath.Join(base, "jail", "policy.toml")
}

// ProjectFile is the untrusted per-project policy inside a workspace.
func ProjectFile(workspace string) string {
	return filepath.Join(workspace, ".jail", "policy.toml")
}

// ParseScreenSize reads a "WIDTHxHEIGHT" screen size ([docker] desktop_size).
func ParseScreenSize(s string) (width, height int, err error) {
	w, h, ok := strings.Cut(s, "x")
	width, err1 := strconv.Atoi(w)
	height, err2 := strconv.Atoi(h)
	if !ok || err1 != nil || err2 != nil || width < 64 || height < 64 || width > 8192 || height > 8192 {
		return 0, 0, fmt.Errorf("%q is not a screen size (accepted: WIDTHxHEIGHT, each 64 to 8192, e.g. \"1280x800\")", s)
	}
	return width, height, nil
}
