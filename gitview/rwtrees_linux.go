//go:build linux

package gitview

import (
	"io"
	"slices"
	"strings"

	"github.com/jail-sandbox/jail/termtext"
	"golang.org/x/sys/unix"
)

// A --rw tree is the sandbox's to write (docs/home.md). One that is a
// repository (a .git at its root, or a git directory itself) holds a git
// directory the host's git reads (its hooks, core.fsmonitor) and editor
// and agent files at its root, as a workspace does: it gets a git view of
// its own (Trees), made as the workspace's (Options.Tree), and the
// protected paths of a workspace at its root. One that holds the
// workspace, lies inside it, or overlaps another such tree cannot (its
// view would overlay the same git directories twice), nor one that holds
// a home or jail's own state (its sweep would move aside what agents keep
// in a persistent home, and a workspace that holds a home is refused for
// the same reasons): jail says so at launch, with the way to have it
// protected: the tree given as the workspace. docs/git.md ("--rw trees").

// Trees are those of the resolved --rw trees writable that are
// repositories and get a view of their own beside the workspace ws's;
// none that holds one of avoid (the homes, jail's state directories).
func Trees(ws string, writable, avoid []string) []string {
	var repos []string
	for _, t := range writable {
		if t == "/" || within(ws, t) || within(t, ws) || slices.Contains(repos, t) ||
			slices.ContainsFunc(avoid, func(a string) bool { return a != "" && within(a, t) }) || !isRepoTree(t) {
			continue
		}
		repos = append(repos, t)
	}
	var out []string
	for _, t := range repos {
		if !slices.ContainsFunc(repos, func(o string) bool { return o != t && (within(o, t) || within(t, o)) }) {
			out = append(out, t)
		}
	}
	return out
}

// isRepoTree reports whether the directory t is a repository for the
// host's git: a .git at its root, or a git directory itself.
func isRepoTree(t string) bool {
	fd, err := unix.Open(t, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	return unix.Fstatat(fd, ".git", &st, unix.AT_SYMLINK_NOFOLLOW) == nil || isGitDir(fd, ".")
}

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
		termtext.Fprintf(w, "jail: WARNING: --rw %s is a git repository that holds the workspace, a home or jail's state, lies in the workspace or overlaps another --rw repository, so it gets no git view of its own: the sandbox can write its git directory (hooks, config such as core.fsmonitor, which the host's git runs)%s, and nothing reduces it after the run; to have jail protect them, give it as the workspace instead (jail run -w %s)\n", t, also, t)
	}
	return any
}
