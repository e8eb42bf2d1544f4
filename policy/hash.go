package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
)

// Hash is the SHA-256 (hex) of the effective policy in a canonical encoding: JSON of the parsed
// values, map keys sorted by encoding/json, order-insensitive lists sorted. Two files that differ
// only in key order, whitespace, comments or the order of set-like lists hash the same; any
// change in meaning changes the hash. Sources are not hashed: the same policy from another path
// is the same policy.
func (p *Policy) Hash() string {
	c := *p
	c.Sources = nil
	s := c.Sandbox
	s.RO, s.RW, s.Hide, s.Protected, s.Env = sorted(s.RO), sorted(s.RW), sorted(s.Hide), sorted(s.Protected), sorted(s.Env)
	c.Sandbox = s
	n := c.Network
	n.Allow, n.Deny, n.AllowPrivate = sorted(n.Allow), sorted(n.Deny), sorted(n.AllowPrivate)
	c.Network = n
	c.Seccomp = Seccomp{Deny: sorted(c.Seccomp.Deny), Allow: sorted(c.Seccomp.Allow), AllowPtrace: c.Seccomp.AllowPtrace}
	t := c.Tools
	t.Allow, t.AlsoAllow, t.Deny = sorted(t.Allow), sorted(t.AlsoAllow), sorted(t.Deny)
	c.Tools = t
	a := c.Approval
	a.AutoApprove, a.RequireApproval = sorted(a.AutoApprove), sorted(a.RequireApproval)
	c.Approval = a
	c.Guards.Disable = sorted(c.Guards.Disable)
	roles := map[string]RoleSpec{}
	for k, r := range c.Roles {
		r.Remit, r.Defaults = sorted(r.Remit), sorted(r.Defaults)
		roles[k] = r
	}
	c.Roles = roles
	agents := map[string]Agent{}
	for k, a := range c.Agents {
		a.Grants, a.Denies = sorted(a.Grants), sorted(a.Denies)
		agents[k] = a
	}
	c.Agents = agents
	b, err := json.Marshal(c)
	if err != nil {
		panic("policy: hash: " + err.Error()) // only plain values: cannot fail
	}
	// What a project file narrowed that the policy's JSON does not show (an agent it left to
	// the default toolset, a profile's list narrowed to nothing) is hashed after it, only
	// when there is some, so every other policy keeps its hash.
	narrowed := map[string]any{}
	for k, a := range p.projectAgents {
		narrowed["agents."+k] = []any{sorted(a.Denies), a.OnlySet, sorted(a.Only)}
	}
	for k, pr := range p.Profiles {
		if pr.noAllow || pr.noEnv {
			narrowed["profiles."+k] = []bool{pr.noAllow, pr.noEnv}
		}
	}
	if len(narrowed) > 0 {
		extra, _ := json.Marshal(narrowed)
		b = append(b, extra...)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// sorted returns a sorted, de-duplicated copy; nil and empty both become nil.
func sorted(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(s)))
}
