//go:build linux

package gitview

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/gitstate"
	"github.com/jail-sandbox/jail/termtext"
	"golang.org/x/sys/unix"
)

// The walks at launch and after a run are bounded (walkDepth, walkDirs,
// not into node_modules), so a repository the sandbox makes in a
// directory that existed at launch past those bounds, or a symlink it
// leaves anywhere, is not seen by them. The sweep closes that: after the
// sandbox ended, every directory of the workspace is listed once, names
// and types only (getdents64's d_type, no stat), and only the few entries
// that can matter are looked at:
//
//   - a .git (directory, gitfile or symlink) and a HEAD, whose change time
//     is the run's: git takes a directory with .git, or with HEAD, objects/
//     and refs/, for a repository. A change time cannot be set by a
//     process and a rename sets it, so an entry the sandbox made, renamed
//     into place or rewrote has one after the launch, whoever's inode it
//     was. A .git directory the launch knew nothing of is looked into as
//     well: its config, its hooks directory and each hook, which the
//     sandbox could have rewritten in place;
//   - every symlink (its change time does not tell: one made in
//     node_modules, which is not swept, keeps its own when a later run
//     moves its directory out): one that leads into jail's own directories (the persistent sandbox homes, the git state with
//     its uppers, the plan cache) leads the host's git, editor or shell
//     into what a sandbox wrote there, where nothing is reduced.
//
// docs/git.md ("The sweep") has the costs and what is done with each.

// sweepDirs bounds the directories the sweep lists; sweepDepth how deep
// it goes (each level holds a descriptor). A sandbox that made more is
// named in a WARNING line.
const (
	sweepDirs  = 1 << 18
	sweepDepth = 128
)

// swept is what a sweep found: workspace-relative paths.
type swept struct {
	gitDirs  []string // .git directories changed during the run (or, unknown at launch, with a changed config or hook)
	gitFiles []string // .git gitfiles and symlinks changed during the run
	heads    []string // directories git takes for a git directory whose HEAD changed during the run
	links    []string // every symlink
	// prot are the protected names (an editor's, agent CLI's or hooks
	// manager's) in directories no walk listed (below its depth, past
	// its bound) that changed during the run: the walks never saw them,
	// so neither holding nor moving aside reached them.
	prot []string
	dirs int
	cut  bool // a bound was reached

	names  *nameSet        // the protected names
	walked map[string]bool // the directories a walk listed (nil: those down to its depth)
}

// recent reports whether sx (a statx with STATX_CTIME) changed at or
// after t (unix ns). File times come from the kernel's coarse clock, and
// so does t (coarseNow): what the sandbox changes has a time at or after
// it; what the host changed in the same tick as the launch counts too.
func recent(sx *unix.Statx_t, t int64) bool {
	return sx.Ctime.Sec*1e9+int64(sx.Ctime.Nsec) >= t
}

// coarseNow is the clock file times are taken from (CLOCK_REALTIME_COARSE),
// in unix ns.
func coarseNow() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts) != nil {
		return time.Now().UnixNano()
	}
	return ts.Nano()
}

// changedAt reports whether name beneath dirfd changed at or after t; true
// when it cannot be told (the entry is then looked at).
func changedAt(dirfd int, name string, t int64) bool {
	var sx unix.Statx_t
	if unix.Statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_CTIME, &sx) != nil || sx.Mask&unix.STATX_CTIME == 0 {
		return true
	}
	return recent(&sx, t)
}

// sweep lists every directory of the workspace wsfd (but skip, jail's
// state when the workspace holds it, the insides of git directories, and
// node_modules: listing its thousands of directories cost 80 to 100 ms
// per run for bench/git.sh's 90k files there, where the rest of the tree
// took 4 ms)
// for what changed since t. known are the .git entries the launch knew
// (shown, or reduced already): their directories' insides are not looked
// into.
//
// names are the protected names; walked the directories a walk listed
// (nil: those down to the walk's depth), whose protected names the walks
// handled.
func sweep(wsfd int, skip string, t int64, known map[string]bool, names *nameSet, walked map[string]bool) *swept {
	s := &swept{names: names, walked: walked}
	fd, err := openGitDir(wsfd, ".")
	if err != nil {
		return s
	}
	s.dir(fd, ".", 0, make([]byte, 32<<10), t, skip, known)
	return s
}

