package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// AuditRecord is one line of the audit log. Arguments are never stored: only a digest of them
// after secrets are redacted, so the log can prove which call it was without holding a token.
type AuditRecord struct {
	Time           time.Time `json:"time"`
	Agent          string    `json:"agent,omitempty"`
	Role           string    `json:"role,omitempty"`
	Tool           string    `json:"tool"`
	ArgsDigest     string    `json:"args_digest"`
	Decision       Outcome   `json:"decision"`
	Reason         string    `json:"reason"`
	PolicyHash     string    `json:"policy_hash"`
	DurationMS     int64     `json:"duration_ms"`
	ApprovalSource string    `json:"approval_source"`
	ActionTypes    []Action  `json:"action_types,omitempty"`
	// Elevation records a human's answer to the elevated access level (see [Decision]).
	Elevation       string `json:"elevation,omitempty"`
	ElevationSource string `json:"elevation_source,omitempty"`
}

// NewAuditRecord fills a record from a call and its decision; args are digested here, after
// redaction.
func NewAuditRecord(now time.Time, ts *Toolset, c Call, d Decision, policyHash string, took time.Duration) AuditRecord {
	r := AuditRecord{Time: now.UTC(), Tool: c.Tool, ArgsDigest: ArgsDigest(c.Args), Decision: d.Outcome,
		Reason: d.Reason, PolicyHash: policyHash, DurationMS: took.Milliseconds(), ApprovalSource: d.ApprovalSource,
		ActionTypes: d.Actions, Elevation: d.Elevation, ElevationSource: d.ElevationSource}
	if ts != nil {
		r.Agent, r.Role = ts.Agent, ts.Role
	}
	return r
}

// AuditLog appends records to a JSON-lines file. The file is opened O_APPEND, so every record
// is one write(2) at the end even with several jail processes logging at once, and mode 0600,
// because reasons may name paths. The log must live outside every sandbox: the confinement layer
// never binds it, so nothing confined can rewrite history.
type AuditLog struct {
	mu    sync.Mutex
	f     *os.File
	fsync bool
}

// OpenAuditLog opens (creating) the log and its directory (0700).
func OpenAuditLog(path string, fsync bool) (*AuditLog, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("audit: open %q: path must be absolute", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: create directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open: %w", err)
	}
	return &AuditLog{f: f, fsync: fsync}, nil
}

// Write appends one tool-call record as a single line in a single write.
func (l *AuditLog) Write(r AuditRecord) error { return l.Append(r) }

// Append appends any record (the network and run records of the front
// ends) with the same guarantees: one line, one write, fsync if asked.
func (l *AuditLog) Append(r any) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("audit: encode: %w", err)
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(b); err != nil {
		return fmt.Errorf("audit: write: %w", err)
	}
	if l.fsync {
		if err := l.f.Sync(); err != nil {
			return fmt.Errorf("audit: sync: %w", err)
		}
	}
	return nil
}

// Close closes the file.
func (l *AuditLog) Close() error { return l.f.Close() }

// Redacted replaces a secret-looking value.
const Redacted = "[REDACTED]"

func secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"token", "secret", "password", "passwd", "key", "auth", "credential", "cookie", "session", "private"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// secretValue matches values that are secrets whatever key they sit under.
func secretValue() *regexp.Regexp {
	return regexp.MustCompile(`sk-[A-Za-z0-9_-]{16,}` + // OpenAI / Anthropic style keys
		`|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}` + // GitHub tokens
		`|(AKIA|ASIA)[A-Z0-9]{16}` + // AWS access key ids
		`|xox[baprs]-[A-Za-z0-9-]{10,}` + // Slack
		`|glpat-[A-Za-z0-9_-]{20,}` + // GitLab
		`|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}` + // JWTs
		`|-----BEGIN [A-Z ]*PRIVATE KEY-----` +
		`|(?i)(password|passwd|token|secret|api[_-]?key)=[^\s&]+`)
}

// Redact returns a copy of args with secret-looking keys and values replaced. Inside strings only
// the secret part is replaced, so a command stays recognisable.
func Redact(args map[string]any) map[string]any {
	if args == nil {
		return nil
	}
	re := secretValue()
	var walk func(k string, v any) any
	walk = func(k string, v any) any {
		if k != "" && secretKey(k) {
			return Redacted
		}
		switch v := v.(type) {
		case string:
			return re.ReplaceAllString(v, Redacted)
		case map[string]any:
			out := make(map[string]any, len(v))
			for k2, v2 := range v {
				out[k2] = walk(k2, v2)
			}
			return out
		case []any:
			out := make([]any, len(v))
			for i, v2 := range v {
				out[i] = walk("", v2)
			}
			return out
		}
		return v
	}
	return walk("", args).(map[string]any)
}

// ArgsDigest is the SHA-256 of the redacted arguments in canonical JSON (encoding/json sorts map
// keys), so equal calls have equal digests and no secret influences it.
func ArgsDigest(args map[string]any) string {
	b, err := json.Marshal(Redact(args))
	if err != nil {
		b = []byte(fmt.Sprintf("unencodable: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
