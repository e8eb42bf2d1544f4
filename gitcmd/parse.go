package gitcmd

import (
	"fmt"
	"strings"
)

// Setting is one key of a config file as git reads it: Key is
// section.name or section.subsection.name with the section and the name
// in lower case and an extended subsection ([remote "Up"]) as written;
// Value is the value unquoted and unescaped; NoValue marks a key without
// "=" (git reads it as true).
type Setting struct {
	Key, Value string
	NoValue    bool
}

// ParseConfig reads git config text exactly as git does (config.c's
// parse_source, get_base_var, get_value, parse_value of git 2.39): a
// reader that differs from git by one rule lets a file hide a key from
// jail that git then runs (a value ending in an escaped backslash is not
// continued on the next line, so what follows is a section header to git).
// The error names the line git refuses; git then reads nothing of the
// file, so a caller judges such a file the worse way. The test compares
// it with `git config --list --null --file` on a table and a fuzz corpus.
func ParseConfig(data []byte) ([]Setting, error) {
	p := &parser{data: data, line: 1}
	return p.source()
}

type parser struct {
	data []byte
	pos  int
	line int
	eof  bool
}

// next is get_next_char: CRLF reads as LF, and the end of the text as a
// final LF (eof set).
func (p *parser) next() byte {
	if p.pos >= len(p.data) {
		p.eof = true
		return '\n'
	}
	c := p.data[p.pos]
	p.pos++
	if c == '\r' && p.pos < len(p.data) && p.data[p.pos] == '\n' {
		c = '\n'
		p.pos++
	}
	if c == '\n' {
		p.line++
	}
	return c
}

// git's own ctype (sane_ctype), not the C library's: space is only
// these four, and the letters are ASCII.
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

func (p *parser) fail(line int) ([]Setting, error) {
	return nil, fmt.Errorf("bad config line %d", line)
}

func (p *parser) source() ([]Setting, error) {
	var sets []Setting
	// A UTF-8 BOM is skipped; a partial one is refused as the first
	// byte that is not a letter.
	if bom := "\xef\xbb\xbf"; strings.HasPrefix(string(p.data), bom) {
		p.pos = len(bom)
	}
	var name strings.Builder
	base := 0
	comment := false
	for {
		line := p.line
		c := p.next()
		switch {
		case c == '\n':
			if p.eof {
				return sets, nil
			}
			comment = false
			continue
		case comment || isSpace(c):
			continue
		case c == '#' || c == ';':
			comment = true
			continue
		case c == '[':
			name.Reset()
			if !p.baseVar(&name) || name.Len() < 1 {
				return p.fail(p.errLine(line))
			}
			name.WriteByte('.')
			base = name.Len()
			continue
		case !isAlpha(c):
			return p.fail(line)
		}
		key := name.String()[:base] + string(lower(c))
		s, ok := p.value(key)
		if !ok {
			return p.fail(p.errLine(line))
		}
		sets = append(sets, s)
	}
}

// errLine is the line an error is reported on.
func (p *parser) errLine(start int) int {
	if p.line > start {
		return p.line - 1
	}
	return start
}

// baseVar is get_base_var and get_extended_base_var: [section],
// [section.old-style], [section "sub\"section"].
func (p *parser) baseVar(name *strings.Builder) bool {
	for {
		c := p.next()
		switch {
		case p.eof || c == 0:
			return false
		case c == ']':
			return true
		case isSpace(c):
			return p.extendedBaseVar(name, c)
		case !isKeyChar(c) && c != '.':
			return false
		}
		name.WriteByte(lower(c))
	}
}

func (p *parser) extendedBaseVar(name *strings.Builder, c byte) bool {
	for {
		if c == '\n' {
			return false
		}
		c = p.next()
		if !isSpace(c) {
			break
		}
	}
	if c != '"' {
		return false
	}
	name.WriteByte('.')
	for {
		c := p.next()
		if c == '\n' || c == 0 {
			return false
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			if c = p.next(); c == '\n' || c == 0 {
				return false
			}
		}
		name.WriteByte(c)
	}
	return p.next() == ']'
}

// value is get_value: the rest of the key's name, then "=" and the value
// or the end of the line.
func (p *parser) value(key string) (Setting, bool) {
	var b strings.Builder
	b.WriteString(key)
	var c byte
	for {
		c = p.next()
		if p.eof || !isKeyChar(c) {
			break
		}
		b.WriteByte(lower(c))
	}
	for c == ' ' || c == '\t' {
		c = p.next()
	}
	s := Setting{Key: b.String(), NoValue: true}
	if c != '\n' {
		if c != '=' {
			return s, false
		}
		v, ok := p.parseValue()
		if !ok {
			return s, false
		}
		s.Value, s.NoValue = v, false
	}
	return s, true
}

// parseValue is parse_value: quotes, the escapes \t \b \n \\ \", a
// backslash before a newline continues the value, an unquoted # or ;
// starts a comment, and inner runs of space become one space.
func (p *parser) parseValue() (string, bool) {
	var b strings.Builder
	quote, comment := false, false
	space := 0
	for {
		c := p.next()
		if c == '\n' {
			if quote {
				return "", false
			}
			return b.String(), true
		}
		if comment {
			continue
		}
		if isSpace(c) && !quote {
			if b.Len() > 0 {
				space++
			}
			continue
		}
		if !quote && (c == ';' || c == '#') {
			comment = true
			continue
		}
		if c == 0 {
			// git keeps the byte, and its C strings end there: the value
			// it judges is not the one written. The worse reading.
			return "", false
		}
		for ; space > 0; space-- {
			b.WriteByte(' ')
		}
		switch c {
		case '\\':
			switch c = p.next(); c {
			case '\n':
				continue
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return "", false
			}
			b.WriteByte(c)
		case '"':
			quote = !quote
		default:
			b.WriteByte(c)
		}
	}
}