// protChanged reports whether the protected name beneath the directory
// fd, which no walk listed, is to be moved aside: it, or anything in it,
// changed at or after t (made, renamed or exchanged into place, written
// in: no walk held it read-only), and it is not an empty directory (what
// reads it finds nothing to run; a live run's placeholder is one).
func protChanged(fd int, name string, t int64) bool {
	budget := 10000
	return changedTree(fd, name, t, &budget) && !isEmptyDir(fd, name)
}

// dir sweeps the open directory fd (closed when done).
func (s *swept) dir(fd int, rel string, depth int, buf []byte, t int64, skip string, known map[string]bool) {
	defer unix.Close(fd)
	if s.dirs >= sweepDirs || depth > sweepDepth {
		s.cut = true
		return
	}
	s.dirs++
	var subs []string
	var head, objects, refs, common bool
	// The protected names of a directory no walk listed are looked at
	// here (a directory the sandbox made under an old one below the
	// walk's depth, a/b/c/d/e/f/g/h/.vscode).
	unwalked := rel != "." && (depth > walkDepth || s.walked != nil && !s.walked[rel])
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			s.cut = true
			break
		}
		if n <= 0 {
			break
		}
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(b[16]) | int(b[17])<<8
			if reclen < 19 || reclen > len(b) {
				s.cut = true
				break
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
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
					switch st.Mode & unix.S_IFMT {
					case unix.S_IFDIR:
						typ = unix.DT_DIR
					case unix.S_IFLNK:
						typ = unix.DT_LNK
					}
				}
			}
			switch string(name) {
			case ".git":
				if rel == "." {
					continue // the root's: the git view's own
				}
				p := filepath.Join(rel, ".git")
				switch {
				case known[p]:
				case typ == unix.DT_DIR:
					if changedAt(fd, ".git", t) || gitDirTouched(fd, t) {
						s.gitDirs = append(s.gitDirs, p)
					}
				case changedAt(fd, ".git", t):
					s.gitFiles = append(s.gitFiles, p)
				case typ == unix.DT_LNK:
					s.links = append(s.links, p) // judged as every symlink is
				}
				continue
			case "HEAD":
				head = typ != unix.DT_DIR && rel != "." && changedAt(fd, "HEAD", t)
			case "objects":
				objects = true
			case "refs":
				refs = true
			case "commondir":
				common = true
			}
			if unwalked && s.names.matchBytes(name) && !strings.Contains(string(name), ".jail-") && protChanged(fd, string(name), t) {
				s.prot = append(s.prot, filepath.Join(rel, string(name)))
			}
			if typ == unix.DT_LNK {
				// Every one, whenever it was made: one made where no sweep
				// looks (node_modules) and moved out in a later run has
				// the change time of its making.
				s.links = append(s.links, filepath.Join(rel, string(name)))
				continue
			}
			if typ == unix.DT_DIR {
				subs = append(subs, string(name))
			}
		}
	}
	shaped := head && (objects && refs || common)
	if shaped && !known[rel] {
		s.heads = append(s.heads, rel)
	}
	for _, sub := range subs {
		p := filepath.Join(rel, sub)
		if shaped && sub == "objects" || p == skip || sub == "node_modules" {
			continue
		}
		cfd, err := unix.Openat(fd, sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		s.dir(cfd, p, depth+1, buf, t, skip, known)
	}
}

// gitDirTouched reports whether the .git directory beneath dirfd has a
// config, hooks directory or hook that changed at or after t, or the work
// tree a hooks directory or program file its config names relative to it
// (targetsTouched): what the sandbox would rewrite in place in a
// repository the launch did not show.
func gitDirTouched(dirfd int, t int64) bool {
	g, err := openDir(dirfd, ".git")
	if err != nil {
		return false
	}
	defer unix.Close(g)
	for _, n := range []string{"config", "hooks", "commondir", "config.worktree", "info"} {
		var sx unix.Statx_t
		if unix.Statx(g, n, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_CTIME, &sx) == nil && recent(&sx, t) {
			return true
		}
	}
	if h, err := openDir(g, "hooks"); err == nil {
		names, _ := readNames(h)
		defer unix.Close(h)
		for _, n := range names {
			if changedAt(h, n, t) {
				return true
			}
		}
	}
	// And what its config names in its work tree (.githooks).
	return targetsTouched(dirfd, t)
}

