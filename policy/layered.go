package policy

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Widening is a key in an untrusted project file that tried to open up what the user's policy
// allows. It is ignored; the CLI prints it as a warning.
type Widening struct {
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Key    string `json:"key"`
	Reason string `json:"reason"`
	// Fix says where the user allows it instead: the key in the user's own policy file (the
	// --policy file when one is given), and the flag of jail run when there is one.
	Fix string `json:"fix,omitempty"`
}

func (w Widening) String() string {
	fix := ""
	if w.Fix != "" {
		fix = "; to allow it, " + w.Fix
	}
	if w.Line > 0 {
		return fmt.Sprintf("%s:%d: %s: ignored: %s%s", w.File, w.Line, w.Key, w.Reason, fix)
	}
	return fmt.Sprintf("%s: %s: ignored: %s%s", w.File, w.Key, w.Reason, fix)
}

// widenFlags are jail run's flags that allow for one run what a project file's key asked
// for: "%s" is the value.
var widenFlags = map[string]string{
	"sandbox.ro": "--ro %s", "sandbox.rw": "--rw %s", "sandbox.env": "--env %s", "network.allow": "--allow %s",
	"network.mode": "--net %s", "limits.timeout": "--timeout %s", "limits.memory": "--memory %s", "limits.pids": "--pids %s",
	"limits.output_chars": "--output-limit %s", "seccomp.allow_ptrace": "--allow-ptrace", "sandbox.home_workspace": "--home-workspace",
}

// widenLists are the keys whose value is a list: the fix adds the entry.
var widenLists = []string{"sandbox.ro", "sandbox.rw", "sandbox.env", "network.allow", "network.allow_private", "seccomp.allow",
	"tools.allow", "tools.also_allow", "approval.auto_approve"}

// widenValues are the keys whose widening has no value of its own to quote: the value that
// would allow it.
var widenValues = map[string]string{
	"seccomp.allow_ptrace": "true", "network.ask": "true", "docker.enabled": "true", "sandbox.home_workspace": "true",
	"approval.auto_approve_read_only": "true", "approval.auto_approve_write": "true", "docker.raw_logs": "true",
	"sandbox.workspace_ro": "false", "audit.enabled": "false", "access.level": `"elevated"`,
}

// widenFix says how the user allows what key (with value val, as the project wrote it; "" for
// none) asked for: in userFile, their own policy, and with a flag where jail run has one. A
// project file is untrusted, so the fix is always the user's to make.
func widenFix(key, val, userFile string) string {
	if userFile == "" {
		userFile = "your policy file (~/.config/jail/policy.toml)"
	}
	section, name := key, ""
	if i := strings.LastIndex(key, "."); i >= 0 {
		section, name = key[:i], key[i+1:]
	}
	var fix string
	switch {
	case strings.HasPrefix(key, "agents.") && strings.Count(key, ".") == 1:
		fix = fmt.Sprintf("define [%s] in %s", key, userFile)
	case strings.HasPrefix(key, "profiles.") && (strings.HasSuffix(key, ".allow") || strings.HasSuffix(key, ".env")) && val != "":
		fix = fmt.Sprintf("add %q to [%s] %s in %s", val, section, name, userFile)
	case strings.HasPrefix(key, "profiles.") && strings.Count(key, ".") == 2:
		fix = fmt.Sprintf("set [%s] %s in %s (a project file cannot)", section, name, userFile)
	case strings.HasPrefix(key, "roles.") && strings.Count(key, ".") == 1, strings.HasPrefix(key, "profiles.") && strings.Count(key, ".") == 1:
		fix = fmt.Sprintf("define it in %s (a project file cannot)", userFile)
	case slices.Contains(widenLists, key) || strings.HasPrefix(key, "agents.") && strings.HasSuffix(key, ".grants"):
		if val == "" {
			return ""
		}
		fix = fmt.Sprintf("add %q to [%s] %s in %s", val, section, name, userFile)
	case widenValues[key] != "":
		val = widenValues[key]
		fix = fmt.Sprintf("set [%s] %s = %s in %s", section, name, val, userFile)
	case val != "":
		shown := val
		if _, err := strconv.ParseFloat(val, 64); err != nil {
			shown = strconv.Quote(val)
		}
		fix = fmt.Sprintf("set [%s] %s = %s in %s", section, name, shown, userFile)
	default:
		fix = fmt.Sprintf("set [%s] %s in %s (a project file cannot)", section, name, userFile)
	}
	if f, ok := widenFlags[key]; ok && (val != "" || !strings.Contains(f, "%s")) {
		if strings.Contains(f, "%s") {
			f = fmt.Sprintf(f, val)
		}
		fix += ", or pass " + f + " to jail run"
	}
	return fix
}

