//go:build linux

package gitview

import (
	"io"
	"slices"
	"strings"

	"github.com/jail-sandbox/jail/termtext"
	"golang.org/x/sys/unix"
)

// A --rw tree is the sandbox's as it is: no walk, no git view, no
// placeholder and no sweep reduces what the sandbox writes there
// (docs/home.md). When the tree is a repository (a .git at its root, or
// a git directory itself), the sandbox can write the git directory the
// host's git reads (its hooks, core.fsmonitor), and the editor and agent
// files at its root; jail says so at launch, with the way to have them
// protected: the tree given as the workspace. docs/git.md ("--rw trees").

// warnWritableRepos names on w each of trees that is a repository, with
// the protected names (names) at its root, and reports whether any was.
func warnWritableRepos(w io.Writer, trees []string, names *nameSet) bool {
	any := false
	for _, t := range trees {
		fd, err := unix.Open(t, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		repo := unix.Fstatat(fd, ".git", &st, unix.AT_SYMLINK_NOFOLLOW) == nil || isGitDir(fd, ".")
		var prot []string
		if repo {
			if ns, err := readNames(fd); err == nil {
				for _, n := range ns {
					if ok, _ := names.match(n); ok {
						prot = append(prot, n)
					}
				}
			}
		}
		unix.Close(fd)
		if !repo {
			continue
		}
		any = true
		slices.Sort(prot)
		also := ""
		if len(prot) > 0 {
			also = " and " + strings.Join(prot, ", ") + " there"
		}
		termtext.Fprintf(w, "jail: WARNING: --rw %s is a git repository: the sandbox can write its git directory (hooks, config such as core.fsmonitor, which the host's git runs)%s, and nothing reduces a --rw tree after the run; to have jail protect them, give it as the workspace instead (jail run -w %s)\n", t, also, t)
	}
	return any
}
