//go:build linux

package gitview

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jail-sandbox/jail/gitstate"
	"github.com/jail-sandbox/jail/termtext"

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
	// bare are the directories (workspace-relative, "." the root) that
	// git takes for a git directory of their own (gitShaped): the host's
	// git run in one of them, or below it, uses it as a bare repository,
	// with its config and hooks.
	bare    []string
	visited []string
	depth   map[string]int
	ids     map[string]dirID
	hashes  map[string]uint64 // confine.DirsHashOf of each, the root's own .git left out
	// quiet are the directories (not the root) whose listing held
	// nothing the sweep after a run looks at but subdirectories, each of
	// which the walk visited too (or node_modules, which the sweep leaves
	// out): no symlink, no .git and no HEAD. One whose identity (ids) is
	// the same after a run still holds exactly these entries, so the plan
	// cache's sweep need not list it again (swept in confine's fast path).
	quiet     map[string]bool
	truncated bool
	skip      string // the directory left out
	// deep lifts the depth bound for directories made since at
	// (walkDirs still holds): the walk after a run enters directories
	// the sandbox made as deep as they go.
	deep bool
	// at is when the walk began (unix ns).
	at int64
	// names matches the protected names looked for below the root;
	// prot lists, per directory visited, those it holds.
	names *nameSet
	prot  map[string][]string
	// over are the protected names below the root past maxDeep: not
	// read-only while the run lasts, moved aside after it when the
	// sandbox changed them (overAside).
	over []string
	// ents are the device and inode of each protected name and .git
	// entry below the root the walk found (workspace-relative): one that
	// holds another object at the end is new, whatever its name. A
	// sandbox started before it existed has no mount on it and can
	// rename it away, taking a later run's mount there along; what that
	// run then makes at the name must not pass for what it found.
	ents map[string][2]uint64
}

// noteEnt records the identity of name beneath fd (sub in the
// workspace) in f.ents.
func (f *found) noteEnt(fd int, name, sub string) {
	var st unix.Stat_t
	if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	if f.ents == nil {
		f.ents = map[string][2]uint64{}
	}
	f.ents[sub] = [2]uint64{st.Dev, st.Ino}
}

