//go:build linux

package launch

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/netns"
	"github.com/jail-sandbox/jail/policy"
)

// PolicyEnv gathers what the policy package needs from the process environment; the package
// itself reads no globals. workspace may be relative; it is made absolute here.
func PolicyEnv(workspace string) (policy.Env, error) {
	if workspace == "" {
		wd, err := os.Getwd()
		if err != nil {
			return policy.Env{}, fmt.Errorf("policy: working directory: %w", err)
		}
		workspace = wd
	}
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return policy.Env{}, fmt.Errorf("policy: workspace: %w", err)
	}
	home, _ := os.UserHomeDir() // no home: "~" paths in a policy become errors
	return policy.Env{Home: home, Workspace: ws, XDGConfigHome: os.Getenv("XDG_CONFIG_HOME"),
		XDGStateHome: os.Getenv("XDG_STATE_HOME"), MemTotal: confine.MemTotal()}, nil
}

// callerHomes are the caller's homes: $HOME and the passwd entry's.
func callerHomes(penv policy.Env) []string {
	homes := []string{penv.Home}
	if u, err := user.LookupId(strconv.Itoa(os.Getuid())); err == nil && u.HomeDir != "" && u.HomeDir != penv.Home {
		homes = append(homes, u.HomeDir)
	}
	return homes
}

// Apply turns the effective policy and the options (the flags, which win
// for this run) into a layout, an environment pass-list and seccomp
// options, and fills in the options the flags left to the policy.
func Apply(o *Options, p *policy.Policy, penv policy.Env) (*confine.Layout, []string, confine.SeccompOptions, error) {
	sb, err := p.Sandbox.Expand("/")
	if err != nil {
		return nil, nil, confine.SeccompOptions{}, err
	}
	ws := sb.Workspace
	if o.Workdir != "" {
		ws = penv.Workspace
	}
	system := map[string]bool{}
	for _, d := range confine.DefaultSystem() {
		system[d] = true
	}
	layout := &confine.Layout{Workspace: ws, Home: penv.Home, Secrets: confine.DefaultSecrets(), SystemData: confine.DefaultSystemData(), GitConfig: true,
		WorkspaceReadOnly: p.Sandbox.WorkspaceRO, Homes: callerHomes(penv),
		HomeWorkspace: o.HomeWorkspace || p.Sandbox.HomeWorkspace}
	layout.Guarded, layout.GuardedFiles, layout.HiddenState = guarded(penv, o.PolicyFile, p)
	layout.TmpSize, layout.ShmSize, layout.HomeSize = p.Sandbox.TmpfsSizes(confine.MemTotal())
	if os.Getuid() == 0 && p.Sandbox.RootOnly != policy.RootOnlyShow {
		// Root's sandbox keeps uid 0 on the host's files: what only root
		// may read under /etc and /opt is hidden (docs/supervisor.md).
		layout.RootOnly = []string{"/etc", "/opt"}
	}
	for _, d := range sb.RO {
		switch {
		case system[d] || d == "/nix/store":
			layout.System = append(layout.System, d)
		default:
			layout.ReadOnly = append(layout.ReadOnly, d)
		}
	}
	layout.ReadOnly = append(layout.ReadOnly, o.RO...)
	layout.Resolved = p.Sandbox.ResolvedRO
	layout.ReadWrite = append(append(layout.ReadWrite, sb.RW...), o.RW...)
	for _, h := range sb.Hide {
		// $HOME is hidden by the layout itself (an empty private tmpfs).
		if h != penv.Home {
			layout.Hidden = append(layout.Hidden, h)
		}
	}
	layout.Hidden = append(layout.Hidden, o.Hide...)
	wsAbs, err := filepath.Abs(ws)
	if err != nil {
		return nil, nil, confine.SeccompOptions{}, err
	}
	for _, pp := range sb.Protected {
		if filepath.IsAbs(pp) {
			rel, err := filepath.Rel(wsAbs, pp)
			if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
				return nil, nil, confine.SeccompOptions{}, fmt.Errorf("protected path %s is outside the workspace %s", pp, wsAbs)
			}
			pp = rel
		}
		layout.Protected = append(layout.Protected, pp)
	}

	if err := applyAllow(o, p); err != nil {
		return nil, nil, confine.SeccompOptions{}, err
	}
	if o.Net == "" {
		o.Net = p.Network.Mode
	}
	if o.Net == "" {
		o.Net = policy.NetNone
	}
	var offEnv []string
	if o.Net == policy.NetNone {
		offEnv = netns.OffEnv()
	}
	if o.Timeout == 0 {
		o.Timeout = p.Limits.Timeout
	}
	// The rlimit fallback is reported when limits were asked for; the
	// default bounds apply quietly (docs/supervisor.md, "Default bounds").
	o.LimitsAsked = o.Memory != 0 || o.Pids != 0 || p.Limits.Memory != 0 || p.Limits.Pids != policy.DefaultPids
	if o.Memory == 0 {
		o.Memory = int64(p.Limits.Memory)
	}
	if o.Memory == 0 {
		// The default bound: a cgroup's only, never RLIMIT_DATA (Limits).
		o.Memory = confine.MemTotal() / policy.DefaultMemoryFraction
		o.MemoryDefault = true
	}
	if o.Pids == 0 {
		o.Pids = p.Limits.Pids
	}
	// No tmpfs of the sandbox may hold more than its memory bound: their
	// pages are memory (a cgroup's, or the census's with rlimits), and a
	// write past it then fails with ENOSPC rather than ending the sandbox.
	for _, size := range []*int64{&layout.TmpSize, &layout.ShmSize, &layout.HomeSize} {
		if o.Memory > 0 && (*size <= 0 || *size > o.Memory) {
			*size = o.Memory
		}
	}
	if !o.OutputLimitSet {
		o.OutputLimit = int(p.Limits.OutputChars)
		if o.OutputLimit <= 0 {
			o.OutputLimit = policy.DefaultOutputChars
		}
	}
	pass := append([]string{}, sb.Env...)
	var extra []string
	for k, v := range sb.EnvSet {
		extra = append(extra, k+"="+v)
	}
	sort.Strings(extra)
	// The policy's env_set and then --env come last, so they win.
	o.Env = append(append(offEnv, extra...), o.Env...)
	return layout, pass, confine.SeccompOptions{Deny: p.Seccomp.Deny, Allow: p.Seccomp.Allow, Ptrace: p.Seccomp.AllowPtrace || o.AllowPtrace}, nil
}

