//go:build linux

package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/gitview"
	"github.com/jail-sandbox/jail/home"
	"github.com/jail-sandbox/jail/launch"
)

// cleanMain runs `jail clean`: it removes persistent sandbox homes
// (docs/home.md), and finishes what runs killed before their end left in
// git state (gitview.Clean, docs/git.md). Exit codes: 0 done, 1 a removal failed, 2 usage.
func cleanMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("jail clean", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("w", "", "the workspace `DIR` whose home is removed (default: the current directory)")
	all := fs.Bool("all", false, "remove the homes of every workspace")
	gone := fs.Bool("gone", false, "remove the homes of workspaces that no longer exist")
	dry := fs.Bool("dry-run", false, "list what would be removed, with sizes, and remove nothing")
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
	if fs.NArg() > 0 || *all && *gone || (*all || *gone) && *dir != "" {
		fs.Usage()
		return 2
	}
	penv, err := launch.PolicyEnv(*dir)
	if err != nil {
		fmt.Fprintln(stderr, "jail clean:", err)
		return 2
	}
	root := launch.HomesRoot(penv)
	gitState := gitview.StateDir(os.Getenv("HOME"), os.Getenv("XDG_STATE_HOME"))
	var pick []home.Entry
	if *all || *gone {
		if !*dry {
			// What runs killed before their end left in git state.
			if err := gitview.Clean(gitState, "", stdout); err != nil {
				fmt.Fprintln(stderr, "jail clean:", err)
			}
		}
		es, err := home.List(root)
		if err != nil {
			fmt.Fprintln(stderr, "jail clean:", err)
			return 1
		}
		for _, e := range es {
			if *all || e.Gone || e.Leftover {
				pick = append(pick, e)
			}
		}
	} else {
		ws, err := confine.ResolvePath(penv.Workspace, "/", "")
		if err != nil {
			fmt.Fprintln(stderr, "jail clean: workspace:", err)
			return 2
		}
		es, err := home.Find(root, ws)
		if err != nil {
			fmt.Fprintln(stderr, "jail clean:", err)
			return 1
		}
		if !*dry {
			if err := gitview.Clean(gitState, ws, stdout); err != nil {
				fmt.Fprintln(stderr, "jail clean:", err)
			}
		}
		if len(es) == 0 {
			fmt.Fprintf(stdout, "jail clean: %s has no persistent home\n", ws)
			return 0
		}
		pick = es
	}
	var total int64
	code := 0
	for _, e := range pick {
		ws := e.Workspace
		if ws == "" {
			ws = "(unknown workspace)"
		}
		if e.Leftover {
			ws += " (left by an interrupted removal)"
		} else if e.Gone {
			ws += " (gone)"
		}
		verb := "removed"
		if *dry {
			verb = "would remove"
		} else if err := home.Remove(root, e.ID); err != nil {
			fmt.Fprintln(stderr, "jail clean:", err)
			code = 1
			continue
		}
		total += e.Bytes
		fmt.Fprintf(stdout, "%s %8s  %s  %s\n", verb, humanSize(e.Bytes), ws, e.Path)
	}
	if len(pick) > 1 {
		fmt.Fprintf(stdout, "total %s in %d homes\n", humanSize(total), len(pick))
	}
	return code
}

// humanSize prints bytes as 12K, 3.4M, 1.2G.
func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	f, suffix := float64(n), "KMGTP"
	i := -1
	for f >= unit && i < len(suffix)-1 {
		f /= unit
		i++
	}
	if f < 10 {
		return fmt.Sprintf("%.1f%c", f, suffix[i])
	}
	return fmt.Sprintf("%.0f%c", f, suffix[i])
}
