package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
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

// OpenAuditLog opens (creating) the log and its directory (0700). It is opened once, before any
// sandbox starts, and written through that descriptor only. The last component is opened with
// O_NOFOLLOW and must be a regular file of the caller's, with one link, that no one else may
// write: a log swapped for a symlink (to ~/.bashrc, say) or a hard link is refused, so jail never
// appends to a file of the sandbox's choosing. The supervisor guards the file in every sandbox
// (docs/supervisor.md).
func OpenAuditLog(path string, fsync bool) (*AuditLog, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("audit: open %q: path must be absolute", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: create directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("audit: open %s: it is a symlink; jail appends only to a regular file of yours (remove the link, or set [audit] path)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("audit: open: %w", err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: stat %s: %w", path, err)
	}
	var why string
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		why = "it is not a regular file"
	case int(st.Uid) != os.Geteuid():
		why = fmt.Sprintf("it is owned by uid %d, not by you", st.Uid)
	case st.Nlink != 1:
		why = fmt.Sprintf("it has %d hard links (another name could be a file of someone else's choosing)", st.Nlink)
	case st.Mode&0o022 != 0:
		why = fmt.Sprintf("others may write it (mode %04o)", st.Mode&0o7777)
	}
	if why != "" {
		f.Close()
		return nil, fmt.Errorf("audit: refusing %s: %s; fix: move it aside, or set [audit] path to a file of your own", path, why)
	}
	return &AuditLog{f: f, fsync: fsync}, nil
}

// MarshalLine encodes v as one line of JSON that no shell or terminal can act on, for the
// audit log, the result files and the approval question: besides JSON's own escaping of control
// characters (ESC included), '$' and '`' are escaped as \u0024 and \u0060 (so a line pasted into
// a shell or sourced expands nothing, even inside the double quotes JSON strings look like to a
// shell), DEL and the C1 controls U+0080-U+009F (which some terminals obey, CSI among them) as
// \u007f and \u0080 ... \u009f, and the Unicode format characters (unicode.Cf: bidirectional
// embeddings, overrides and isolates, zero-width characters, the byte order mark, tags) as
// \uNNNN, a surrogate pair past U+FFFF, as termtext.Escape writes them: they reorder or hide
// what a terminal shows ("Trojan Source"). U+2028 and U+2029 json.Marshal escapes itself. The
// text decodes to exactly the same value.
func MarshalLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return EscapeJSON(b), nil
}

// EscapeJSON applies MarshalLine's extra escapes to encoded JSON. The bytes it replaces can only
// occur inside strings of valid JSON (encoding/json writes valid UTF-8), so the structure is
// untouched.
func EscapeJSON(b []byte) []byte {
	const hex = "0123456789abcdef"
	var out []byte
	for i := 0; i < len(b); {
		c := b[i]
		r, width := rune(c), 1
		if c >= 0x80 {
			r, width = utf8.DecodeRune(b[i:])
		}
		escape := c == '$' || c == '`' || c == 0x7f ||
			r >= 0x80 && r <= 0x9f || r > 0x9f && r != utf8.RuneError && unicode.Is(unicode.Cf, r)
		if !escape {
			if out != nil {
				out = append(out, b[i:i+width]...)
			}
			i += width
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(b)+16), b[:i]...)
		}
		units := []rune{r}
		if r > 0xffff {
			r1, r2 := utf16.EncodeRune(r)
			units = []rune{r1, r2}
		}
		for _, u := range units {
			out = append(out, '\\', 'u', hex[u>>12&15], hex[u>>8&15], hex[u>>4&15], hex[u&15])
		}
		i += width
	}
	if out == nil {
		return b
	}
	return out
}

// Write appends one tool-call record as a single line in a single write.
func (l *AuditLog) Write(r AuditRecord) error { return l.Append(r) }

// Append appends any record (the network and run records of the front
// ends) with the same guarantees: one line, one write, fsync if asked.
func (l *AuditLog) Append(r any) error {
	// Records carry strings a sandbox chose (host names, paths, reasons quoting commands):
	// MarshalLine leaves nothing in them a shell or terminal would act on.
	b, err := MarshalLine(r)
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

// secretValues are the values that are secrets whatever key they sit
// under, each with the text every match starts with: a pattern runs only
// on a string that holds its start, where the matcher skips to each
// (one pattern of all of them, case folding included, took 10 s on a
// 7 MB command and held jail serve's call that long). Keys given with
// "=" (password=..., token=...) are found by redactKeyValues.
var secretValues = []struct {
	start string
	re    *regexp.Regexp
}{
	{"sk-", regexp.MustCompile(`sk-[A-Za-z0-9_-]{16,}`)},     // OpenAI / Anthropic style keys
	{"gh", regexp.MustCompile(`gh[pousr]_[A-Za-z0-9]{20,}`)}, // GitHub tokens
	{"github_pat_", regexp.MustCompile(`github_pat_[A-Za-z0-9_]{20,}`)},
	{"AKIA", regexp.MustCompile(`AKIA[A-Z0-9]{16}`)}, // AWS access key ids
	{"ASIA", regexp.MustCompile(`ASIA[A-Z0-9]{16}`)},
	{"xox", regexp.MustCompile(`xox[baprs]-[A-Za-z0-9-]{10,}`)},                               // Slack
	{"glpat-", regexp.MustCompile(`glpat-[A-Za-z0-9_-]{20,}`)},                                // GitLab
	{"eyJ", regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)}, // JWTs
	{"-----BEGIN ", regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`)},
}

// secretKeys are the names whose value after "=" is a secret, in any
// case and inside a longer word (MY_TOKEN=...).
func secretKeys() []string {
	return []string{"password", "passwd", "token", "secret", "api_key", "api-key", "apikey"}
}

// redactString replaces every secret in v.
func redactString(v string) string {
	for _, p := range secretValues {
		if strings.Contains(v, p.start) {
			v = p.re.ReplaceAllString(v, Redacted)
		}
	}
	return redactKeyValues(v)
}

// redactKeyValues replaces KEY=VALUE, with KEY ending in one of
// secretKeys (any case) and VALUE up to white space or "&", by Redacted:
// one pass over v.
func redactKeyValues(v string) string {
	var b strings.Builder
	done := 0 // v[:done] is written to b
	for i := strings.IndexByte(v, '='); i >= 0; {
		end := i + 1
		for end < len(v) && !strings.ContainsRune(" \t\n\f\r&", rune(v[end])) {
			end++
		}
		start := -1
		if end > i+1 {
			for _, k := range secretKeys() {
				if j := i - len(k); j >= done && strings.EqualFold(v[j:i], k) && (start < 0 || j < start) {
					start = j
				}
			}
		}
		if start < 0 {
			next := strings.IndexByte(v[i+1:], '=')
			if next < 0 {
				break
			}
			i += 1 + next
			continue
		}
		b.WriteString(v[done:start])
		b.WriteString(Redacted)
		done = end
		next := strings.IndexByte(v[end:], '=')
		if next < 0 {
			break
		}
		i = end + next
	}
	if done == 0 {
		return v
	}
	b.WriteString(v[done:])
	return b.String()
}

// Redact returns a copy of args with secret-looking keys and values replaced. Inside strings only
// the secret part is replaced, so a command stays recognisable.
func Redact(args map[string]any) map[string]any {
	if args == nil {
		return nil
	}
	var walk func(k string, v any) any
	walk = func(k string, v any) any {
		if k != "" && secretKey(k) {
			return Redacted
		}
		switch v := v.(type) {
		case string:
			return redactString(v)
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
