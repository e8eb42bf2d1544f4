package policy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jail-sandbox/jail/termtext"
)

// Outcome is what happened to a call, as the audit log records it.
type Outcome string

// Outcomes. Allowed and approved both run the call: allowed by policy alone, approved after an
// approval step (a human, or a persistent grant). Refused means a human said no or nobody answered.
const (
	OutcomeAllowed     Outcome = "allowed"
	OutcomeApproved    Outcome = "approved"
	OutcomeDenied      Outcome = "denied"
	OutcomeUnavailable Outcome = "unavailable"
	OutcomeRefused     Outcome = "refused"
)

// Approval sources, recorded with every decision.
// SourceApprover (approver.go) marks the operator's approver command.
const (
	SourcePolicy = "policy" // the policy decided (rules, lists, persistent grants)
	SourceHuman  = "human"  // a person answered the question for this call
	SourceNone   = "none"   // nobody approved: the call was denied
)

// Call is one tool call presented to the gate.
type Call struct {
	Tool string
	// Args are the tool's arguments; for exec tools Args["command"] is what the guard reads.
	Args map[string]any
	// Declared is the tool's own risk declaration; the gate takes the stricter of it and the map.
	Declared Risk
	// Unattended is true when no person watches this session (CI, daemon, cron).
	Unattended bool
	// Shell is the session an exec tool's command runs in (its directory
	// and variables, left by earlier calls); nil when it has none. The
	// guard judges the command against it.
	Shell *Shell
}

// Command returns the shell command an exec tool will run, if any.
func (c Call) Command() string {
	s, _ := c.Args["command"].(string)
	return s
}

// Decision is the gate's answer for one call.
type Decision struct {
	Allowed        bool        `json:"allowed"`
	Outcome        Outcome     `json:"outcome"`
	ApprovalSource string      `json:"approval_source"`
	Reason         string      `json:"reason"`
	Risk           Risk        `json:"risk"`
	Step           string      `json:"step"` // the pipeline step that decided
	Guard          GuardResult `json:"guard"`
	// Actions are the call's action types (see [Action]); empty only when the call was refused
	// before it could be classified (an unknown tool).
	Actions []Action `json:"action_types,omitempty"`
	// Elevation is "approved" or "refused" on the call at which a human answered whether the
	// policy's elevated access level may take effect; ElevationSource is then "human".
	Elevation       string `json:"elevation,omitempty"`
	ElevationSource string `json:"elevation_source,omitempty"`
}

// Question is what an [Asker] is asked.
type Question struct {
	Agent  string
	Tool   string
	Risk   Risk
	Args   map[string]any // already redacted
	Reason string         // why approval is needed
	// Actions are the call's action types.
	Actions []Action
	// Role is the asking agent's role, for approvers that decide by it.
	Role string
	// GrantsFile is where an "always" answer is saved (approval.grants_file); empty means
	// nowhere, and a prompt then does not offer "always".
	GrantsFile string
}

// Answer is a human's reply. Remember asks for a persistent grant for this exact call: saved
// to approval.grants_file when there is one ([SaveGrant]), and held for the rest of the session.
type Answer struct {
	Approve  bool
	Remember bool
}

// Asker puts a question to whoever the front end has: a terminal, a harness over JSON lines or
// MCP. It must return when ctx is done; the gate treats that as a refusal.
type Asker interface {
	Ask(ctx context.Context, q Question) (Answer, error)
}

// AskFunc adapts a harness callback to [Asker].
type AskFunc func(ctx context.Context, q Question) (Answer, error)

// Ask calls f.
func (f AskFunc) Ask(ctx context.Context, q Question) (Answer, error) { return f(ctx, q) }

// Grant is one persistent approval: this tool, and for exec tools this exact command.
type Grant struct {
	Tool    string `json:"tool"`
	Command string `json:"command,omitempty"` // empty: any call of the tool without guard hits
}