// JailDirs are jail's own directories on the host for the user whose home
// is home: the persistent sandbox homes and the rest of its data, the git
// state (with the sandboxes' uppers), the plan cache, and the state
// directory's fallback in the temporary directory. A sandbox writes into
// some of them; a symlink it leaves in the workspace must not lead the
// host's tools there. Each is given as named and as resolved.
func JailDirs(home string) []string {
	base := func(env string, def ...string) string {
		if v := os.Getenv(env); filepath.IsAbs(v) {
			return v
		}
		if !filepath.IsAbs(home) {
			return ""
		}
		return filepath.Join(append([]string{home}, def...)...)
	}
	var out []string
	for _, b := range []string{base("XDG_DATA_HOME", ".local", "share"), base("XDG_STATE_HOME", ".local", "state"), base("XDG_CACHE_HOME", ".cache")} {
		if b != "" {
			out = append(out, filepath.Join(b, "jail"))
		}
	}
	out = append(out, filepath.Join(os.TempDir(), fmt.Sprintf("jail-%d", os.Getuid())))
	for _, d := range slices.Clone(out) {
		if r := resolveLoose(d); r != "" && r != d {
			out = append(out, r)
		}
	}
	return out
}

// leadsInto reports whether the symlink rel beneath the workspace ws
// (wsfd) leads into one of dirs: its target as written, taken from the
// link's directory, and that path resolved on the host as far as it
// exists (a chain of links, or a component that is one).
func leadsInto(wsfd int, ws, rel string, dirs []string) (string, bool) {
	dfd, err := openGitDir(wsfd, filepath.Dir(rel))
	if err != nil {
		return "", false
	}
	defer unix.Close(dfd)
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dfd, filepath.Base(rel), buf)
	if err != nil {
		return "", false
	}
	target := string(buf[:n])
	abs := target
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(ws, filepath.Dir(rel), target)
	}
	abs = filepath.Clean(abs)
	for _, p := range []string{abs, resolveLoose(abs), resolveLoose(filepath.Join(ws, rel))} {
		for _, d := range dirs {
			if p != "" && d != "" && within(p, d) {
				return target, true
			}
		}
	}
	return target, false
}

// sweepAll sweeps the workspace wsfd (path ws) for what a sandbox that
// began at t left past the bounded walks (launch, at launch, nil for a
// cached plan's; now, after the run, whose findings scanNew handled) and
// does what that needs (afterSweep).
func sweepAll(w io.Writer, wsfd, scratch int, ws, skip string, t int64, run, home string, launch, now *found, pend *pending) {
	known := map[string]bool{}
	for _, f := range []*found{launch, now} {
		if f == nil {
			continue
		}
		for _, k := range append(append(append([]string{}, f.gitDirs...), f.gitFiles...), f.bare...) {
			known[k] = true
		}
	}
	var names *nameSet
	for _, f := range []*found{now, launch} {
		if f != nil && f.names != nil && names == nil {
			names = f.names
		}
	}
	var walked map[string]bool
	if launch != nil && launch.ids != nil {
		walked = map[string]bool{}
		for _, f := range []*found{launch, now} {
			for rel := range f.idsOf() {
				walked[rel] = true
			}
		}
	}
	s := sweep(wsfd, skip, t, known, names, walked)
	var waiting []string
	afterSweep(w, wsfd, scratch, ws, s, run, t, JailDirs(home), names, pend, &waiting)
	if launch != nil {
		overAside(w, wsfd, launch.over, run, t, pend, &waiting)
	}
	// What a live run's sandbox has a mount on waits for the last run
	// out (pending_linux.go).
	pend.save(w, waiting)
}