// LoadEffective is what `jail run`, `jail serve` and `jail policy explain` all call, so they
// read the same policy: policyFile when given (an explicit --policy; must exist), else the user
// file from the search order (or the default); then the workspace's project file, tightening.
//
// The trusted files (the user's or --policy file, and the approver it names) must pass
// [CheckTrusted]: a file another user could edit is refused, not loaded.
func LoadEffective(policyFile string, env Env) (*Policy, []Widening, error) {
	project := ""
	if env.Workspace != "" {
		project = ProjectFile(env.Workspace)
	}
	var p *Policy
	var ws []Widening
	var err error
	if policyFile == "" {
		user := UserFile(env)
		if user != "" {
			if err := CheckTrusted("policy file", user); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, nil, err
			}
		}
		p, ws, err = LoadLayered(user, project, env)
	} else {
		if err := CheckTrusted("policy file", policyFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, err
		}
		p, err = Load(policyFile, env)
		if err == nil && project != "" && projectFileExists(project) {
			p, ws, err = Tighten(p, project, env)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	// The approver runs outside every sandbox with the caller's rights. A
	// missing one refuses each call that reaches it (approver.go).
	if a := p.Approval.Approver; len(a) > 0 {
		if err := CheckTrusted("approval.approver", a[0]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, err
		}
	}
	return p, ws, nil
}

// LoadLayered follows the search order: the user file (trusted; the embedded default when it
// does not exist), then the project file (untrusted; skipped when it does not exist), which may
// only tighten. Either path may be empty. A file that exists but is invalid is an error: jail
// never falls back to something more open.
func LoadLayered(userFile, projectFile string, env Env) (*Policy, []Widening, error) {
	base := Default(env)
	if userFile != "" {
		p, err := Load(userFile, env)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, nil, err
		default:
			base = p
		}
	}
	if projectFile == "" {
		return base, nil, nil
	}
	if !projectFileExists(projectFile) {
		return base, nil, nil
	}
	return Tighten(base, projectFile, env)
}

// projectFileExists reports whether the project file is there. ENOTDIR
// counts as absent: .jail may be a file, such as the read-only placeholder
// a running sandbox keeps at a missing protected path. Any other error is
// left to the loader, which then refuses to run.
func projectFileExists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR)
}

// Tighten applies an untrusted project file on top of base. Keys that tighten take effect;
// keys that would widen are ignored and returned as Widenings. The rules, key by key:
//
//   - sandbox.workspace, env_set, [roles.*], approval.grants_file, docker images, audit.path:
//     never taken from a project file.
//   - sandbox.ro: each path must already be visible (under base ro, rw or the workspace); it is
//     added, which turns a writable subtree read-only.
//   - sandbox.rw: each path must already be writable (under base rw or the workspace); no-op.
//   - sandbox.hide, sandbox.protected, network.deny, seccomp.deny, tools.deny,
//     approval.require_approval, guards.hard, guards.soft, agents.*.denies: added.
//   - sandbox.env, network.allow, network.allow_private, seccomp.allow, approval.auto_approve,
//     agents.*.grants: only entries the base already allows are kept (the list narrows).
//   - limits, sandbox.tmp, approval.ask_timeout, approval.approver_timeout: the smaller value wins.
//   - approval.approver: never taken from a project file.
//   - network.mode, tools.profile, tools.security, approval.unattended_policy: only a stricter
//     value is taken (none < proxy < transparent < host; minimal < coding < full;
//     public > daemon > personal; deny > allow).
//   - tools.allow: entries must be tools the base's [tools] section already allows.
//   - tools.also_allow: only entries the base already allows (a no-op otherwise ignored).
//   - approval.auto_approve_read_only/_write, docker.enabled: only false is taken.
//   - guards.disable, network.resolver, audit.enabled = false, agents.*.role: ignored.
//   - sandbox.workspace_ro: only true is taken.
//   - sandbox.home: only "empty" is taken (a fresh home is stricter than a lasting one).
//   - [profiles.NAME] of a profile the base gives: disabled = true taken; allow and env narrow
//     to the profile's own entries; every other key, and a profile the base lacks: ignored.
//   - [agents.NAME] the base does not define but named after a profile (the default
//     toolset): denies added, grants the only tools kept (projectAgent); role ignored.
//   - sandbox.home_workspace: never taken from a project file.
//   - access.level: expanded first, its keys then follow these rules; elevated is ignored, and a
//     user policy's elevated level stays elevated.
func Tighten(base *Policy, projectFile string, env Env) (*Policy, []Widening, error) {
	f, err := parseProjectFile(projectFile, env)
	if err != nil {
		return nil, nil, err
	}
	// Where the user allows what the project file may not: their own file, or the one named
	// with --policy.
	userFile := UserFile(env)
	if len(base.Sources) > 0 {
		userFile = base.Sources[0]
	}
	t := &tightener{f: f, out: clonePolicy(base), proj: f.policy, memTotal: env.MemTotal, userFile: userFile}
	// A project file's access level is expanded like a user file's, and its keys then tighten
	// like keys written out; elevated would only widen, so it is ignored whole.
	if f.policy.Access.Level == LevelElevated && base.Access.Level != LevelElevated {
		t.widen("access.level", "a project file cannot raise the access level to elevated")
		f.policy.Access.Level = ""
	}
	f.expandLevel()
	t.apply(base)
	t.out.Sources = append(slices.Clone(base.Sources), projectFile)
	return t.out, t.ws, nil
}

