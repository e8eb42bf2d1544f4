//go:build linux

package main

import (
	"testing"
)

// TestJSONWanted: a command line the flag parser refused still says
// whether, and where, a JSON result was asked for.
func TestJSONWanted(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		json, capture bool
		out           string
	}{
		{[]string{"--json", "--bogus", "--", "true"}, true, false, ""},
		{[]string{"--bogus", "-json=true", "--", "true"}, true, false, ""},
		{[]string{"--json=false", "--bogus"}, false, false, ""},
		{[]string{"--capture", "--bogus"}, true, true, ""},
		{[]string{"--json-out", "/r.json", "--bogus"}, true, false, "/r.json"},
		{[]string{"--json-out=/r.json", "--bogus"}, true, false, "/r.json"},
		{[]string{"--bogus", "--", "--json"}, false, false, ""}, // the command's own flag
	} {
		o := jsonWanted(tc.args)
		got := o != nil && o.JSON
		if got != tc.json || o != nil && (o.Capture != tc.capture || o.JSONOut != tc.out) {
			t.Errorf("%q: %+v", tc.args, o)
		}
	}
}
