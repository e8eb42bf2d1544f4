//go:build linux

package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/policy"
)

// planCacheEnv turns the plan cache off ("off") or has each run say
// whether it used it ("trace"). Read here and by fast_linux.c.
const planCacheEnv = "JAIL_PLAN_CACHE"

// PlanCache is a run whose plan may be cached (docs/plan-cache.md).
type PlanCache struct {
	dir   string
	trace bool
	entry confine.CacheEntry
}

// Facts are what the run's plan depends on; the layout records them.
func (c *PlanCache) Facts() *confine.Facts { return c.entry.Facts }

// PolicyFacts records the policy files a run loads, before it loads them:
// an edit made while they are read then shows as a change (CachePlan
// checks them again).
func PolicyFacts(policyFile string, penv policy.Env) *confine.Facts {
	facts := &confine.Facts{}
	files := []string{policy.UserFile(penv), policy.ProjectFile(penv.Workspace)}
	if policyFile != "" {
		files = append(files, policyFile)
	}
	for _, f := range files {
		if f != "" {
			facts.File(f)
		}
	}
	return facts
}

// NewPlanCache returns the cache of this run, or nil when its plan cannot
// be repeated without the Go supervisor, or must not be stored (a value
// given with --env NAME=VALUE): a result kept elsewhere (kept: captured
// output or --json-out),
// limits (which the supervisor enforces), a network other than none,
// warnings to print, degraded layers, globs (their matches change), or
// arguments whose command does not follow the first "--". A --json
// result on stderr and a timeout are the cached run's own (the harness
// path, `jail run --json --timeout 10m -- CMD`).
func NewPlanCache(args []string, o *Options, kept bool, p *policy.Policy, penv policy.Env, facts *confine.Facts, warned bool) *PlanCache {
	mode := os.Getenv(planCacheEnv)
	if mode == "off" {
		return nil
	}
	if kept ||
		o.Net != policy.NetNone || warned || len(o.Degraded) > 0 || p.Sandbox.HasGlobs() {
		return nil
	}
	if o.EnvValues {
		// The entry's key holds the arguments, and a value given with
		// --env NAME=VALUE is often a token: no value of the caller's
		// is ever written to disk, so such a run is planned each time.
		if mode == "trace" {
			fmt.Fprintln(os.Stderr, "jail: plan cache: not stored: --env NAME=VALUE (values are never written to disk)")
		}
		return nil
	}
	i := slices.Index(args, "--")
	if i < 0 || !slices.Equal(args[i+1:], o.Argv) {
		return nil
	}
	dir := confine.PlanCacheDir(penv.Home, os.Getenv("XDG_CACHE_HOME"))
	if dir == "" {
		return nil
	}
	// Made before the plan: the guard on the cache directory records
	// whether it exists, and must not change when the entry is stored.
	if err := confine.MakePlanCacheDir(dir); err != nil {
		return nil
	}
	return &PlanCache{dir: dir, trace: mode == "trace", entry: confine.CacheEntry{Args: args[:i+1], Facts: facts}}
}

// Store writes the entry of a run whose sandbox started; jsonPolicy is
// the policy's hash when the run prints a --json result, else "". A run
// that cannot be cached runs just the same; with JAIL_PLAN_CACHE=trace it
// says why.
func (c *PlanCache) Store(o *Options, jsonPolicy string, cmd *confine.Cmd, layout *confine.Layout, pass, extra []string, h *Held, stderr io.Writer) {
	if c == nil {
		return
	}
	ws, err := confine.ResolvePath(layout.Workspace, "/", "")
	fresh, ok := h.git.Cache()
	if err == nil && !ok {
		err = errors.New("plan cache: the cache cannot repeat this run's git view (docs/git.md)")
	}
	if err == nil {
		c.entry.Pass, c.entry.Extra, c.entry.Workspace, c.entry.Placeholders, c.entry.Fresh = pass, extra, ws, h.ph, fresh
		if jsonPolicy != "" {
			c.entry.JSON, c.entry.PolicySHA256 = true, jsonPolicy
		}
		if o.Timeout > 0 {
			c.entry.Timeout, c.entry.TimeoutNote = o.Timeout, TimeoutNote(o.Timeout)
		}
		err = cmd.CachePlan(c.dir, &c.entry)
	}
	if c.trace {
		if err != nil {
			fmt.Fprintf(stderr, "jail: plan cache: not stored: %v\n", err)
		} else {
			fmt.Fprintln(stderr, "jail: plan cache: stored")
		}
	}
}

// TimeoutNote is the line a run that timed out prints (the plan cache
// keeps it for its own runs).
func TimeoutNote(d time.Duration) string {
	return fmt.Sprintf("jail: timed out after %s: the sandbox and every process in it were killed\n", d)
}
