//go:build linux

package gitview

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/jail-sandbox/jail/confine"
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
	cacheDirs = 1024
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
// it visited with their depth and identity, and whether a bound cut it
// short.
type found struct {
	gitDirs, gitFiles []string
	visited           []string
	depth             map[string]int
	ids               map[string]dirID
	hashes            map[string]uint64 // confine.DirsHashOf of each, the root's own .git left out
	truncated         bool
	skip              string // the directory left out
}

// dirID is what changes when a directory gains or loses an entry.
type dirID struct{ dev, ino, mtime, ctime uint64 }

func idOf(st *unix.Stat_t) dirID {
	return dirID{st.Dev, st.Ino, uint64(st.Mtim.Nano()), uint64(st.Ctim.Nano())}
}

// dirEnt is one entry of a directory listing: its name and whether it is
// a directory (no symlink counts).
type dirEnt struct {
	name string
	dir  bool
}

// listDir lists the directory fd with getdents64, keeping only what the
// walk needs (subdirectories and .git entries): it runs for every
// directory of a large tree at every launch.
func listDir(fd int, buf []byte) ([]dirEnt, error) {
	var out []dirEnt
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return out, err
		}
		if n <= 0 {
			return out, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(b[16]) | int(b[17])<<8
			if reclen < 19 || reclen > len(b) {
				return out, unix.EINVAL
			}
			typ := b[18]
			name := b[19:reclen]
			if i := indexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if len(name) == 0 || name[0] == '.' && (len(name) == 1 || len(name) == 2 && name[1] == '.') {
				continue
			}
			isGit := string(name) == ".git"
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
					typ = unix.DT_DIR
				}
			}
			if typ == unix.DT_DIR || isGit {
				out = append(out, dirEnt{string(name), typ == unix.DT_DIR})
			}
		}
	}
}

// hashEnts is confine.DirsHashOf of a listing.
func hashEnts(ents []dirEnt, skipGit bool) uint64 {
	names := make([]string, len(ents))
	dirs := make([]bool, len(ents))
	for i, e := range ents {
		names[i], dirs[i] = e.name, e.dir
	}
	return confine.DirsHashOf(names, dirs, skipGit)
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// walk searches the workspace wsfd for .git entries below its root, by
// descriptor, following no symlink, leaving out the directory skip
// (workspace-relative, jail's state when the workspace holds it).
func walk(wsfd int, skip string) *found {
	f := &found{skip: skip, depth: map[string]int{}, ids: map[string]dirID{}, hashes: map[string]uint64{}}
	f.walkFrom(wsfd, ".", 0)
	return f
}

// walkFrom walks the directory rel (at depth below the root) and what is
// beneath it, depth first, each directory opened relative to its
// parent's descriptor.
func (f *found) walkFrom(wsfd int, rel string, depth int) {
	fd, err := openGitDir(wsfd, rel)
	if err != nil {
		return // gone, or unreadable: the host's git cannot use it either
	}
	f.walkFD(fd, rel, depth, make([]byte, 16<<10))
}

// walkFD walks the open directory fd (closed when done).
func (f *found) walkFD(fd int, rel string, depth int, buf []byte) {
	defer unix.Close(fd)
	if len(f.visited) >= walkDirs {
		f.truncated = true
		return
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return
	}
	ents, err := listDir(fd, buf)
	if err != nil {
		f.truncated = true
	}
	f.visited = append(f.visited, rel)
	f.depth[rel] = depth
	f.ids[rel] = idOf(&st)
	f.hashes[rel] = hashEnts(ents, rel == ".")
	for _, e := range ents {
		sub := filepath.Join(rel, e.name)
		if e.name == ".git" {
			if rel == "." {
				continue
			}
			if e.dir {
				f.gitDirs = append(f.gitDirs, sub)
			} else {
				f.gitFiles = append(f.gitFiles, sub)
			}
			continue
		}
		if !e.dir || skipDir(e.name) || sub == f.skip || depth+1 > walkDepth {
			continue
		}
		cfd, err := unix.Openat(fd, e.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		f.walkFD(cfd, sub, depth+1, buf)
	}
}

// changedSince finds the .git entries below the root that the sandbox
// may have made since the walk at launch (the receiver): only the
// directories whose identity changed are listed again, and those new
// since launch walked whole.
func (f *found) changedSince(wsfd int) *found {
	now := &found{skip: f.skip, depth: map[string]int{}, ids: map[string]dirID{}, hashes: map[string]uint64{}}
	buf := make([]byte, 16<<10)
	for _, rel := range f.visited {
		var st unix.Stat_t
		if unix.Fstatat(wsfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && idOf(&st) == f.ids[rel] {
			continue
		}
		fd, err := openGitDir(wsfd, rel)
		if err != nil {
			continue
		}
		ents, _ := listDir(fd, buf)
		for _, e := range ents {
			sub := filepath.Join(rel, e.name)
			switch {
			case e.name == ".git" && rel != ".":
				if e.dir {
					now.gitDirs = append(now.gitDirs, sub)
				} else {
					now.gitFiles = append(now.gitFiles, sub)
				}
			case e.name == ".git", !e.dir, skipDir(e.name), sub == f.skip, f.depth[rel]+1 > walkDepth:
			default:
				if _, seen := f.ids[sub]; !seen {
					now.walkFrom(wsfd, sub, f.depth[rel]+1)
				}
			}
		}
		unix.Close(fd)
	}
	return now
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
	// The directories on the way to each .git below the root are pinned
	// (mounted onto themselves; a mountpoint can be neither renamed nor
	// removed): moving vendor/lib aside would take its shown .git along
	// and leave the name free for a repository of the sandbox's own,
	// which the host's git in vendor/lib would then use.
	pinned := map[string]bool{}
	for _, g := range append(append([]string{}, f.gitDirs...), f.gitFiles...) {
		for d := filepath.Dir(g); d != "." && d != "/" && !pinned[d]; d = filepath.Dir(d) {
			pinned[d] = true
			r.mounts = append(r.mounts, confine.Mount{Kind: confine.Pin, Dest: filepath.Join(r.opt.Workspace, d)})
		}
	}
	return len(todo) > 0 || len(f.gitDirs) > 0 || len(f.gitFiles) > 0 || f.truncated
}