// LoadGrants reads the persistent grants file (a JSON array). A missing file is no grants.
func LoadGrants(path string) ([]Grant, error) {
	if path == "" {
		return nil, nil
	}
	if err := CheckTrusted("approval.grants_file", path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("grants: read: %w", err)
	}
	var gs []Grant
	if err := json.Unmarshal(b, &gs); err != nil {
		return nil, fmt.Errorf("grants: parse %s: %w", path, err)
	}
	return gs, nil
}

// Gate is the approval pipeline. [Gate.Check] runs these steps in order; the first that decides
// wins:
//
//  0. toolset: a tool not granted by [Resolve] is denied (or unavailable) with Resolve's reason.
//  1. hard guard: an exec tool's command that hits a hard guard (or does not parse) is denied.
//     No approval can lift it.
//  2. risk and action classification: the stricter of the static map and the declaration; the
//     call's action types ([ToolActions], or the parsed command for exec tools); a soft guard hit,
//     or approval.require_approval naming the tool or covering any of its action types, marks the
//     call as needing approval.
//  3. unattended: read_only passes; dangerous is denied; a call needing approval is denied
//     (nobody can approve it); the rest follow approval.unattended_policy (allow or deny).
//  4. read_only and write auto-approve (approval.auto_approve_read_only / _write), unless the
//     call needs approval.
//  5. approval.auto_approve lists the tool, or covers every one of its action types, unless the
//     call needs approval or is dangerous.
//  6. a persistent grant matches (tool and exact command).
//  7. the approver command (approval.approver), if any: approve runs the call (except a
//     dangerous one, which still goes to a human), deny refuses it, escalate goes on to the human;
//     a missing program, a non-zero exit, no answer within approver_timeout or an answer that is
//     not one JSON line with a known decision refuses it with the reason.
//  8. ask the [Asker]; nil means denial ("no one to ask"); no answer within ask_timeout denies.
type Gate struct {
	Policy  *Policy
	Toolset *Toolset
	Guard   *Guard
	Grants  []Grant
	Asker   Asker // nil: nobody to ask
	// Approver is asked before Asker; nil means none.
	Approver *Approver

	elevation *elevation // non-nil when the access level is elevated
	// GitConfig, when set, reads every git config a call's git commands
	// will read where w says they run, as the call's sandbox sees them,
	// and the config of the other programs w names (less's lesskey), and
	// returns why one may make the call run a program a sandbox chose
	// ("": none), as a clause of the question: a setting that runs a
	// program in a file a sandbox can write, a hook there, a file it
	// cannot read safely (docs/actions.md, "Git's config and hooks are
	// code"). The call is then process:run.
	GitConfig func(w GitWhere) string

	// remembered holds this session's "always" answers; shared by copies.
	remembered *remembered
}

// NewGate resolves the toolset for who and builds the guard and grants.
func NewGate(p *Policy, registry []ToolInfo, who Subject, home string, asker Asker) (*Gate, error) {
	ts, err := Resolve(p, registry, who)
	if err != nil {
		return nil, err
	}
	g, err := NewGuard(p.Guards, home)
	if err != nil {
		return nil, err
	}
	grants, err := LoadGrants(p.Approval.GrantsFile)
	if err != nil {
		return nil, err
	}
	gt := &Gate{Policy: p, Toolset: ts, Guard: g, Grants: grants, Asker: asker, remembered: &remembered{}}
	if len(p.Approval.Approver) > 0 {
		gt.Approver = &Approver{Argv: slices.Clone(p.Approval.Approver), Timeout: p.Approval.ApproverTimeout}
	}
	if p.Access.Level == LevelElevated {
		gt.elevation = &elevation{}
	}
	return gt, nil
}

func deny(outcome Outcome, step, reason string) Decision {
	return Decision{Outcome: outcome, ApprovalSource: SourceNone, Step: step, Reason: reason}
}

func allow(step, reason string) Decision {
	return Decision{Allowed: true, Outcome: OutcomeAllowed, ApprovalSource: SourcePolicy, Step: step, Reason: reason}
}

