//go:build linux

package confine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// The user's git config in an empty home (docs/commands.md, "Git's
// config"). Commits made inside should carry the user's name and e-mail,
// so ~/.gitconfig and ~/.config/git/config are bound read-only where they
// are. Git's global scope is then a file of the sandbox's own
// (GIT_CONFIG_GLOBAL, in the home's tmpfs) that includes both: `git config
// --global` writes there, over the user's values, and never reaches the
// host's files (which are read-only mounts: their rename would fail).

// gitConfigName is the sandbox-side global config, relative to the home.
const gitConfigName = ".config/git/jail.gitconfig"

// userGitConfigs are the files of git's global scope, relative to the
// home, in the order git reads them (the later wins).
func userGitConfigs() []string { return []string{".config/git/config", ".gitconfig"} }

// gitConfig returns the mounts and the variable that give git the user's
// config read-only and a writable global config of the sandbox's own.
func (l *Layout) gitConfig(home string, ms []Mount) ([]Mount, []string) {
	var out []Mount
	var b strings.Builder
	b.WriteString("# jail: the sandbox's global git config (docs/commands.md). It includes the\n" +
		"# user's, read-only; `git config --global` writes here. In the persistent\n" +
		"# home it lasts, and jail reads it before judging a call's git commands.\n")
	var includes []string
	for _, rel := range userGitConfigs() {
		p := filepath.Join(home, rel)
		r := resolvedOrNone(p)
		l.Facts.realpath(p, r)
		if r == "" {
			continue
		}
		var st unix.Stat_t
		if err := unix.Stat(r, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			l.Facts.Unsure()
			continue
		}
		includes = append(includes, p)
		l.Facts.File(p)
		if !visible(ms, p) { // else a bind the user asked for shows it already
			out = append(out, Mount{Kind: Bind, Source: r, Dest: p})
		}
		// The files it includes are read by git inside as on the host
		// (a user.name kept in ~/.gitconfig.d/id): each in the home,
		// read-only where it is, unless it is one of the home's secrets.
		for _, inc := range gitIncludes(r, filepath.Dir(p), home, 0) {
			ri := resolvedOrNone(inc)
			l.Facts.realpath(inc, ri)
			if ri == "" || !pathWithin(inc, home) || homeSecret(inc, home) || visible(append(ms, out...), inc) {
				continue
			}
			var ist unix.Stat_t
			if unix.Stat(ri, &ist) != nil || ist.Mode&unix.S_IFMT != unix.S_IFREG {
				continue
			}
			l.Facts.File(inc)
			out = append(out, Mount{Kind: Bind, Source: ri, Dest: inc})
		}
	}
	if len(includes) > 0 {
		b.WriteString("[include]\n")
		for _, p := range includes {
			b.WriteString("\tpath = " + gitQuote(p) + "\n")
		}
	}
	dest := filepath.Join(home, gitConfigName)
	out = append(out, Mount{Kind: File, Source: b.String(), Dest: dest})
	return out, []string{"GIT_CONFIG_GLOBAL=" + dest}
}

// gitQuote is s as a quoted git config value.
func gitQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

// homeSecret reports whether p lies in one of the home's secrets
// (HomeWorkspaceSecrets): an include there stays hidden.
func homeSecret(p, home string) bool {
	for _, sec := range HomeWorkspaceSecrets() {
		if pathWithin(p, filepath.Join(home, sec)) {
			return true
		}
	}
	return false
}

// maxIncludeDepth is how deep git follows includes (config.c's
// MAX_INCLUDE_DEPTH).
const maxIncludeDepth = 10

// gitIncludes lists the files the git config file path (resolved; dir is
// the directory it is named in, against which relative includes count)
// includes with include.path and includeIf.*.path, whatever the
// condition, and theirs in turn: as git expands them, ~/ the home and a
// relative path the including file's directory. A line this reader does
// not understand is skipped: the worst it does is leave a file unbound,
// which git inside then does not find.
func gitIncludes(path, dir, home string, depth int) []string {
	if depth >= maxIncludeDepth {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil || len(data) > 1<<20 {
		return nil
	}
	var out []string
	inInclude := false
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				inInclude = false
				continue
			}
			head := strings.TrimSpace(line[1:end])
			name, _, _ := strings.Cut(head, " ")
			name, _, _ = strings.Cut(name, "\"")
			inInclude = strings.EqualFold(name, "include") || strings.EqualFold(name, "includeif")
			line = strings.TrimSpace(line[end+1:])
		}
		if !inInclude || line == "" {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(key), "path") {
			continue
		}
		v := configValue(strings.TrimSpace(val))
		switch {
		case v == "":
			continue
		case strings.HasPrefix(v, "~/"):
			v = filepath.Join(home, v[2:])
		case filepath.IsAbs(v):
		case strings.HasPrefix(v, "~"), strings.HasPrefix(v, "%("):
			continue // another user's home, git's install prefix: not the home's
		default:
			v = filepath.Join(dir, v)
		}
		v = filepath.Clean(v)
		if slices.Contains(out, v) {
			continue
		}
		out = append(out, v)
		if r := resolvedOrNone(v); r != "" {
			out = append(out, gitIncludes(r, filepath.Dir(v), home, depth+1)...)
		}
	}
	return out
}

// configValue is a git config value as written (quotes and the escapes
// \\, \" , \t, \n undone; an unquoted # or ; starts a comment).
func configValue(v string) string {
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
