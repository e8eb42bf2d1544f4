//go:build linux

package launch

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/gitview"
	"github.com/jail-sandbox/jail/home"
	"github.com/jail-sandbox/jail/termtext"
)

// Clean is `jail clean`: it removes persistent sandbox homes
// (docs/home.md) and finishes what runs killed before their end left in
// git state (gitview.Clean, docs/git.md). cmd/jail fills it from flags;
// which homes and which state go is decided here, once.
type Clean struct {
	// Workspace is the workspace whose home is removed; "" is the
	// current directory. Excludes All and Gone.
	Workspace string
	// All removes the homes of every workspace.
	All bool
	// Gone removes the homes of workspaces that no longer exist (and
	// what interrupted removals left).
	Gone bool
	// DryRun lists what would be removed, with sizes, and removes
	// nothing, git state included.
	DryRun bool
	// HomesRoot and GitState are where the homes and the git state
	// live; "" is the caller's (HomesRoot, gitview.StateDir of $HOME and
	// $XDG_STATE_HOME).
	HomesRoot, GitState string
}

// ErrCleanUsage is returned by [Clean.Check] for flags that exclude each
// other.
var ErrCleanUsage = errors.New("jail clean: -w, --all and --gone exclude each other")

// Check refuses a combination of choices that names no one set of homes.
func (c *Clean) Check() error {
	if c.All && c.Gone || (c.All || c.Gone) && c.Workspace != "" {
		return ErrCleanUsage
	}
	return nil
}

// Main carries out the clean, reporting on stdout what it removed (or
// would) and on stderr what failed. The git state goes first and a
// failure there keeps no home. Exit codes: 0 done, 1 a removal failed,
// 2 the workspace or the flags are wrong.
func (c *Clean) Main(stdout, stderr io.Writer) int {
	if err := c.Check(); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	penv, err := PolicyEnv(c.Workspace)
	if err != nil {
		fmt.Fprintln(stderr, "jail clean:", err)
		return 2
	}
	if c.HomesRoot == "" {
		c.HomesRoot = HomesRoot(penv)
	}
	if c.GitState == "" {
		c.GitState = gitview.StateDir(os.Getenv("HOME"), os.Getenv("XDG_STATE_HOME"))
	}
	ws := "" // every workspace's git state
	if !c.All && !c.Gone {
		if ws, err = confine.ResolvePath(penv.Workspace, "/", ""); err != nil {
			fmt.Fprintln(stderr, "jail clean: workspace:", err)
			return 2
		}
	}
	if !c.DryRun {
		// What runs killed before their end left in git state.
		if err := gitview.Clean(c.GitState, ws, stdout); err != nil {
			fmt.Fprintln(stderr, "jail clean:", err)
		}
	}
	pick, err := c.pick(ws)
	if err != nil {
		fmt.Fprintln(stderr, "jail clean:", err)
		return 1
	}
	if ws != "" && len(pick) == 0 {
		termtext.Fprintf(stdout, "jail clean: %s has no persistent home\n", ws)
		return 0
	}
	return c.remove(pick, stdout, stderr)
}

// pick decides which homes go: with All every home, with Gone those
// whose workspace no longer exists and what interrupted removals left;
// otherwise the home of the resolved workspace ws and its leftovers.
func (c *Clean) pick(ws string) ([]home.Entry, error) {
	if ws != "" {
		return home.Find(c.HomesRoot, ws)
	}
	es, err := home.List(c.HomesRoot)
	if err != nil {
		return nil, err
	}
	var pick []home.Entry
	for _, e := range es {
		if c.All || e.Gone || e.Leftover {
			pick = append(pick, e)
		}
	}
	return pick, nil
}

// remove removes (or, in a dry run, lists) the homes picked.
func (c *Clean) remove(pick []home.Entry, stdout, stderr io.Writer) int {
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
		if c.DryRun {
			verb = "would remove"
		} else if err := home.Remove(c.HomesRoot, e.ID); errors.Is(err, home.ErrInUse) {
			// A live run has it bound: not taken away under it.
			fmt.Fprintf(stdout, "skipped %8s  %s  %s: %v\n", humanSize(e.Bytes), ws, e.Path, err)
			continue
		} else if err != nil {
			fmt.Fprintln(stderr, "jail clean:", err)
			code = 1
			continue
		}
		total += e.Bytes
		termtext.Fprintf(stdout, "%s %8s  %s  %s\n", verb, humanSize(e.Bytes), ws, e.Path)
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
