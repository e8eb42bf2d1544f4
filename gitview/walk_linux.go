//go:build linux

package gitview

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The host's git uses more git directories than the workspace's own: a
// repository cloned into a subdirectory, a submodule's checkout (its .git
// a gitfile naming .git/modules/NAME). Each is found by a walk of the
// workspace at launch and shown like the top one: a repository as an
// overlay, a gitfile or symlink read-only. The walk is bounded, so that
// launching in a large tree stays cheap (docs/git.md has the figures):
const (
	// walkDepth is how deep below the workspace root a .git is looked for
	// (a/b/c/d/.git is found).
	walkDepth = 4
	// walkDirs bounds the directories visited.
	walkDirs = 4096
	// maxRepos bounds the git directories shown as overlays (each takes
	// four of a sandbox's 256 mount sources); the rest are read-only.
	maxRepos = 24
	// cacheDirs bounds the directories a cached plan records: its
	// constructor lists each again on every run.
	cacheDirs = 512
	// modulesDepth bounds the search of a git directory's modules/ for
	// submodules' git directories (names may hold slashes).
	modulesDepth = 4
)

// skipDir reports whether the walk leaves a directory out: package trees
// that package managers fill and empty (npm, pnpm and yarn install
// packages without their .git), and git directories themselves.
func skipDir(name string) bool {
	return name == "node_modules" || name == ".git"
}

// found is what a walk found: the workspace-relative paths of each .git
// below the root (a directory or a gitfile or symlink), the directories
// it visited, and whether a bound cut it short.
type found struct {
	gitDirs, gitFiles []string
	visited           []string
	truncated         bool
	skip              string // the directory left out
}

// walk searches the workspace wsfd for .git entries below its root,
// breadth first, by descriptor, following no symlink, leaving out the
// directory skip (workspace-relative, jail's state when the workspace
// holds it).
func walk(wsfd int, skip string) *found {
	f := &found{skip: skip}
	type dir struct {
		rel   string
		depth int
	}
	queue := []dir{{".", 0}}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		if len(f.visited) >= walkDirs {
			f.truncated = true
			break
		}
		fd, err := openGitDir(wsfd, d.rel)
		if err != nil {
			continue // gone, or unreadable: the host's git cannot use it either
		}
		file := os.NewFile(uintptr(fd), d.rel)
		ents, err := file.ReadDir(-1)
		f.visited = append(f.visited, d.rel)
		for _, e := range ents {
			name := e.Name()
			t := e.Type()
			if t == os.ModeIrregular {
				var st unix.Stat_t
				if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
					t = os.ModeDir
				}
			}
			rel := filepath.Join(d.rel, name)
			if name == ".git" && d.rel != "." {
				if t == os.ModeDir {
					f.gitDirs = append(f.gitDirs, rel)
				} else {
					f.gitFiles = append(f.gitFiles, rel)
				}
				continue
			}
			if t != os.ModeDir || skipDir(name) || rel == skip {
				continue
			}
			if d.depth+1 > walkDepth {
				continue
			}
			queue = append(queue, dir{rel, d.depth + 1})
		}
		file.Close()
		if err != nil {
			f.truncated = true
		}
	}
	return f
}

// modules lists the git directories of submodules beneath the git
// directory rel (rel/modules/NAME, NAME possibly with slashes), and
// theirs in turn.
func modules(wsfd int, rel string, depth int) []string {
	if depth > modulesDepth {
		return nil
	}
	fd, err := openGitDir(wsfd, rel)
	if err != nil {
		return nil
	}
	file := os.NewFile(uintptr(fd), rel)
	ents, _ := file.ReadDir(-1)
	file.Close()
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(rel, e.Name())
		if isGitDir(wsfd, sub) {
			out = append(out, sub)
			out = append(out, modules(wsfd, filepath.Join(sub, "modules"), 0)...)
			continue
		}
		out = append(out, modules(wsfd, sub, depth+1)...)
	}
	return out
}

// under reports whether rel lies beneath one of dirs.
func under(rel string, dirs []string) bool {
	for _, d := range dirs {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}

// nested shows what the walk found: each repository below the root and
// each submodule git directory as an overlay (up to maxRepos), the rest
// and every gitfile read-only. It reports whether the plan depends on
// more than the walk's directories (anything nested was found, or the
// walk was cut short).
func (r *Run) nested(f *found) (unsure bool) {
	var overlaid []string
	for _, g := range r.repos {
		if !g.Fresh {
			overlaid = append(overlaid, g.Rel)
		}
	}
	var todo []string
	for _, g := range overlaid {
		todo = append(todo, modules(r.ws, filepath.Join(g, "modules"), 0)...)
	}
	for _, g := range f.gitDirs {
		if under(g, overlaid) {
			continue
		}
		if isGitDir(r.ws, g) {
			todo = append(todo, g)
			todo = append(todo, modules(r.ws, filepath.Join(g, "modules"), 0)...)
		} else {
			// Not a repository (yet), even empty: filled in, it would
			// become one for the host's git in that directory.
			r.protect = appendNew(r.protect, g)
		}
	}
	for _, g := range todo {
		// Past the bound, or when no overlay can be made, the git
		// directory is read-only as a whole instead: git inside cannot
		// change it, but nothing of it can be planted either.
		if len(r.repos) >= maxRepos || r.openRun() != nil || r.addOverlay(g) != nil {
			r.protect = appendNew(r.protect, g)
		}
	}
	for _, g := range f.gitFiles {
		r.protect = appendNew(r.protect, g)
	}
	return len(todo) > 0 || len(f.gitDirs) > 0 || len(f.gitFiles) > 0 || f.truncated
}
