package policy

import (
	"time"
)

// Policy is one effective policy: the embedded default, a file, or a user file tightened by a
// project file. Paths in it are absolute and `~`-expanded once loading has finished; durations
// and sizes are parsed. The lead builds a run from Sandbox, Limits, Network and Seccomp.
type Policy struct {
	Sandbox  Sandbox             `toml:"sandbox" json:"sandbox"`
	Limits   Limits              `toml:"limits" json:"limits"`
	Network  Network             `toml:"network" json:"network"`
	Seccomp  Seccomp             `toml:"seccomp" json:"seccomp"`
	Tools    Tools               `toml:"tools" json:"tools"`
	Roles    map[string]RoleSpec `toml:"roles" json:"roles"`
	Agents   map[string]Agent    `toml:"agents" json:"agents"`
	Approval Approval            `toml:"approval" json:"approval"`
	Guards   GuardConfig         `toml:"guards" json:"guards"`
	Docker   Docker              `toml:"docker" json:"docker"`
	Audit    Audit               `toml:"audit" json:"audit"`
	Access   Access              `toml:"access" json:"access"`
	// Profiles override built-in agent profiles or define new ones (docs/agents.md).
	Profiles map[string]Profile `toml:"profiles" json:"profiles"`

	// Sources lists the files this policy came from, in load order; empty for the default.
	Sources []string `toml:"-" json:"-"`

	// projectAgents are the limits a project file set on agents the user policy defines no
	// [agents.NAME] for but that are named after an agent profile (so get the default
	// toolset): they only narrow that toolset ([Tighten]).
	projectAgents map[string]projectAgent

	// origins says where each sandbox.ro and sandbox.rw entry was written (key, then the
	// expanded path), so a path that does not exist is reported at its line ([Policy.MissingPaths]).
	origins map[string]origin
}

// origin is a file and line a value was written on.
type origin struct {
	file string
	line int
}

// Sandbox says what the confined process sees.
type Sandbox struct {
	// Workspace is the directory mounted read-write (read-only for roles without fs.write).
	// Empty means the directory jail was started in.
	Workspace string `toml:"workspace" json:"workspace"`
	// RO lists absolute paths (globs and ~ allowed) bound read-only. Empty means the default
	// system directories; set it to replace them.
	RO []string `toml:"ro" json:"ro"`
	// RW lists absolute paths (globs and ~ allowed) bound read-write besides the workspace.
	// Empty means none.
	RW []string `toml:"rw" json:"rw"`
	// Hide lists absolute paths replaced by an empty directory or file. Empty means only $HOME.
	Hide []string `toml:"hide" json:"hide"`
	// Protected lists workspace-relative paths (globs allowed) kept read-only inside a writable
	// workspace, so an agent cannot plant hooks or editor tasks. Empty means the default list.
	Protected []string `toml:"protected" json:"protected"`
	// Env is the pass-list of variable names (a trailing * matches a prefix) copied from jail's
	// environment. Empty means the default list.
	Env []string `toml:"env" json:"env"`
	// EnvSet sets variables inside the sandbox after the pass-list. Empty sets only TMPDIR=/tmp.
	EnvSet map[string]string `toml:"env_set" json:"env_set"`
	// Tmp is the size of each of the private /tmp and /var/tmp (tmpfs), e.g. "512M". Zero
	// means an eighth of the machine's memory (DefaultTmpFraction).
	Tmp Bytes `toml:"tmp" json:"tmp"`
	// Home is "persistent": $HOME inside is a directory of this workspace's own that lasts
	// between runs (caches, an agent's state; docs/home.md), or "empty": a fresh empty tmpfs
	// every run. Empty means persistent.
	Home string `toml:"home" json:"home"`
	// Shm is the size of the private /dev/shm. Zero means a sixteenth of the machine's memory.
	Shm Bytes `toml:"shm" json:"shm"`
	// HomeTmp is the size of the empty private home (a tmpfs, home = "empty"). Zero means an eighth of the
	// machine's memory.
	HomeTmp Bytes `toml:"home_tmp" json:"home_tmp"`
	// RootOnly decides what a caller that is root sees of /etc and /opt: "hide" covers every
	// file and directory there that others may not read, so the sandbox sees them as an
	// unprivileged user would; "show" leaves them readable (only the secrets list is hidden).
	// Empty means "hide". Other callers never read them: the kernel's permissions apply.
	RootOnly string `toml:"root_only" json:"root_only"`
	// WorkspaceRO mounts the workspace read-only for every run and tool call, and removes the
	// tools that need fs.write, so nothing (bash included) can change it. Absent means false.
	WorkspaceRO bool `toml:"workspace_ro" json:"workspace_ro"`
	// HomeWorkspace allows a workspace that is, or contains, the caller's home directory: the
	// home is then read-only, its secrets are hidden, and only the rw paths inside it are
	// writable. Absent means false: such a workspace is refused (docs/workspace.md).
	HomeWorkspace bool `toml:"home_workspace" json:"home_workspace"`

	// ResolvedRO are the ro entries a project file added, already resolved when they were
	// checked: they are bound only while they still resolve to themselves.
	ResolvedRO []string `toml:"-" json:"-"`
}

