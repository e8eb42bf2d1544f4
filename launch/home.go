//go:build linux

package launch

import (
	"os"

	"github.com/jail-sandbox/jail/agent"
	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/home"
	"github.com/jail-sandbox/jail/policy"
)

// HomesRoot is where this caller's persistent sandbox homes live.
func HomesRoot(penv policy.Env) string {
	return home.Root(penv.Home, os.Getenv("XDG_DATA_HOME"))
}

// AttachHome gives layout the workspace's persistent home unless the
// policy asks for an empty one: every front end's sandboxes (jail run,
// and the workers and bash calls of serve, mcp and tool) share it.
func AttachHome(p *policy.Policy, penv policy.Env, layout *confine.Layout) (*home.Home, error) {
	return home.Attach(layout, HomesRoot(penv), penv.Home, p.Sandbox.Home == policy.HomePersistent)
}

// Profile is the agent profile a run gets (docs/agents.md), chosen and
// checked before anything is made on disk.
type Profile struct {
	Name    string
	Profile policy.Profile
}

// ChooseProfile returns the run's agent profile, nil for none: the one
// named by --profile, else the one the command's base name chooses. It
// refuses an unknown name and what the profile would refuse about the
// caller's environment, and opens the network to the profile's hosts
// (netGiven says --net was given, which a profile does not override). It
// makes nothing on disk: a run refused later makes nothing either.
func ChooseProfile(o *Options, p *policy.Policy, penv policy.Env, layout *confine.Layout, netGiven bool) (*Profile, error) {
	name := o.Profile
	if name == "" {
		name = p.ProfileFor(o.Argv[0])
	}
	if name == "" || name == "none" {
		return nil, nil
	}
	prof, ok := p.Profile(name)
	if !ok {
		return nil, p.UnknownProfile(name)
	}
	if err := agent.Check(layout, name, prof, penv.Home, os.Getenv); err != nil {
		return nil, err
	}
	p.Network.Allow = append(p.Network.Allow, prof.Allow...)
	p.Network.Quiet, p.Network.QuietProfile = prof.Quiet, name
	if !netGiven && o.Net == policy.NetNone {
		o.Net = policy.NetProxy
	}
	return &Profile{Name: name, Profile: prof}, nil
}

// ApplyHome gives the run its persistent home (docs/home.md) and the agent
// profile ChooseProfile chose (nil: none): the first things a run makes on
// disk, after every refusal that does not depend on them.
func ApplyHome(o *Options, p *policy.Policy, penv policy.Env, layout *confine.Layout, pass *[]string, prof *Profile) error {
	root := HomesRoot(penv)
	h, err := AttachHome(p, penv, layout)
	if err != nil {
		return err
	}
	if prof == nil {
		return nil
	}
	setup, err := agent.Apply(layout, prof.Name, prof.Profile, penv.Home, root, h, os.Getenv)
	if err != nil {
		return err
	}
	*pass = append(*pass, setup.Env...)
	// The profile's variables come first: the caller's --env wins.
	o.Env = append(append(o.Env[:0:0], setup.Set...), o.Env...)
	// A profile's run prepares the agent's files on the host first; it
	// is planned every time.
	layout.Facts.Unsure()
	return nil
}
