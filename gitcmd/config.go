package gitcmd

import (
	"slices"
	"strconv"
	"strings"
)

// ProgramSetting returns the first setting of the git config file text
// data that makes git run a program or read another file ([RunsProgram]:
// core.fsmonitor, an alias that is a shell command, include.path, ...),
// as "key = value", or "" for none. keep lists include paths the caller
// wrote itself and vouches for (jail's includes of the user's read-only
// config). A line it cannot read as git would is reported too: the
// reading errs towards the program.
func ProgramSetting(data []byte, keep []string) string {
	sets, err := ParseConfig(data)
	if err != nil {
		return "unreadable file (" + err.Error() + ")"
	}
	for _, kv := range sets {
		full, v := kv.Key, kv.Value
		if strings.HasPrefix(full, "alias.") && strings.HasPrefix(v, "!") {
			return full + " = " + strconv.Quote(v) // a shell command under a name of its own
		}
		if !RunsProgram(full) {
			continue
		}
		if isInclude(full) && slices.Contains(keep, v) {
			continue
		}
		return full + " = " + strconv.Quote(v)
	}
	return ""
}

// sectionName is a header's name as RunsProgram matches it: section and
// subsection joined by dots ([remote "a.b"] is remote.a.b), the section
// lower-cased.
func sectionName(h string) string {
	h = strings.TrimSpace(h)
	name, sub, ok := strings.Cut(h, " ")
	if !ok {
		name, sub, ok = strings.Cut(h, "\t")
	}
	if !ok {
		return strings.ToLower(h) // [core], or the old [section.sub]
	}
	return strings.ToLower(name) + "." + unquote(strings.TrimSpace(sub))
}

func isInclude(key string) bool {
	k := strings.ToLower(key)
	return k == "include.path" || strings.HasPrefix(k, "includeif.") && strings.HasSuffix(k, ".path")
}

// unquote undoes a config value's quotes and escapes; an unquoted # or ;
// starts a comment.
func unquote(v string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(v[i])
			}
		case !quoted && (c == '#' || c == ';'):
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

// quoteLine is a line for a message, cut short.
func quoteLine(s string) string {
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return strconv.Quote(s)
}
