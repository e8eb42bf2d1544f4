//go:build linux

package launch

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/jail-sandbox/jail/confine"
)

// keysOf lists the top-level keys of one JSON object, in order.
func keysOf(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", b)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestRunJSONShape pins the --json result object field by field and in
// order (README: Result). The plan cache's C writer (jail_result_json in
// confine/twins_linux.c) prints the same object for the runs it serves,
// held against a copy of jsonResult's fields by TestResultJSONTwins;
// change both when either changes.
func TestRunJSONShape(t *testing.T) {
	text, b64 := "a\ufffdb", "Yf9i"
	for _, tc := range []struct {
		name string
		r    jsonResult
		want []string
	}{
		{"exited", jsonResult{Result: &confine.Result{ExitCode: 3, Limits: confine.LimitNone}, PolicySHA256: "ab"},
			[]string{"exit_code", "timed_out", "duration_ms", "max_rss_kb", "limits", "policy_sha256"}},
		{"signalled", jsonResult{Result: &confine.Result{ExitCode: 137, Signal: "SIGKILL", TimedOut: true, Limits: confine.LimitRLimit, LimitsNote: "no cgroup"}, PolicySHA256: "ab"},
			[]string{"exit_code", "signal", "timed_out", "duration_ms", "max_rss_kb", "limits", "limits_note", "policy_sha256"}},
		{"captured-bytes", jsonResult{Result: &confine.Result{Limits: confine.LimitNone}, PolicySHA256: "ab", Stdout: &text, Stderr: &text, StdoutTruncated: 4, StdoutBase64: &b64},
			[]string{"exit_code", "timed_out", "duration_ms", "max_rss_kb", "limits", "policy_sha256", "stdout", "stderr", "stdout_truncated_chars", "stdout_base64"}},
	} {
		var out bytes.Buffer
		if err := writeJSON(&Run{JSON: true, Capture: true}, tc.r, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		if got := keysOf(t, out.Bytes()); !slices.Equal(got, tc.want) {
			t.Errorf("%s: keys %q, want %q", tc.name, got, tc.want)
		}
	}
	// A run that ended before its command did: the same object, with the
	// error and the stage, on stderr (no --capture) or in --json-out.
	var errOut bytes.Buffer
	o := &Run{JSON: true, policyHash: func() string { return "ab" }}
	if code := o.Fail(127, StageExec, errors.New("exec /x: no such file or directory"), io.Discard, &errOut); code != 127 {
		t.Fatalf("fail returned %d", code)
	}
	want := []string{"exit_code", "timed_out", "duration_ms", "max_rss_kb", "limits", "policy_sha256", "error", "stage"}
	if got := keysOf(t, errOut.Bytes()); !slices.Equal(got, want) {
		t.Errorf("failure: keys %q, want %q", got, want)
	}
	var f struct {
		ExitCode int    `json:"exit_code"`
		Limits   string `json:"limits"`
		Error    string `json:"error"`
		Stage    string `json:"stage"`
	}
	if err := json.Unmarshal(errOut.Bytes(), &f); err != nil || f.ExitCode != 127 || f.Stage != "exec" || f.Limits != "none" || f.Error == "" {
		t.Errorf("failure object: %s", errOut.Bytes())
	}
	// Without --json, nothing.
	errOut.Reset()
	(&Run{}).Fail(2, StageFlags, errors.New("x"), io.Discard, &errOut)
	if errOut.Len() != 0 {
		t.Errorf("a run without --json printed %q", errOut.String())
	}
}