// sameEnt reports whether rel (workspace-relative) beneath wsfd is the
// object the walk f found there; true when f recorded none (a launch
// of a binary before the identities were kept, or no walk).
func (f *found) sameEnt(wsfd int, rel string) bool {
	if f == nil || f.ents == nil {
		return true
	}
	id, ok := f.ents[rel]
	if !ok {
		return true
	}
	var st unix.Stat_t
	return unix.Fstatat(wsfd, rel, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Dev == id[0] && st.Ino == id[1]
}

// nameSet is the protected names the walk looks for in every directory
// it visits: the first component of each entry of the default protected
// list (.vscode, .claude, *.code-workspace, ...). The editor, agent CLI or
// hooks manager that reads one runs what it says, in whatever
// subdirectory it was opened or run.
type nameSet struct {
	exact map[string]bool // true: held while the run lasts
	globs []string
	// The globs of the form P* and *S (all of the default list's), as
	// prefixes and suffixes: the walk matches every name of every
	// directory it visits, and filepath.Match tripled its cost.
	prefixes, suffixes, others []string
}

// newNameSet makes the set of the first components of the protected
// paths held while a run lasts (held: at the root, each exact one is a
// protected path of its own) and of those protected after it (later).
func newNameSet(held, later []string) *nameSet {
	m := &nameSet{exact: map[string]bool{}}
	for i, p := range append(append([]string{}, held...), later...) {
		first, _, _ := strings.Cut(filepath.Clean(p), "/")
		if !strings.ContainsAny(first, "*?[") && first != "." && first != ".." {
			// true: held at the root; false: protected after the run only.
			m.exact[first] = m.exact[first] || i < len(held)
			continue
		}
		if strings.ContainsAny(first, "*?[") {
			m.globs = appendNew(m.globs, first)
			body := strings.Trim(first, "*")
			switch {
			case strings.ContainsAny(body, "*?[\\"):
				m.others = append(m.others, first)
			case strings.HasSuffix(first, "*") && !strings.HasPrefix(first, "*"):
				m.prefixes = append(m.prefixes, body)
			case strings.HasPrefix(first, "*") && !strings.HasSuffix(first, "*"):
				m.suffixes = append(m.suffixes, body)
			default:
				m.others = append(m.others, first)
			}
		}
	}
	return m
}

// matchBytes is match's first result for a name in a listing's buffer,
// without making a string of every name of the tree.
func (m *nameSet) matchBytes(name []byte) bool {
	if m == nil {
		return false
	}
	if _, ok := m.exact[string(name)]; ok { // no allocation: a map index by a converted slice
		return true
	}
	for _, p := range m.prefixes {
		if len(name) >= len(p) && string(name[:len(p)]) == p {
			return true
		}
	}
	for _, x := range m.suffixes {
		if len(name) >= len(x) && string(name[len(name)-len(x):]) == x {
			return true
		}
	}
	if len(m.others) == 0 {
		return false
	}
	ok, _ := m.match(string(name))
	return ok
}

// match reports whether name is one of the set's, and whether it is not
// an exact name held while a run lasts (at the workspace's root, such a
// name is a protected path of its own, held whether or not it exists;
// the others are protected there as below it).
func (m *nameSet) match(name string) (ok, byGlob bool) {
	if m == nil {
		return false, false
	}
	if held, ok := m.exact[name]; ok {
		return true, !held
	}
	for _, p := range m.prefixes {
		if strings.HasPrefix(name, p) {
			return true, true
		}
	}
	for _, x := range m.suffixes {
		if strings.HasSuffix(name, x) {
			return true, true
		}
	}
	for _, g := range m.others {
		if ok, _ := filepath.Match(g, name); ok {
			return true, true
		}
	}
	return false, false
}

// dirID is what changes when a directory gains or loses an entry.
type dirID struct{ dev, ino, mtime, ctime uint64 }

func idOf(st *unix.Stat_t) dirID {
	return dirID{st.Dev, st.Ino, uint64(st.Mtim.Nano()), uint64(st.Ctim.Nano())}
}

// dirEnt is one entry of a directory listing: its name and whether it is
// a directory (no symlink counts). Kept are subdirectories, .git entries
// and the names git's discovery looks for in a bare repository (HEAD,
// commondir, objects, refs), whatever their type.
type dirEnt struct {
	name string
	dir  bool
	prot bool // a protected name (nameSet)
}

// listDir lists the directory fd with getdents64, keeping only what the
// walk needs (subdirectories and .git entries), and says whether it held
// a symlink: it runs for every directory of a large tree at every launch.
func listDir(fd int, buf []byte, names *nameSet) (out []dirEnt, links bool, err error) {
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return out, links, err
		}
		if n <= 0 {
			return out, links, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(b[16]) | int(b[17])<<8
			if reclen < 19 || reclen > len(b) {
				return out, links, unix.EINVAL
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
			isGit := keepName(string(name))
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
					links = true // not known not to be one
				} else if st.Mode&unix.S_IFMT == unix.S_IFDIR {
					typ = unix.DT_DIR
				} else if st.Mode&unix.S_IFMT == unix.S_IFLNK {
					typ = unix.DT_LNK
				}
			}
			links = links || typ == unix.DT_LNK
			prot := names.matchBytes(name)
			if typ == unix.DT_DIR || isGit || prot {
				out = append(out, dirEnt{string(name), typ == unix.DT_DIR, prot})
			}
		}
	}
}

// keepName reports whether listDir keeps a name whatever its type: .git,
// and what makes a directory a bare repository for git's discovery.
func keepName(name string) bool {
	switch name {
	case ".git", "HEAD", "commondir", "objects", "refs":
		return true
	}
	return false
}