// Limits bound a run. A zero value in the file means "the default", never "unlimited".
type Limits struct {
	// Timeout kills the whole process tree after this long, e.g. "30s", "10m". Zero means 10m.
	Timeout time.Duration `toml:"timeout" json:"timeout"`
	// Memory caps the sandbox's memory, e.g. "2G". Zero means half of the machine's memory
	// (DefaultMemoryFraction), applied at launch.
	Memory Bytes `toml:"memory" json:"memory"`
	// Pids caps the number of processes and threads. Zero means DefaultPids (4096).
	Pids int64 `toml:"pids" json:"pids"`
	// OutputChars caps captured stdout/stderr each; beyond it output is cut with a marker.
	// Zero means 100000.
	OutputChars int64 `toml:"output_chars" json:"output_chars"`
	// Background caps the background processes (bash run_in_background in jail serve and
	// jail mcp) alive at once in one server, each in a sandbox of its own. Zero means
	// DefaultBackground (4); a negative value refuses run_in_background.
	Background int64 `toml:"background" json:"background"`
}

// Network modes, from the strictest to the most open.
const (
	NetNone        = "none"        // a network namespace with only loopback
	NetProxy       = "proxy"       // egress only through jail's allowlist proxy (HTTP(S) CONNECT)
	NetTransparent = "transparent" // all TCP redirected through the allowlist proxy
	NetHost        = "host"        // the host's network, unfiltered
)

func netModes() []string { return []string{NetNone, NetProxy, NetTransparent, NetHost} }

// Network says what the sandbox may reach.
type Network struct {
	// Mode is none, proxy, transparent or host. Empty means none.
	Mode string `toml:"mode" json:"mode"`
	// Allow lists hosts the proxy lets through: "api.example.com", "*.example.com" (subdomains
	// only), optionally with ":port". Empty means nothing is reachable. "*" and public suffixes
	// such as "*.com" are refused.
	Allow []string `toml:"allow" json:"allow"`
	// Deny lists hosts refused even when Allow matches. Empty means none.
	Deny []string `toml:"deny" json:"deny"`
	// AllowPrivate lists CIDRs of private, loopback or link-local addresses the proxy may
	// connect to. Empty means every private address is refused (SSRF protection).
	AllowPrivate []string `toml:"allow_private" json:"allow_private"`
	// Resolver is the DNS server (ip or ip:port) the proxy resolves with. Empty means the host's.
	Resolver string `toml:"resolver" json:"resolver"`
	// Ask sends a host that is neither allowed nor denied to a person on jail's controlling
	// terminal (as the approval gate's terminal prompt does), within approval.ask_timeout; the
	// answer holds for that host and port for the rest of the run. The address checks and the
	// deny list still apply. False (the default) refuses such hosts; so does having no terminal.
	Ask bool `toml:"ask" json:"ask"`
	// Quiet and QuietProfile are set by a run's agent profile, never by a file: the hosts of
	// Profile.Quiet, whose refusals are named in one line for all of them.
	Quiet        []string `toml:"-" json:"-"`
	QuietProfile string   `toml:"-" json:"-"`
}

// Seccomp adjusts jail's built-in syscall filter.
type Seccomp struct {
	// Deny adds syscalls to the filter's deny list. Empty adds none.
	Deny []string `toml:"deny" json:"deny"`
	// Allow removes syscalls from the default deny list (e.g. "ptrace" for a debugger).
	// Empty removes none.
	Allow []string `toml:"allow" json:"allow"`
	// AllowPtrace lets the command trace its own processes (strace, gdb, ASan/LSan):
	// ptrace, process_vm_readv and process_vm_writev are allowed. jail's pid 1 stays out
	// of reach (it is not dumpable) and nothing outside the sandbox can be named
	// (docs/commands.md). False (the default) refuses them with EPERM; --allow-ptrace
	// sets it for one run.
	AllowPtrace bool `toml:"allow_ptrace" json:"allow_ptrace"`
}

