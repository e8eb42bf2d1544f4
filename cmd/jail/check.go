//go:build linux

package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/launch"
	"github.com/jail-sandbox/jail/tools"
)

// checkMain prints each layer (available or not, and why), then each tool
// of the registry (ready to run here or not, and why). A missing layer is
// a failure; an unready tool is not: the front ends leave it out.
func checkMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: jail check")
		return 2
	}
	rep := confine.Check()
	ok := true
	for _, l := range rep {
		state := "ok"
		if !l.Available {
			state = "MISSING"
			ok = false
		}
		fmt.Fprintf(stdout, "%-12s %-8s %s\n", l.Layer, state, l.Detail)
		if l.Fix != "" {
			fmt.Fprintf(stdout, "%-12s %-8s fix: %s\n", "", "", l.Fix)
		}
	}
	// The plan cache is speed, not confinement: its line informs.
	if err := confine.PlanCacheReady(); err != nil {
		fmt.Fprintf(stdout, "%-12s %-8s %s\n", "plan cache", "off", "every run is planned by the Go supervisor (slower, equally confined): "+err.Error())
	} else {
		fmt.Fprintf(stdout, "%-12s %-8s %s\n", "plan cache", "ok", "a repeated jail run skips the Go runtime (docs/plan-cache.md; JAIL_PLAN_CACHE=off turns it off)")
	}
	// The browser and desktop tools say whether Docker and their images are there.
	dk, docker := launch.CheckDocker()
	defer dk.Close()
	reg, err := tools.NewRegistry(append(tools.Core(tools.Options{}), docker...)...)
	if err != nil {
		fmt.Fprintln(stderr, "jail check:", err)
		return 1
	}
	// Tools that are unready for one reason (every browser tool when Docker is off) share
	// one line, their names listed, instead of the same reason thirty times.
	type group struct {
		names []string
		why   string
	}
	var groups []group
	for _, r := range reg.Readiness() {
		if !r.Ready && len(groups) > 0 && groups[len(groups)-1].why == r.Why && r.Why != "" {
			groups[len(groups)-1].names = append(groups[len(groups)-1].names, r.Tool)
			continue
		}
		why := ""
		if !r.Ready {
			why = r.Why
		}
		groups = append(groups, group{[]string{r.Tool}, why})
	}
	for _, g := range groups {
		if g.why == "" {
			fmt.Fprintf(stdout, "tool %-11s ready\n", g.names[0])
			continue
		}
		fmt.Fprintf(stdout, "tool %-11s %-8s %s\n", strings.Join(g.names, ", "), "unready", g.why)
	}
	if !ok {
		fmt.Fprintln(stdout, "jail run refuses to start while a layer is missing, unless it is named in --allow-degraded")
		return 1
	}
	return 0
}
