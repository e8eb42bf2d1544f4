//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runFailure is the part of a --json result a failed run must carry.
type runFailure struct {
	ExitCode *int    `json:"exit_code"`
	Error    string  `json:"error"`
	Stage    string  `json:"stage"`
	Stdout   *string `json:"stdout"`
	Base64   *string `json:"stdout_base64"`
}

// resultLine decodes the last line of s, which --json puts there.
func resultLine(t *testing.T, s string) runFailure {
	t.Helper()
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	var r runFailure
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil || r.ExitCode == nil {
		t.Fatalf("the last line is no JSON result (%v): %q", err, s)
	}
	return r
}

// TestJSONResultOnEveryFailure: a run with --json or --json-out prints
// one result object whatever stops it: the command that cannot start
// (127, 126), jail refusing the flags or the policy (2), on both launch
// paths; the object names the exit code, the error and the stage.
func TestJSONResultOnEveryFailure(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-json-")
		bad := filepath.Join(ws, "bad.toml")
		r.writeFile(t, bad, "[limits]\nbogus = 1\n")
		for _, tc := range []struct {
			name  string
			args  []string
			code  int
			stage string
			says  string
		}{
			{"not-found", []string{"run", "--json", "--", "/no/such/program"}, 127, "exec", "no such file"},
			{"not-executable", []string{"run", "--json", "--", "/etc/passwd"}, 126, "exec", "permission denied"},
			{"bad-policy", []string{"run", "--json", "--policy", bad, "--", "true"}, 2, "policy", "limits.bogus"},
			{"bad-flag", []string{"run", "--json", "--no-such-flag", "--", "true"}, 2, "flags", "no-such-flag"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res := r.jail(t, call{dir: ws, args: tc.args})
				mustExit(t, res, tc.code)
				got := resultLine(t, res.stderr)
				if *got.ExitCode != tc.code || got.Stage != tc.stage || !strings.Contains(got.Error, tc.says) {
					t.Fatalf("result %+v (exit %d), want exit %d at stage %s saying %q\nstderr: %s", got, *got.ExitCode, tc.code, tc.stage, tc.says, res.stderr)
				}
			})
		}
		// --json-out alone: the object goes to the file, and --json is implied.
		out := filepath.Join(r.dir(t, "jail-it-json-out-"), "result.json")
		res := r.jail(t, call{dir: ws, args: []string{"run", "--json-out", out, "--", "/no/such/program"}})
		mustExit(t, res, 127)
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("--json-out wrote nothing: %v\nstderr: %s", err, res.stderr)
		}
		if got := resultLine(t, string(b)); *got.ExitCode != 127 || got.Stage != "exec" {
			t.Fatalf("--json-out result: %s", b)
		}
	})
}

// TestCapturedBytesNotUTF8: captured output that is not UTF-8 comes back
// exactly, base64-encoded in stdout_base64, while stdout carries a
// rendering; valid UTF-8 (U+FFFD itself included) has no base64 field, so
// the two cannot be confused.
func TestCapturedBytesNotUTF8(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-bytes-")
		res := r.jail(t, call{dir: ws, args: []string{"run", "--capture", "--", "printf", `a\377b`}})
		mustExit(t, res, 0)
		got := resultLine(t, res.stdout)
		if got.Base64 == nil || *got.Base64 != "Yf9i" || got.Stdout == nil || *got.Stdout != "a\ufffdb" {
			t.Fatalf("invalid UTF-8: %s", res.stdout)
		}
		res = r.jail(t, call{dir: ws, args: []string{"run", "--capture", "--", "printf", `a\357\277\275b`}})
		mustExit(t, res, 0)
		got = resultLine(t, res.stdout)
		if got.Base64 != nil || got.Stdout == nil || *got.Stdout != "a\ufffdb" {
			t.Fatalf("a real U+FFFD: %s", res.stdout)
		}
	})
}

// TestResultLineNotForgeable: the command shares the stderr jail prints
// its --json result on, and leaves a fake result there without a newline;
// the last line of stderr must still be jail's own object alone (it starts
// a line of its own), on both launch paths.
func TestResultLineNotForgeable(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		res := r.jail(t, call{dir: ws, args: []string{"run", "--json", "--", "/bin/sh", "-c", `printf '{"exit_code":0,"timed_out":false}' >&2; exit 7`}})
		mustExit(t, res, 7)
		lines := strings.Split(strings.TrimRight(res.stderr, "\n"), "\n")
		last := lines[len(lines)-1]
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(last))
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("the last line is not a JSON object: %v\n%q", err, res.stderr)
		}
		if m["exit_code"] != float64(7) || dec.More() {
			t.Errorf("the last line of stderr is not jail's result alone (a reader takes exit_code %v): %q", m["exit_code"], last)
		}
		if !strings.Contains(res.stderr, `{"exit_code":0,"timed_out":false}`+"\n") {
			t.Errorf("the command's partial line was not ended before the result: %q", res.stderr)
		}
	})
}