// gitShaped reports whether a directory with the listing ents is one git
// takes for a git directory (setup.c's is_git_directory, as git 2.39
// runs it on every directory its discovery passes, after that
// directory's .git): a HEAD that is not a directory, and objects and refs
// or a commondir that names where they are. Types other than HEAD's are
// not checked (git follows symlinks there), so this errs on the side of
// a repository.
func gitShaped(ents []dirEnt) bool {
	var head, objects, refs, common bool
	for _, e := range ents {
		switch e.name {
		case "HEAD":
			head = !e.dir
		case "objects":
			objects = true
		case "refs":
			refs = true
		case "commondir":
			common = !e.dir
		}
	}
	return head && (objects && refs || common)
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
func walk(wsfd int, skip string) *found { return walkNames(wsfd, skip, nil) }

// walkNames is walk that also lists the protected names of names in each
// directory (found.prot).
func walkNames(wsfd int, skip string, names *nameSet) *found {
	f := &found{skip: skip, depth: map[string]int{}, ids: map[string]dirID{}, hashes: map[string]uint64{}, at: time.Now().UnixNano(),
		names: names, prot: map[string][]string{}}
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
	ents, links, err := listDir(fd, buf, f.names)
	if err != nil {
		f.truncated = true
	}
	f.protNames(rel, ents)
	for _, e := range ents {
		if e.prot || e.name == ".git" && rel != "." {
			f.noteEnt(fd, e.name, filepath.Join(rel, e.name))
		}
	}
	f.visited = append(f.visited, rel)
	f.depth[rel] = depth
	f.ids[rel] = idOf(&st)
	f.hashes[rel] = hashEnts(ents, rel == ".")
	// A git directory's objects are not entered (thousands of
	// directories, none of them git's); the rest is, as a subdirectory
	// of it may hold a repository of its own.
	shaped := gitShaped(ents)
	if shaped {
		f.bare = append(f.bare, rel)
	}
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
		if shaped && e.name == "objects" || !e.dir || skipDir(e.name) || sub == f.skip {
			continue
		}
		// Below the depth, a deep walk enters only what was made since
		// it began: what is older there is the user's, and no walk at
		// launch saw it.
		if depth+1 > walkDepth && (!f.deep || !bornSince(fd, e.name, f.at)) {
			continue
		}
		cfd, err := unix.Openat(fd, e.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		f.walkFD(cfd, sub, depth+1, buf)
	}
	if err == nil && !links && f.quietDir(rel, ents, &st) {
		if f.quiet == nil {
			f.quiet = map[string]bool{}
		}
		f.quiet[rel] = true
	}
}

// quietDir reports whether the directory rel, listed as ents (with no
// symlink) once its identity was st, is quiet (found.quiet): not the
// root, no .git or HEAD, every subdirectory visited by now (the walk
// enters them before this is asked) or node_modules, and a change time
// older than the walk's start by more than a tick of the coarse clock
// file times come from, so that a name made right after the listing
// gives the directory another change time than the one recorded.
func (f *found) quietDir(rel string, ents []dirEnt, st *unix.Stat_t) bool {
	if rel == "." || st.Ctim.Nano() >= f.at-int64(20*time.Millisecond) {
		return false
	}
	for _, e := range ents {
		switch {
		case e.name == ".git" || e.name == "HEAD":
			return false
		case !e.dir:
		case e.name == "node_modules":
		default:
			if _, seen := f.ids[filepath.Join(rel, e.name)]; !seen {
				return false
			}
		}
	}
	return true
}

// changedSince finds the .git entries below the root that the sandbox
// may have made since the walk at launch (the receiver): only the
// directories whose identity changed are listed again, and those new
// since launch walked whole, however deep (a repository the sandbox
// made at a/b/c/d/e/f is found when it made a/ too).
func (f *found) changedSince(wsfd int) *found {
	now := &found{skip: f.skip, depth: map[string]int{}, ids: map[string]dirID{}, hashes: map[string]uint64{}, deep: true,
		at: f.at, names: f.names, prot: map[string][]string{}}
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
		ents, _, _ := listDir(fd, buf, f.names)
		now.protNames(rel, ents)
		shaped := gitShaped(ents)
		if shaped {
			now.bare = append(now.bare, rel)
		}
		for _, e := range ents {
			sub := filepath.Join(rel, e.name)
			switch {
			case e.name == ".git" && rel != ".":
				if e.dir {
					now.gitDirs = append(now.gitDirs, sub)
				} else {
					now.gitFiles = append(now.gitFiles, sub)
				}
			case e.name == ".git", shaped && e.name == "objects", !e.dir, skipDir(e.name), sub == f.skip:
			default:
				// New since launch: not seen where the walk then would
				// have seen it, or, below its depth, made during the
				// run (a directory's birth time cannot be set). An
				// older one down there is the user's, left alone.
				if _, seen := f.ids[sub]; !seen && (f.depth[rel]+1 <= walkDepth || bornSince(fd, e.name, f.at)) {
					now.walkFrom(wsfd, sub, f.depth[rel]+1)
				}
			}
		}
		unix.Close(fd)
	}
	return now
}

// protNames records the protected names of a listing of rel.
func (f *found) protNames(rel string, ents []dirEnt) {
	for _, e := range ents {
		if e.prot {
			f.prot[rel] = append(f.prot[rel], e.name)
		}
	}
}

