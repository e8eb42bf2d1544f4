//go:build linux

package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/jail-sandbox/jail/launch"
)

// cleanMain reads `jail clean`'s flags; launch.Clean decides and removes.
func cleanMain(args []string, stdout, stderr io.Writer) int {
	var c launch.Clean
	fs := flag.NewFlagSet("jail clean", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Workspace, "w", "", "the workspace `DIR` whose home is removed (default: the current directory)")
	fs.BoolVar(&c.All, "all", false, "remove the homes of every workspace")
	fs.BoolVar(&c.Gone, "gone", false, "remove the homes of workspaces that no longer exist")
	fs.BoolVar(&c.DryRun, "dry-run", false, "list what would be removed, with sizes, and remove nothing")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: jail clean [-w DIR | --all | --gone] [--dry-run]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || c.Check() != nil {
		fs.Usage()
		return 2
	}
	return c.Main(stdout, stderr)
}