// overAside moves aside each protected name past maxDeep (over) that the
// sandbox changed: anything in it whose change time is t or later.
func overAside(w io.Writer, wsfd int, over []string, run string, t int64, pend *pending, waiting *[]string) {
	var moved, failed []string
	for _, p := range over {
		dfd, err := openGitDir(wsfd, filepath.Dir(p))
		if err != nil {
			continue
		}
		budget := 10000
		if changedTree(dfd, filepath.Base(p), t, &budget) {
			switch _, err := moveAside(dfd, filepath.Base(p), run); {
			case err == nil:
				moved = append(moved, p)
			case errors.Is(err, confine.ErrHeld):
				pend.add(pendAside, dfd, filepath.Base(p), p)
				*waiting = append(*waiting, p)
			case err != unix.ENOENT:
				failed = append(failed, p)
			}
		}
		unix.Close(dfd)
	}
	if len(moved) > 0 {
		termtext.Fprintf(w, "jail: editor, agent and hooks-manager files past the %d held read-only, which the sandbox changed, were moved aside (renamed NAME.jail-%s; look at them before you rename them back): %s\n", maxDeep, run, strings.Join(moved, ", "))
	}
	if len(failed) > 0 {
		termtext.Fprintf(w, "jail: WARNING: the sandbox changed these editor, agent and hooks-manager files and jail could not move them aside; look at them before any tool opens this workspace: %s\n", strings.Join(failed, ", "))
	}
}

// changedTree reports whether name beneath dirfd, or anything beneath it
// (at most *budget entries looked at; past that it counts as changed),
// has a change time at or after t.
func changedTree(dirfd int, name string, t int64, budget *int) bool {
	if *budget--; *budget < 0 {
		return true
	}
	var sx unix.Statx_t
	if err := unix.Statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_CTIME|unix.STATX_TYPE, &sx); err != nil {
		return err != unix.ENOENT
	}
	if recent(&sx, t) {
		return true
	}
	if sx.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false
	}
	fd, err := openDir(dirfd, name)
	if err != nil {
		return true
	}
	defer unix.Close(fd)
	names, err := readNames(fd)
	if err != nil {
		return true
	}
	for _, n := range names {
		if changedTree(fd, n, t, budget) {
			return true
		}
	}
	return false
}

