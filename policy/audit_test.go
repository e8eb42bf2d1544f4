package policy

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
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
