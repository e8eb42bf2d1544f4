//go:build linux

package launch

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/policy"
	"github.com/jail-sandbox/jail/tools"
)

// Explanation is `jail policy explain`: what a caller is offered and how
// each call is decided, from the registry and the function the front ends
// answer with. It is also the --json shape.
type Explanation struct {
	Sources     []string          `json:"sources"`
	Hash        string            `json:"policy_hash"`
	Widenings   []policy.Widening `json:"ignored_widenings"`
	Confinement Confinement       `json:"confinement"`
	Access      Access            `json:"access"`
	Toolset     *policy.Toolset   `json:"toolset"`
	// Absent are tools the policy names (tools.allow, tools.also_allow,
	// agents.*.grants) that this build's registry does not have: no
	// front end offers them, whatever the policy says.
	Absent []string `json:"absent"`
}

// Access is what the policy's access level expands to (README: "Access levels").
type Access struct {
	Level string `json:"level"`
	// ExpandsTo lists the keys the level sets; overridden ones are set by the file instead.
	ExpandsTo []policy.Setting `json:"expands_to"`
	// NeedsHuman is true for elevated: it takes effect only once a human approves it.
	NeedsHuman bool `json:"needs_human_approval"`
}

// Confinement is what every tool call of the policy runs confined under.
type Confinement struct {
	Workspace   string   `json:"workspace"`
	WorkspaceRW bool     `json:"workspace_rw"`
	RO          []string `json:"ro"`
	RW          []string `json:"rw"`
	Hide        []string `json:"hide"`
	Protected   []string `json:"protected"`
	// ProtectedAfterRun are protected from the run's end: read-only where
	// they exist at launch, moved aside after the run where the sandbox
	// made them (policy.DefaultProtectedLater; docs/workspace.md).
	ProtectedAfterRun []string `json:"protected_after_run"`
	Network           string   `json:"network"`
	Allow             []string `json:"network_allow"`
	Timeout           string   `json:"timeout"`
	Memory            string   `json:"memory"`
	// MemoryBound is what Memory comes to on this machine: the default
	// (zero) is half of its memory, not no bound.
	MemoryBound string `json:"memory_bound"`
	Pids        int64  `json:"pids"`
	OutputChars int64  `json:"output_chars"`
}

// Explain explains p for who (the operator when both are empty), with
// the tools of reg and the widenings the loader ignored.
func Explain(p *policy.Policy, widenings []policy.Widening, reg *tools.Registry, home string, who tools.CallContext) (*Explanation, error) {
	srv := &tools.Server{Registry: reg, Policy: p, PolicyHash: p.Hash(), Home: home}
	ts, err := srv.Toolset(who)
	if err != nil {
		return nil, err
	}
	ex := &Explanation{Sources: p.Sources, Hash: p.Hash(), Widenings: widenings, Toolset: ts, Confinement: Confinement{
		Workspace: p.Sandbox.Workspace, WorkspaceRW: !ts.WorkspaceReadOnly, RO: p.Sandbox.RO, RW: p.Sandbox.RW,
		Hide: p.Sandbox.Hide, Protected: p.Sandbox.Protected, ProtectedAfterRun: policy.DefaultProtectedLater(), Network: p.Network.Mode, Allow: p.Network.Allow,
		Timeout: p.Limits.Timeout.String(), Memory: p.Limits.Memory.String(), Pids: p.Limits.Pids, OutputChars: p.Limits.OutputChars,
	}}
	ex.Confinement.MemoryBound = ex.Confinement.Memory
	if p.Limits.Memory == 0 {
		ex.Confinement.MemoryBound = confine.FormatSize(confine.MemTotal()/policy.DefaultMemoryFraction) + " (the default: half of the machine's)"
	}
	ex.Absent = absentTools(p, reg)
	if ex.Sources == nil {
		ex.Sources = []string{"(embedded default)"}
	}
	ex.Access = Access{Level: p.Access.Level, ExpandsTo: p.Access.Expanded, NeedsHuman: p.Access.Level == policy.LevelElevated}
	if ex.Access.Level == "" {
		ex.Access.Level = policy.LevelCustom
	}
	if ex.Access.ExpandsTo == nil {
		ex.Access.ExpandsTo = []policy.Setting{}
	}
	return ex, nil
}

