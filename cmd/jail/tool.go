//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/jail-sandbox/jail/launch"
	"github.com/jail-sandbox/jail/policy"
	"github.com/jail-sandbox/jail/tools"
)

const toolUsage = `usage: jail tool [flags] NAME '{json args}'
       jail tool [flags] NAME -        (arguments from stdin)

Runs one tool call in a confined worker and prints the result as JSON:
{"content": ..., "is_error": ..., "meta": {...}}. The exit status is 0 for
any result, error results included; it is non-zero only when jail itself
failed.
`

func toolMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o := &toolOptions{maxConc: 1, prewarm: 1}
	fs := toolFlags("jail tool", o, stderr)
	fs.StringVar(&o.agent, "agent", "", "call as `AGENT` from the policy's [agents.*]")
	fs.StringVar(&o.role, "role", "", "call with `ROLE`")
	fs.BoolVar(&o.unattended, "unattended", false, "nobody can approve: calls needing approval are denied")
	fs.Usage = func() { fmt.Fprint(stderr, toolUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return 2
	}
	name, raw := fs.Arg(0), []byte("{}")
	if fs.NArg() == 2 {
		raw = []byte(fs.Arg(1))
		if fs.Arg(1) == "-" {
			b, err := io.ReadAll(io.LimitReader(stdin, tools.DefaultMaxLine+1))
			if err != nil {
				fmt.Fprintln(stderr, "jail tool: read arguments:", err)
				return 2
			}
			if len(b) > tools.DefaultMaxLine {
				fmt.Fprintf(stderr, "jail tool: arguments longer than %d bytes\n", tools.DefaultMaxLine)
				return 2
			}
			raw = b
		}
	}
	o.run.Agent, o.run.Role = o.agent, o.role
	s, closeAll, err := launch.NewToolServer(&o.run, o.maxConc, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "jail tool:", err)
		return 2
	}
	defer closeAll()
	s.SpareShells = 0 // one call: nothing to make ahead
	s.MaxBackground, s.BackgroundOff = 0, "jail tool ends with its one call, and a background process would end with it: use jail serve or jail mcp"
	// Approval questions go to the controlling terminal, never to stdin
	// (which may carry the arguments).
	if tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil && !o.unattended {
		defer tty.Close()
		s.Asker = &policy.TerminalAsker{In: tty, Out: tty}
	}
	ctx := context.Background()
	if err := s.PrewarmTool(ctx, name); err != nil {
		fmt.Fprintln(stderr, "jail tool:", err)
		return 125
	}
	res := s.Call(ctx, tools.Request{Tool: name, Args: json.RawMessage(raw),
		Context: tools.CallContext{Agent: o.agent, Role: o.role, Unattended: o.unattended}})
	b, err := policy.MarshalLine(res) // escaped for terminals: the output is the sandbox's
	if err != nil {
		fmt.Fprintln(stderr, "jail tool: encode result:", err)
		return 125
	}
	if _, err := stdout.Write(append(b, '\n')); err != nil {
		return 125
	}
	return 0
}