// applyAllow adds the --allow hosts to the run's [network] allow and picks the proxy mode
// they need: an explicit --net none or host contradicts them, a policy's none yields.
func applyAllow(o *Options, p *policy.Policy) error {
	if len(o.Allow) == 0 {
		return nil
	}
	for _, a := range o.Allow {
		entry, err := netns.CheckAllow(a)
		if err != nil {
			return fmt.Errorf("--allow %q: %w", a, err)
		}
		p.Network.Allow = append(p.Network.Allow, entry)
	}
	switch o.Net {
	case policy.NetNone:
		return errors.New("--allow opens hosts through jail's proxy, which --net none turns off: drop --net none, or use --net proxy")
	case policy.NetHost:
		return errors.New("--allow filters through jail's proxy, and --net host bypasses it: drop --net host, or use --net proxy")
	case "":
		switch p.Network.Mode {
		case "", policy.NetNone:
			o.Net = policy.NetProxy
		case policy.NetHost:
			return errors.New("--allow filters through jail's proxy, and the policy's [network] mode = \"host\" bypasses it: add --net proxy")
		}
	}
	return nil
}

// guarded are the paths of jail's own that a sandbox must not change even
// when a writable bind shows them, as directories and files: the user's
// policy, wherever the caller's environment or a later run's may put it
// (XDG_CONFIG_HOME, ~/.config, the passwd home's), and its file, which
// may be a symlink elsewhere; a --policy file; and the plan cache's
// directory, and the approver command and grants file the policy names
// (run and read by the supervisor, outside every sandbox). A sandbox could
// otherwise widen the next run's policy, approve its own calls, or
// point the cache elsewhere (its entries are authenticated, but jail
// creates directories and removes old entries there).
//
// hidden are jail's state directories, which no sandbox may even read
// (plan cache entries, the audit log, persistent data): $XDG_CACHE_HOME,
// $XDG_STATE_HOME and $XDG_DATA_HOME's jail directories and their
// defaults under each home. An audit log elsewhere is a guarded file.
func guarded(penv policy.Env, policyFile string, p *policy.Policy) (dirs, files, hidden []string) {
	homes := []string{penv.Home}
	if u, err := user.LookupId(strconv.Itoa(os.Getuid())); err == nil && u.HomeDir != "" {
		homes = append(homes, u.HomeDir) // the home of a run with HOME unset or set elsewhere
	}
	add := func(list *[]string, p string) {
		if p != "" && !slices.Contains(*list, p) {
			*list = append(*list, p)
		}
	}
	envs := []policy.Env{penv}
	for _, h := range homes {
		envs = append(envs, policy.Env{Home: h})
	}
	for _, env := range envs {
		if f := policy.UserFile(env); f != "" {
			add(&dirs, filepath.Dir(f))
			add(&files, f)
		}
	}
	add(&hidden, jailCacheDir(confine.PlanCacheDir(penv.Home, os.Getenv("XDG_CACHE_HOME"))))
	for _, v := range []string{"XDG_STATE_HOME", "XDG_DATA_HOME"} {
		if d := os.Getenv(v); filepath.IsAbs(d) {
			add(&hidden, filepath.Join(d, "jail"))
		}
	}
	for _, h := range homes {
		if filepath.IsAbs(h) {
			add(&hidden, jailCacheDir(confine.PlanCacheDir(h, "")))
			add(&hidden, filepath.Join(h, ".local", "state", "jail"))
			add(&hidden, filepath.Join(h, ".local", "share", "jail"))
		}
	}
	// The audit log: read by the user and their tools, appended to by
	// every jail run; a sandbox must neither rewrite history nor swap it
	// for a symlink (OpenAuditLog refuses one).
	if p != nil && (p.Audit.Enabled == nil || *p.Audit.Enabled) && filepath.IsAbs(p.Audit.Path) {
		add(&files, p.Audit.Path)
	}
	// What the policy makes the supervisor run or read outside every
	// sandbox: its approver command and its grants file.
	if p != nil {
		if f := p.Approval.GrantsFile; filepath.IsAbs(f) {
			add(&files, f)
		}
		if len(p.Approval.Approver) > 0 {
			if path, err := exec.LookPath(p.Approval.Approver[0]); err == nil {
				if abs, err := filepath.Abs(path); err == nil {
					add(&files, abs)
				}
			}
		}
	}
	if policyFile != "" {
		if !filepath.IsAbs(policyFile) {
			// Joined, not cleaned: ".." is resolved after symlinks, as
			// the loader's open resolves it.
			if wd, err := os.Getwd(); err == nil {
				policyFile = wd + "/" + policyFile
			}
		}
		add(&files, policyFile)
	}
	return dirs, files, hidden
}

// jailCacheDir is the jail directory of a plan cache directory.
func jailCacheDir(plans string) string {
	if plans == "" {
		return ""
	}
	return filepath.Dir(plans)
}
