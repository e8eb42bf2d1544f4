package policy

import (
	"fmt"
	"slices"
)

// Subject is who is asking for tools: an agent from [agents.NAME], or a bare role. Both empty
// means the operator running jail directly, bounded only by [tools].
type Subject struct {
	Agent string
	Role  string
}

// ToolStatus says where a tool landed.
type ToolStatus string

// Tool statuses. Unavailable is kept apart from Denied: it marks a grant that the role's remit
// refused, which an operator should see rather than have silently dropped.
const (
	StatusGranted     ToolStatus = "granted"
	StatusDenied      ToolStatus = "denied"
	StatusUnavailable ToolStatus = "unavailable"
)

// ToolDecision is one tool's place in a toolset and why.
type ToolDecision struct {
	Tool   ToolInfo   `json:"tool"`
	Risk   Risk       `json:"risk"` // effective risk
	Status ToolStatus `json:"status"`
	Reason string     `json:"reason"`
	// Approval is what the gate does with a plain call of a granted tool ([Gate.Preview]); set
	// by front ends that explain a toolset, nil in the gate's own toolset.
	Approval *ApprovalPreview `json:"approval,omitempty"`
}

// Toolset is the result of [Resolve]. Every registry tool appears in exactly one list, in
// registry order.
type Toolset struct {
	Agent string `json:"agent,omitempty"`
	// AgentUndefined is set for an agent named after one of the policy's agent profiles
	// (claude, codex, ...) that the policy defines no [agents.NAME] for: it gets the operator's
	// toolset, bounded by [tools] alone, as with no agent named ([Resolve]).
	AgentUndefined bool `json:"agent_undefined,omitempty"`
	// AgentNarrowedBy is the project file whose [agents.NAME] narrowed such an agent's
	// toolset (its denies and grants), "" for none.
	AgentNarrowedBy   string         `json:"agent_narrowed_by,omitempty"`
	Role              string         `json:"role,omitempty"`
	WorkspaceReadOnly bool           `json:"workspace_read_only"`
	Granted           []ToolDecision `json:"granted"`
	Denied            []ToolDecision `json:"denied"`
	Unavailable       []ToolDecision `json:"unavailable"`
}

// Lookup returns the decision for a tool name.
func (ts *Toolset) Lookup(name string) (ToolDecision, bool) {
	for _, l := range [][]ToolDecision{ts.Granted, ts.Denied, ts.Unavailable} {
		for _, d := range l {
			if d.Tool.Name == name {
				return d, true
			}
		}
	}
	return ToolDecision{}, false
}