// Check decides one call. It never returns an error: every failure is a denial with a reason.
//
// Under access level elevated, the first call of a granted tool first asks the [Asker] whether the
// level may take effect (step "access"); until a human approves, every call is refused, and an
// unattended call is refused without asking. The call at which the human answered records it in
// Elevation and ElevationSource.
func (g *Gate) Check(ctx context.Context, c Call) Decision {
	if g.elevation != nil {
		if td, ok := g.Toolset.Lookup(c.Tool); ok && td.Status == StatusGranted {
			why, asked := g.elevate(ctx, c)
			if why != "" {
				d := deny(OutcomeRefused, "access", why)
				if asked {
					d.Elevation, d.ElevationSource = "refused", SourceHuman
				}
				return d
			}
			if asked {
				d := g.check(ctx, c)
				d.Elevation, d.ElevationSource = "approved", SourceHuman
				return d
			}
		}
	}
	return g.check(ctx, c)
}

func (g *Gate) check(ctx context.Context, c Call) Decision {
	// 0. toolset
	td, ok := g.Toolset.Lookup(c.Tool)
	if !ok {
		return deny(OutcomeDenied, "toolset", "unknown tool "+c.Tool)
	}
	if td.Status != StatusGranted {
		o := OutcomeDenied
		if td.Status == StatusUnavailable {
			o = OutcomeUnavailable
		}
		return deny(o, "toolset", td.Reason)
	}
	// 1. hard guard (and, for exec tools, classification of the command)
	var gr GuardResult
	acts := ToolActions(td.Tool)
	gitWhy := ""
	if slices.Contains(effectiveCaps(td.Tool), CapProcessExec) {
		cmd, isString := c.Args["command"].(string)
		if !isString {
			return deny(OutcomeDenied, "guard", "exec call without a string \"command\" argument")
		}
		gr = g.Guard.CheckIn(cmd, c.Shell)
		acts = gr.Actions
		if g.GitConfig != nil && !slices.Contains(acts, ActProcRun) && (gr.Git || gr.GitWhere != nil && len(gr.GitWhere.Writes)+len(gr.GitWhere.Runs) > 0) {
			set := ""
			switch {
			case gr.GitWhere == nil || gr.Git && gr.GitWhere.Unknown != "":
				set = "its git commands may run programs: jail cannot read their config first: "
				if gr.GitWhere != nil {
					set += gr.GitWhere.Unknown
				}
			default:
				set = g.GitConfig(*gr.GitWhere)
			}
			if set != "" {
				gitWhy = "; " + set
				acts = append(slices.Clone(acts), ActProcRun)
				gr.Actions = acts
			}
		}
		if gr.Level == GuardHard {
			d := deny(OutcomeDenied, "guard", "hard block: "+gr.Reason())
			d.Guard, d.Actions = gr, acts
			return d
		}
	}
	gitCode := false
	if f, ok := c.Args["path"].(string); ok && slices.Contains(acts, ActCodeWrite) && gitCodePath(f) {
		// The write and edit tools writing git's config or a hook: code
		// git runs, so not a write the sandbox contains.
		acts, gitCode = append(slices.Clone(acts), ActProcRun), true
	}
	// 2. risk classification
	risk := max(td.Risk, c.Declared)
	if gitCode {
		risk = max(risk, Exec)
	}
	a := g.Policy.Approval
	needsApproval, why := false, ""
	switch {
	case gr.Level == GuardSoft:
		needsApproval, why = true, "soft block: "+gr.Reason()
	default:
		if e, ok := selectorMatches(a.RequireApproval, c.Tool, acts); ok {
			needsApproval, why = true, "approval.require_approval lists "+e
			if e != c.Tool {
				why += " (the call is " + actionList(acts) + ")"
			}
		}
	}
	finish := func(d Decision) Decision { d.Risk, d.Guard, d.Actions = risk, gr, acts; return d }
	// 3. unattended
	if c.Unattended {
		switch {
		case risk == ReadOnly && !needsApproval:
			return finish(allow("unattended", "read_only calls pass unattended"))
		case risk == Dangerous:
			return finish(deny(OutcomeDenied, "unattended", "dangerous calls are never approved unattended"))
		case needsApproval:
			hint := ""
			if e, ok := selectorMatches(a.RequireApproval, c.Tool, acts); ok && gr.Level != GuardSoft {
				hint = " (remove " + e + " from approval.require_approval to run it unattended)"
			}
			return finish(deny(OutcomeDenied, "unattended", why+"; nobody is there to approve it"+hint))
		case a.UnattendedPolicy == "allow":
			return finish(allow("unattended", "approval.unattended_policy = allow"))
		default:
			return finish(deny(OutcomeDenied, "unattended", "approval.unattended_policy = deny refuses "+risk.String()+" calls unattended"))
		}
	}
	// 4. read_only / write auto-approve
	if !needsApproval {
		if risk == ReadOnly && a.AutoApproveReadOnly != nil && *a.AutoApproveReadOnly {
			return finish(allow("auto-risk", "read_only calls are auto-approved"))
		}
		if risk == Write && a.AutoApproveWrite != nil && *a.AutoApproveWrite {
			return finish(allow("auto-risk", "write calls are auto-approved (the sandbox contains them)"))
		}
		// 5. auto_approve list
		if coversAll(a.AutoApprove, c.Tool, acts) && risk != Dangerous {
			if slices.Contains(a.AutoApprove, c.Tool) {
				return finish(allow("auto-approve", "approval.auto_approve lists "+c.Tool))
			}
			return finish(allow("auto-approve", "approval.auto_approve covers "+actionList(acts)))
		}
	}
	if why == "" {
		why = risk.String() + " call needs approval"
		// Name what the policy did not cover: `sort -o .git/config` is
		// code:read,code:write,process:run, and the person should see
		// that it runs a program, not only that it is an exec call.
		var uncovered []Action
		for _, act := range acts {
			if !slices.ContainsFunc(a.AutoApprove, func(e string) bool { return MatchAction(e, act) }) {
				uncovered = append(uncovered, act)
			}
		}
		if len(uncovered) > 0 {
			why += " (it is " + actionList(uncovered) + ", which approval.auto_approve does not cover)"
		}
	}
	why += gitWhy
	// 6. persistent grants
	grants := g.Grants
	if g.remembered != nil {
		grants = append(slices.Clone(grants), g.remembered.list()...)
	}
	for _, gt := range grants {
		// A grant of the exact command was given for what it did then: not
		// when the session, or a config a sandbox may have written, now
		// makes it run something else.
		if gt.Tool == c.Tool && (gt.Command == c.Command() && gr.Session == "" && gitWhy == "" || gt.Command == "" && gr.Level == GuardAllow && risk != Dangerous) {
			d := allow("grant", "persistent grant for "+c.Tool)
			d.Outcome = OutcomeApproved
			return finish(d)
		}
	}
	timeout := a.AskTimeout
	if timeout <= 0 {
		timeout = DefaultAskTimeout
	}
	// 7. approver
	if g.Approver != nil {
		resp, err := g.decideApprover(ctx, ApproverRequest{Tool: c.Tool, ArgsDigest: ArgsDigest(c.Args), Risk: risk,
			ActionTypes: acts, Reason: why, Agent: g.Toolset.Agent, Role: g.Toolset.Role}, timeout)
		said := func(r string) string {
			if r == "" {
				return ""
			}
			return ": " + r
		}
		switch {
		case err != nil:
			return finish(deny(OutcomeRefused, "approver", why+"; "+err.Error()))
		case resp.Decision == VerdictDeny:
			d := deny(OutcomeRefused, "approver", why+"; denied by the approver"+said(resp.Reason))
			d.ApprovalSource = SourceApprover
			return finish(d)
		case resp.Decision == VerdictApprove && risk != Dangerous:
			d := allow("approver", why+"; approved by the approver"+said(resp.Reason))
			d.Outcome, d.ApprovalSource = OutcomeApproved, SourceApprover
			return finish(d)
		case resp.Decision == VerdictApprove:
			why += "; the approver approved, but a dangerous call needs a human"
		default:
			why += "; escalated by the approver" + said(resp.Reason)
		}
	}
	// 8. ask
	if g.Asker == nil {
		return finish(deny(OutcomeRefused, "ask", why+"; no one to ask"+passHint(a, c.Tool, risk, acts, gr)))
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ans, err := g.Asker.Ask(actx, Question{Agent: g.Toolset.Agent, Role: g.Toolset.Role, Tool: c.Tool, Risk: risk, Args: Redact(c.Args), Reason: why, Actions: acts,
		GrantsFile: a.GrantsFile})
	switch {
	case err != nil && ctx.Err() != nil:
		// The call itself ended (cancelled, or its client went away), not
		// the wait for an answer.
		return finish(deny(OutcomeRefused, "ask", why+"; the call was cancelled before an answer"))
	case err != nil && actx.Err() != nil:
		return finish(deny(OutcomeRefused, "ask", fmt.Sprintf("%s; no answer within %s", why, timeout)))
	case err != nil:
		return finish(deny(OutcomeRefused, "ask", why+"; asking failed: "+err.Error()))
	case !ans.Approve:
		d := deny(OutcomeRefused, "ask", why+"; refused by a human")
		d.ApprovalSource = SourceHuman
		return finish(d)
	}
	reason := why + "; approved by a human"
	if ans.Remember {
		gt := Grant{Tool: c.Tool, Command: c.Command()}
		if g.remembered != nil {
			g.remembered.add(gt)
		} else {
			g.Grants = append(g.Grants, gt)
		}
		switch {
		case a.GrantsFile == "":
			reason += " (always: for this session; set approval.grants_file to keep it)"
		default:
			if err := SaveGrant(a.GrantsFile, gt); err != nil {
				// The human's answer stands for this call and session;
				// the record says it did not last.
				reason += " (always: for this session only: " + err.Error() + ")"
			} else {
				reason += " (always: saved to approval.grants_file " + a.GrantsFile + ")"
			}
		}
	}
	return finish(Decision{Allowed: true, Outcome: OutcomeApproved, ApprovalSource: SourceHuman, Step: "ask", Reason: reason})
}

// TerminalAsker asks on a terminal: it writes the question to Out and reads one line from In
// ("y", "yes", "a"/"always" to remember; anything else refuses). "always" is offered only when
// the question names a grants file to save it to. In should be the controlling
// terminal (/dev/tty), not the agent's stdin. When In is an *os.File that supports deadlines,
// the read ends at ctx's deadline; otherwise the reading goroutine ends when a line arrives or
// In is closed, and the gate has already moved on.
type TerminalAsker struct {
	In  io.Reader
	Out io.Writer
}

// Ask prompts and waits for one line. What the question quotes (the agent's name, a reason
// naming a command, the arguments) may come from the sandbox, so it is shown with every
// control character escaped (termtext.Escape): it can neither redraw the terminal nor hide part
// of the question. Before the prompt the terminal's attributes are reset and its pending input
// is discarded (TCIFLUSH), so a line typed earlier (an answer to a prompt someone else drew)
// is never taken as the answer (docs/terminal.md).
func (t *TerminalAsker) Ask(ctx context.Context, q Question) (Answer, error) {
	args, _ := MarshalLine(q.Args)
	// "always" is offered only when it can last: saved to the grants file.
	always := ""
	if q.GrantsFile != "" {
		always = " / [a]lways (saved to " + termtext.Escape(q.GrantsFile) + ")"
	}
	if f, ok := t.In.(*os.File); ok {
		flushInput(f)
	}
	// The reason is said again next to the prompt, and what is quoted is bounded, so no
	// argument however long scrolls the question's reason or the command's start off the
	// screen (QuestionText). When that left something out, the person may ask to see it
	// whole ([v]iew) before answering: nothing is approved unseen.
	reason := QuestionText(termtext.Escape(q.Reason), questionReasonMax)
	shown := QuestionText(string(args), questionArgsMax)
	view := ""
	if shown != string(args) || reason != termtext.Escape(q.Reason) {
		view = " / [v]iew it whole"
	}
	fmt.Fprintf(t.Out, "\r\x1b[0m\x1b[K\njail: %s wants %s (%s): %s\n  args: %s\n  why: %s\n  allow? [y]es%s / [N]o%s: ",
		termtext.Escape(orDash(q.Agent)), termtext.Escape(q.Tool), q.Risk, reason, shown, reason, always, view)
	if f, ok := t.In.(*os.File); ok {
		if dl, ok := ctx.Deadline(); ok {
			_ = f.SetReadDeadline(dl) // best effort: not every file supports deadlines
			defer f.SetReadDeadline(time.Time{})
		}
	}
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	in := bufio.NewReader(t.In)
	read := func() {
		line, err := in.ReadString('\n')
		ch <- result{line, err}
	}
	go read()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(t.Out)
			return Answer{}, ctx.Err()
		case r := <-ch:
			if r.err != nil && r.line == "" {
				return Answer{}, fmt.Errorf("ask: read answer: %w", r.err)
			}
			switch strings.ToLower(strings.TrimSpace(r.line)) {
			case "y", "yes":
				return Answer{Approve: true}, nil
			case "a", "always":
				return Answer{Approve: true, Remember: true}, nil
			case "v", "view":
				if view == "" {
					return Answer{}, nil
				}
				// Escaped as in the question, nothing counted or cut; then
				// the question's reason and prompt again.
				fmt.Fprintf(t.Out, "  whole args: %s\n  whole why: %s\n  allow? [y]es%s / [N]o: ", args, termtext.Escape(q.Reason), always)
				view = ""
				go read()
				continue
			}
			return Answer{}, nil
		}
	}
}

