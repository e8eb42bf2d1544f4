package main

import (
	"fmt"
	"io"
	"os"

	"github.com/jail-sandbox/jail/confine"
)

// checkMain prints each layer: available or not, and why.
func checkMain(args []string, stdout, stderr io.Writer) int {
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
	if !ok {
		fmt.Fprintln(stdout, "jail run refuses to start while a layer is missing, unless it is named in --allow-degraded")
		return 1
	}
	_ = os.Stdout
	return 0
}
