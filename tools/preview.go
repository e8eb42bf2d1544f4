//go:build linux

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/jail-sandbox/jail/policy"
)

// Toolset is what the caller cc gets from this server: the policy's toolset over this
// registry ([policy.Resolve], through the gate the calls are decided by), with a granted tool
// that cannot run on this machine moved to Unavailable with the reason, and the approval state
// of each granted tool ([policy.Gate.Preview]). ListTools serves its granted tools and
// `jail policy explain` prints it, so what an operator reads is what a harness is offered.
func (s *Server) Toolset(cc CallContext) (*policy.Toolset, error) {
	s.init()
	g, err := s.gate(policy.Subject{Agent: cc.Agent, Role: cc.Role})
	if err != nil {
		return nil, err
	}
	ts := *g.Toolset
	ts.Granted, ts.Unavailable = nil, slices.Clone(g.Toolset.Unavailable)
	for _, d := range g.Toolset.Granted {
		t, ok := s.Registry.Lookup(d.Tool.Name)
		if !ok {
			continue // the gate resolved over this registry: cannot happen
		}
		if err := t.ready(); err != nil {
			d.Status, d.Reason = policy.StatusUnavailable, "cannot run here: "+err.Error()
			ts.Unavailable = append(ts.Unavailable, d)
			continue
		}
		if p, ok := g.Preview(d.Tool.Name); ok {
			d.Approval = &p
		}
		ts.Granted = append(ts.Granted, d)
	}
	return &ts, nil
}

// WouldAsk reports whether r, as it stands, reaches the gate's question (the access level's
// elevation question included) and what it would ask, by running the gate the call itself
// will be decided by with an asker that only records the question. Nothing runs and nothing is
// audited. A front end whose protocol cannot ask during a call (MCP's multi round-trip
// requests) returns the question first and repeats the call with the answer; because the gate
// is the same, an elevation approved once holds for the rest of the session.
func (s *Server) WouldAsk(ctx context.Context, r Request) (policy.Question, bool) {
	s.init()
	t, ok := s.Registry.Lookup(r.Tool)
	if !ok || t.ready() != nil || t.Validate(r.Args) != nil {
		return policy.Question{}, false // refused before any question
	}
	var args map[string]any
	if json.Unmarshal(r.Args, &args) != nil {
		return policy.Question{}, false
	}
	g, err := s.gate(policy.Subject{Agent: r.Context.Agent, Role: r.Context.Role})
	if err != nil {
		return policy.Question{}, false
	}
	var asked *policy.Question
	dry := *g // the same toolset, guard, grants and elevation; this asker
	dry.Asker = policy.AskFunc(func(_ context.Context, q policy.Question) (policy.Answer, error) {
		asked = &q
		return policy.Answer{}, errors.New("dry run")
	})
	dry.Check(ctx, policy.Call{Tool: r.Tool, Args: args, Declared: t.Risk, Unattended: r.Context.Unattended})
	if asked == nil {
		return policy.Question{}, false
	}
	return *asked, true
}
