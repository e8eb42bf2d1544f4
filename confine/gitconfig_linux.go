//go:build linux

package confine

import (
	"path/filepath"
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
		"# user's, read-only; `git config --global` writes here, and it is gone when\n" +
		"# the run ends.\n")
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
		if visible(ms, p) {
			continue // a bind the user asked for shows it already
		}
		out = append(out, Mount{Kind: Bind, Source: r, Dest: p})
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