type tightener struct {
	f    *parsed
	out  *Policy
	proj *Policy
	ws   []Widening
	// memTotal is Env.MemTotal: what the defaults that are shares of the memory come to.
	memTotal int64
	// userFile is the policy file a fix names (Widening.Fix).
	userFile string
}

// widen records that key was ignored, with the reason; the first argument, when there is one,
// is the value the project file gave (an entry of a list, or the scalar), which the fix names.
func (t *tightener) widen(key, format string, args ...any) {
	val := ""
	if len(args) > 0 {
		val = fmt.Sprint(args[0])
	}
	t.ws = append(t.ws, Widening{File: t.f.name, Line: t.f.line(key), Key: key, Reason: fmt.Sprintf(format, args...), Fix: widenFix(key, val, t.userFile)})
}

func (t *tightener) has(key ...string) bool { return t.f.defined(key...) }

func (t *tightener) apply(base *Policy) {
	o, p := t.out, t.proj
	ws := []string{base.Sandbox.Workspace}
	if t.has("sandbox", "workspace") && p.Sandbox.Workspace != base.Sandbox.Workspace {
		t.widen("sandbox.workspace", "a project file cannot move the workspace")
	}
	// A project file is written by whoever wrote the workspace, a sandbox included: its ro
	// entries are resolved (every symlink followed) before they are checked against what the
	// user's policy shows, and the resolved path is what is bound (Sandbox.ResolvedRO: the
	// confinement layer refuses it if it no longer resolves to itself).
	for _, x := range p.Sandbox.RO {
		if hasGlob(x) {
			t.widen("sandbox.ro", "%s: a project file's ro entries cannot be globs (each is resolved before it is trusted)", x)
			continue
		}
		r := resolvePrefix(x)
		if coveredBy(r, resolvedAll(base.Sandbox.RO), resolvedAll(base.Sandbox.RW), resolvedAll(ws)) {
			o.Sandbox.RO = appendNew(o.Sandbox.RO, r)
			o.Sandbox.ResolvedRO = appendNew(o.Sandbox.ResolvedRO, r)
		} else {
			t.widen("sandbox.ro", "%s (resolved: %s) is not visible under the user policy", x, r)
		}
	}
	for _, x := range p.Sandbox.RW {
		if !coveredBy(x, base.Sandbox.RW, ws) {
			t.widen("sandbox.rw", "%s is not writable under the user policy", x)
		}
	}
	for _, x := range p.Sandbox.Hide {
		o.Sandbox.Hide = appendNew(o.Sandbox.Hide, x)
	}
	for _, x := range p.Sandbox.Protected {
		o.Sandbox.Protected = appendNew(o.Sandbox.Protected, x)
	}
	if t.has("sandbox", "env") {
		o.Sandbox.Env = t.narrow("sandbox.env", p.Sandbox.Env, base.Sandbox.Env, "is not passed by the user policy")
	}
	if t.has("sandbox", "env_set") {
		t.widen("sandbox.env_set", "a project file cannot set variables in the sandbox")
	}
	if t.has("sandbox", "home") {
		o.Sandbox.Home = t.stricter("sandbox.home", p.Sandbox.Home, base.Sandbox.Home, homeModes())
	}
	t.profiles(base)
	if t.has("sandbox", "home_workspace") && p.Sandbox.HomeWorkspace && !base.Sandbox.HomeWorkspace {
		t.widen("sandbox.home_workspace", "a project file cannot make the home directory the workspace")
	}
	if t.has("sandbox", "workspace_ro") {
		if p.Sandbox.WorkspaceRO {
			o.Sandbox.WorkspaceRO = true
		} else if base.Sandbox.WorkspaceRO {
			t.widen("sandbox.workspace_ro", "the user policy makes the workspace read-only")
		}
	}
	// The label follows the project, except that a user policy's elevated stays: its human
	// approval is itself a restriction a project file must not drop.
	if t.has("access", "level") && p.Access.Level != "" && base.Access.Level != LevelElevated {
		o.Access.Level, o.Access.Expanded = p.Access.Level, p.Access.Expanded
	}
	if t.has("sandbox", "shm") {
		o.Sandbox.Shm = t.smallerOfShare("sandbox.shm", p.Sandbox.Shm, base.Sandbox.Shm, DefaultShmFraction)
	}
	if t.has("sandbox", "home_tmp") {
		o.Sandbox.HomeTmp = t.smallerOfShare("sandbox.home_tmp", p.Sandbox.HomeTmp, base.Sandbox.HomeTmp, DefaultHomeFraction)
	}
	if t.has("sandbox", "root_only") && p.Sandbox.RootOnly != base.Sandbox.RootOnly {
		if p.Sandbox.RootOnly == RootOnlyHide {
			o.Sandbox.RootOnly = RootOnlyHide
		} else {
			t.widen("sandbox.root_only", "a project file cannot show root-only files")
		}
	}
	if t.has("sandbox", "tmp") {
		o.Sandbox.Tmp = t.smallerOfShare("sandbox.tmp", p.Sandbox.Tmp, base.Sandbox.Tmp, DefaultTmpFraction)
	}
	if t.has("limits", "timeout") {
		o.Limits.Timeout = t.smallerDuration("limits.timeout", p.Limits.Timeout, base.Limits.Timeout)
	}
	if t.has("limits", "memory") {
		o.Limits.Memory = t.smallerOfShare("limits.memory", p.Limits.Memory, base.Limits.Memory, DefaultMemoryFraction)
	}
	if t.has("limits", "pids") {
		o.Limits.Pids = t.smallerCount("limits.pids", p.Limits.Pids, base.Limits.Pids)
	}
	if t.has("limits", "output_chars") {
		o.Limits.OutputChars = t.smallerCount("limits.output_chars", p.Limits.OutputChars, base.Limits.OutputChars)
	}
	if t.has("limits", "background") {
		o.Limits.Background = t.smallerCount("limits.background", p.Limits.Background, base.Limits.Background)
	}

	if t.has("network", "mode") {
		o.Network.Mode = t.stricter("network.mode", p.Network.Mode, base.Network.Mode, netModes())
	}
	if t.has("network", "allow") {
		var keep []string
		for _, h := range p.Network.Allow {
			if hostCovered(h, base.Network.Allow) {
				keep = append(keep, h)
			} else {
				t.widen("network.allow", "%s is not allowed by the user policy", h)
			}
		}
		o.Network.Allow = keep
	}
	o.Network.Deny = appendNew(o.Network.Deny, p.Network.Deny...)
	if t.has("network", "allow_private") {
		var keep []string
		for _, c := range p.Network.AllowPrivate {
			if prefixCovered(c, base.Network.AllowPrivate) {
				keep = append(keep, c)
			} else {
				t.widen("network.allow_private", "%s is not allowed by the user policy", c)
			}
		}
		o.Network.AllowPrivate = keep
	}
	if t.has("network", "ask") && p.Network.Ask && !base.Network.Ask {
		t.widen("network.ask", "a project file cannot open the network to approvals")
	} else if t.has("network", "ask") {
		o.Network.Ask = p.Network.Ask
	}
	if t.has("network", "resolver") && p.Network.Resolver != base.Network.Resolver {
		t.widen("network.resolver", "a project file cannot choose the resolver")
	}

	o.Seccomp.Deny = appendNew(o.Seccomp.Deny, p.Seccomp.Deny...)
	if t.has("seccomp", "allow") {
		o.Seccomp.Allow = t.narrow("seccomp.allow", p.Seccomp.Allow, base.Seccomp.Allow, "is not allowed by the user policy")
	}
	if t.has("seccomp", "allow_ptrace") && p.Seccomp.AllowPtrace && !base.Seccomp.AllowPtrace {
		t.widen("seccomp.allow_ptrace", "a project file cannot allow tracing")
	} else if t.has("seccomp", "allow_ptrace") {
		o.Seccomp.AllowPtrace = p.Seccomp.AllowPtrace
	}

	// How definitions are shown is the operator's choice of the harness, not the project's.
	if t.has("tools", "disclosure") && p.Tools.Disclosure != base.Tools.Disclosure {
		t.widen("tools.disclosure", "a project file cannot change how tools are listed")
	}
	if t.has("tools", "disclosure_budget") && p.Tools.DisclosureBudget != base.Tools.DisclosureBudget {
		t.widen("tools.disclosure_budget", "a project file cannot change how tools are listed")
	}
	if t.has("tools", "profile") {
		o.Tools.Profile = t.stricter("tools.profile", p.Tools.Profile, base.Tools.Profile, profileNames())
	}
	if t.has("tools", "security") {
		// public is the strictest, so it comes first.
		o.Tools.Security = t.stricter("tools.security", p.Tools.Security, base.Tools.Security, []string{SecurityPublic, SecurityDaemon, SecurityPersonal})
	}
	if t.has("tools", "allow") {
		var keep []string
		for _, name := range p.Tools.Allow {
			if ok, _ := inProfile(base.Tools, name); ok && !slices.Contains(base.Tools.Deny, name) {
				keep = append(keep, name)
			} else {
				t.widen("tools.allow", "%s is not allowed by the user policy", name)
			}
		}
		if len(keep) == 0 {
			keep = []string{"read"} // an emptied allow list must not fall back to the profile
			o.Tools.Deny = appendNew(o.Tools.Deny, "read")
		}
		o.Tools.Allow = keep
	}
	for _, name := range p.Tools.AlsoAllow {
		if ok, _ := inProfile(base.Tools, name); !ok {
			t.widen("tools.also_allow", "%s is not allowed by the user policy", name)
		}
	}
	o.Tools.Deny = appendNew(o.Tools.Deny, p.Tools.Deny...)

	for _, name := range slices.Sorted(maps.Keys(p.Roles)) {
		t.widen("roles."+name, "a project file cannot define roles")
	}
	for _, name := range slices.Sorted(maps.Keys(p.Agents)) {
		pa := p.Agents[name]
		key := "agents." + name
		ba, ok := base.Agents[name]
		if _, profiled := base.Profile(name); !ok && profiled {
			// The user policy leaves this agent to the default toolset (it is named after an
			// agent profile): the project may narrow that toolset, never choose a role for it.
			if pa.Role != "" {
				t.widen(key+".role", "a project file cannot choose an agent's role")
			}
			lim := projectAgent{Denies: slices.Clone(pa.Denies), File: t.f.name}
			if t.has("agents", name, "grants") {
				lim.Only, lim.OnlySet = slices.Clone(pa.Grants), true
			}
			if o.projectAgents == nil {
				o.projectAgents = map[string]projectAgent{}
			}
			o.projectAgents[name] = lim
			continue
		}
		if !ok {
			t.widen(key, "agent %s is not defined by the user policy", name)
			continue
		}
		if pa.Role != "" && pa.Role != ba.Role {
			t.widen(key+".role", "a project file cannot change an agent's role")
		}
		if t.has("agents", name, "grants") {
			ba.Grants = t.narrow(key+".grants", pa.Grants, ba.Grants, "is not granted by the user policy")
		}
		ba.Denies = appendNew(ba.Denies, pa.Denies...)
		o.Agents[name] = ba
	}

	pa, ba := p.Approval, base.Approval
	if t.has("approval", "unattended_policy") {
		o.Approval.UnattendedPolicy = t.stricter("approval.unattended_policy", pa.UnattendedPolicy, ba.UnattendedPolicy, []string{"deny", "allow"})
	}
	if t.has("approval", "auto_approve_read_only") && !*pa.AutoApproveReadOnly {
		o.Approval.AutoApproveReadOnly = boolPtr(false)
	} else if t.has("approval", "auto_approve_read_only") && !*ba.AutoApproveReadOnly {
		t.widen("approval.auto_approve_read_only", "the user policy turns it off")
	}
	if t.has("approval", "auto_approve_write") && !*pa.AutoApproveWrite {
		o.Approval.AutoApproveWrite = boolPtr(false)
	} else if t.has("approval", "auto_approve_write") && !*ba.AutoApproveWrite {
		t.widen("approval.auto_approve_write", "the user policy turns it off")
	}
	if t.has("approval", "auto_approve") {
		o.Approval.AutoApprove = t.narrow("approval.auto_approve", pa.AutoApprove, ba.AutoApprove, "is not auto-approved by the user policy")
	}
	o.Approval.RequireApproval = appendNew(o.Approval.RequireApproval, pa.RequireApproval...)
	if t.has("approval", "grants_file") {
		t.widen("approval.grants_file", "a project file cannot supply persistent grants")
	}
	if t.has("approval", "approver") {
		t.widen("approval.approver", "a project file cannot choose who approves calls")
	}
	if t.has("approval", "approver_timeout") {
		o.Approval.ApproverTimeout = t.smallerDuration("approval.approver_timeout", pa.ApproverTimeout, ba.ApproverTimeout)
	}
	if t.has("approval", "ask_timeout") {
		o.Approval.AskTimeout = t.smallerDuration("approval.ask_timeout", pa.AskTimeout, ba.AskTimeout)
	}

	if len(p.Guards.Disable) > 0 {
		t.widen("guards.disable", "a project file cannot switch guards off")
	}
	o.Guards.Hard = appendNew(o.Guards.Hard, p.Guards.Hard...)
	o.Guards.Soft = appendNew(o.Guards.Soft, p.Guards.Soft...)

	if t.has("docker", "enabled") {
		if !p.Docker.Enabled {
			o.Docker.Enabled = false
		} else if !base.Docker.Enabled {
			t.widen("docker.enabled", "the user policy does not enable Docker")
		}
	}
	for _, k := range []string{"browser_image", "desktop_image"} {
		if t.has("docker", k) {
			t.widen("docker."+k, "a project file cannot choose container images")
		}
	}
	// A container's limits: the project's value when it is lower than what the user policy
	// gives (its value, or the default a zero stands for).
	pd, bd := &p.Docker, &base.Docker
	orDefault := func(v, def Bytes) Bytes {
		if v == 0 {
			return def
		}
		return v
	}
	for _, l := range []struct {
		key       string
		proj, bas Bytes
		def       Bytes
		out       *Bytes
	}{
		{"memory", pd.Memory, bd.Memory, DefaultDockerMemory, &o.Docker.Memory},
		{"tmpfs", pd.Tmpfs, bd.Tmpfs, DefaultDockerTmpfs, &o.Docker.Tmpfs},
		{"log_bytes", pd.LogBytes, bd.LogBytes, DefaultDockerLogBytes, &o.Docker.LogBytes},
	} {
		if t.has("docker", l.key) {
			*l.out = t.smaller("docker."+l.key, l.proj, orDefault(l.bas, l.def))
		}
	}
	if t.has("docker", "pids") {
		o.Docker.Pids = t.smallerCount("docker.pids", pd.Pids, int64(orDefault(Bytes(bd.Pids), DefaultDockerPids)))
	}
	if t.has("docker", "cpus") && pd.CPUs > 0 {
		baseCPUs := bd.CPUs
		if baseCPUs == 0 {
			baseCPUs = DefaultDockerCPUs
		}
		if pd.CPUs <= baseCPUs {
			o.Docker.CPUs = pd.CPUs
		} else {
			t.widen("docker.cpus", "%v is above the user policy's %v", pd.CPUs, baseCPUs)
		}
	}
	if t.has("docker", "idle_grace") {
		o.Docker.IdleGrace = t.smallerDuration("docker.idle_grace", pd.IdleGrace, time.Duration(orDefault(Bytes(bd.IdleGrace), Bytes(DefaultDockerIdleGrace))))
	}
	if t.has("docker", "lifecycle") {
		o.Docker.Lifecycle = t.stricter("docker.lifecycle", pd.Lifecycle, cmp.Or(bd.Lifecycle, DefaultDockerLifecycle),
			[]string{LifecycleCall, LifecycleTask, LifecycleAgent})
	}
	if t.has("docker", "raw_logs") && pd.RawLogs && !bd.RawLogs {
		t.widen("docker.raw_logs", "a project file cannot put container output into the audit log")
	}
	if t.has("audit", "path") {
		t.widen("audit.path", "a project file cannot move the audit log")
	}
	if t.has("audit", "enabled") && !*p.Audit.Enabled {
		t.widen("audit.enabled", "a project file cannot switch auditing off")
	}
	if t.has("audit", "fsync") && p.Audit.Fsync {
		o.Audit.Fsync = true
	}
}

