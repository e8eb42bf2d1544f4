package policy

import (
	"context"
	"errors"
	"slices"
	"strings"
)

// Approval states of a granted tool, as `jail policy explain` shows them.
const (
	ApprovalRuns    = "runs"    // the policy passes the call without asking anyone
	ApprovalAsks    = "asks"    // the call waits for a human (or the approver); nobody to ask refuses it
	ApprovalRefused = "refused" // the call is refused before anyone is asked
)

// ApprovalPreview is what the gate does with a plain call of a granted tool: one whose command
// (for exec tools) no guard flags, classified by the tool alone (exec tools: proc:run). A
// command the guard flags can only do worse: be sent for approval, or be denied.
type ApprovalPreview struct {
	// Attended is runs, asks or refused when someone could answer; Unattended is runs or refused.
	Attended   string `json:"attended"`
	Unattended string `json:"unattended"`
	// Reason is the gate's reason for the attended outcome; UnattendedReason for the other.
	Reason           string `json:"reason"`
	UnattendedReason string `json:"unattended_reason"`
	// Approver is true when approval.approver is asked before a human.
	Approver bool `json:"approver,omitempty"`
	// Pass names the policy key that would let the call run without asking; empty when it
	// already runs or no key can (a dangerous call always needs a human). UnattendedPass is the
	// same for an unattended call.
	Pass           string `json:"pass,omitempty"`
	UnattendedPass string `json:"unattended_pass,omitempty"`
	// Summary is the one-line form ("asks; refused unattended").
	Summary string `json:"summary"`
}

// errDryRun ends a previewed question: the preview only learns that a question was reached.
var errDryRun = errors.New("preview: nobody is asked")

// Preview runs the gate's own pipeline ([Gate.Check] without the access-level step, which
// `jail policy explain` reports on its own) for a plain call of tool, attended and unattended,
// without running anything: the approver command is not started (its presence is reported) and
// the question is recorded instead of asked. It is the one decision function, so explain shows
// what a call gets.
func (g *Gate) Preview(tool string) (ApprovalPreview, bool) {
	td, ok := g.Toolset.Lookup(tool)
	if !ok || td.Status != StatusGranted {
		return ApprovalPreview{}, false
	}
	c := Call{Tool: tool, Args: map[string]any{}}
	if slices.Contains(effectiveCaps(td.Tool), CapProcessExec) {
		c.Args["command"] = "" // no guard hits; classified as proc:run
	}
	dry := *g
	dry.Approver = nil
	asked := false
	dry.Asker = AskFunc(func(context.Context, Question) (Answer, error) {
		asked = true
		return Answer{}, errDryRun
	})
	var p ApprovalPreview
	p.Approver = g.Approver != nil
	d := dry.check(context.Background(), c)
	switch {
	case d.Allowed:
		p.Attended, p.Reason = ApprovalRuns, d.Reason
	case asked:
		p.Attended = ApprovalAsks
		p.Reason = strings.TrimSuffix(d.Reason, "; asking failed: "+errDryRun.Error())
	default:
		p.Attended, p.Reason = ApprovalRefused, d.Reason
	}
	c.Unattended = true
	u := dry.check(context.Background(), c)
	p.Unattended, p.UnattendedReason = ApprovalRefused, u.Reason
	if u.Allowed {
		p.Unattended = ApprovalRuns
	}
	if p.Attended == ApprovalAsks {
		p.Pass = passKey(g.Policy.Approval, tool, d)
	}
	if !u.Allowed {
		p.UnattendedPass = unattendedPassKey(g.Policy.Approval, tool, u)
	}
	p.Summary = p.Attended
	switch {
	case p.Attended == ApprovalAsks && p.Approver:
		p.Summary += " (the approver first)"
	case p.Attended == ApprovalAsks:
		p.Summary += " (refused when nobody can answer)"
	}
	if p.Unattended != p.Attended {
		p.Summary += "; " + p.Unattended + " unattended"
	}
	return p, true
}

// passKey is the key that would let a call the gate sends for approval run without asking.
func passKey(a Approval, tool string, d Decision) string {
	if d.Risk == Dangerous {
		return "" // dangerous calls always need a human
	}
	if e, ok := selectorMatches(a.RequireApproval, tool, d.Actions); ok {
		return "remove " + e + " from approval.require_approval"
	}
	switch d.Risk {
	case ReadOnly:
		return "approval.auto_approve_read_only = true"
	case Write:
		return "approval.auto_approve_write = true"
	}
	return `approval.auto_approve = ["` + tool + `"]`
}

// unattendedPassKey is the key that would let an unattended call the gate refuses run.
func unattendedPassKey(a Approval, tool string, d Decision) string {
	switch {
	case d.Step != "unattended" || d.Risk == Dangerous:
		return "" // refused by the toolset or a guard, or never approved unattended
	case strings.HasPrefix(d.Reason, "approval.unattended_policy"):
		return `approval.unattended_policy = "allow"`
	}
	if e, ok := selectorMatches(a.RequireApproval, tool, d.Actions); ok {
		return "remove " + e + " from approval.require_approval"
	}
	return ""
}
