//go:build linux

package gitview

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jail-sandbox/jail/gitstate"
	"github.com/jail-sandbox/jail/termtext"
	"golang.org/x/sys/unix"
)

// The host's git resolves a relative core.hooksPath, and runs the
// programs its config names (core.fsmonitor = tools/fsmon), against the
// top of the work tree it runs in: the workspace's root, a nested
// repository's or a submodule's directory, each linked worktree of a
// repository. So the config targets are read once for every work tree of
// every repository the view shows, each config git reads there (the
// user's and the system's, the repository's, the worktree's own
// config.worktree) resolved against that work tree's top.

// workTree is one work tree the host's git may run in, and the config
// files it reads there besides the user's and the system's.
type workTree struct {
	top     string // absolute
	configs []configFile
}

// configFile is a repository's config file: name beneath the git
// directory fd, or, with fd -1, path.
type configFile struct {
	fd         int
	name, path string
}

// add appends c to the work tree at top, made when there is none yet.
func addWorkTree(wts []workTree, top string, c ...configFile) []workTree {
	top = filepath.Clean(top)
	for i := range wts {
		if wts[i].top == top {
			for _, x := range c {
				if !containsConfig(wts[i].configs, x) {
					wts[i].configs = append(wts[i].configs, x)
				}
			}
			return wts
		}
	}
	return append(wts, workTree{top: top, configs: c})
}

func containsConfig(cs []configFile, c configFile) bool {
	for _, x := range cs {
		if x.fd == c.fd && x.name == c.name && x.path == c.path {
			return true
		}
	}
	return false
}

// workTrees are the work trees of the repositories the view shows, the
// workspace's root first (a repository may be made there during the run,
// which the user's config applies to): the directory holding each .git,
// the core.worktree of a git directory that sets one (a submodule's in
// .git/modules), the directory of every gitfile the launch walk found
// that names a shown git directory or one of its linked worktrees, and
// every linked worktree a shown repository lists (worktrees/NAME/gitdir),
// in the workspace or not, and the directory of each git directory the
// walk found past the bound of those shown (unshown). A gitfile naming a git directory that is not
// shown (the workspace is itself a submodule checkout or a linked
// worktree) has that directory's config read by path. Each file read is
// a fact of the plan.
func (r *Run) workTrees() []workTree {
	ws := r.opt.Workspace
	facts := r.opt.Facts
	wts := []workTree{{top: ws}}
	byDir := map[string]*repo{}
	for _, g := range r.repos {
		if g.Fresh {
			continue
		}
		gd := filepath.Join(ws, g.Rel)
		byDir[gd] = g
		main := []configFile{{fd: g.fd, name: "config", path: filepath.Join(gd, "config")}, {fd: g.fd, name: "config.worktree", path: filepath.Join(gd, "config.worktree")}}
		if top := coreWorktree(g.fd, gd); top != "" {
			wts = addWorkTree(wts, top, main...)
		} else if filepath.Base(g.Rel) == ".git" {
			wts = addWorkTree(wts, filepath.Dir(gd), main...)
		}
		// Linked worktrees, where they are: git reads the repository's
		// config and the worktree's config.worktree there.
		facts.Stat(filepath.Join(gd, "worktrees"), true)
		names := listDirBeneath(g.fd, "worktrees")
		for _, n := range names {
			p := filepath.Join("worktrees", n, "gitdir")
			facts.Stat(filepath.Join(gd, p), true)
			data, err := readBeneath(g.fd, p)
			if err != nil {
				continue
			}
			line := strings.TrimSpace(string(data))
			if !filepath.IsAbs(line) || filepath.Base(line) != ".git" {
				continue
			}
			own := configFile{fd: g.fd, name: filepath.Join("worktrees", n, "config.worktree"), path: filepath.Join(gd, "worktrees", n, "config.worktree")}
			facts.Stat(own.path, true)
			wts = addWorkTree(wts, filepath.Dir(line), main[0], own)
		}
	}
	for _, g := range r.unshown {
		// Read-only in the sandbox; read by path as git reads it.
		if filepath.Base(g) == ".git" {
			gd := filepath.Join(ws, g)
			wts = addWorkTree(wts, filepath.Dir(gd), configFile{fd: -1, path: filepath.Join(gd, "config")}, configFile{fd: -1, path: filepath.Join(gd, "config.worktree")})
		}
	}
	var gitfiles []string
	if r.launch != nil {
		gitfiles = append(gitfiles, r.launch.gitFiles...)
	}
	var st unix.Stat_t
	if unix.Fstatat(r.ws, ".git", &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
		gitfiles = appendNew(gitfiles, ".git")
	}
	for _, gf := range gitfiles {
		facts.Stat(filepath.Join(ws, gf), true)
		data, err := readBeneath(r.ws, gf)
		if err != nil || len(data) > 4096 {
			continue
		}
		line, ok := strings.CutPrefix(strings.TrimRight(string(data), "\n"), "gitdir: ")
		if !ok || line == "" {
			continue
		}
		top := filepath.Join(ws, filepath.Dir(gf))
		target := line
		if !filepath.IsAbs(target) {
			target = filepath.Join(top, target)
		}
		target = filepath.Clean(target)
		if g := byDir[target]; g != nil {
			wts = addWorkTree(wts, top, configFile{fd: g.fd, name: "config", path: filepath.Join(target, "config")}, configFile{fd: g.fd, name: "config.worktree", path: filepath.Join(target, "config.worktree")})
			continue
		}
		if filepath.Base(filepath.Dir(target)) == "worktrees" {
			if g := byDir[filepath.Dir(filepath.Dir(target))]; g != nil {
				n := filepath.Base(target)
				wts = addWorkTree(wts, top, configFile{fd: g.fd, name: "config", path: filepath.Join(filepath.Dir(filepath.Dir(target)), "config")}, configFile{fd: g.fd, name: filepath.Join("worktrees", n, "config.worktree"), path: filepath.Join(target, "config.worktree")})
				continue
			}
		}
		if within(target, ws) {
			continue // in the workspace, not shown: read-only as a whole (nested)
		}
		// Outside the workspace: git reads the common directory's config
		// and the git directory's config.worktree.
		common := target
		facts.File(filepath.Join(target, "commondir"))
		if c, err := os.ReadFile(filepath.Join(target, "commondir")); err == nil {
			cd := strings.TrimSpace(string(c))
			if !filepath.IsAbs(cd) {
				cd = filepath.Join(target, cd)
			}
			common = filepath.Clean(cd)
		}
		wts = addWorkTree(wts, top, configFile{fd: -1, path: filepath.Join(common, "config")}, configFile{fd: -1, path: filepath.Join(target, "config.worktree")})
	}
	return wts
}

