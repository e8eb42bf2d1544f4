package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/policy"
)

// planCacheEnv turns the plan cache off ("off") or has each run say
// whether it used it ("trace"). Read here and by fast_linux.c.
const planCacheEnv = "JAIL_PLAN_CACHE"

// planCache is a run whose plan may be cached (docs/plan-cache.md).
type planCache struct {
	dir   string
	trace bool
	entry confine.CacheEntry
}

// guarded are the paths of jail's own that a sandbox must not change even
// when a writable bind shows them, as directories and files: the user's
// policy, wherever the caller's environment or a later run's may put it
// (XDG_CONFIG_HOME, ~/.config, the passwd home's), and its file, which
// may be a symlink elsewhere; a --policy file; and the plan cache's
// directory, and the approver command and grants file the policy names
// (run and read by the supervisor, outside every sandbox). A sandbox could
// otherwise widen the next run's policy, approve its own calls, or
// point the cache elsewhere (its entries are authenticated, but jail
// creates directories and removes old entries there).
//
// hidden are jail's state directories, which no sandbox may even read
// (plan cache entries, the audit log, persistent data): $XDG_CACHE_HOME,
// $XDG_STATE_HOME and $XDG_DATA_HOME's jail directories and their
// defaults under each home. An audit log elsewhere is a guarded file.
func guarded(penv policy.Env, policyFile string, p *policy.Policy) (dirs, files, hidden []string) {
	homes := []string{penv.Home}
	if u, err := user.LookupId(strconv.Itoa(os.Getuid())); err == nil && u.HomeDir != "" {
		homes = append(homes, u.HomeDir) // the home of a run with HOME unset or set elsewhere
	}
	add := func(list *[]string, p string) {
		if p != "" && !slices.Contains(*list, p) {
			*list = append(*list, p)
		}
	}
	envs := []policy.Env{penv}
	for _, h := range homes {
		envs = append(envs, policy.Env{Home: h})
	}
	for _, env := range envs {
		if f := policy.UserFile(env); f != "" {
			add(&dirs, filepath.Dir(f))
			add(&files, f)
		}
	}
	add(&hidden, jailCacheDir(confine.PlanCacheDir(penv.Home, os.Getenv("XDG_CACHE_HOME"))))
	for _, v := range []string{"XDG_STATE_HOME", "XDG_DATA_HOME"} {
		if d := os.Getenv(v); filepath.IsAbs(d) {
			add(&hidden, filepath.Join(d, "jail"))
		}
	}
	for _, h := range homes {
		if filepath.IsAbs(h) {
			add(&hidden, jailCacheDir(confine.PlanCacheDir(h, "")))
			add(&hidden, filepath.Join(h, ".local", "state", "jail"))
			add(&hidden, filepath.Join(h, ".local", "share", "jail"))
		}
	}
	// The audit log: read by the user and their tools, appended to by
	// every jail run; a sandbox must neither rewrite history nor swap it
	// for a symlink (OpenAuditLog refuses one).
	if p != nil && (p.Audit.Enabled == nil || *p.Audit.Enabled) && filepath.IsAbs(p.Audit.Path) {
		add(&files, p.Audit.Path)
	}
	// What the policy makes the supervisor run or read outside every
	// sandbox: its approver command and its grants file.
	if p != nil {
		if f := p.Approval.GrantsFile; filepath.IsAbs(f) {
			add(&files, f)
		}
		if len(p.Approval.Approver) > 0 {
			if path, err := exec.LookPath(p.Approval.Approver[0]); err == nil {
				if abs, err := filepath.Abs(path); err == nil {
					add(&files, abs)
				}
			}
		}
	}
	if policyFile != "" {
		if !filepath.IsAbs(policyFile) {
			// Joined, not cleaned: ".." is resolved after symlinks, as
			// the loader's open resolves it.
			if wd, err := os.Getwd(); err == nil {
				policyFile = wd + "/" + policyFile
			}
		}
		add(&files, policyFile)
	}
	return dirs, files, hidden
}

// jailCacheDir is the jail directory of a plan cache directory.
func jailCacheDir(plans string) string {
	if plans == "" {
		return ""
	}
	return filepath.Dir(plans)
}

// policyFacts records the policy files a run loads, before it loads them:
// an edit made while they are read then shows as a change (CachePlan
// checks them again).
func policyFacts(o *runOptions, penv policy.Env) *confine.Facts {
	facts := &confine.Facts{}
	files := []string{policy.UserFile(penv), policy.ProjectFile(penv.Workspace)}
	if o.policyFile != "" {
		files = append(files, o.policyFile)
	}
	for _, f := range files {
		if f != "" {
			facts.File(f)
		}
	}
	return facts
}

// newPlanCache returns the cache of this run, or nil when its plan cannot
// be repeated without the Go supervisor, or must not be stored (a value
// given with --env NAME=VALUE): a captured or --json-out result,
// limits (which the supervisor enforces), a network other than none,
// warnings to print, degraded layers, globs (their matches change), or
// arguments whose command does not follow the first "--". A --json
// result on stderr and a timeout are the cached run's own (the harness
// path, `jail run --json --timeout 10m -- CMD`).
func newPlanCache(args []string, o *runOptions, p *policy.Policy, penv policy.Env, facts *confine.Facts, warned bool) *planCache {
	mode := os.Getenv(planCacheEnv)
	if mode == "off" {
		return nil
	}
	if o.capture || o.jsonOut != "" ||
		o.net != policy.NetNone || warned || len(o.degraded) > 0 || p.Sandbox.HasGlobs() {
		return nil
	}
	if o.envValues {
		// The entry's key holds the arguments, and a value given with
		// --env NAME=VALUE is often a token: no value of the caller's
		// is ever written to disk, so such a run is planned each time.
		if mode == "trace" {
			fmt.Fprintln(os.Stderr, "jail: plan cache: not stored: --env NAME=VALUE (values are never written to disk)")
		}
		return nil
	}
	i := slices.Index(args, "--")
	if i < 0 || !slices.Equal(args[i+1:], o.argv) {
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
	return &planCache{dir: dir, trace: mode == "trace", entry: confine.CacheEntry{Args: args[:i+1], Facts: facts}}
}

// store writes the entry of a run whose sandbox started. A run that
// cannot be cached runs just the same; with JAIL_PLAN_CACHE=trace it
// says why.
func (c *planCache) store(o *runOptions, cmd *confine.Cmd, layout *confine.Layout, pass, extra []string, h *held, stderr io.Writer) {
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
		if o.json {
			c.entry.JSON, c.entry.PolicySHA256 = true, o.policyHash()
		}
		if o.timeout > 0 {
			c.entry.Timeout, c.entry.TimeoutNote = o.timeout, timeoutNote(o.timeout)
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