// narrow keeps the project entries the base list has.
func (t *tightener) narrow(key string, proj, base []string, why string) []string {
	keep := []string{}
	for _, x := range proj {
		if slices.Contains(base, x) {
			keep = append(keep, x)
		} else {
			t.widen(key, "%s %s", x, why)
		}
	}
	return keep
}

// smaller takes the project value when it is lower; zero in the project means "not set". The
// values are sizes; smallerDuration and smallerCount are the same for durations and counts, so
// a warning shows each in its own unit (30s, not 29296875K).
func (t *tightener) smaller(key string, proj, base Bytes) Bytes {
	return Bytes(t.smallerShown(key, int64(proj), int64(base), func(v int64) string { return Bytes(v).String() }))
}

func (t *tightener) smallerDuration(key string, proj, base time.Duration) time.Duration {
	return time.Duration(t.smallerShown(key, int64(proj), int64(base), func(v int64) string { return time.Duration(v).String() }))
}

func (t *tightener) smallerCount(key string, proj, base int64) int64 {
	return t.smallerShown(key, proj, base, func(v int64) string { return strconv.FormatInt(v, 10) })
}

func (t *tightener) smallerShown(key string, proj, base int64, show func(int64) string) int64 {
	// Zero means "no limit": a project value tightens an unlimited base.
	if proj == 0 {
		return base
	}
	if base == 0 || proj <= base {
		return proj
	}
	t.widen(key, "%s is above the user policy's %s", show(proj), show(base))
	return base
}

