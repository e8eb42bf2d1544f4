package gitstate

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Config is one parsed git config file, in the order git reads it. The
// parser follows git's own (config.c in git 2.39): comments with # and ;,
// [section], [section "subsection"] with \ escapes, the old
// [section.subsection] form (subsection lower-cased), keys on the header's
// line, values with quotes, \n \t \b \\ \" escapes and backslash-newline
// continuations, CRLF line ends, a UTF-8 byte order mark. What git refuses
// it refuses, and what git accepts it accepts, to the letter: a key before
// any section, and NUL bytes, which git keeps in its buffers but then
// reads as C strings, so a value ends at its first NUL and a NUL in a
// quoted subsection cuts the whole key name there ("[core "hookspath\0"]
// x = v" is core.hookspath = v to git, and here). A reader that refused
// what git reads would miss what git then does.
//
// It does not follow includes: it lists them, so a caller can see where
// git would read more.
type Config struct {
	Entries  []Entry
	Includes []Include

	src     []byte
	headers []header
}

// Entry is one key = value line (continuations included).
type Entry struct {
	Section    string // lower case
	Subsection string // as git keeps it: case-sensitive when quoted, lower case in [a.b]
	HasSub     bool
	Name       string // lower case
	Value      string
	NoValue    bool // "key" with no "=": boolean true to git
	Line       int

	start, end int // bytes of src this entry occupies (its line, newline included)
	header     int // index into headers
}

// Include is an include.path or includeIf.<condition>.path entry.
type Include struct {
	Condition string // "" for include.path
	Path      string
	Line      int
}

type header struct {
	Section, Subsection string
	HasSub              bool
	start, end          int // '[' to the end of its line (after the newline)
	last                int // end of the last entry under it (0 if none)
}

// Key is the entry's name as git config prints it: section.subsection.name
// (section and name lower case).
func (e Entry) Key() string {
	if e.HasSub {
		return e.Section + "." + e.Subsection + "." + e.Name
	}
	if e.Section == "" {
		return e.Name // a key before any section
	}
	return e.Section + "." + e.Name
}

// splitVar splits git's full key name at its first and last dots.
func splitVar(v string) (sec, sub string, hasSub bool, name string) {
	i, j := strings.IndexByte(v, '.'), strings.LastIndexByte(v, '.')
	if i < 0 {
		return "", "", false, v
	}
	sec, name = v[:i], v[j+1:]
	if i != j {
		sub, hasSub = v[i+1:j], true
	}
	return sec, sub, hasSub, name
}

// noValue stands for a value-less key in value lists; NUL never occurs in
// a parsed value.
const noValue = "\x00"

func (e Entry) rawValue() string {
	if e.NoValue {
		return noValue
	}
	return e.Value
}

// ConfigError is a syntax error with its line, as git reports it.
type ConfigError struct {
	Line int
	Msg  string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("bad config line %d: %s", e.Line, e.Msg) }

// ParseConfig parses a git config file's bytes.
func ParseConfig(src []byte) (*Config, error) {
	p := &cfgParser{src: src, line: 1}
	c := &Config{src: src}
	if err := p.parse(c); err != nil {
		return nil, err
	}
	return c, nil
}

type cfgParser struct {
	src  []byte
	pos  int
	line int
	eof  bool
}

