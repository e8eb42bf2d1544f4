package policy

import (
	"slices"
)

// Role is a remit: the outer bound of what an agent in it may ever hold, plus the tools it gets
// without asking. Grants move tools from the remit into the toolset; nothing moves tools into the
// remit.
type Role struct {
	Name string `json:"name"`
	// Remit is the set of capabilities a tool may need; a tool needing any other is outside.
	Remit []string `json:"remit"`
	// MaxRisk is the highest effective risk a tool in the remit may carry.
	MaxRisk Risk `json:"max_risk"`
	// Defaults are granted without a grant; always inside the remit.
	Defaults []string `json:"defaults"`
	// WorkspaceReadOnly mounts the workspace read-only for this role, so a role without fs.write
	// cannot write through bash either.
	WorkspaceReadOnly bool `json:"workspace_read_only"`
	// Purpose is the one line explain prints.
	Purpose string `json:"purpose"`
}

// BuiltinRoles returns the fixed roles. Their remits are deliberately not configurable: a user
// who needs another shape defines a new role under [roles.NAME].
func BuiltinRoles() []Role {
	read := []string{"read", "ls", "glob", "grep"}
	coding := append(slices.Clone(read), "write", "edit", "bash")
	verify := append(slices.Clone(read), "bash")
	research := append(slices.Clone(read), "web_fetch")
	all := Capabilities()
	return []Role{
		{Name: "build", Remit: all, MaxRisk: Exec, Defaults: coding,
			Purpose: "read, edit, run commands, use the browser"},
		{Name: "fix", Remit: all, MaxRisk: Exec, Defaults: coding,
			Purpose: "the build remit, pointed at a defect"},
		{Name: "verify", Remit: []string{CapFSRead, CapProcessExec, CapNetworkOutbound, CapBrowser}, MaxRisk: Exec,
			Defaults: verify, WorkspaceReadOnly: true,
			Purpose: "read and run commands and the browser; never edit the source"},
		{Name: "cleanup", Remit: []string{CapFSRead, CapFSWrite, CapProcessExec}, MaxRisk: Exec, Defaults: coding,
			Purpose: "read, edit and run commands; no browser, no network"},
		{Name: "review", Remit: []string{CapFSRead}, MaxRisk: ReadOnly, Defaults: read, WorkspaceReadOnly: true,
			Purpose: "read only: a reviewer that can write is not a reviewer"},
		{Name: "analysis", Remit: []string{CapFSRead, CapNetworkOutbound}, MaxRisk: ReadOnly, Defaults: research,
			WorkspaceReadOnly: true, Purpose: "read and research; hands back text"},
		{Name: "triage", Remit: []string{CapFSRead, CapNetworkOutbound}, MaxRisk: ReadOnly, Defaults: read,
			WorkspaceReadOnly: true, Purpose: "read and sort work; does not do it"},
		{Name: "custom", Remit: all, MaxRisk: Dangerous, Defaults: nil,
			Purpose: "starts empty; every tool is granted deliberately"},
	}
}

func builtinRole(name string) (Role, bool) {
	for _, r := range BuiltinRoles() {
		if r.Name == name {
			return r, true
		}
	}
	return Role{}, false
}

// role finds a built-in or user-defined role.
func (p *Policy) role(name string) (Role, bool) {
	if r, ok := builtinRole(name); ok {
		return r, true
	}
	spec, ok := p.Roles[name]
	if !ok {
		return Role{}, false
	}
	risk, _ := ParseRisk(spec.MaxRisk) // validated at load
	if spec.MaxRisk == "" {
		risk = ReadOnly
	}
	return Role{Name: name, Remit: spec.Remit, MaxRisk: risk, Defaults: spec.Defaults,
		WorkspaceReadOnly: spec.Workspace == "ro", Purpose: spec.Description}, true
}

// inRemit says whether the role may hold t at all, and if not, why.
func (r Role) inRemit(t ToolInfo) (bool, string) {
	if risk := EffectiveRisk(t); risk > r.MaxRisk {
		return false, "outside the " + r.Name + " role's remit: risk " + risk.String() + " exceeds " + r.MaxRisk.String()
	}
	for _, c := range effectiveCaps(t) {
		if !slices.Contains(r.Remit, c) {
			return false, "outside the " + r.Name + " role's remit: needs " + c
		}
	}
	return true, ""
}