// smallerOfShare is smaller for a key whose zero in the base is not "no limit" but a share of
// the machine's memory (memTotal/frac): [limits] memory and the tmpfs sizes. Read as unlimited,
// a project file (which a sandbox may have written) could make /tmp or /dev/shm as large as it
// liked, or lift the memory bound.
func (t *tightener) smallerOfShare(key string, proj, base Bytes, frac int64) Bytes {
	if proj == 0 || base != 0 {
		return t.smaller(key, proj, base)
	}
	if t.memTotal <= 0 {
		t.widen(key, "%v cannot be compared with the default (1/%d of the machine's memory, which is not known)", proj, frac)
		return base
	}
	if def := Bytes(t.memTotal / frac); proj > def {
		t.widen(key, "%v is above the default, 1/%d of the machine's memory (%s)", proj, frac, def.Approx())
		return base
	}
	return proj
}

// stricter takes the project value when it comes earlier in order (strictest first).
func (t *tightener) stricter(key, proj, base string, order []string) string {
	if proj == "" || slices.Index(order, proj) <= slices.Index(order, base) {
		if proj == "" {
			return base
		}
		return proj
	}
	t.widen(key, "%q is less strict than the user policy's %q", proj, base)
	return base
}

func appendNew(list []string, xs ...string) []string {
	for _, x := range xs {
		if !slices.Contains(list, x) {
			list = append(list, x)
		}
	}
	return list
}