// next is git's get_next_char: CRLF reads as LF, the end of the input
// reads as a final LF (and sets eof).
func (p *cfgParser) next() byte {
	if p.pos >= len(p.src) {
		p.eof = true
		return '\n'
	}
	c := p.src[p.pos]
	p.pos++
	if c == '\r' && p.pos < len(p.src) && p.src[p.pos] == '\n' {
		c = '\n'
		p.pos++
	}
	if c == '\n' {
		p.line++
	}
	return c
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isKeyChar(c byte) bool {
	return isAlpha(c) || c >= '0' && c <= '9' || c == '-'
}
func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func (p *cfgParser) errf(format string, a ...any) error {
	return &ConfigError{Line: p.line, Msg: fmt.Sprintf(format, a...)}
}

func (p *cfgParser) parse(c *Config) error {
	if len(p.src) >= 3 && string(p.src[:3]) == "\xef\xbb\xbf" {
		p.pos = 3
	}
	comment := false
	cur := -1 // current header
	for {
		start := p.pos
		ch := p.next()
		if ch == '\n' {
			if p.eof {
				return nil
			}
			comment = false
			continue
		}
		if comment || isSpace(ch) {
			continue
		}
		if ch == '#' || ch == ';' {
			comment = true
			continue
		}
		if ch == '[' {
			h, err := p.header(start)
			if err != nil {
				return err
			}
			c.headers = append(c.headers, h)
			cur = len(c.headers) - 1
			continue
		}
		if !isAlpha(ch) {
			return p.errf("unexpected character %q", ch)
		}
		line := p.line
		e, err := p.entry(ch)
		if err != nil {
			return err
		}
		// git builds "section[.subsection].key" in a buffer and hands it
		// on as a C string: it ends at a NUL.
		var h *header
		v := e.Name
		if cur >= 0 {
			h = &c.headers[cur]
			v = h.Section + "." + e.Name
			if h.HasSub {
				v = h.Section + "." + h.Subsection + "." + e.Name
			}
		}
		if i := strings.IndexByte(v, 0); i >= 0 {
			v = v[:i]
		}
		e.Section, e.Subsection, e.HasSub, e.Name = splitVar(v)
		e.Line, e.header = line, cur
		// The entry owns its whole line when only blanks precede it.
		s := start
		for s > 0 && (p.src[s-1] == ' ' || p.src[s-1] == '\t') {
			s--
		}
		if s == 0 || p.src[s-1] == '\n' {
			start = s
		}
		e.start, e.end = start, p.pos
		if h != nil {
			h.last = e.end
		}
		c.Entries = append(c.Entries, e)
		switch {
		case e.Section == "include" && !e.HasSub && e.Name == "path":
			c.Includes = append(c.Includes, Include{Path: e.Value, Line: line})
		case e.Section == "includeif" && e.HasSub && e.Name == "path":
			c.Includes = append(c.Includes, Include{Condition: e.Subsection, Path: e.Value, Line: line})
		}
	}
}

// header parses a section header after its '[' (git's get_base_var and
// get_extended_base_var).
func (p *cfgParser) header(start int) (header, error) {
	var name []byte
	for {
		ch := p.next()
		if p.eof {
			return header{}, p.errf("unterminated section header")
		}
		if ch == ']' {
			break
		}
		if isSpace(ch) {
			return p.extHeader(start, name, ch)
		}
		if !isKeyChar(ch) && ch != '.' {
			return header{}, p.errf("bad character %q in section name", ch)
		}
		name = append(name, lower(ch))
	}
	if len(name) == 0 {
		return header{}, p.errf("empty section name")
	}
	// git refuses only an empty name: "[.a]" is section "", subsection
	// "a" to it, and so here.
	sec, sub, hasSub := strings.Cut(string(name), ".")
	return header{Section: sec, Subsection: sub, HasSub: hasSub, start: start, end: p.pos}, nil
}

func (p *cfgParser) extHeader(start int, name []byte, ch byte) (header, error) {
	for {
		if ch == '\n' {
			return header{}, p.errf("incomplete section header")
		}
		ch = p.next()
		if !isSpace(ch) {
			break
		}
	}
	if ch != '"' {
		return header{}, p.errf("section header: expected a quoted subsection")
	}
	var sub []byte
	for {
		ch := p.next()
		if ch == '\n' {
			return header{}, p.errf("incomplete section header")
		}
		if ch == '"' {
			break
		}
		if ch == '\\' {
			ch = p.next()
			if ch == '\n' {
				return header{}, p.errf("incomplete section header")
			}
		}
		sub = append(sub, ch)
	}
	if p.next() != ']' {
		return header{}, p.errf("section header: expected ] after the subsection")
	}
	// [a.b "c"] is section a, subsection b.c to git; [ "c"] is section
	// "", subsection c (git's buffer is never empty here).
	sec, pre, dotted := strings.Cut(string(name), ".")
	s := string(sub)
	if dotted {
		s = pre + "." + s
	}
	return header{Section: sec, Subsection: s, HasSub: true, start: start, end: p.pos}, nil
}

// entry parses a key (its first letter read) and its value (git's
// get_value and parse_value).
func (p *cfgParser) entry(first byte) (Entry, error) {
	name := []byte{lower(first)}
	var ch byte
	for {
		ch = p.next()
		if p.eof || !isKeyChar(ch) {
			break
		}
		name = append(name, lower(ch))
	}
	for ch == ' ' || ch == '\t' {
		ch = p.next()
	}
	e := Entry{Name: string(name)}
	if ch == '\n' {
		e.NoValue = true
		return e, nil
	}
	if ch != '=' {
		return e, p.errf("expected = after key %s", esc(e.Name))
	}
	v, err := p.value()
	if err != nil {
		return e, err
	}
	e.Value = v
	return e, nil
}

func (p *cfgParser) value() (string, error) {
	var b []byte
	quote, comment, space := false, false, 0
	for {
		ch := p.next()
		if ch == '\n' {
			if quote {
				return "", p.errf("unterminated quoted value")
			}
			if i := bytes.IndexByte(b, 0); i >= 0 {
				b = b[:i] // git reads the value as a C string
			}
			return string(b), nil
		}
		if comment {
			continue
		}
		if isSpace(ch) && !quote {
			if len(b) > 0 {
				space++
			}
			continue
		}
		if !quote && (ch == ';' || ch == '#') {
			comment = true
			continue
		}
		for ; space > 0; space-- {
			b = append(b, ' ')
		}
		if ch == '\\' {
			ch = p.next()
			switch ch {
			case '\n':
				// A backslash at the very end continues into the end of
				// the file: git accepts it, and so does this.
				continue
			case 't':
				ch = '\t'
			case 'b':
				ch = '\b'
			case 'n':
				ch = '\n'
			case '\\', '"':
			default:
				return "", p.errf("unknown escape \\%c", ch)
			}
			b = append(b, ch)
			continue
		}
		if ch == '"' {
			quote = !quote
			continue
		}
		b = append(b, ch)
	}
}

// Values returns every value of a key, in order (the last one is what git
// uses for a single-valued key). key is section[.subsection].name; the
// section and name parts are compared without case.
func (c *Config) Values(key string) []string {
	sec, sub, hasSub, name, ok := splitKey(key)
	if !ok {
		return nil
	}
	var out []string
	for _, e := range c.Entries {
		if e.Section == sec && e.Name == name && e.HasSub == hasSub && e.Subsection == sub {
			out = append(out, e.Value)
		}
	}
	return out
}

// Get returns the last value of key and whether it is set.
func (c *Config) Get(key string) (string, bool) {
	v := c.Values(key)
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

// splitKey splits "section.sub.sect.name" at its first and last dots.
func splitKey(key string) (sec, sub string, hasSub bool, name string, ok bool) {
	i, j := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
	if i <= 0 || j == len(key)-1 {
		return "", "", false, "", false
	}
	sec, name = strings.ToLower(key[:i]), strings.ToLower(key[j+1:])
	if i != j {
		sub, hasSub = key[i+1:j], true
	}
	return sec, sub, hasSub, name, true
}

// keyID identifies a key the way git matches it.
type keyID struct {
	Section, Subsection string
	HasSub              bool
	Name                string
}

func (k keyID) String() string {
	if k.HasSub {
		return k.Section + "." + k.Subsection + "." + k.Name
	}
	return k.Section + "." + k.Name
}

// writable reports whether formatHeader and formatEntry can spell k:
// names git parses back (a letter, then letters, digits and dashes), a
// subsection without newline or NUL. Keys git read through a NUL cut or
// before any section are not.
func (k keyID) writable() bool {
	name := func(s string, dots bool) bool {
		if s == "" || !isAlpha(s[0]) && !dots {
			return false
		}
		for i := 0; i < len(s); i++ {
			if !isKeyChar(s[i]) {
				return false
			}
		}
		return true
	}
	return name(k.Section, true) && name(k.Name, false) && !strings.ContainsAny(k.Subsection, "\n\x00")
}

func (e Entry) id() keyID {
	return keyID{Section: e.Section, Subsection: e.Subsection, HasSub: e.HasSub, Name: e.Name}
}

// valueMap groups a config's values by key, in file order.
func (c *Config) valueMap() (map[keyID][]string, []keyID) {
	m := map[keyID][]string{}
	var order []keyID
	for _, e := range c.Entries {
		id := e.id()
		if _, seen := m[id]; !seen {
			order = append(order, id)
		}
		m[id] = append(m[id], e.rawValue())
	}
	return m, order
}

// setting is a key's new list of values; no values removes the key.
type setting struct {
	Key    keyID
	Values []string
}

// rewrite returns the file's bytes with each setting applied: the key's
// lines are removed and its new values written where its first line was
// (or at the end of its section's last block, or in a new section at the
// end). Every other byte is kept as it was.
func (c *Config) rewrite(settings []setting) []byte {
	type edit struct {
		start, end int
		text       string
		seq        int
	}
	var edits []edit
	// New sections at the end, one header per section however many keys
	// land in it.
	type group struct {
		key   keyID
		lines strings.Builder
	}
	var tail []*group
	tailFor := func(k keyID) *strings.Builder {
		for _, g := range tail {
			if g.key.Section == k.Section && g.key.HasSub == k.HasSub && g.key.Subsection == k.Subsection {
				return &g.lines
			}
		}
		g := &group{key: k}
		tail = append(tail, g)
		return &g.lines
	}
	for i, s := range settings {
		if !s.Key.writable() {
			continue // the caller's parse-back check reports it
		}
		var lines strings.Builder
		for _, v := range s.Values {
			lines.WriteString(formatEntry(s.Key.Name, v))
		}
		placed := false
		for _, e := range c.Entries {
			if e.id() != s.Key {
				continue
			}
			text := ""
			if !placed {
				text, placed = lines.String(), true
			}
			// An entry sharing a line with its header ("[core] bare")
			// starts mid-line: its replacement starts a line of its own.
			if e.start > 0 && c.src[e.start-1] != '\n' && text != "" {
				text = "\n" + text
			}
			edits = append(edits, edit{e.start, e.end, text, i})
		}
		if placed || len(s.Values) == 0 {
			continue
		}
		at := -1
		for _, h := range c.headers {
			if h.Section == s.Key.Section && h.HasSub == s.Key.HasSub && h.Subsection == s.Key.Subsection {
				at = h.last
				if at < h.end {
					at = lineEnd(c.src, h.end)
				}
			}
		}
		if at >= 0 {
			text := endLine(c.src[:at]) + lines.String()
			edits = append(edits, edit{at, at, text, i})
			continue
		}
		tailFor(s.Key).WriteString(lines.String())
	}
	sort.SliceStable(edits, func(i, j int) bool {
		if edits[i].start != edits[j].start {
			return edits[i].start < edits[j].start
		}
		return edits[i].seq < edits[j].seq
	})
	var out []byte
	pos := 0
	for _, e := range edits {
		if e.start < pos { // entries never overlap; guard anyway
			continue
		}
		out = append(out, c.src[pos:e.start]...)
		out = append(out, e.text...)
		pos = e.end
	}
	out = append(out, c.src[pos:]...)
	if len(tail) > 0 {
		out = append(out, endLine(out)...)
	}
	for _, g := range tail {
		out = append(out, formatHeader(g.key)...)
		out = append(out, g.lines.String()...)
	}
	return out
}

// endLine is what must follow b before a new line can start: nothing
// after a newline, else a newline, and two after a backslash (which the
// first would turn into a continuation of the last value).
func endLine(b []byte) string {
	switch {
	case len(b) == 0 || b[len(b)-1] == '\n':
		return ""
	case b[len(b)-1] == '\\':
		return "\n\n"
	}
	return "\n"
}

// lineEnd is the offset after the newline that ends the line containing
// pos (or the end of src).
func lineEnd(src []byte, pos int) int {
	for pos < len(src) {
		if src[pos] == '\n' {
			return pos + 1
		}
		pos++
	}
	return pos
}

func formatHeader(k keyID) string {
	if !k.HasSub {
		return "[" + k.Section + "]\n"
	}
	sub := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(k.Subsection)
	return "[" + k.Section + " \"" + sub + "\"]\n"
}

// formatEntry writes one key line that git parses back to exactly value.
func formatEntry(name, value string) string {
	if value == noValue {
		return "\t" + name + "\n"
	}
	var b strings.Builder
	quote := value != strings.TrimSpace(value) || strings.ContainsAny(value, "#;") || strings.Contains(value, "  ")
	for i := 0; i < len(value); i++ {
		switch ch := value[i]; ch {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		default:
			b.WriteByte(ch)
		}
	}
	v := b.String()
	if quote {
		v = `"` + v + `"`
	}
	return "\t" + name + " = " + v + "\n"
}

// objectFormat returns the repository's hash ("sha1" or "sha256") and its
// hex length, from extensions.objectformat.
func objectFormat(c *Config) (string, int, error) {
	if c == nil {
		return "sha1", 40, nil
	}
	v, ok := c.Get("extensions.objectformat")
	if !ok {
		return "sha1", 40, nil
	}
	switch strings.ToLower(v) {
	case "sha1":
		return "sha1", 40, nil
	case "sha256":
		return "sha256", 64, nil
	}
	return "", 0, errors.New("unknown extensions.objectformat " + esc(v))
}

// diffConfig lists the keys whose values differ between two configs,
// with the new config's values (none: removed), in the new file's order
// and then the removed keys sorted.
func diffConfig(old, new *Config) []setting {
	om, _ := old.valueMap()
	nm, order := new.valueMap()
	var out []setting
	for _, k := range order {
		if !equalValues(om[k], nm[k]) {
			out = append(out, setting{Key: k, Values: nm[k]})
		}
	}
	var gone []keyID
	for k := range om {
		if _, ok := nm[k]; !ok {
			gone = append(gone, k)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].String() < gone[j].String() })
	for _, k := range gone {
		out = append(out, setting{Key: k})
	}
	return out
}

func equalValues(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
