//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"

	"github.com/jail-sandbox/jail/launch"
)

// toolOptions are the flags `jail tool` and `jail serve` share with
// `jail run`, plus the server's own.
type toolOptions struct {
	run         launch.Options
	maxConc     int
	prewarm     int
	agent, role string
	unattended  bool
}

func toolFlags(name string, o *toolOptions, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.run.Workdir, "w", "", "workspace `DIR` the tools work in (default: the current directory)")
	fs.StringVar(&o.run.PolicyFile, "policy", "", "policy `FILE` (see policy.toml.example)")
	fs.Var((*listFlag)(&o.run.Degraded), "allow-degraded", "run the tools' sandboxes without `LAYER` (landlock, seccomp) when the kernel lacks it")
	fs.BoolVar(&o.run.AsRoot, "as-root", false, "map the caller to uid 0 inside the tools' sandboxes")
	allowFlag(fs, (*listFlag)(&o.run.Allow))
	homeWorkspaceFlag(fs, &o.run.HomeWorkspace)
	return fs
}

const serveUsage = `usage: jail serve [flags]

A JSON-lines tool server on stdin and stdout (README: "Tools, jail tool and
jail serve"). Each call runs confined: the file tools in a worker, each bash
call in fresh namespaces of its own; the policy decides which tools a caller
sees and whether each call runs.
`

func serveMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o := &toolOptions{}
	fs := toolFlags("jail serve", o, stderr)
	fs.IntVar(&o.maxConc, "max-concurrency", runtime.NumCPU(), "calls run at once: file tools in worker sandboxes, each bash call in a sandbox of its own")
	fs.IntVar(&o.prewarm, "prewarm", 1, "workers started before the first request (with one: also the first bash sandbox)")
	fs.Usage = func() { fmt.Fprint(stderr, serveUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || o.maxConc < 1 || o.prewarm < 0 {
		fmt.Fprintln(stderr, "jail serve: takes no arguments; --max-concurrency must be at least 1")
		return 2
	}
	s, closeAll, err := launch.NewToolServer(&o.run, o.maxConc, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "jail serve:", err)
		return 2
	}
	defer closeAll()
	ctx := context.Background()
	// A worker that cannot start now will not start later: say why before
	// the harness sends anything.
	if err := launch.Prewarm(ctx, s, o.prewarm, "jail serve", stderr); err != nil {
		fmt.Fprintln(stderr, "jail serve:", err)
		return 125
	}
	if err := s.Serve(ctx, stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "jail serve:", err)
		return 1
	}
	return 0
}