// clonePolicy deep-copies the parts Tighten modifies, so base is never changed.
// resolvePrefix resolves the longest part of p that exists and keeps the rest as named (a
// missing ro path is then refused when the run binds it, or if it resolves elsewhere by then).
func resolvePrefix(p string) string {
	p = filepath.Clean(p)
	for rest := ""; ; {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		if p == "/" || p == "." {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = filepath.Dir(p)
	}
}

// resolvedAll is each path of ps with its symlinks resolved (as is when it does not resolve;
// globs as they are).
func resolvedAll(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if r, err := filepath.EvalSymlinks(p); err == nil && !hasGlob(p) {
			p = r
		}
		out = append(out, p)
	}
	return out
}

func clonePolicy(p *Policy) *Policy {
	c := *p
	s := &c.Sandbox
	s.ResolvedRO = slices.Clone(s.ResolvedRO)
	s.RO, s.RW, s.Hide, s.Protected, s.Env = slices.Clone(s.RO), slices.Clone(s.RW), slices.Clone(s.Hide), slices.Clone(s.Protected), slices.Clone(s.Env)
	s.EnvSet = maps.Clone(s.EnvSet)
	n := &c.Network
	n.Allow, n.Deny, n.AllowPrivate = slices.Clone(n.Allow), slices.Clone(n.Deny), slices.Clone(n.AllowPrivate)
	c.Seccomp = Seccomp{Deny: slices.Clone(p.Seccomp.Deny), Allow: slices.Clone(p.Seccomp.Allow), AllowPtrace: p.Seccomp.AllowPtrace}
	tl := &c.Tools
	tl.Allow, tl.AlsoAllow, tl.Deny = slices.Clone(tl.Allow), slices.Clone(tl.AlsoAllow), slices.Clone(tl.Deny)
	c.Roles = maps.Clone(p.Roles)
	c.Profiles = maps.Clone(p.Profiles)
	c.projectAgents = maps.Clone(p.projectAgents)
	c.Agents = map[string]Agent{}
	for k, a := range p.Agents {
		a.Grants, a.Denies = slices.Clone(a.Grants), slices.Clone(a.Denies)
		c.Agents[k] = a
	}
	a := &c.Approval
	a.AutoApprove, a.RequireApproval, a.Approver = slices.Clone(a.AutoApprove), slices.Clone(a.RequireApproval), slices.Clone(a.Approver)
	g := &c.Guards
	g.Disable, g.Hard, g.Soft = slices.Clone(g.Disable), slices.Clone(g.Hard), slices.Clone(g.Soft)
	c.Sources = slices.Clone(p.Sources)
	return &c
}

