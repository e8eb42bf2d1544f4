package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Access levels: one line in a policy that sets file-system scope, network mode, exec rights and
// which action types need approval. Each is a bundle of ordinary keys (see [LevelExpansion]);
// a key the file sets itself wins over the level's value for it.
const (
	LevelSandboxed  = "sandboxed"  // look only: read-only workspace, no network, no bash, no writing tools
	LevelRestricted = "restricted" // code in the workspace; no network; pushes, packages, network and deploys ask
	LevelStandard   = "standard"   // the coding profile: routine work passes, publishing and deploys ask
	LevelElevated   = "elevated"   // every tool; most work passes; needs a human's approval to start
	LevelCustom     = "custom"     // nothing filled in: the file's own keys alone (the default)
)

func levelNames() []string {
	return []string{LevelSandboxed, LevelRestricted, LevelStandard, LevelElevated, LevelCustom}
}

// Access is the [access] table.
type Access struct {
	// Level is sandboxed, restricted, standard, elevated or custom. It fills in the keys listed
	// by `jail policy explain` that the file does not set itself. Elevated takes effect only after
	// a human approves it at the first tool call. Empty means custom: nothing is filled in.
	Level string `toml:"level" json:"level"`

	// Expanded is what Level filled in, and which of its keys the file overrode; set by loading.
	Expanded []Setting `toml:"-" json:"-"`
}

// Setting is one key an access level sets.
type Setting struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// Overridden is true when the file sets the key itself, so the level's value is not used.
	Overridden bool `json:"overridden,omitempty"`
}

// levelSetting is one key of a level's expansion and how to apply it.
type levelSetting struct {
	key   string // dotted TOML key
	value string // as explain prints it
	set   func(p *Policy)
}

// levelExpansion lists the keys a level sets, in a fixed order. Network is set only where the
// level decides it: standard and elevated leave network.mode to the policy (default none), so an
// elevated level never opens the network by itself.
func levelExpansion(level string) []levelSetting {
	list := func(key string, vals []string, set func(p *Policy, v []string)) levelSetting {
		q := make([]string, len(vals))
		for i, v := range vals {
			q[i] = fmt.Sprintf("%q", v)
		}
		return levelSetting{key, "[" + strings.Join(q, ", ") + "]", func(p *Policy) { set(p, slices.Clone(vals)) }}
	}
	str := func(key, val string, set func(p *Policy, v string)) levelSetting {
		return levelSetting{key, fmt.Sprintf("%q", val), func(p *Policy) { set(p, val) }}
	}
	wsRO := func(ro bool) levelSetting {
		return levelSetting{"sandbox.workspace_ro", fmt.Sprint(ro), func(p *Policy) { p.Sandbox.WorkspaceRO = ro }}
	}
	netMode := func(m string) levelSetting {
		return str("network.mode", m, func(p *Policy, v string) { p.Network.Mode = v })
	}
	profile := func(pr string) levelSetting {
		return str("tools.profile", pr, func(p *Policy, v string) { p.Tools.Profile = v })
	}
	auto := func(v ...string) levelSetting {
		return list("approval.auto_approve", v, func(p *Policy, v []string) { p.Approval.AutoApprove = v })
	}
	require := func(v ...string) levelSetting {
		return list("approval.require_approval", v, func(p *Policy, v []string) { p.Approval.RequireApproval = v })
	}
	unattended := str("approval.unattended_policy", "deny", func(p *Policy, v string) { p.Approval.UnattendedPolicy = v })
	switch level {
	case LevelSandboxed:
		return []levelSetting{wsRO(true), netMode(NetNone), profile(ProfileMinimal), auto(), require(), unattended}
	case LevelRestricted:
		return []levelSetting{wsRO(false), netMode(NetNone), profile(ProfileCoding), auto("code:read", "vcs:read"),
			require("vcs:push", "pkg", "net", "db:mutate", "deploy", "container", "system"), unattended}
	case LevelStandard:
		return []levelSetting{wsRO(false), profile(ProfileCoding),
			auto("code", "test", "build", "vcs:read", "vcs:fetch", "vcs:branch", "vcs:commit"),
			require("vcs:push", "pkg:publish", "db:mutate", "deploy", "system"), unattended}
	case LevelElevated:
		return []levelSetting{wsRO(false), profile(ProfileFull),
			auto("code", "test", "build", "vcs", "pkg:install", "net:fetch", "db:read", "process", "container"),
			require("pkg:publish", "deploy", "system"), unattended}
	}
	return nil
}

// LevelExpansion returns the keys a level sets and their values, for explain and the README.
func LevelExpansion(level string) []Setting {
	var out []Setting
	for _, s := range levelExpansion(level) {
		out = append(out, Setting{Key: s.key, Value: s.value})
	}
	return out
}

// expandLevel fills in the keys the file's access level sets and the file does not. The keys it
// sets count as defined from then on, at the line of access.level, so a project file's level
// goes through the same tightening rules as keys written out.
func (f *parsed) expandLevel() {
	p := f.policy
	line := f.line("access.level")
	p.Access.Expanded = nil
	for _, s := range levelExpansion(p.Access.Level) {
		parts := strings.Split(s.key, ".")
		explicit := f.md.IsDefined(parts...)
		p.Access.Expanded = append(p.Access.Expanded, Setting{Key: s.key, Value: s.value, Overridden: explicit})
		if explicit {
			continue
		}
		s.set(p)
		if f.implied == nil {
			f.implied = map[string]bool{}
		}
		f.implied[s.key] = true
		if _, ok := f.lines[s.key]; !ok && line > 0 {
			f.lines[s.key] = line
		}
	}
}

// elevation is the human approval an elevated level waits for. It is shared by every copy of a
// [Gate] (front ends copy the gate per call to set that call's asker), so one answer holds for
// the gate's subject for the rest of the session.
type elevation struct {
	mu     sync.Mutex
	state  string // "", "granted" or "refused"
	reason string
}

// elevate asks once whether the elevated level may take effect. It returns "" when it holds,
// or why not. answered is true when a human answered at this call, so the decision records the
// approval (or refusal) that the audit log must show.
func (g *Gate) elevate(ctx context.Context, c Call) (why string, answered bool) {
	e := g.elevation
	e.mu.Lock()
	defer e.mu.Unlock()
	switch e.state {
	case "granted":
		return "", false
	case "refused":
		return e.reason, false
	}
	const q = "the policy's access level is elevated, which takes effect only when a human approves it"
	if c.Unattended {
		// Not remembered: an attended call of the same session may still ask.
		return q + "; nobody is there to approve it", false
	}
	if g.Asker == nil {
		return q + "; no one to ask", false
	}
	timeout := g.Policy.Approval.AskTimeout
	if timeout <= 0 {
		timeout = DefaultAskTimeout
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ans, err := g.Asker.Ask(actx, Question{Agent: g.Toolset.Agent, Role: g.Toolset.Role, Tool: c.Tool, Risk: Dangerous,
		Args: Redact(c.Args), Reason: "grant access level elevated for this session (" + c.Tool + " is the first call)"})
	switch {
	case err != nil:
		// No answer is not a refusal: the next call asks again.
		return q + "; no answer: " + err.Error(), false
	case !ans.Approve:
		e.state, e.reason = "refused", q+"; a human refused it"
		return e.reason, true
	}
	e.state = "granted"
	return "", true
}
