//go:build linux

package gitview

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/jail-sandbox/jail/gitcmd"
)

// CloneHere refuses a command that is `git clone URL .` (or names the
// workspace as the destination) in a workspace without a repository:
// inside, .git is the empty private git directory jail mounts there for
// the run, and git refuses a destination that is not empty, with a
// message that does not say why. dir is the command's working directory.
// It cannot see a clone run by a shell or an agent inside; docs/git.md
// says what to do instead there.
func (r *Run) CloneHere(argv []string, dir string) error {
	if r == nil || !r.freshRoot() || len(argv) < 2 || filepath.Base(argv[0]) != "git" {
		return nil
	}
	dest, ok := cloneDest(argv[1:])
	if !ok {
		return nil
	}
	if !filepath.IsAbs(dest) {
		dest = filepath.Join(dir, dest)
	}
	if filepath.Clean(dest) != r.opt.Workspace {
		return nil
	}
	return fmt.Errorf("git clone into the workspace itself cannot work here: the workspace has no repository, so jail holds an empty .git in it for the run (what git makes there is adopted when the sandbox ends, hooks and config keys that run programs dropped) and git refuses a destination that is not empty; clone into a subdirectory (git clone URL DIR), or make the repository in place: git init -q && git remote add origin URL && git fetch -q origin && git remote set-head -a origin && git checkout -q -t \"$(git rev-parse --abbrev-ref origin/HEAD)\" (docs/git.md)")
}

// freshRoot reports whether the workspace's .git is the empty private git
// directory of a workspace without a repository.
func (r *Run) freshRoot() bool {
	for _, g := range r.repos {
		if g.Fresh && g.Rel == ".git" {
			return true
		}
	}
	return false
}

// cloneDest finds the destination of a git command line (argv after
// "git") that is a clone with one: git's global options and an alias the
// line defines (gitcmd), then "clone", its options (those that take a
// value skip it), the repository and the directory.
func cloneDest(argv []string) (string, bool) {
	l := gitcmd.Parse(argv)
	if l.Sub != "clone" {
		return "", false
	}
	args := l.Args
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "--"):
			switch a {
			case "--branch", "--origin", "--upload-pack", "--reference", "--reference-if-able", "--separate-git-dir",
				"--config", "--depth", "--shallow-since", "--shallow-exclude", "--template", "--filter", "--jobs",
				"--server-option", "--bundle-uri", "--ref-format":
				i++
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// Short options, possibly bundled: one that takes a value
			// takes the rest of the word, or the next.
			for j := 1; j < len(a); j++ {
				if strings.IndexByte("boucj", a[j]) >= 0 {
					if j == len(a)-1 {
						i++
					}
					break
				}
			}
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) != 2 {
		return "", false
	}
	return pos[1], true
}

// Why is the git-specific reason jail holds the workspace-relative path
// rel in this sandbox ("" when the git view holds nothing there): the
// words of the one line jail prints when a command inside meets one of
// the view's mountpoints (rename or removal of a .git: EBUSY) or its
// read-only paths (EROFS). Each says what jail refused, why, and what to
// do instead.
func (r *Run) Why(rel string) string {
	if r == nil {
		return ""
	}
	rel = filepath.Clean(rel)
	for _, g := range r.repos {
		switch {
		case g.Fresh && rel == g.Rel:
			return fmt.Sprintf("jail holds %s: the workspace had no repository there, so the sandbox's goes to a private git directory jail mounts at %s and adopts into the host when the sandbox ends (hooks and config keys that run programs dropped); it can be neither moved nor removed inside (use git itself: git init, git clone URL DIR)", rel, rel)
		case rel == g.Rel:
			return fmt.Sprintf("jail holds %s: it is the sandbox's view of the host's git directory, whose changes jail adopts when the sandbox ends (refs, the index, config keys that run nothing); it can be neither moved nor removed inside, so that no directory of the sandbox's can take its place; change the repository with git, or move %s on the host", rel, rel)
		}
	}
	for _, p := range r.protect {
		if rel != p && !strings.HasPrefix(rel, p+"/") {
			continue
		}
		switch base := filepath.Base(p); {
		case r.deep[p]:
			return fmt.Sprintf("jail keeps %s read-only: an editor, agent CLI or hooks manager on the host runs what it says (docs/workspace.md)", p)
		case base == ".git":
			return fmt.Sprintf("jail keeps %s read-only: the host's git reads it (a gitfile, a submodule or a nested repository's git directory jail cannot show as its own), and what the sandbox wrote there would run on the host later", p)
		case base == "HEAD" || r.isBareName(p):
			return fmt.Sprintf("jail keeps %s read-only: with it, the host's git would take the directory for a bare repository whose config and hooks the sandbox wrote", p)
		default:
			return fmt.Sprintf("jail keeps %s read-only: it is a submodule's path or a git directory of the host's, and a repository the sandbox made there would run its config on the host's next git status; initialise a submodule on the host (git submodule update --init %s)", p, p)
		}
	}
	return ""
}

// isBareName reports whether p is one of the names bareRoot holds.
func (r *Run) isBareName(p string) bool {
	if strings.Contains(p, "/") {
		return false
	}
	switch p {
	case "config", "hooks", "commondir", "config.worktree", "info", "objects", "refs", "packed-refs", "modules", "worktrees", "logs":
		return true
	}
	return false
}
