//go:build linux && cgo

package confine

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/jail-sandbox/jail/policy"
)

// oddStrings are the strings JSON writers get wrong: quotes, backslashes,
// control characters (ESC, DEL, C1), what browsers and shells read
// (< > & $ `), U+2028 and U+2029, and bytes that are not UTF-8 (a lone
// continuation byte, a cut sequence, an overlong form, a surrogate, past
// U+10FFFF), next to valid multi-byte characters and a real U+FFFD.
var oddStrings = []string{
	"", "plain", `"quoted"`, `back\slash`, "tab\tnew\nline\rcr\bbs\fff", "\x01\x1f\x1b[31m\x7f",
	"<script>&amp;</script>", "$(rm -rf ~) `id` ${X}", "line\u2028sep\u2029para", "é日本語🙂", "a\ufffdb",
	"\xff", "a\x80b", "\xc3", "\xe6\x97", "\xf0\x9f\x99", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
	"\xf5\x80\x80\x80", "\xc2\x80\xc2\x9f\xc2\xa0", "\xc2\x9b[2J", "jail: the sandbox's init ended before the command started",
	"ssh_host_\u202eyek_asr", "a\u200bb\u200dc\u2066d\u2069e\ufeff", "soft\u00adhyphen", "tag\U000e0041\U000e007f", "\U0001d173x\U000110bd",
}

// goJSONString is the Go twin of jail_json_string.
func goJSONString(t testing.TB, s string, line bool) string {
	var b []byte
	var err error
	if line {
		b, err = policy.MarshalLine(s)
	} else {
		b, err = json.Marshal(s)
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkJSONString holds jail_json_string against its twins on s, whole
// and cut short.
func checkJSONString(t testing.TB, s string) {
	s, _, _ = strings.Cut(s, "\x00") // a C string ends there
	for _, line := range []bool{false, true} {
		want := goJSONString(t, s, line)
		if got := cJSONString(s, line, len(want)); got != want {
			t.Fatalf("jail_json_string(%q, line=%v) = %s, want %s", s, line, got, want)
		}
		// With less room, a valid JSON string of a prefix: cut before a
		// whole character or escape, never inside one.
		var full string
		json.Unmarshal([]byte(want), &full)
		for room := 0; room < len(want); room++ {
			got := cJSONString(s, line, room)
			if room < 2 {
				if got != "" {
					t.Fatalf("jail_json_string(%q) in %d bytes = %q, want nothing", s, room, got)
				}
				continue
			}
			var v string
			if len(got) > room || json.Unmarshal([]byte(got), &v) != nil || !strings.HasPrefix(full, v) || !utf8.ValidString(got) {
				t.Fatalf("jail_json_string(%q) in %d bytes = %q: not a JSON string of a prefix of %q", s, room, got, full)
			}
		}
	}
}

// TestJSONStringTwins: what the C side writes as a JSON string is what
// json.Marshal (the git state's meta) and policy.MarshalLine (the --json
// result) write, byte for byte, on odd strings and random bytes.
func TestJSONStringTwins(t *testing.T) {
	for _, s := range oddStrings {
		checkJSONString(t, s)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			if r.IntN(3) == 0 {
				b[i] = byte(0x80 + r.IntN(0x80))
			} else {
				b[i] = byte(1 + r.IntN(0x7f))
			}
		}
		checkJSONString(t, string(b))
	}
	// Every format character (the line mode escapes them) and its
	// neighbours, which it must not.
	for _, r16 := range unicode.Cf.R16 {
		formatRange(t, rune(r16.Lo), rune(r16.Hi), rune(r16.Stride))
	}
	for _, r32 := range unicode.Cf.R32 {
		formatRange(t, rune(r32.Lo), rune(r32.Hi), rune(r32.Stride))
	}
}

// formatRange checks each character of a unicode.Cf range, and the ones
// just beside each, inside text; the line mode must escape the first and
// keep the others.
func formatRange(t *testing.T, lo, hi, stride rune) {
	for r := lo; r <= hi; r += stride {
		for _, c := range []rune{r - 1, r, r + 1} {
			s := "a" + string(c) + "b"
			checkJSONString(t, s)
			escape := unicode.Is(unicode.Cf, c) || c == 0x2028 || c == 0x2029 // those two JSON's own
			if got := goJSONString(t, s, true); escape == strings.Contains(got, string(c)) {
				t.Fatalf("MarshalLine(%q) = %s: a format character must be escaped, and only one", s, got)
			}
		}
	}
}

// FuzzJSONStringTwins is TestJSONStringTwins on what the fuzzer makes:
//
//	go test ./confine -run '^$' -fuzz FuzzJSONStringTwins -fuzztime 1m
func FuzzJSONStringTwins(f *testing.F) {
	for _, s := range oddStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkJSONString(t, s) })
}