// Print writes ex for a person.
func (ex *Explanation) Print(w io.Writer) {
	c := ex.Confinement
	fmt.Fprintf(w, "policy:   %s\nsha256:   %s\n", strings.Join(ex.Sources, " + "), ex.Hash)
	who := "operator (bounded by [tools])"
	switch {
	case ex.Toolset.AgentUndefined && ex.Toolset.Role != "":
		who = "agent " + ex.Toolset.Agent + " (the policy defines no [agents." + ex.Toolset.Agent + "]: role " + ex.Toolset.Role + ", as --role alone gives)"
	case ex.Toolset.AgentUndefined:
		who = "agent " + ex.Toolset.Agent + " (the policy defines no [agents." + ex.Toolset.Agent + "]: the operator's toolset, bounded by [tools]; an [agents." + ex.Toolset.Agent + "] table with a role narrows it)"
	case ex.Toolset.Agent != "":
		who = "agent " + ex.Toolset.Agent + " (role " + ex.Toolset.Role + ")"
	case ex.Toolset.Role != "":
		who = "role " + ex.Toolset.Role
	}
	if ex.Toolset.AgentNarrowedBy != "" {
		who += ", narrowed by the [agents." + ex.Toolset.Agent + "] of " + ex.Toolset.AgentNarrowedBy
	}
	fmt.Fprintf(w, "subject:  %s\n\n", who)
	mode := "rw"
	if !c.WorkspaceRW {
		mode = "ro"
	}
	net := c.Network
	if len(c.Allow) > 0 && net != policy.NetNone {
		net += " (allow " + strings.Join(c.Allow, ", ") + ")"
	}
	fmt.Fprintf(w, "every tool runs confined under:\n  workspace  %s (%s)\n  ro         %s\n  rw         %s\n  hidden     %s\n  protected  %s\n  after run  %s\n             (read-only where they exist; moved aside when the run ends where the sandbox made them;\n             the first component of every entry counts in each directory below the root: docs/workspace.md)\n  network    %s\n  limits     timeout %s, memory %s, pids %s, output %d chars\n",
		c.Workspace, mode, list(c.RO), list(c.RW), list(c.Hide), list(c.Protected), list(c.ProtectedAfterRun), net, orNone(c.Timeout, "0s"), orNone(c.MemoryBound, "0"), orNone(fmt.Sprint(c.Pids), "0"), c.OutputChars)
	fmt.Fprintf(w, "\naccess level %s", ex.Access.Level)
	if len(ex.Access.ExpandsTo) == 0 {
		fmt.Fprintln(w, ": sets nothing; the file's keys alone apply")
	} else {
		fmt.Fprintln(w, " expands to (keys the file sets itself win):")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, s := range ex.Access.ExpandsTo {
			note := ""
			if s.Overridden {
				note = "\toverridden by the file"
			}
			fmt.Fprintf(tw, "  %s\t= %s%s\n", s.Key, s.Value, note)
		}
		tw.Flush()
	}
	if ex.Access.NeedsHuman {
		fmt.Fprintln(w, "  takes effect only when a human approves it at the first tool call (refused unattended)")
	}
	if len(ex.Absent) > 0 {
		fmt.Fprintf(w, "\nnamed by the policy but not in this build (never offered): %s\n", strings.Join(ex.Absent, " "))
	}
	for _, sec := range []struct {
		title string
		ds    []policy.ToolDecision
	}{{"granted", ex.Toolset.Granted}, {"denied", ex.Toolset.Denied}, {"unavailable", ex.Toolset.Unavailable}} {
		fmt.Fprintf(w, "\n%s (%d):\n", sec.title, len(sec.ds))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, d := range sec.ds {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", d.Tool.Name, d.Risk, d.Reason)
			if a := d.Approval; a != nil {
				// A granted tool is not a tool that runs: say whether a
				// call runs, asks or is refused, and which key changes it.
				fmt.Fprintf(tw, "  \t\t%s\n", a.Summary)
				if a.Pass != "" {
					fmt.Fprintf(tw, "  \t\tto run it without asking: %s\n", a.Pass)
				}
				if a.UnattendedPass != "" && a.Unattended == policy.ApprovalRefused {
					fmt.Fprintf(tw, "  \t\tto run it unattended: %s\n", a.UnattendedPass)
				}
			}
		}
		tw.Flush()
	}
}

// absentTools lists the tools p names that reg does not have, in order.
func absentTools(p *policy.Policy, reg *tools.Registry) []string {
	named := append(slices.Clone(p.Tools.Allow), p.Tools.AlsoAllow...)
	for _, name := range slices.Sorted(maps.Keys(p.Agents)) {
		named = append(named, p.Agents[name].Grants...)
	}
	absent := []string{}
	for _, n := range named {
		if _, ok := reg.Lookup(n); !ok && !slices.Contains(absent, n) {
			absent = append(absent, n)
		}
	}
	return absent
}

// orNone shows a limit whose value is zero as "none": zero is no limit,
// not a limit of zero.
func orNone(v, zero string) string {
	if v == zero {
		return "none"
	}
	return v
}

func list(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, " ")
}