// Tools is the global outer bound on tools, for every agent and role.
type Tools struct {
	// Profile is minimal, coding or full. Empty means coding.
	Profile string `toml:"profile" json:"profile"`
	// Allow, when set, replaces the profile with exactly these tools. Empty means use Profile.
	Allow []string `toml:"allow" json:"allow"`
	// AlsoAllow adds tools to the profile. Empty adds none.
	AlsoAllow []string `toml:"also_allow" json:"also_allow"`
	// Deny removes tools; it wins over everything. Empty removes none.
	Deny []string `toml:"deny" json:"deny"`
	// Security is personal, daemon or public; it strips tools by capability. Empty means personal.
	Security string `toml:"security" json:"security"`
	// Disclosure makes jail serve list short metadata for every tool and full definitions only
	// for tools the caller loaded (load_tool), to spare a model's context when the toolset is
	// large. False (the default) lists full definitions.
	Disclosure bool `toml:"disclosure" json:"disclosure"`
	// DisclosureBudget bounds the loaded definitions, in tokens (about 4 bytes each); the
	// oldest-loaded is unloaded first. Zero means 15000.
	DisclosureBudget int64 `toml:"disclosure_budget" json:"disclosure_budget"`
}

// DefaultDisclosureBudget is the token budget of loaded definitions.
const DefaultDisclosureBudget = 15000

// RoleSpec is a user-defined role under [roles.NAME]. Built-in roles cannot be redefined.
type RoleSpec struct {
	// Description is printed by explain. Empty prints nothing.
	Description string `toml:"description" json:"description"`
	// Remit lists the capabilities the role may use. Empty means none: the role can hold nothing.
	Remit []string `toml:"remit" json:"remit"`
	// MaxRisk is the highest risk a tool in the remit may carry. Empty means read_only.
	MaxRisk string `toml:"max_risk" json:"max_risk"`
	// Defaults are the tools the role holds without grants; each must be inside the remit.
	// Empty means none.
	Defaults []string `toml:"defaults" json:"defaults"`
	// Workspace is "rw" or "ro". Empty means rw if the remit has fs.write, else ro.
	Workspace string `toml:"workspace" json:"workspace"`
}

// Agent names one agent's role and adjustments under [agents.NAME].
type Agent struct {
	// Role is a built-in or [roles.*] role. Empty means custom (nothing by default).
	Role string `toml:"role" json:"role"`
	// Grants add tools from inside the role's remit; a grant outside it is listed as
	// unavailable and has no effect. Empty grants nothing.
	Grants []string `toml:"grants" json:"grants"`
	// Denies remove tools; a deny always wins. Empty denies nothing.
	Denies []string `toml:"denies" json:"denies"`
}

// Approval configures the approval gate (see [Gate] for the order).
type Approval struct {
	// UnattendedPolicy decides write and exec calls when nobody is watching: "allow" or "deny".
	// Empty means deny. Read-only calls always pass; dangerous ones are always refused.
	UnattendedPolicy string `toml:"unattended_policy" json:"unattended_policy"`
	// AutoApproveReadOnly passes read_only calls without asking. Absent means true.
	AutoApproveReadOnly *bool `toml:"auto_approve_read_only" json:"auto_approve_read_only"`
	// AutoApproveWrite passes write calls without asking (the sandbox contains them).
	// Absent means true.
	AutoApproveWrite *bool `toml:"auto_approve_write" json:"auto_approve_write"`
	// AutoApprove lists tools that pass without asking unless a guard or RequireApproval says
	// otherwise. Empty means none.
	AutoApprove []string `toml:"auto_approve" json:"auto_approve"`
	// RequireApproval lists tools that always go to a human (or a persistent grant), whatever
	// their risk. Empty means none.
	RequireApproval []string `toml:"require_approval" json:"require_approval"`
	// GrantsFile is an absolute path to a JSON file of persistent grants. Empty means none.
	GrantsFile string `toml:"grants_file" json:"grants_file"`
	// AskTimeout denies a question nobody answered in time. Zero means 2m.
	AskTimeout time.Duration `toml:"ask_timeout" json:"ask_timeout"`
	// Approver is a command (absolute path, then arguments) asked before a human when a call
	// needs approval; it runs outside every sandbox (see [Approver]). Empty means none.
	Approver []string `toml:"approver" json:"approver"`
	// ApproverTimeout denies a call whose approver has not answered in time. Zero means 5s.
	ApproverTimeout time.Duration `toml:"approver_timeout" json:"approver_timeout"`
}