// Resolve is the one decision function for toolsets; `jail policy explain` prints its result
// and the runtime [Gate] enforces it. For each registry tool, in this order:
//
//  1. tools.deny or the agent's denies: denied (a deny always wins, even over a grant). A
//     companion tool ([Companion]: bash_output, bash_kill) otherwise lands where its
//     principal did, which the registry lists before it.
//  2. sandbox.workspace_ro and the tool needs fs.write, or network.mode = none and the tool
//     needs network.outbound: denied.
//  3. docker.enabled = false and the tool needs browser or desktop: denied; or the security
//     profile strips one of its capabilities: denied.
//  4. not in the role's defaults or the agent's grants: denied ("not granted").
//  5. outside the role's remit (capability or risk): unavailable, with the reason.
//  6. outside the [tools] profile (allow, or profile ∪ also_allow): denied.
//  7. otherwise granted.
//
// So toolset = (role defaults ∪ grants) ∩ remit ∩ profile − denies − stripped capabilities.
// With no role, the defaults are every tool and the remit is unbounded.
//
// An agent the policy does not define is refused, except one named after an agent profile the
// policy knows (claude, codex, gemini, aider, opencode, or a [profiles.NAME]): the README's
// `jail mcp --agent claude` works under the default policy, and gets what naming no agent
// gets, which is never more. [agents.NAME] then narrows it. Any other name is refused: a typo
// must not fall back to a toolset the operator did not mean for it.
func Resolve(p *Policy, registry []ToolInfo, who Subject) (*Toolset, error) {
	ts := &Toolset{Agent: who.Agent, Role: who.Role}
	var agent Agent
	var narrow *projectAgent
	if who.Agent != "" {
		a, ok := p.Agents[who.Agent]
		if _, profiled := p.Profile(who.Agent); !ok && !profiled {
			return nil, p.unknownAgent(who.Agent)
		}
		if !ok {
			// Named after a profile: what naming no agent gets (with --role, that role's),
			// less what a project file's [agents.NAME] took away (Tighten).
			ts.AgentUndefined = true
			if lim, set := p.projectAgents[who.Agent]; set {
				narrow = &lim
				agent.Denies = lim.Denies
				ts.AgentNarrowedBy = lim.File
			}
		} else {
			agent = a
			if who.Role != "" && who.Role != a.Role {
				return nil, fmt.Errorf("resolve: agent %q has role %q, not %q", who.Agent, a.Role, who.Role)
			}
			ts.Role = a.Role
			if ts.Role == "" {
				ts.Role = "custom"
			}
		}
	}
	var role *Role
	if ts.Role != "" {
		r, ok := p.role(ts.Role)
		if !ok {
			return nil, p.unknownRole(ts.Role)
		}
		role = &r
		ts.WorkspaceReadOnly = r.WorkspaceReadOnly
	}
	if p.Sandbox.WorkspaceRO {
		ts.WorkspaceReadOnly = true
	}
	strips := securityStrips(p.Tools.Security)
	for _, t := range registry {
		d := ToolDecision{Tool: t, Risk: EffectiveRisk(t)}
		caps := effectiveCaps(t)
		wanted := role == nil || slices.Contains(role.Defaults, t.Name) || slices.Contains(agent.Grants, t.Name)
		principal := Companion(t.Name)
		switch {
		case slices.Contains(p.Tools.Deny, t.Name):
			d.Status, d.Reason = StatusDenied, "denied by tools.deny"
		case slices.Contains(agent.Denies, t.Name) && narrow != nil:
			d.Status, d.Reason = StatusDenied, "denied by agents."+who.Agent+".denies of "+narrow.File
		case slices.Contains(agent.Denies, t.Name):
			d.Status, d.Reason = StatusDenied, "denied by agents."+who.Agent+".denies"
		case principal != "":
			if pd, ok := ts.Lookup(principal); ok {
				d.Status, d.Reason = pd.Status, "goes with "+principal+" ("+principal+": "+pd.Reason+")"
			} else {
				d.Status, d.Reason = StatusDenied, "goes with "+principal+", which this registry lacks"
			}
		case narrow != nil && narrow.OnlySet && !slices.Contains(narrow.Only, t.Name):
			d.Status, d.Reason = StatusDenied, "not in agents."+who.Agent+".grants of "+narrow.File+", which keeps only those of the default toolset"
		case p.Sandbox.WorkspaceRO && slices.Contains(caps, CapFSWrite):
			d.Status, d.Reason = StatusDenied, "sandbox.workspace_ro = true removes tools needing fs.write"
		case p.Network.Mode == NetNone && slices.Contains(caps, CapNetworkOutbound):
			d.Status, d.Reason = StatusDenied, "network.mode = none removes tools needing network.outbound"
		case !p.Docker.Enabled && (slices.Contains(caps, CapBrowser) || slices.Contains(caps, CapDesktop)):
			d.Status, d.Reason = StatusDenied, "docker.enabled = false: browser and desktop tools run in containers"
		case slices.ContainsFunc(caps, func(c string) bool { return slices.Contains(strips, c) }):
			d.Status, d.Reason = StatusDenied, fmt.Sprintf("security profile %s strips %s", p.Tools.Security, firstShared(caps, strips))
		case !wanted:
			d.Status, d.Reason = StatusDenied, "not granted: not in the "+role.Name+" role's defaults or the agent's grants"
		default:
			if role != nil {
				if in, why := role.inRemit(t); !in {
					d.Status, d.Reason = StatusUnavailable, why
					break
				}
			}
			if ok, why := inProfile(p.Tools, t.Name); !ok {
				d.Status, d.Reason = StatusDenied, why
				break
			}
			d.Status, d.Reason = StatusGranted, grantReason(role, agent, who.Agent, t.Name, p.Tools)
		}
		switch d.Status {
		case StatusGranted:
			ts.Granted = append(ts.Granted, d)
		case StatusDenied:
			ts.Denied = append(ts.Denied, d)
		default:
			ts.Unavailable = append(ts.Unavailable, d)
		}
	}
	return ts, nil
}

// agentNames says which agents p defines, for an error naming an unknown one.
func firstShared(a, b []string) string {
	for _, x := range a {
		if slices.Contains(b, x) {
			return x
		}
	}
	return ""
}

func inProfile(t Tools, name string) (bool, string) {
	if len(t.Allow) > 0 {
		if slices.Contains(t.Allow, name) {
			return true, ""
		}
		return false, "not in tools.allow"
	}
	if profileIncludes(t.Profile, name) || slices.Contains(t.AlsoAllow, name) {
		return true, ""
	}
	return false, "not in tools profile " + t.Profile + " (add it to tools.also_allow)"
}

func grantReason(role *Role, agent Agent, agentName, tool string, t Tools) string {
	switch {
	case role == nil && len(t.Allow) > 0:
		return "in tools.allow"
	case role == nil && slices.Contains(t.AlsoAllow, tool):
		return "in tools.also_allow"
	case role == nil:
		return "in tools profile " + t.Profile
	case slices.Contains(role.Defaults, tool):
		return "default of the " + role.Name + " role"
	}
	return "granted by agents." + agentName + ".grants"
}
