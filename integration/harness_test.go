//go:build linux

package integration

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
)

// The harness path, `jail run --json --timeout D -- CMD`, is served by the
// plan cache: its result object must be the Go path's, field for field.

// lastJSON is the result object on the last line of stderr, and the rest.
func lastJSON(t *testing.T, stderr string) (map[string]any, string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("last line of stderr is not a JSON result: %v\n%s", err, stderr)
	}
	return m, strings.Join(lines[:len(lines)-1], "\n")
}

// comparable is a result without what differs between two runs of one
// command (the wall time and the memory peak), whose presence and type are
// checked instead.
func comparable(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	out := map[string]any{}
	for k, v := range m {
		switch k {
		case "duration_ms", "max_rss_kb":
			if _, ok := v.(float64); !ok {
				t.Errorf("%s is %T, want a number", k, v)
			}
		default:
			out[k] = v
		}
	}
	return out
}

func TestHarnessPathJSON(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-harness-")
		cache := r.dir(t, "jail-it-harness-cache-")
		for _, c := range []struct {
			name    string
			timeout string
			argv    []string
			code    int
			signal  string
		}{
			{"true", "10m", []string{"true"}, 0, ""},
			{"exit 3", "10m", []string{"/bin/sh", "-c", "exit 3"}, 3, ""},
			{"killed", "10m", []string{"/bin/sh", "-c", "kill -TERM $$"}, 128 + 15, "SIGTERM"},
			{"timeout", "1s", []string{"/bin/sh", "-c", "sleep 6071 & sleep 6071; echo NOT-KILLED"}, 124, "SIGKILL"},
		} {
			args := append([]string{"run", "--json", "--timeout", c.timeout, "--"}, c.argv...)
			var results []map[string]any
			var notes []string
			for i, mode := range []string{"off", "trace", "trace"} {
				start := time.Now()
				res := r.jail(t, call{args: args, dir: ws, env: []string{"JAIL_PLAN_CACHE=" + mode, "XDG_CACHE_HOME=" + cache}})
				rest, trace := cutTrace(res.stderr)
				if i == 2 && !traced(trace, "used") {
					t.Fatalf("%s: the harness run was not served by the plan cache: %q\n%s", c.name, trace, rest)
				}
				if res.code != c.code {
					t.Fatalf("%s (%s): exit %d, want %d\n%s", c.name, mode, res.code, c.code, res.stderr)
				}
				if strings.Contains(res.stdout, "NOT-KILLED") {
					t.Fatalf("%s: the command outlived its timeout", c.name)
				}
				if c.name == "timeout" && time.Since(start) > 20*time.Second {
					t.Fatalf("the 1s timeout took %s", time.Since(start))
				}
				m, note := lastJSON(t, rest)
				results = append(results, m)
				notes = append(notes, note)
			}
			planned, cached := comparable(t, results[0]), comparable(t, results[2])
			if !reflect.DeepEqual(planned, cached) {
				t.Errorf("%s: JSON differs\nplanned: %v\ncached:  %v", c.name, results[0], results[2])
			}
			if notes[0] != notes[2] {
				t.Errorf("%s: stderr before the result differs\nplanned: %q\ncached:  %q", c.name, notes[0], notes[2])
			}
			if got, _ := cached["exit_code"].(float64); int(got) != c.code {
				t.Errorf("%s: exit_code %v, want %d", c.name, cached["exit_code"], c.code)
			}
			if sig, _ := cached["signal"].(string); sig != c.signal {
				t.Errorf("%s: signal %q, want %q", c.name, sig, c.signal)
			}
			if to, _ := cached["timed_out"].(bool); to != (c.name == "timeout") {
				t.Errorf("%s: timed_out %v", c.name, cached["timed_out"])
			}
			if h, _ := cached["policy_sha256"].(string); len(h) != 64 {
				t.Errorf("%s: policy_sha256 %q", c.name, h)
			}
		}
		// The timeout killed the whole tree: no sleep of the sandbox is
		// left on the host.
		if pids := testutil.Processes("sleep\x006071"); len(pids) > 0 {
			t.Errorf("processes of a timed-out sandbox are still running: %v", pids)
		}
	})
}
