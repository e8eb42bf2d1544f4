package policy

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRedact(t *testing.T) {
	args := map[string]any{
		"command":  "curl -H 'Authorization: Bearer sk-ant-abcdefghijklmnopqrstuv' https://x?token=abc123 && echo ghp_0123456789abcdefghijABCDEFGHIJ",
		"password": "hunter2",
		"nested":   map[string]any{"AWS": "AKIAABCDEFGHIJKLMNOP", "list": []any{"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop"}},
		"Auth":     map[string]any{"user": "x"},
		"path":     "README.md",
	}
	r := Redact(args)
	b, _ := json.Marshal(r)
	s := string(b)
	for _, secret := range []string{"sk-ant-abcdefghijklmnopqrstuv", "hunter2", "abc123", "ghp_0123456789", "AKIAABCDEFGHIJKLMNOP", "eyJhbGciOiJIUzI1NiJ9", `"user"`} {
		if strings.Contains(s, secret) {
			t.Errorf("redacted args still contain %q: %s", secret, s)
		}
	}
	if r["path"] != "README.md" || !strings.Contains(r["command"].(string), "curl -H") {
		t.Errorf("redaction removed too much: %s", s)
	}
	if args["password"] != "hunter2" {
		t.Error("Redact modified its input")
	}
	// The digest depends on the redacted form only: different secrets, same digest.
	a := ArgsDigest(map[string]any{"token": "one", "x": 1})
	if a != ArgsDigest(map[string]any{"x": 1, "token": "two"}) || a == ArgsDigest(map[string]any{"x": 2, "token": "one"}) {
		t.Error("digest must ignore secret values and key order, and see other values")
	}
}

func TestAuditLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "audit.jsonl")
	l, err := OpenAuditLog(path, true)
	if err != nil {
		t.Fatal(err)
	}
	c := Call{Tool: "bash", Args: map[string]any{"command": "export GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ"}}
	d := Decision{Outcome: OutcomeDenied, Reason: "x", ApprovalSource: SourceNone}
	ts := &Toolset{Agent: "a", Role: "build"}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Write(NewAuditRecord(time.Now(), ts, c, d, "abc", 1500*time.Millisecond)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	l.Close()
	// Reopening appends rather than truncating.
	l2, _ := OpenAuditLog(path, false)
	l2.Write(NewAuditRecord(time.Now(), ts, c, d, "abc", 0))
	l2.Close()
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	f, _ := os.Open(path)
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		if strings.Contains(sc.Text(), "ghp_") {
			t.Fatal("raw secret in the audit log")
		}
		var r AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		if r.Agent != "a" || r.Role != "build" || r.PolicyHash != "abc" || r.ApprovalSource != SourceNone || len(r.ArgsDigest) != 64 {
			t.Errorf("record %+v", r)
		}
		if n == 1 && r.DurationMS != 1500 {
			t.Errorf("duration_ms = %d", r.DurationMS)
		}
	}
	if n != 21 {
		t.Errorf("%d records, want 21", n)
	}
	if _, err := OpenAuditLog("relative.jsonl", false); err == nil {
		t.Error("relative audit path accepted")
	}
}

// The audit log is never a file of the sandbox's choosing, and what a
// sandbox chose (a host name) is written so no shell or terminal acts on it.
func TestAuditLogRefusesLinksAndEscapes(t *testing.T) {
	dir := t.TempDir()
	bashrc := filepath.Join(dir, "bashrc")
	os.WriteFile(bashrc, []byte("# rc\n"), 0o644)
	log := filepath.Join(dir, "audit.jsonl")
	os.Symlink(bashrc, log)
	if _, err := OpenAuditLog(log, false); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("a symlinked log was opened: %v", err)
	}
	os.Remove(log)
	os.Link(bashrc, log)
	if _, err := OpenAuditLog(log, false); err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Fatalf("a hard-linked log was opened: %v", err)
	}
	os.Remove(log)
	l, err := OpenAuditLog(log, false)
	if err != nil {
		t.Fatal(err)
	}
	host := "x$(touch /tmp/pwned)`id`\x1b]52;c;Zm9v\x07\x1b[2J\u009b31m\x7f.example"
	if err := l.Append(map[string]any{"type": "network", "host": host}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	b, _ := os.ReadFile(log)
	for _, bad := range []string{"$", "`", "\x1b", "\x07", "\x7f", "\u009b"} {
		if strings.Contains(string(b), bad) {
			t.Errorf("the log line holds %q raw: %s", bad, b)
		}
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil || back["host"] != host {
		t.Fatalf("the escaped line does not decode to the same value: %v %q", err, back["host"])
	}
	if rc, _ := os.ReadFile(bashrc); string(rc) != "# rc\n" {
		t.Fatalf("bashrc changed: %q", rc)
	}
}

// TestRedactStringAsOnePattern: the redaction, pattern by pattern and the
// keys by a scan, replaces what the one pattern of them all did.
func TestRedactStringAsOnePattern(t *testing.T) {
	one := regexp.MustCompile(`sk-[A-Za-z0-9_-]{16,}` + `|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}` +
		`|(AKIA|ASIA)[A-Z0-9]{16}` + `|xox[baprs]-[A-Za-z0-9-]{10,}` + `|glpat-[A-Za-z0-9_-]{20,}` +
		`|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}` + `|-----BEGIN [A-Z ]*PRIVATE KEY-----` +
		`|(?i)(password|passwd|token|secret|api[_-]?key)=[^\s&]+`)
	for _, s := range []string{
		"", "ls", "curl -H 'Authorization: sk-abcdefghijklmnopqrstu' x", "MY_TOKEN=abc make", "a=b token= c",
		"PASSWORD=x&secret=y z", "api-key=1 apikey=2 api_key=3 APIKEY=4", "password=token=abc", "x=1 passwd=2\tz",
		"AKIAABCDEFGHIJKLMNOP ASIAABCDEFGHIJKLMNOP", "ghp_abcdefghijklmnopqrstuvwx github_pat_abcdefghijklmnopqrstuvwx",
		"eyJabcdefghi.abcdefghij.abcdefghij", "-----BEGIN RSA PRIVATE KEY-----", "xoxb-1234567890 glpat-abcdefghijklmnopqrstu",
		"==token==x", "t=oken=x", "émoji token=ü x", "token=sk-abcdefghijklmnopqrstu",
	} {
		if got, want := redactString(s), one.ReplaceAllString(s, Redacted); got != want {
			t.Errorf("%q: got %q, want %q", s, got, want)
		}
	}
}

// BenchmarkRedactLargeCommand: a 7 MB command (the size a request line
// may have) is redacted in one pass.
func BenchmarkRedactLargeCommand(b *testing.B) {
	args := map[string]any{"command": strings.Repeat("a && token=x ", 500000)}
	for b.Loop() {
		ArgsDigest(args)
	}
}