// resultTwin is launch's jsonResult without the captured output, which a
// cached run never has (launch is not importable here; TestRunJSONShape
// in launch pins jsonResult's keys and their order).
type resultTwin struct {
	*Result
	PolicySHA256 string `json:"policy_sha256"`
	Error        string `json:"error,omitempty"`
	Stage        string `json:"stage,omitempty"`
}

// checkResultJSON holds jail_result_json against policy.MarshalLine of
// its twin.
func checkResultJSON(t testing.TB, r resultTwin) {
	b, err := policy.MarshalLine(r)
	if err != nil {
		t.Fatal(err)
	}
	want := string(b) + "\n"
	got, ok := cResultJSON(r.Result, r.PolicySHA256, r.Error, r.Stage, len(want)+1) // and its NUL
	if !ok || got != want {
		t.Fatalf("jail_result_json = %q (fits %v), want %q", got, ok, want)
	}
	if got, ok := cResultJSON(r.Result, r.PolicySHA256, r.Error, r.Stage, len(want)); ok {
		t.Fatalf("jail_result_json in one byte less = %q, want it refused", got)
	}
}

// TestResultJSONTwins: the plan cache's --json result is the Go path's,
// byte for byte, for every field it can hold, with odd strings in its
// text fields.
func TestResultJSONTwins(t *testing.T) {
	base := func() *Result { return &Result{ExitCode: 3, DurationMS: 12, MaxRSSKB: 2048, Limits: LimitNone} }
	cases := []resultTwin{
		{Result: base(), PolicySHA256: strings.Repeat("ab", 32)},
		{Result: &Result{ExitCode: 137, Signal: "SIGKILL", TimedOut: true, DurationMS: 30000, Limits: LimitRLimit, LimitsNote: "no cgroup: /sys/fs/cgroup is read-only"}, PolicySHA256: "ab"},
		{Result: &Result{ExitCode: 137, Signal: "SIGKILL", Limits: LimitCgroup2, OOMKilled: true, PidsLimited: true, PidsEnded: true}},
		{Result: &Result{ExitCode: 137, Signal: "SIGKILL", Limits: LimitRLimit, OOMKilled: true, MemoryEnded: true}},
		{Result: &Result{ExitCode: 125, Limits: LimitCgroup1}, Error: "the sandbox's init ended before the command started", Stage: "sandbox"},
		{Result: &Result{ExitCode: -1, DurationMS: -5, MaxRSSKB: 1 << 40, Limits: LimitNone}},
		{Result: base(), Stage: "sandbox"},
	}
	for _, s := range oddStrings {
		cases = append(cases, resultTwin{Result: &Result{ExitCode: 1, Limits: LimitRLimit, LimitsNote: s, Signal: s}, PolicySHA256: s, Error: s + "x", Stage: s})
	}
	for _, c := range cases {
		checkResultJSON(t, c)
	}
}

// FuzzResultJSONTwins is TestResultJSONTwins on the fuzzer's strings.
func FuzzResultJSONTwins(f *testing.F) {
	for _, s := range oddStrings {
		f.Add(s, s, 1)
	}
	f.Fuzz(func(t *testing.T, note, msg string, code int) {
		note, _, _ = strings.Cut(note, "\x00")
		msg, _, _ = strings.Cut(msg, "\x00")
		if msg == "" {
			msg = "x"
		}
		checkResultJSON(t, resultTwin{Result: &Result{ExitCode: int(int32(code)), Limits: LimitRLimit, LimitsNote: note}, PolicySHA256: note, Error: msg, Stage: "sandbox"})
	})
}
