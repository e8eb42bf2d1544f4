//go:build linux

package launch

import (
	"slices"
	"testing"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/policy"
)

// TestSystemDirectoriesTied ties the two lists of system directories that
// live on either side of the policy/confine fence: policy.DefaultRO (what
// a run binds read-only by default) and confine.DefaultSystem (the
// directories Apply binds as system directories, resolved as such
// rather than as the user's own read-only paths). They differ on purpose
// in exactly these entries; anything else is a copy that drifted.
func TestSystemDirectoriesTied(t *testing.T) {
	// /nix/store is bound by default but kept out of confine's list
	// (Apply names it beside the list); /libx32, the x32 ABI's
	// libraries, is a system directory a policy may list, not a default.
	onlyPolicy, onlyConfine := []string{"/nix/store"}, []string{"/libx32"}
	ro, sys := policy.DefaultRO(), confine.DefaultSystem()
	for _, d := range ro {
		if !slices.Contains(sys, d) && !slices.Contains(onlyPolicy, d) {
			t.Errorf("policy.DefaultRO has %s, confine.DefaultSystem does not", d)
		}
	}
	for _, d := range sys {
		if !slices.Contains(ro, d) && !slices.Contains(onlyConfine, d) {
			t.Errorf("confine.DefaultSystem has %s, policy.DefaultRO does not", d)
		}
	}
	for _, d := range onlyPolicy {
		if !slices.Contains(ro, d) || slices.Contains(sys, d) {
			t.Errorf("%s is no longer a difference of the two lists: update this test", d)
		}
	}
	for _, d := range onlyConfine {
		if slices.Contains(ro, d) || !slices.Contains(sys, d) {
			t.Errorf("%s is no longer a difference of the two lists: update this test", d)
		}
	}
}
