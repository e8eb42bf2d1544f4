package gitstate

import (
	"strings"
	"unicode/utf8"

	"github.com/jail-sandbox/jail/termtext"
)

// validRefName applies git's check-ref-format rules to a full ref name
// under refs/ (the one-level pseudo-refs are matched by name elsewhere).
// Names that git itself would refuse are never written: git may read them
// in surprising ways, and the file system path is built from them.
func validRefName(name string) bool {
	if !strings.HasPrefix(name, "refs/") || len(name) > 1024 {
		return false
	}
	return validRefPath(name)
}

// validRefPath is check-ref-format without the refs/ prefix rule.
func validRefPath(name string) bool {
	if name == "" || name == "@" || !utf8.ValidString(name) {
		return false
	}
	if strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") ||
		strings.Contains(name, "..") || strings.Contains(name, "@{") || strings.Contains(name, "//") {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c < 0x20 || c == 0x7f:
			return false
		case c == ' ' || c == '~' || c == '^' || c == ':' || c == '?' || c == '*' || c == '[' || c == '\\':
			return false
		}
	}
	for _, comp := range strings.Split(name, "/") {
		if comp == "" || comp[0] == '.' || strings.HasSuffix(comp, ".lock") {
			return false
		}
	}
	return true
}

// validBranchName is a valid name under refs/heads/ that is not "HEAD"
// and does not start with a dash (git's own rule for new branches).
func validBranchName(name string) bool {
	return name != "HEAD" && !strings.HasPrefix(name, "-") && validRefName("refs/heads/"+name)
}

// validRemoteName is git's rule for remote names (a valid refspec
// component), plus a conservative character set: a remote's name becomes a
// config subsection, a path under refs/remotes/ and terminal output.
func validRemoteName(name string) bool {
	if name == "" || len(name) > 200 || name[0] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '/') {
			return false
		}
	}
	return validRefPath(name)
}

// esc makes a name the sandbox chose safe to print (termtext.Escape: no
// terminal can act on it, and it reads back to one name), cut at 200
// bytes.
func esc(s string) string {
	const max = 200
	cut := false
	if len(s) > max {
		s, cut = s[:max], true
	}
	s = termtext.Escape(s)
	if cut {
		s += "..."
	}
	return s
}

// isHex reports whether s is n lower-case hexadecimal digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
