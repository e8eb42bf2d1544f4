//go:build linux

package launch

import (
	"fmt"
	"os"
	"strings"

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

// ApplyHome gives the run its persistent home (docs/home.md) and its agent
// profile (docs/agents.md): the profile named by --profile, else the one
// the command's base name chooses. netGiven says --net was given, which
// a profile does not override.
func ApplyHome(o *Options, p *policy.Policy, penv policy.Env, layout *confine.Layout, pass *[]string, netGiven bool) error {
	root := HomesRoot(penv)
	h, err := AttachHome(p, penv, layout)
	if err != nil {
		return err
	}
	name := o.Profile
	if name == "" {
		name = p.ProfileFor(o.Argv[0])
	}
	if name == "" || name == "none" {
		return nil
	}
	prof, ok := p.Profile(name)
	if !ok {
		return fmt.Errorf("--profile %q: no such profile (known: %s, or none; [profiles.NAME] defines one)", name, strings.Join(p.ProfileNames(), ", "))
	}
	setup, err := agent.Apply(layout, name, prof, penv.Home, root, h, os.Getenv)
	if err != nil {
		return err
	}
	*pass = append(*pass, setup.Env...)
	// The profile's variables come first: the caller's --env wins.
	o.Env = append(append(o.Env[:0:0], setup.Set...), o.Env...)
	p.Network.Allow = append(p.Network.Allow, setup.Allow...)
	if !netGiven && o.Net == policy.NetNone {
		o.Net = policy.NetProxy
	}
	// A profile's run prepares the agent's files on the host first; it
	// is planned every time.
	layout.Facts.Unsure()
	return nil
}