// coreWorktree is the work tree a git directory's config names
// (core.worktree, relative to the git directory), "" for none.
func coreWorktree(gitfd int, gd string) string {
	fd, err := unix.Openat2(gitfd, "config", &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	c, err := gitstate.ReadConfig(fd)
	if err != nil {
		return ""
	}
	vs := c.Values("core.worktree")
	if len(vs) == 0 || vs[len(vs)-1] == "" {
		return ""
	}
	v := vs[len(vs)-1]
	if !filepath.IsAbs(v) {
		v = filepath.Join(gd, v)
	}
	return filepath.Clean(v)
}

// listDirBeneath lists the directory rel beneath dirfd (no symlink
// followed); nil when it cannot be opened.
func listDirBeneath(dirfd int, rel string) []string {
	fd, err := openGitDir(dirfd, rel)
	if err != nil {
		return nil
	}
	names, err := readNames(fd)
	unix.Close(fd)
	if err != nil {
		return nil
	}
	return names
}

// readConfigFile reads c into t for the work tree at top.
func (t *configTargets) readFile(c configFile, home, top string, r *Run) {
	if c.fd < 0 {
		t.read(c.path, -1, home, top, 0, r.opt.Facts)
		return
	}
	fd, err := unix.Openat2(c.fd, c.name, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return
	}
	defer unix.Close(fd)
	t.read(c.path, fd, home, top, 0, r.opt.Facts)
}

// pathWord reports whether word i of a command names a file by its
// path rather than a name the shell looks up in PATH or an argument that
// is not a file: one with a slash (tools/fsmon, ./x), or an argument
// with an extension (sh clean.sh). A word that names an existing regular
// file counts whatever its shape.
//
// Not a URL (https://host/x) nor a revision range (origin/main..HEAD), which
// a shell alias passes to git: held as paths, each would put an empty
// directory (https:, origin) in every workspace while a run lasts.
func pathWord(w string, i int) bool {
	if strings.HasPrefix(w, "-") || strings.Contains(w, "://") || strings.Contains(w, "@{") {
		return false
	}
	for _, c := range strings.Split(w, "/") {
		if c != ".." && strings.Contains(c, "..") {
			return false
		}
	}
	if strings.Contains(w, "/") {
		return true
	}
	return i > 0 && strings.Trim(w, ".") != "" && bytes.ContainsRune([]byte(w), '.')
}

// A repository or a linked worktree the sandbox made during the run is a
// work tree no launch knew of, so the paths the config of the host's git
// names relative to its top (the user's relative core.hooksPath = .githooks
// in a repository made by git init sub, the host repository's in a
// worktree made by git worktree add wt) could not be held while the run
// lasted. When it is adopted, whatever is at such a path is the sandbox's:
// it is moved aside (asideTargets).

// asideTargets moves aside, beneath dfd (the directory rel, the top of a
// work tree made during the run, opened by descriptor), each hooks
// directory and program file the host's git would use there: the user's
// and the system's config, and, when gitfd is not -1, the config of the
// host's repository it is a worktree of, with the worktree's own
// config.worktree (worktree, a name beneath gitfd, or ""). A symlink on
// the way goes aside in its place; an empty directory runs nothing and
// stays. One line names what was moved.
func asideTargets(w io.Writer, dfd int, rel string, gitfd int, worktree, run string) {
	top, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", dfd))
	if err != nil || !filepath.IsAbs(top) {
		return
	}
	home := os.Getenv("HOME")
	var t configTargets
	for _, f := range userConfigs(home, os.Getenv("XDG_CONFIG_HOME")) {
		t.read(f, -1, home, top, 0, nil)
	}
	gd := filepath.Join(top, ".git")
	if gitfd >= 0 {
		if p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", gitfd)); err == nil {
			gd = p // where its includes are relative to
		}
		for _, name := range []string{"config", "config.worktree", worktree} {
			if name == "" {
				continue
			}
			if fd, err := unix.Openat2(gitfd, name, &unix.OpenHow{
				Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
			}); err == nil {
				t.read(filepath.Join(gd, name), fd, home, top, 0, nil)
				unix.Close(fd)
			}
		}
	}
	type target struct {
		rel string
		dir bool
	}
	// Only words with a path's shape: a file named like a word of a
	// command (git-lfs clean -- %f) in a repository cloned inside is
	// the repository's, and git does not run it.
	var todo []target
	add := func(p string, dir bool) {
		r, err := filepath.Rel(top, filepath.Clean(p))
		if err != nil || r == "." || r == ".." || strings.HasPrefix(r, "../") || r == ".git" || strings.HasPrefix(r, ".git/") {
			return
		}
		todo = append(todo, target{r, dir})
	}
	for _, h := range t.hooks {
		add(h, true)
	}
	for _, p := range t.programs {
		if t.pathWords[p] && !slices.ContainsFunc(t.hooks, func(h string) bool { return within(p, h) }) {
			add(p, false)
		}
	}
	var moved, failed []string
	for _, tg := range todo {
		name, cur, err := asideOne(dfd, tg.rel, tg.dir, run)
		where := filepath.Join(rel, cur)
		switch {
		case err != nil:
			failed = append(failed, filepath.Join(rel, tg.rel))
		case name != "":
			moved = append(moved, where+" ("+name+")")
		}
	}
	if len(moved) > 0 {
		termtext.Fprintf(w, "jail: git: what the sandbox put where the host's git runs hooks and programs from in the work trees it made (core.hooksPath and the program keys of the user's and the repository's config, relative to each work tree) was moved aside; look at it before you rename it back: %s\n", strings.Join(moved, ", "))
	}
	if len(failed) > 0 {
		termtext.Fprintf(w, "jail: git: WARNING: the sandbox put files where the host's git runs hooks and programs from in a work tree it made, and jail could not move them aside; do not run git there before you look at them: %s\n", strings.Join(failed, ", "))
	}
}

