//go:build linux

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

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
	dk, docker, err := launch.NewDocker(p, env.Workspace, nil, false, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "jail policy explain:", err)
		return 1
	}
	defer dk.Close()
	reg, err := launch.CoreRegistry(p.Limits.Timeout, docker...)
	if err != nil {
		fmt.Fprintln(stderr, "jail policy explain:", err)
		return 1
	}
	ex, err := launch.Explain(p, widenings, reg, env.Home, tools.CallContext{Agent: *agent, Role: *role})
	if err != nil {
		fmt.Fprintln(stderr, "jail policy explain:", err)
		return 2
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
	ex.Print(stdout)
	return 0
}