// GuardConfig adjusts the command guards (see [Guard]).
type GuardConfig struct {
	// Disable lists default guard ids to switch off (see [GuardIDs]). Empty keeps all.
	Disable []string `toml:"disable" json:"disable"`
	// Hard lists extra regular expressions (RE2) whose match denies a command outright.
	// Empty adds none.
	Hard []string `toml:"hard" json:"hard"`
	// Soft lists extra regular expressions whose match sends a command for approval.
	// Empty adds none.
	Soft []string `toml:"soft" json:"soft"`
}

// Docker configures the Docker-backed tool categories.
type Docker struct {
	// Enabled allows the browser and desktop tools to start containers. Absent means false.
	Enabled bool `toml:"enabled" json:"enabled"`
	// BrowserImage is the Chromium image. Empty means DefaultBrowserImage (jail-browser:local, built by make images).
	BrowserImage string `toml:"browser_image" json:"browser_image"`
	// DesktopImage is the Xvfb desktop image. Empty means DefaultDesktopImage (jail-desktop:local, built by make images).
	DesktopImage string `toml:"desktop_image" json:"desktop_image"`
	// Memory caps one container's memory (swap included), e.g. "1G". Zero means
	// DefaultDockerMemory (2G).
	Memory Bytes `toml:"memory" json:"memory"`
	// CPUs caps one container's CPU time in CPUs, e.g. 1.5. Zero means DefaultDockerCPUs (2).
	CPUs float64 `toml:"cpus" json:"cpus"`
	// Pids caps one container's processes and threads. Zero means DefaultDockerPids (1024).
	Pids int64 `toml:"pids" json:"pids"`
	// Tmpfs is the size of a container's /tmp, the only writable place in its read-only root
	// (and of /dev/shm). Zero means DefaultDockerTmpfs (512M).
	Tmpfs Bytes `toml:"tmpfs" json:"tmpfs"`
	// Lifecycle says how long a container lives: "call" (one tool call), "task" (the calls of
	// one task id) or "agent" (one agent's calls, kept warm). Empty means "agent".
	Lifecycle string `toml:"lifecycle" json:"lifecycle"`
	// IdleGrace ends a task's or agent's container after this long without a call, e.g. "5m".
	// Zero means DefaultDockerIdleGrace (10m).
	IdleGrace time.Duration `toml:"idle_grace" json:"idle_grace"`
	// RawLogs puts the tail of a container's stderr into its audit record. Absent means false:
	// the record holds sizes, counts and timing only.
	RawLogs bool `toml:"raw_logs" json:"raw_logs"`
	// LogBytes bounds the stderr tail a container's audit record keeps with raw_logs. Zero
	// means DefaultDockerLogBytes (16K).
	LogBytes Bytes `toml:"log_bytes" json:"log_bytes"`
	// DesktopSize is the virtual screen of the desktop tools, "WIDTHxHEIGHT": the space of
	// every coordinate and screenshot. Empty means DefaultDesktopSize (1280x800).
	DesktopSize string `toml:"desktop_size" json:"desktop_size"`
}

// Container lifecycles ([docker] lifecycle).
const (
	LifecycleCall  = "call"
	LifecycleTask  = "task"
	LifecycleAgent = "agent"
)

// Audit configures the JSON-lines audit log. The log lives outside every sandbox: the
// confinement layer never binds it, so nothing confined can rewrite history.
type Audit struct {
	// Enabled writes a record for every decision. Absent means true.
	Enabled *bool `toml:"enabled" json:"enabled"`
	// Path is the absolute log path. Empty means $XDG_STATE_HOME/jail/audit.jsonl
	// (~/.local/state/jail/audit.jsonl).
	Path string `toml:"path" json:"path"`
	// Fsync syncs after every record; slower, survives a crash. Absent means false.
	Fsync bool `toml:"fsync" json:"fsync"`
}