// asideOne moves aside the path rel beneath dfd, or the first symlink on
// its way, without following any: a hooks directory (dir) when it is not
// empty, a program file when it is not a directory (where a command cds
// to). It returns the name given (NAME.jail-RUN...), "" when nothing was
// there to move, and the path beneath dfd it moved (or failed on).
func asideOne(dfd int, rel string, dir bool, run string) (aside, comp string, err error) {
	parts := strings.Split(rel, "/")
	cur, err := unix.Dup(dfd)
	if err != nil {
		return "", "", err
	}
	defer func() { unix.Close(cur) }()
	for i, c := range parts {
		var st unix.Stat_t
		if err := unix.Fstatat(cur, c, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return "", "", nil
			}
			return "", strings.Join(parts[:i+1], "/"), err
		}
		last := i == len(parts)-1
		typ := st.Mode & unix.S_IFMT
		switch {
		case typ == unix.S_IFLNK:
		case !last && typ != unix.S_IFDIR:
			return "", "", nil // git finds nothing there
		case !last:
			next, err := openDir(cur, c)
			if err != nil {
				return "", strings.Join(parts[:i+1], "/"), err
			}
			unix.Close(cur)
			cur = next
			continue
		case dir && typ == unix.S_IFDIR && isEmptyDir(cur, c):
			return "", "", nil
		case !dir && typ == unix.S_IFDIR:
			return "", "", nil
		}
		a, err := moveAside(cur, c, run)
		return a, strings.Join(parts[:i+1], "/"), err
	}
	return "", "", nil
}