// afterSweep does what the sweep's findings need, after scanNew did the
// bounded walk's: a .git directory that is new (born during the run) is
// reduced like one the walk found, one that is older (a directory renamed
// into place, or a repository the launch did not show that was written
// in) loses its HEAD, which is enough for git not to take it for a
// repository (its files kept, for the user to look at); a .git gitfile
// or symlink is moved aside; a directory made to look like a git
// directory loses its HEAD, or, when born during the run, is reduced; a
// symlink into jail's own directories (dirs) is removed. Everything done
// is named on w.
//
// names are the protected names a reduced repository's commits are held
// for (reduce).
func afterSweep(w io.Writer, wsfd, scratch int, ws string, s *swept, run string, t int64, dirs []string, names *nameSet, pend *pending, waiting *[]string) {
	var reduced, unheaded, aside, kept, links, linksKept []string
	// wait leaves what a live run's sandbox has a mount on to the last
	// run out (pending_linux.go).
	wait := func(kind string, dfd int, name, rel string) {
		pend.add(kind, dfd, name, rel)
		*waiting = append(*waiting, rel)
	}
	done := map[string]bool{}
	for i := 0; i < len(s.gitDirs); i++ {
		g := s.gitDirs[i]
		if done[g] {
			continue
		}
		done[g] = true
		dir := filepath.Dir(g)
		dfd, err := openGitDir(wsfd, dir)
		if err != nil {
			kept = append(kept, g)
			continue
		}
		switch {
		case isEmptyDir(dfd, ".git"):
		case bornAfter(dfd, ".git", t):
			switch err := reduce(w, dfd, scratch, ".git", g, run, names); {
			case err == nil:
				reduced = append(reduced, dir)
				// What stands at its commits' gitlinks (scanNew).
				at := &found{}
				at.addCommitted(wsfd, gitlinksOf(w, wsfd, dir))
				s.gitDirs = append(s.gitDirs, at.gitDirs...)
				s.gitFiles = append(s.gitFiles, at.gitFiles...)
				s.heads = append(s.heads, at.bare...)
			case errors.Is(err, confine.ErrHeld):
				wait(pendGit, dfd, ".git", g)
			default:
				kept = append(kept, g)
			}
		default:
			if unhead(dfd, ".git", run) {
				unheaded = append(unheaded, g)
			} else {
				kept = append(kept, g)
			}
		}
		unix.Close(dfd)
	}
	for _, g := range s.gitFiles {
		if isAdoptedWorktree(wsfd, g) {
			continue
		}
		dfd, err := openGitDir(wsfd, filepath.Dir(g))
		if err == nil {
			if _, err = moveAside(dfd, ".git", run); errors.Is(err, confine.ErrHeld) {
				wait(pendAside, dfd, ".git", g)
			}
			unix.Close(dfd)
		}
		switch {
		case err == nil:
			aside = append(aside, g)
		case errors.Is(err, confine.ErrHeld), err == unix.ENOENT:
		default:
			kept = append(kept, g)
		}
	}
	for _, b := range s.heads {
		pfd, err := openGitDir(wsfd, filepath.Dir(b))
		if err != nil {
			kept = append(kept, b)
			continue
		}
		if bornAfter(pfd, filepath.Base(b), t) {
			switch err := reduce(w, pfd, scratch, filepath.Base(b), b, run, names); {
			case err == nil:
				reduced = append(reduced, b)
			case errors.Is(err, confine.ErrHeld):
				wait(pendBare, pfd, filepath.Base(b), b)
			default:
				kept = append(kept, b)
			}
		} else if unhead(pfd, filepath.Base(b), run) {
			unheaded = append(unheaded, b)
		} else {
			kept = append(kept, b)
		}
		unix.Close(pfd)
	}
	// Every link judged before any is removed: one may lead in through
	// another.
	var bad []string
	targets := map[string]string{}
	for _, l := range s.links {
		if target, in := leadsInto(wsfd, ws, l, dirs); in {
			bad = append(bad, l)
			targets[l] = target
		}
	}
	for _, l := range bad {
		target := targets[l]
		switch err := removeLink(wsfd, l); {
		case err == nil:
			links = append(links, l+" -> "+target)
		case errors.Is(err, confine.ErrHeld):
			if dfd, err := openGitDir(wsfd, filepath.Dir(l)); err == nil {
				wait(pendGitfile, dfd, filepath.Base(l), l)
				unix.Close(dfd)
			}
		default:
			linksKept = append(linksKept, l+" -> "+target)
		}
	}
	var protAside, protKept []string
	for _, p := range s.prot {
		dfd, err := openGitDir(wsfd, filepath.Dir(p))
		if err == nil {
			if !protChanged(dfd, filepath.Base(p), t) {
				unix.Close(dfd)
				continue
			}
			if _, err = moveAside(dfd, filepath.Base(p), run); errors.Is(err, confine.ErrHeld) {
				wait(pendAside, dfd, filepath.Base(p), p)
			}
			unix.Close(dfd)
		}
		switch {
		case err == nil:
			protAside = append(protAside, p)
		case errors.Is(err, confine.ErrHeld), err == unix.ENOENT:
		default:
			protKept = append(protKept, p)
		}
	}
	say := func(items []string, format string) {
		if len(items) > 0 {
			termtext.Fprintf(w, format, strings.Join(items, ", "))
		}
	}
	say(protAside, "jail: files that editors, agent CLIs and hooks managers run code from, which the sandbox made or changed in directories past the launch walk's bounds, were moved aside (renamed NAME.jail-"+run+"; look at them before you rename them back): %s\n")
	say(protKept, "jail: WARNING: the sandbox made or changed these files that editors, agent CLIs and hooks managers run code from, past the launch walk's bounds, and jail could not move them aside; look at them before any tool opens this workspace: %s\n")
	say(reduced, "jail: git: repositories the sandbox made past the launch walk's bounds were reduced to what runs nothing (hooks and config keys that run programs dropped): %s\n")
	say(unheaded, "jail: git: git directories the sandbox made or wrote in past the launch walk's bounds had their HEAD renamed HEAD.jail-"+run+", so that the host's git does not take them for repositories (look at their hooks and config before you rename it back): %s\n")
	say(aside, "jail: git: gitfiles and .git symlinks the sandbox made past the launch walk's bounds were moved aside (.git.jail-"+run+"): %s\n")
	say(links, "jail: symlinks the sandbox left in the workspace that lead into jail's own directories (the sandboxes' homes and git state, which the host's tools must not be led into) were removed: %s\n")
	say(linksKept, "jail: WARNING: symlinks the sandbox left in the workspace lead into jail's own directories and could not be removed; do not run git or open an editor through them: %s\n")
	say(kept, "jail: git: WARNING: the sandbox made or wrote in these git directories and jail could not reduce them; check their hooks and config before running git there: %s\n")
	if s.cut {
		fmt.Fprintf(w, "jail: WARNING: the workspace has more than %d directories (or deeper than %d): the sweep after the run did not list all of them, so a repository or symlink the sandbox left past that is not reduced\n", sweepDirs, sweepDepth)
	}
}

