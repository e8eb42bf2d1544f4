//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/jail-sandbox/jail/launch"
	"github.com/jail-sandbox/jail/tools"
)

const mcpUsage = `usage: jail mcp [flags]

A Model Context Protocol server on stdin and stdout (README: "jail mcp").
It offers the tools the policy grants --agent (or --role); each call runs
in a confined worker exactly as in jail serve. Calls the policy's approval
gate sends to a person are asked through MCP elicitation, and denied when
the client cannot ask.
`

func mcpMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o := &toolOptions{}
	fs := toolFlags("jail mcp", o, stderr)
	fs.StringVar(&o.agent, "agent", "", "serve the tools of `AGENT` from the policy's [agents.*]")
	fs.StringVar(&o.role, "role", "", "serve the tools of `ROLE`")
	fs.IntVar(&o.maxConc, "max-concurrency", runtime.NumCPU(), "calls run at once: file tools in worker sandboxes, each bash call in a sandbox of its own")
	fs.IntVar(&o.prewarm, "prewarm", 1, "workers started before the client connects (with one: also the first bash sandbox)")
	fs.Usage = func() { fmt.Fprint(stderr, mcpUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || o.maxConc < 1 || o.prewarm < 0 {
		fmt.Fprintln(stderr, "jail mcp: takes no arguments; --max-concurrency must be at least 1")
		return 2
	}
	o.run.Agent, o.run.Role = o.agent, o.role
	ts, closeAll, err := launch.NewToolServer(&o.run, o.maxConc, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "jail mcp:", err)
		return 2
	}
	defer closeAll()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := tools.NewMCPServer(ts, tools.CallContext{Agent: o.agent, Role: o.role}, version, logger)
	if err != nil {
		fmt.Fprintln(stderr, "jail mcp:", err)
		return 2
	}
	// A client that stops jail with a signal rather than by closing stdin
	// still gets its sandboxes ended: the cancelled context ends the
	// session, which cancels every call, and closeAll ends the workers.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// A worker that cannot start now will not start later: say why before
	// the client sends anything.
	if err := launch.Prewarm(ctx, ts, o.prewarm, "jail mcp", stderr); err != nil {
		fmt.Fprintln(stderr, "jail mcp:", err)
		return 125
	}
	if err := srv.Run(ctx, tools.NewLineTransport(stdin, stdout, tools.DefaultMaxLine)); err != nil && ctx.Err() == nil {
		fmt.Fprintln(stderr, "jail mcp:", err)
		return 1
	}
	return 0
}