// asideWorktree is asideTargets for the linked worktree whose adopted
// gitfile is rel beneath wsfd (isAdoptedWorktree), its directory dfd.
func asideWorktree(w io.Writer, wsfd, dfd int, rel, run string) {
	data, err := readBeneath(wsfd, rel)
	if err != nil || len(data) > 4096 {
		return
	}
	line, ok := strings.CutPrefix(strings.TrimSuffix(string(data), "\n"), "gitdir: ")
	if !ok || !filepath.IsAbs(line) {
		return
	}
	ws, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", wsfd))
	if err != nil {
		return
	}
	gitdir := filepath.Dir(filepath.Dir(line))
	grel, err := filepath.Rel(ws, gitdir)
	if err != nil || grel == ".." || strings.HasPrefix(grel, "../") {
		return
	}
	name, ok := gitstate.IsWorktreeGitfile(data, gitdir)
	if !ok {
		return
	}
	gfd, err := openGitDir(wsfd, grel)
	if err != nil {
		return
	}
	defer unix.Close(gfd)
	asideTargets(w, dfd, filepath.Dir(rel), gfd, filepath.Join("worktrees", name, "config.worktree"), run)
}

// targetsTouched reports whether, in the work tree dirfd whose .git is a
// git directory no launch showed (past the walk's bounds), a hooks
// directory or program file that the user's config or the repository's
// names relative to its top, or anything on the way to it or in it,
// changed at or after t: the sweep then treats the repository as one
// whose hooks changed (gitDirTouched). The host's git there would run it.
func targetsTouched(dirfd int, t int64) bool {
	top, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", dirfd))
	if err != nil || !filepath.IsAbs(top) {
		return false
	}
	home := os.Getenv("HOME")
	var tg configTargets
	for _, f := range userConfigs(home, os.Getenv("XDG_CONFIG_HOME")) {
		tg.read(f, -1, home, top, 0, nil)
	}
	for _, name := range []string{"config", "config.worktree"} {
		if fd, err := unix.Openat2(dirfd, filepath.Join(".git", name), &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		}); err == nil {
			tg.read(filepath.Join(top, ".git", name), fd, home, top, 0, nil)
			unix.Close(fd)
		}
	}
	budget := 4096
	for _, p := range append(append([]string{}, tg.hooks...), tg.programs...) {
		r, err := filepath.Rel(top, filepath.Clean(p))
		if err != nil || r == "." || r == ".." || strings.HasPrefix(r, "../") || r == ".git" || strings.HasPrefix(r, ".git/") {
			continue
		}
		if pathTouched(dirfd, r, t, &budget) {
			return true
		}
	}
	return false
}

// pathTouched reports whether a component of rel beneath dirfd, or what
// is beneath it, changed at or after t (no symlink followed).
func pathTouched(dirfd int, rel string, t int64, budget *int) bool {
	parts := strings.Split(rel, "/")
	cur, err := unix.Dup(dirfd)
	if err != nil {
		return true
	}
	defer func() { unix.Close(cur) }()
	for i, c := range parts {
		if i == len(parts)-1 {
			return changedTree(cur, c, t, budget)
		}
		var sx unix.Statx_t
		if err := unix.Statx(cur, c, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_CTIME, &sx); err != nil {
			return !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR)
		}
		if recent(&sx, t) {
			return true
		}
		next, err := openDir(cur, c)
		if err != nil {
			return false // missing, or not a directory: as at launch
		}
		unix.Close(cur)
		cur = next
	}
	return false
}