// bornAfter reports whether name beneath dirfd was made at or after t
// (unix ns); false when the file system keeps no birth time: what is
// done with an older entry (HEAD renamed aside) loses nothing, what is
// done with a new one (reduce) drops hooks and config.
func bornAfter(dirfd int, name string, t int64) bool {
	var sx unix.Statx_t
	if unix.Statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &sx) != nil || sx.Mask&unix.STATX_BTIME == 0 {
		return false
	}
	return sx.Btime.Sec*1e9+int64(sx.Btime.Nsec) >= t
}

// unhead renames HEAD in the git directory name beneath dfd aside.
func unhead(dfd int, name, run string) bool {
	g, err := openDir(dfd, name)
	if err != nil {
		return false
	}
	defer unix.Close(g)
	_, err = moveAside(g, "HEAD", run)
	return err == nil || err == unix.ENOENT
}

// removeLink removes the symlink rel beneath wsfd, by descriptor, if it
// is still a symlink and no live run's sandbox has a mount on it
// (confine.ErrHeld).
func removeLink(wsfd int, rel string) error {
	dfd, err := openGitDir(wsfd, filepath.Dir(rel))
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, filepath.Base(rel), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return errors.New("not a symlink any more")
	}
	return unlinkClaimed(dfd, filepath.Base(rel))
}

// worktreeJudge is gitstate.Options.Worktree for the git directory gitRel
// of the workspace ws (wsfd): a linked worktree the sandbox added is
// adopted when it lies in the workspace (what the sandbox wrote there is
// what the host sees) and its .git, read beneath the workspace, is the
// gitfile git wrote for it.
func worktreeJudge(wsfd int, ws, gitRel string) func(name, gitfile string) string {
	gitdir := filepath.Join(ws, gitRel)
	return func(name, gitfile string) string {
		rel, err := filepath.Rel(ws, gitfile)
		if err != nil || rel == ".git" || strings.HasPrefix(rel, "../") || rel == ".." || filepath.Base(rel) != ".git" {
			return "it is outside the workspace, where the sandbox's files are its own and gone when it ends (its branch is adopted); to have the worktree, run git worktree add " + filepath.Dir(gitfile) + " BRANCH on the host"
		}
		data, err := readBeneath(wsfd, rel)
		if err != nil || string(data) != string(gitstate.WorktreeGitfile(gitdir, name)) {
			return "its .git in the workspace is not the gitfile git wrote for it"
		}
		return ""
	}
}

// isAdoptedWorktree reports whether the .git gitfile rel beneath wsfd is
// a linked worktree's that the host's repository names back: it names
// DIR/worktrees/NAME of a git directory in the workspace whose gitdir
// file names rel (only an adoption writes a shown repository's).
func isAdoptedWorktree(wsfd int, rel string) bool {
	data, err := readBeneath(wsfd, rel)
	if err != nil || len(data) > 4096 {
		return false
	}
	ws, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", wsfd))
	if err != nil {
		return false
	}
	line, ok := strings.CutPrefix(strings.TrimSuffix(string(data), "\n"), "gitdir: ")
	if !ok || !filepath.IsAbs(line) {
		return false
	}
	gitdir := filepath.Dir(filepath.Dir(line))
	grel, err := filepath.Rel(ws, gitdir)
	if err != nil || strings.HasPrefix(grel, "..") || filepath.Base(filepath.Dir(line)) != "worktrees" {
		return false
	}
	name, ok := gitstate.IsWorktreeGitfile(data, gitdir)
	if !ok {
		return false
	}
	back, err := readBeneath(wsfd, filepath.Join(grel, "worktrees", name, "gitdir"))
	return err == nil && string(back) == filepath.Join(ws, rel)+"\n"
}