// projectAgent is what a project file set in [agents.NAME] for an agent the user policy
// leaves to the default toolset: tools it denies, and, when it lists grants, the only tools
// the agent keeps of that toolset.
type projectAgent struct {
	Denies  []string
	Only    []string
	OnlySet bool   // grants was given (an empty list keeps nothing)
	File    string // the project file, for the reasons explain prints
}

// profiles applies a project file's [profiles.NAME] tables. A project may only narrow a
// profile the user policy gives: turn it off (disabled = true), keep fewer of its hosts
// (allow) and pass fewer of the caller's variables (env). It can neither define a profile nor
// change the paths, commands or variables one sets (own, rw, rw_files, ro, seed, set_env,
// config_env, ...): each of those is a path of the user's home or a value in the sandbox,
// which widens what the sandbox sees whatever its value. quiet is ignored too: it chooses
// which refusals the user is told about.
func (t *tightener) profiles(base *Policy) {
	o, p := t.out, t.proj
	narrowing := []string{"allow", "env", "disabled"}
	for _, name := range slices.Sorted(maps.Keys(p.Profiles)) {
		key := "profiles." + name
		eff, ok := base.Profile(name)
		if !ok {
			t.widen(key, "a project file cannot define agent profiles (their paths and hosts widen the sandbox)")
			continue
		}
		for _, k := range t.f.keysUnder("profiles", name) {
			if !slices.Contains(narrowing, k) {
				t.widen(key+"."+k, "a project file cannot change an agent profile's paths, commands or variables, only narrow its allow and env or turn it off")
			}
		}
		pp := p.Profiles[name]
		ov := base.Profiles[name]
		ov.Allow, ov.Env = slices.Clone(ov.Allow), slices.Clone(ov.Env)
		if t.has("profiles", name, "disabled") && pp.Disabled {
			ov.Disabled = true
		}
		if t.has("profiles", name, "allow") {
			kept := t.narrow(key+".allow", pp.Allow, eff.Allow, "is not a host of the "+name+" profile under the user policy")
			ov.Allow, ov.noAllow = kept, len(kept) == 0
		}
		if t.has("profiles", name, "env") {
			kept := t.narrow(key+".env", pp.Env, eff.Env, "is not passed by the "+name+" profile under the user policy")
			ov.Env, ov.noEnv = kept, len(kept) == 0
		}
		if o.Profiles == nil {
			o.Profiles = map[string]Profile{}
		}
		o.Profiles[name] = ov
	}
}