// bornSince reports whether the directory name beneath dirfd was made
// at or after t (unix ns); true when the file system keeps no birth time
// (the walk then errs on the side of the sandbox having made it).
func bornSince(dirfd int, name string, t int64) bool {
	var sx unix.Statx_t
	if unix.Statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &sx) != nil || sx.Mask&unix.STATX_BTIME == 0 {
		return true
	}
	// File times come from the kernel's coarse clock, up to a tick
	// behind the walk's.
	return sx.Btime.Sec*1e9+int64(sx.Btime.Nsec) >= t-int64(20*time.Millisecond)
}

// modules lists the git directories of submodules beneath the git
// directory rel (rel/modules/NAME, NAME possibly with slashes), and
// theirs in turn. Each directory it lists, and what isGitDir looks at in
// each directory it meets, is a fact of the plan.
func (r *Run) modules(rel string, depth int) []string {
	if depth > modulesDepth {
		return nil
	}
	wsfd := r.ws
	r.opt.Facts.Stat(filepath.Join(r.opt.Workspace, rel), true)
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
		r.gitDirFacts(sub)
		if isGitDir(wsfd, sub) {
			out = append(out, sub)
			out = append(out, r.modules(filepath.Join(sub, "modules"), 0)...)
			continue
		}
		out = append(out, r.modules(sub, depth+1)...)
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

// nested shows what the walk found: each repository below the root, each
// directory git takes for a bare repository and each submodule git
// directory as an overlay (up to maxRepos), the rest and every gitfile
// read-only; and every gitlink path of a shown repository's index,
// whatever its depth (gitlinks). It reports whether the plan depends on
// more than the walk's directories (anything nested was found, or the
// walk was cut short, or protected names below the root where no
// repository is overlaid).
func (r *Run) nested(f *found) (unsure bool) {
	var overlaid []string
	for _, g := range r.repos {
		if !g.Fresh {
			overlaid = append(overlaid, g.Rel)
		}
	}
	var todo []string
	for _, g := range overlaid {
		todo = append(todo, r.modules(filepath.Join(g, "modules"), 0)...)
	}
	gitDirs, gitFiles := f.gitDirs, f.gitFiles
	links := r.gitlinks(overlaid, f)
	for _, l := range links {
		switch {
		case l.dir:
			gitDirs = appendNew(gitDirs, l.rel)
		case l.file:
			gitFiles = appendNew(gitFiles, l.rel)
		default:
			// Not checked out (an uninitialised submodule): the path
			// itself, an empty directory or missing, so that no
			// repository can be made there for the host's git to
			// descend into; a directory with files in it but no .git
			// gets .git held instead.
			r.protect = appendNew(r.protect, l.rel)
		}
	}
	// A git directory git takes for a bare repository is shown whole
	// (its overlay), insides included: a linked worktree's git directory
	// in it (.bare/worktrees/main, bare-shaped by its commondir) or a
	// repository below it is the overlay's, and a mount of its own there
	// would pin .bare by the identity the overlay then covers (the
	// bare-repository layout: .git naming ./.bare, worktrees beside it).
	shown := append([]string{}, overlaid...)
	bare := slices.Clone(f.bare)
	slices.Sort(bare)
	for _, b := range bare {
		if b != "." && !under(b, shown) && isGitDir(r.ws, b) {
			shown = append(shown, b)
		}
	}
	for _, g := range gitDirs {
		if under(g, overlaid) || under(filepath.Dir(g), shown[len(overlaid):]) {
			continue
		}
		r.gitDirFacts(g)
		if isGitDir(r.ws, g) {
			todo = append(todo, g)
			todo = append(todo, r.modules(filepath.Join(g, "modules"), 0)...)
		} else {
			// Not a repository (yet), even empty: filled in, it would
			// become one for the host's git in that directory.
			r.protect = appendNew(r.protect, g)
		}
	}
	for _, b := range bare {
		if b != "." && !under(b, overlaid) {
			r.gitDirFacts(b)
		}
		switch {
		case b != "." && !slices.Contains(shown, b) && under(b, shown[len(overlaid):]):
		case b == ".":
			if !slices.Contains(overlaid, ".git") {
				r.bareRoot()
			}
		case under(b, overlaid):
		case isGitDir(r.ws, b):
			todo = append(todo, b)
			todo = append(todo, r.modules(filepath.Join(b, "modules"), 0)...)
		default:
			r.protect = appendNew(r.protect, b)
		}
	}
	for _, g := range todo {
		// Past the bound, or when no overlay can be made, the git
		// directory is read-only as a whole instead: git inside cannot
		// change it, but nothing of it can be planted either.
		if len(r.repos) >= maxRepos {
			r.protect = appendNew(r.protect, g)
			r.unshown = append(r.unshown, g)
		} else if r.openRun() != nil || r.addOverlay(g) != nil {
			r.protect = appendNew(r.protect, g)
			r.unshown = append(r.unshown, g)
			r.opt.Facts.Unsure()
		}
	}
	for _, g := range gitFiles {
		r.protect = appendNew(r.protect, g)
	}
	deep := r.deepProtected(f)
	// What the launch knows, for the post-run scan: the gitlinks' .git
	// entries with the walk's.
	f.gitDirs, f.gitFiles = gitDirs, gitFiles
	// The directories on the way to each .git below the root are pinned
	// (mounted onto themselves; a mountpoint can be neither renamed nor
	// removed): moving vendor/lib aside would take its shown .git along
	// and leave the name free for a repository of the sandbox's own,
	// which the host's git in vendor/lib would then use. A bare
	// repository's own directory is the git directory: its parents.
	pinned := map[string]bool{}
	var ways []string
	ways = append(append(ways, gitDirs...), gitFiles...)
	for _, b := range f.bare {
		if b != "." {
			ways = append(ways, filepath.Join(b, ".git"))
		}
	}
	for _, g := range ways {
		for d := filepath.Dir(g); d != "." && d != "/" && !pinned[d]; d = filepath.Dir(d) {
			pinned[d] = true
			if !r.Covers(d) {
				r.mounts = append(r.mounts, confine.Mount{Kind: confine.Pin, Dest: filepath.Join(r.opt.Workspace, d)})
			}
		}
	}
	if len(overlaid) > 0 {
		// A workspace that is a repository: what was found is facts of
		// the plan (the walk's directories, what isGitDir and modules
		// looked at, each overlay's state, the gitlinks' paths), and a
		// cached run reduces against the launch walk its RUN directory
		// records (the adopter's "meta" mode), which knows the protected
		// names below the root.
		return f.truncated
	}
	// A fresh private directory's cached run takes every repository and
	// protected name it finds below the root for the sandbox's.
	return len(todo) > 0 || len(gitDirs) > 0 || len(gitFiles) > 0 || len(f.bare) > 0 || len(links) > 0 || deep || f.truncated
}

// maxDeep bounds the protected names below the root made read-only (each
// a mount, and its parents pinned).
const maxDeep = 32

// deepProtected makes the protected names the walk found below the root
// read-only (protected paths), up to maxDeep, and reports whether there
// were any: the post-run scan of a cached plan without a repository takes every one it finds
// for the sandbox's, so such a plan is not cached.
func (r *Run) deepProtected(f *found) bool {
	var all []string
	for dir, names := range f.prot {
		for _, n := range names {
			if _, notHeld := f.names.match(n); dir == "." && !notHeld {
				continue // a protected path of its own, at the root
			}
			if p := filepath.Join(dir, n); !r.Covers(p) {
				all = append(all, p)
			}
		}
	}
	slices.Sort(all)
	if len(all) > maxDeep {
		// Not silently less: each past the bound is named, and the
		// sandbox's changes to it do not stay where the host's tools
		// read it.
		termtext.Fprintf(r.opt.Report, "jail: %d editor, agent and hooks-manager files in the workspace's directories; the first %d are read-only in the sandbox (a mount each), the rest are writable while the run lasts and each the sandbox changes is moved aside when it ends (NAME.jail-RUN): %s\n",
			len(all), maxDeep, strings.Join(all[maxDeep:], ", "))
		f.over = append([]string{}, all[maxDeep:]...)
		all = all[:maxDeep]
	}
	for _, p := range all {
		r.protect = appendNew(r.protect, p)
		if r.deep == nil {
			r.deep = map[string]bool{}
		}
		r.deep[p] = true
	}
	return len(all) > 0
}

// bareRoot keeps the workspace's root read-only where git would take it
// for a bare repository (the host's git run in the workspace uses it when
// .git is not a repository of its own): the names git reads there, and
// the hooks, config and commondir even when missing (created, they would
// be the repository's).
func (r *Run) bareRoot() {
	for _, n := range []string{"HEAD", "config", "hooks", "commondir", "config.worktree", "info", "objects", "refs",
		"packed-refs", "modules", "worktrees", "logs"} {
		var st unix.Stat_t
		r.opt.Facts.Stat(filepath.Join(r.opt.Workspace, n), false)
		if n == "hooks" || n == "config" || n == "commondir" || unix.Fstatat(r.ws, n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			r.protect = appendNew(r.protect, n)
		}
	}
}

// link is one gitlink path of a shown repository's index: rel is its
// .git when that is a directory (dir) or a gitfile or symlink (file),
// else the path itself, or its .git when the path is a directory with
// files in it.
type link struct {
	rel       string
	dir, file bool
}

// gitlinks lists the gitlink paths of the indexes of the repositories
// overlaid (the host's, read at launch), at any depth: the host's
// top-level git status descends into each of them and runs what the
// repository found there says (core.fsmonitor), so none can be made or
// changed by the sandbox, whether or not the walk reached it. Those the
// walk found are left to it. The index is a fact of the plan: a change
// sends the next run down the Go path.
func (r *Run) gitlinks(overlaid []string, f *found) []link {
	var out []link
	for _, g := range overlaid {
		if strings.HasPrefix(g, ".git/") || strings.Contains(g, "/.git/") || filepath.Base(g) != ".git" {
			continue // a submodule's git directory or a bare repository: its work tree is elsewhere
		}
		top := filepath.Dir(g)
		r.opt.Facts.File(filepath.Join(r.opt.Workspace, g, "index"))
		paths, err := indexGitlinks(r.ws, g)
		if err != nil {
			termtext.Fprintf(r.opt.Report, "jail: git: %s: the index cannot be read (%v): submodule paths below the walk's depth are not protected\n", g, err)
			r.opt.Facts.Unsure()
			continue
		}
		for _, p := range paths {
			rel := filepath.Join(top, p)
			git := filepath.Join(rel, ".git")
			if slices.Contains(f.gitDirs, git) || slices.Contains(f.gitFiles, git) {
				continue
			}
			// What is at the path decides how it is held: its .git, and
			// the path itself (a directory's times move when an entry
			// comes or goes).
			r.opt.Facts.Stat(filepath.Join(r.opt.Workspace, git), false)
			r.opt.Facts.Stat(filepath.Join(r.opt.Workspace, rel), true)
			var st unix.Stat_t
			if err := fstatBeneath(r.ws, git, &st); err == nil {
				out = append(out, link{rel: git, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR, file: st.Mode&unix.S_IFMT != unix.S_IFDIR})
				continue
			}
			if !isEmptyDir(r.ws, rel) && fstatBeneath(r.ws, rel, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				rel = git
			}
			out = append(out, link{rel: rel})
		}
	}
	return out
}

// fstatBeneath is an lstat of rel beneath dirfd that follows no symlink
// on the way.
func fstatBeneath(dirfd int, rel string, st *unix.Stat_t) error {
	fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fstat(fd, st)
}

// maxIndex bounds the index file read for its gitlinks.
const maxIndex = 512 << 20

// indexGitlinks lists the gitlink paths the index of the git directory
// rel stages (none when it has no index).
func indexGitlinks(wsfd int, rel string) ([]string, error) {
	fd, err := unix.Openat2(wsfd, filepath.Join(rel, "index"), &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data, err := readFD(fd)
	if err != nil {
		return nil, err
	}
	// The hash length is the repository's (SHA-1 or SHA-256): the index's
	// trailing checksum tells them apart.
	var ix *gitstate.Index
	for _, n := range []int{20, 32} {
		// A split index's entries are mostly in its shared index, in
		// the same git directory (sharedindex.<hash>).
		whole, uerr := gitstate.Unsplit(data, n, func(id string) ([]byte, error) { return readBeneath(wsfd, filepath.Join(rel, "sharedindex."+id)) })
		if uerr != nil {
			err = uerr
			continue
		}
		if ix, err = gitstate.ParseIndex(whole, n); err == nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ix.Entries {
		if e.Mode == 0o160000 {
			out = append(out, e.Path)
		}
	}
	return out, nil
}

// readBeneath reads the regular file rel beneath dirfd, following no
// symlink on the way.
func readBeneath(dirfd int, rel string) ([]byte, error) {
	fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, err
	}
	return readFD(fd)
}

// readFD reads the regular file fd (closed when done), at most maxIndex.
func readFD(fd int) ([]byte, error) {
	file := os.NewFile(uintptr(fd), "index")
	defer file.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > maxIndex {
		return nil, errors.New("not a regular file of a size git writes")
	}
	return io.ReadAll(io.LimitReader(file, maxIndex))
}
