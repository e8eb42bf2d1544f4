package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/jail-sandbox/jail/launch"
	"github.com/jail-sandbox/jail/policy"
	"github.com/jail-sandbox/jail/tools"
)

const policyUsage = `usage:
  jail policy check FILE...
  jail policy explain [--policy FILE] [--agent A | --role R] [--json] [-w DIR]
`

// policyMain runs `jail policy ...`. Exit codes: 0 ok, 1 failure, 2 invalid policy or usage.
func policyMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, policyUsage)
		return 2
	}
	switch args[0] {
	case "check":
		return policyCheck(args[1:], stdout, stderr)
	case "explain":
		return policyExplain(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, policyUsage)
		return 0
	}
	fmt.Fprintf(stderr, "jail policy: unknown command %q\n%s", args[0], policyUsage)
	return 2
}

func policyCheck(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, policyUsage)
		return 2
	}
	env, err := launch.PolicyEnv("")
	if err != nil {
		fmt.Fprintln(stderr, "jail policy check:", err)
		return 1
	}
	code := 0
	for _, file := range args {
		p, err := policy.Load(file, env)
		if err != nil {
			launch.PrintPolicyErrors(stderr, err)
			code = 2
			continue
		}
		if errs := p.MissingPaths(); len(errs) > 0 {
			for _, e := range errs {
				fmt.Fprintln(stderr, e)
			}
			code = 2
			continue
		}
		fmt.Fprintf(stdout, "%s: ok (sha256 %s)\n", file, p.Hash())
	}
	return code
}

// explanation is the --json shape of `jail policy explain`.
type explanation struct {
	Sources     []string          `json:"sources"`
	Hash        string            `json:"policy_hash"`
	Widenings   []policy.Widening `json:"ignored_widenings"`
	Confinement confinement       `json:"confinement"`
	Access      access            `json:"access"`
	Toolset     *policy.Toolset   `json:"toolset"`
	// Absent are tools the policy names (tools.allow, tools.also_allow,
	// agents.*.grants) that this build's registry does not have: no
	// front end offers them, whatever the policy says.
	Absent []string `json:"absent"`
}

// access is what the policy's access level expands to (README: "Access levels").
type access struct {
	Level string `json:"level"`
	// ExpandsTo lists the keys the level sets; overridden ones are set by the file instead.
	ExpandsTo []policy.Setting `json:"expands_to"`
	// NeedsHuman is true for elevated: it takes effect only once a human approves it.
	NeedsHuman bool `json:"needs_human_approval"`
}

type confinement struct {
	Workspace   string   `json:"workspace"`
	WorkspaceRW bool     `json:"workspace_rw"`
	RO          []string `json:"ro"`
	RW          []string `json:"rw"`
	Hide        []string `json:"hide"`
	Protected   []string `json:"protected"`
	Network     string   `json:"network"`
	Allow       []string `json:"network_allow"`
	Timeout     string   `json:"timeout"`
	Memory      string   `json:"memory"`
	Pids        int64    `json:"pids"`
	OutputChars int64    `json:"output_chars"`
}

func policyExplain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("jail policy explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("policy", "", "policy `FILE` (default: the user file, then the project file)")
	agent := fs.String("agent", "", "explain the toolset of agent `A` from [agents.A]")
	role := fs.String("role", "", "explain the toolset of role `R`")
	asJSON := fs.Bool("json", false, "print JSON")
	dir := fs.String("w", "", "workspace `DIR` (default: the current directory)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || (*agent != "" && *role != "") {
		fmt.Fprint(stderr, "jail policy explain: give at most one of --agent and --role, and no arguments\n", policyUsage)
		return 2
	}
	env, err := launch.PolicyEnv(*dir)
	if err != nil {
		fmt.Fprintln(stderr, "jail policy explain:", err)
		return 1
	}
	p, widenings, err := policy.LoadEffective(*file, env)
	if err != nil {
		launch.PrintPolicyErrors(stderr, err)
		return 2
	}
	for _, w := range widenings {
		fmt.Fprintln(stderr, "jail: warning:", w)
	}
	// The registry and the function serve, mcp and tool answer with: explain
	// prints what a caller is offered and how each call is decided.
	reg, err := launch.CoreRegistry(p.Limits.Timeout)
	if err != nil {
		fmt.Fprintln(stderr, "jail policy explain:", err)
		return 1
	}
	srv := &tools.Server{Registry: reg, Policy: p, PolicyHash: p.Hash(), Home: env.Home}
	ts, err := srv.Toolset(tools.CallContext{Agent: *agent, Role: *role})
	if err != nil {
		fmt.Fprintln(stderr, "jail policy explain:", err)
		return 2
	}
	ex := explanation{Sources: p.Sources, Hash: p.Hash(), Widenings: widenings, Toolset: ts, Confinement: confinement{
		Workspace: p.Sandbox.Workspace, WorkspaceRW: !ts.WorkspaceReadOnly, RO: p.Sandbox.RO, RW: p.Sandbox.RW,
		Hide: p.Sandbox.Hide, Protected: p.Sandbox.Protected, Network: p.Network.Mode, Allow: p.Network.Allow,
		Timeout: p.Limits.Timeout.String(), Memory: p.Limits.Memory.String(), Pids: p.Limits.Pids, OutputChars: p.Limits.OutputChars,
	}}
	ex.Absent = absentTools(p, reg)
	if ex.Sources == nil {
		ex.Sources = []string{"(embedded default)"}
	}
	ex.Access = access{Level: p.Access.Level, ExpandsTo: p.Access.Expanded, NeedsHuman: p.Access.Level == policy.LevelElevated}
	if ex.Access.Level == "" {
		ex.Access.Level = policy.LevelCustom
	}
	if ex.Access.ExpandsTo == nil {
		ex.Access.ExpandsTo = []policy.Setting{}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(ex); err != nil {
			fmt.Fprintln(stderr, "jail policy explain:", err)
			return 1
		}
		return 0
	}
	printExplanation(stdout, ex)
	return 0
}

func printExplanation(w io.Writer, ex explanation) {
	c := ex.Confinement
	fmt.Fprintf(w, "policy:   %s\nsha256:   %s\n", strings.Join(ex.Sources, " + "), ex.Hash)
	who := "operator (bounded by [tools])"
	if ex.Toolset.Agent != "" {
		who = "agent " + ex.Toolset.Agent + " (role " + ex.Toolset.Role + ")"
	} else if ex.Toolset.Role != "" {
		who = "role " + ex.Toolset.Role
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
	fmt.Fprintf(w, "every tool runs confined under:\n  workspace  %s (%s)\n  ro         %s\n  rw         %s\n  hidden     %s\n  protected  %s\n  network    %s\n  limits     timeout %s, memory %s, pids %s, output %d chars\n",
		c.Workspace, mode, list(c.RO), list(c.RW), list(c.Hide), list(c.Protected), net, orNone(c.Timeout, "0s"), orNone(c.Memory, "0"), orNone(fmt.Sprint(c.Pids), "0"), c.OutputChars)
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
