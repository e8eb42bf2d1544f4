package policy

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// UnknownName is the refusal of a name the policy does not know: an agent
// (--agent, or a call's context), a role (--role) or an agent profile
// (--profile). Every one reads the same way: the name, what is known, the
// flag that names one and the policy key that defines one, so a typo
// (--agent cluade) is answered with the list it should have come from.
type UnknownName struct {
	Kind  string // "agent", "role" or "profile"
	Name  string
	Known string // what the policy knows, as listed in the message
}

func (e *UnknownName) Error() string {
	by := "--" + e.Kind
	if e.Kind != "profile" {
		by += " (jail serve: a call's context." + e.Kind + ")"
	}
	return fmt.Sprintf("unknown %s %q (known: %s); %s names one, the table [%ss.%s] in the policy defines one",
		e.Kind, e.Name, e.Known, by, e.Kind, tomlKey(e.Name))
}

// tomlKey is name as a TOML key: bare when TOML allows it, else quoted (a
// name with a newline or an escape sequence then cannot break the line).
func tomlKey(name string) string {
	if name != "" && strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == "" {
		return name
	}
	return strconv.Quote(name)
}

// unknownAgent refuses an agent the policy defines no [agents.NAME] for
// and that is not named after an agent profile.
func (p *Policy) unknownAgent(name string) error {
	defined := "the policy defines no agents"
	if len(p.Agents) > 0 {
		defined = "the policy's agents " + strings.Join(slices.Sorted(maps.Keys(p.Agents)), ", ")
	}
	return &UnknownName{Kind: "agent", Name: name,
		Known: defined + "; the agent profiles " + strings.Join(p.ProfileNames(), ", ") + ", which get the default toolset"}
}

// unknownRole refuses a role that is neither built in nor a [roles.NAME].
func (p *Policy) unknownRole(name string) error {
	known := "the built-in roles " + strings.Join(builtinRoleNames(), ", ")
	if len(p.Roles) > 0 {
		known += "; the policy's roles " + strings.Join(slices.Sorted(maps.Keys(p.Roles)), ", ")
	}
	return &UnknownName{Kind: "role", Name: name, Known: known}
}

// UnknownProfile refuses an agent profile the policy does not know.
func (p *Policy) UnknownProfile(name string) error {
	return &UnknownName{Kind: "profile", Name: name, Known: strings.Join(p.ProfileNames(), ", ") + ", and none for no profile"}
}