// What a terminal question quotes at most, in bytes of its escaped text: a few lines of a
// wide terminal, so the whole question fits on any screen.
const (
	questionArgsMax   = 640
	questionReasonMax = 320
)

// QuestionText bounds s, already escaped, for a terminal question: a run of one character
// longer than 16 is shown as its count ("[12000 x ' ']"), so padding cannot push what
// follows it away, and text longer than max keeps its start and its end, with how many
// bytes are left out between them: what an agent puts first and what it puts last are both
// shown, and the question says that it does not show it all (and offers to show it whole:
// TerminalAsker.Ask).
func QuestionText(s string, max int) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i + 1
		for j < len(s) && s[j] == s[i] {
			j++
		}
		if n := j - i; n > 16 {
			fmt.Fprintf(&b, "[%d x %q]", n, string(s[i]))
		} else {
			b.WriteString(s[i:j])
		}
		i = j
	}
	s = b.String()
	if len(s) <= max {
		return s
	}
	head, tail := max*2/3, max/3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	cut := len(s) - tail
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return fmt.Sprintf("%s [... %d bytes not shown ...] %s", s[:head], cut-head, s[cut:])
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// passHint names, for a call refused because nobody could answer, what would let such a call
// run without asking: the policy key (passKey), or the guards that ask for it. A dangerous
// call always needs a human, so it names nothing.
func passHint(a Approval, tool string, risk Risk, acts []Action, gr GuardResult) string {
	if gr.Level == GuardSoft {
		var ids []string
		for _, h := range gr.Hits {
			if h.Level == GuardSoft && h.ID != "" && !slices.Contains(ids, strconv.Quote(h.ID)) {
				ids = append(ids, strconv.Quote(h.ID))
			}
		}
		if len(ids) == 0 {
			return " (a guard asks for this command: run it where someone can answer)"
		}
		return " (a guard asks for this command: run it where someone can answer, or switch the guard off with [guards] disable = [" + strings.Join(ids, ", ") + "])"
	}
	if k := passKey(a, tool, Decision{Risk: risk, Actions: acts}); k != "" {
		return " (to run it without asking: " + k + ")"
	}
	return ""
}
