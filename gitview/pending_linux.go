//go:build linux

package gitview

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/termtext"
	"golang.org/x/sys/unix"
)

// Pending reductions: what a run's end could not do because another live
// run's sandbox has a mount on it.
//
// A run's end reduces what appeared in the workspace while it ran (a
// repository made in a subdirectory, a protected name such as
// sub/.vscode). Some of it may be held by another run started meanwhile:
// its placeholder, its read-only bind of a .vscode that existed when it
// started, its overlay of a repository, a pin of the way to one. Moving
// that aside would take the other sandbox's mount with it (the kernel
// refuses a rename only for a mountpoint of the caller's own namespace),
// and that sandbox would then write through the name onto the host
// unreduced; its own end would not reduce it either, since it was there
// when it started. So the reducer claims each entry first
// (confine.Claim), and one a live run holds is left as it is and written
// down here, one file per entry in the git state directory's pending/
// (private, in no sandbox's view): the workspace, the entry, its device
// and inode, and what was to be done. Every run's end (after its own
// sandbox and locks are gone), every launch, the adopter of a cached run
// and jail clean do what the records say once no live run holds the
// entry: the last run out finishes it, or, when that one was killed, the
// next one. An entry whose name holds another object by then was moved
// or removed meanwhile, and its record goes.

// The kinds of pending reduction (pendingItem.Kind): what scanNew would
// have done.
const (
	pendGit     = "git"     // a .git directory made during the run: reduced (moved aside, adopted anew)
	pendBare    = "bare"    // a bare repository made whole during the run: reduced under its own name
	pendGitfile = "gitfile" // a .git gitfile or symlink (or a symlink into jail's own directories): removed
	pendHead    = "head"    // the HEAD of a directory made to look like a git directory: moved aside
	pendAside   = "aside"   // a protected name: moved aside
)

// pendingItem is one record.
type pendingItem struct {
	Workspace string `json:"workspace"`
	Kind      string `json:"kind"`
	// Rel is the entry, relative to the workspace (for pendGit, the
	// .git itself).
	Rel string `json:"rel"`
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
	// Run names the run whose end left it (the NAME.jail-RUN it is
	// moved aside as).
	Run string `json:"run"`
}

// pending collects one reducer's records.
type pending struct {
	stateDir string // jail's git state directory (StateDir)
	ws, run  string
	items    []pendingItem
	written  int // items[:written] are on disk
}

// newPending is the record list of a reducer of workspace ws, run run.
func newPending(stateDir, ws, run string) *pending {
	return &pending{stateDir: stateDir, ws: ws, run: run}
}

// add records the entry name beneath dfd (rel in the workspace) as kind.
func (p *pending) add(kind string, dfd int, name, rel string) {
	if p == nil {
		return
	}
	var st unix.Stat_t
	if unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	p.items = append(p.items, pendingItem{Workspace: p.ws, Kind: kind, Rel: rel, Dev: st.Dev, Ino: st.Ino, Run: p.run})
}

// save writes the records and says on w what waits (waiting, the
// workspace-relative entries).
func (p *pending) save(w io.Writer, waiting []string) {
	if len(waiting) == 0 {
		return
	}
	slices.Sort(waiting)
	err := errors.New("no git state directory")
	if p != nil && len(p.items) > p.written {
		err = p.write()
	}
	if err != nil {
		fmt.Fprintf(w, "jail: WARNING: these were made while the sandbox ran, and another live run's sandbox has a mount on them, so jail left them as they are and cannot finish them later (%v); look at them before any tool opens this workspace: %s\n", err, strings.Join(waiting, ", "))
		return
	}
	fmt.Fprintf(w, "jail: these were made while the sandbox ran, and another live run's sandbox has a mount on them (moving them now would take it away): jail reduces them when the last such run ends: %s\n", strings.Join(waiting, ", "))
}

// write stores each record as a file of its own in pending/.
func (p *pending) write() error {
	pfd, err := openPendingDir(p.stateDir, true)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	for ; p.written < len(p.items); p.written++ {
		it := p.items[p.written]
		b, err := json.Marshal(it)
		if err != nil {
			return err
		}
		var rnd [8]byte
		rand.Read(rnd[:])
		name := it.Run + "-" + hex.EncodeToString(rnd[:])
		tmp := ".tmp-" + name
		fd, err := unix.Openat(pfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return fmt.Errorf("git state: %w", err)
		}
		f := os.NewFile(uintptr(fd), tmp)
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			// Whole or not at all: a processor never reads half a record.
			err = unix.Renameat(pfd, tmp, pfd, name)
		}
		if err != nil {
			unix.Unlinkat(pfd, tmp, 0)
			return fmt.Errorf("git state: %w", err)
		}
	}
	return nil
}

// openPendingDir opens stateDir/pending (made when create is set and it
// is missing).
func openPendingDir(stateDir string, create bool) (int, error) {
	if stateDir == "" {
		return -1, errors.New("no git state directory")
	}
	sd, err := openStateDir(stateDir)
	if err != nil {
		return -1, err
	}
	defer unix.Close(sd)
	if !create {
		fd, err := openDir(sd, "pending")
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || int(st.Uid) != os.Getuid() || st.Mode&0o077 != 0 {
			unix.Close(fd)
			return -1, errors.New("git state: pending: " + "not a private directory of this user (mode 0700); not used")
		}
		return fd, nil
	}
	fd, err := privateSubdir(sd, "pending")
	if err != nil {
		return -1, fmt.Errorf("git state: pending: %w", err)
	}
	return fd, nil
}

// ReducePending does what the pending records of jail's git state
// directory stateDir say, for every workspace, where no live run holds
// the entry any more, and says on w what it did. The caller's own
// sandboxes must have ended and its locks be gone. names are the
// protected names a reduced repository's commits are held for (reduce;
// nil when not known).
func ReducePending(stateDir string, w io.Writer) { reducePending(stateDir, w, nil) }

// reducePending is ReducePending with the protected names known.
func reducePending(stateDir string, w io.Writer, names *nameSet) {
	pfd, err := openPendingDir(stateDir, false)
	if err != nil {
		return
	}
	defer unix.Close(pfd)
	files, err := readNames(pfd)
	if err != nil || len(files) == 0 {
		return
	}
	slices.Sort(files)
	var moved, reduced, removed, unheaded, failed []string
	keys := map[string]int{}
	defer func() {
		for _, fd := range keys {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	for _, n := range files {
		if strings.HasPrefix(n, ".") {
			continue // a record being written (or one a killed writer left: harmless)
		}
		it, rfd, ok := lockRecord(pfd, n)
		if !ok {
			continue
		}
		out, where := redo(w, it, stateDir, keys, names)
		switch out {
		case redoDone:
			switch it.Kind {
			case pendAside:
				moved = append(moved, where)
			case pendGit, pendBare:
				reduced = append(reduced, where)
			case pendGitfile:
				removed = append(removed, where)
			case pendHead:
				unheaded = append(unheaded, where)
			}
		case redoFailed:
			failed = append(failed, where)
		}
		if out != redoHeld {
			unix.Unlinkat(pfd, n, 0)
		}
		unix.Close(rfd)
	}
	say := func(what string, list []string) {
		if len(list) > 0 {
			fmt.Fprintf(w, "jail: %s, which an earlier run's end left because another live run held them, now that none does: %s\n", what, strings.Join(list, ", "))
		}
	}
	say("moved aside (renamed NAME.jail-RUN) the files that editors, agent CLIs and hooks managers run code from", moved)
	say("git: reduced to what runs nothing the repositories", reduced)
	say("git: removed the gitfiles and .git symlinks", removed)
	say("git: renamed the HEAD of directories made to look like git directories", unheaded)
	if len(failed) > 0 {
		fmt.Fprintf(w, "jail: WARNING: an earlier run's end left these because another live run held them, and jail could not reduce them now; look at them before any tool opens them: %s\n", strings.Join(failed, ", "))
	}
}

// lockRecord opens and locks the record name beneath pfd (another
// processor at the same time skips it) and reads it; ok is false when it
// cannot be had. A record that cannot be parsed is removed.
func lockRecord(pfd int, name string) (pendingItem, int, bool) {
	var it pendingItem
	fd, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return it, -1, false
	}
	var st, named unix.Stat_t
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil || unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG ||
		unix.Fstatat(pfd, name, &named, unix.AT_SYMLINK_NOFOLLOW) != nil || named.Ino != st.Ino || named.Dev != st.Dev {
		// Another processor has it, or had it and removed it.
		unix.Close(fd)
		return it, -1, false
	}
	f := os.NewFile(uintptr(fd), name)
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil || json.Unmarshal(b, &it) != nil || !filepath.IsAbs(it.Workspace) || !isRunName(it.Run) ||
		it.Rel == "" || filepath.IsAbs(it.Rel) || strings.HasPrefix(filepath.Clean(it.Rel), "..") {
		unix.Unlinkat(pfd, name, 0)
		f.Close()
		return it, -1, false
	}
	dfd, err := unix.Dup(fd)
	f.Close()
	if err != nil {
		return it, -1, false
	}
	return it, dfd, true
}

// redo's outcomes.
type redoOut int

const (
	redoDone   redoOut = iota // done
	redoGone                  // the entry is no longer at its name: nothing to do
	redoHeld                  // still held by a live run: the record stays
	redoFailed                // could not be done (said)
)

// redo does what the record it says, when its entry is still the object
// recorded and no live run holds it; keys caches the workspaces'
// directories in the state directory (the scratch of the git that
// verifies a reduced repository's objects).
func redo(w io.Writer, it pendingItem, stateDir string, keys map[string]int, names *nameSet) (redoOut, string) {
	rel := filepath.Clean(it.Rel)
	where := filepath.Join(it.Workspace, rel)
	wsfd, err := unix.Open(it.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return redoGone, where
	}
	defer unix.Close(wsfd)
	dir, name := filepath.Split(rel)
	if dir == "" {
		dir = "."
	}
	dfd, err := openGitDir(wsfd, filepath.Clean(dir))
	if err != nil {
		return redoGone, where
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Dev != it.Dev || st.Ino != it.Ino {
		return redoGone, where
	}
	switch it.Kind {
	case pendAside, pendHead:
		_, err = moveAside(dfd, name, it.Run)
		if it.Kind == pendHead {
			where = filepath.Dir(where)
		}
	case pendGitfile:
		err = unlinkClaimed(dfd, name)
	case pendGit, pendBare:
		scratch, ok := keys[it.Workspace]
		if !ok {
			scratch = -1
			if sd, serr := openStateDir(stateDir); serr == nil {
				if fd, kerr := privateSubdir(sd, workspaceKey(it.Workspace)); kerr == nil {
					scratch = fd
				}
				unix.Close(sd)
			}
			keys[it.Workspace] = scratch
		}
		if it.Kind == pendGit {
			where = filepath.Dir(where)
		}
		err = reduce(w, dfd, scratch, name, rel, it.Run, names)
		if err == nil && it.Kind == pendGit {
			reduceLinked(w, wsfd, scratch, filepath.Dir(rel), it.Run, names)
		}
	default:
		return redoGone, where
	}
	switch {
	case err == nil:
		return redoDone, where
	case errors.Is(err, confine.ErrHeld):
		return redoHeld, where
	case errors.Is(err, unix.ENOENT):
		return redoGone, where
	}
	return redoFailed, where
}

// reduceLinked reduces what stands at the gitlinks of the repository
// just reduced at dir/.git (all of its commits are the sandbox's), and at
// theirs in turn, as scanNew does at a run's end for a reduction a live
// run's mount had put off: a .git directory is reduced, a gitfile or
// .git symlink removed, a bare-shaped directory loses its HEAD. What a
// live run holds now is named, not waited for again.
func reduceLinked(w io.Writer, wsfd, scratch int, dir, run string, names *nameSet) {
	todo := []string{dir}
	seen := map[string]bool{}
	var done, held []string
	for i := 0; i < len(todo) && i < maxRepos; i++ {
		at := &found{}
		at.addCommitted(wsfd, gitlinksOf(w, wsfd, todo[i]))
		for _, g := range append(append([]string{}, at.gitDirs...), at.gitFiles...) {
			if seen[g] {
				continue
			}
			seen[g] = true
			dfd, err := openGitDir(wsfd, filepath.Dir(g))
			if err != nil {
				continue
			}
			var st unix.Stat_t
			switch {
			case unix.Fstatat(dfd, ".git", &st, unix.AT_SYMLINK_NOFOLLOW) != nil:
			case st.Mode&unix.S_IFMT != unix.S_IFDIR:
				err = unlinkClaimed(dfd, ".git")
			case isEmptyDir(dfd, ".git"):
			default:
				if err = reduce(w, dfd, scratch, ".git", g, run, names); err == nil {
					todo = append(todo, filepath.Dir(g))
				}
			}
			unix.Close(dfd)
			switch {
			case err == nil:
				done = append(done, g)
			case errors.Is(err, confine.ErrHeld):
				held = append(held, g)
			}
		}
		for _, b := range at.bare {
			if dfd, err := openGitDir(wsfd, b); err == nil {
				if _, err := moveAside(dfd, "HEAD", run); err == nil {
					done = append(done, b)
				} else if errors.Is(err, confine.ErrHeld) {
					held = append(held, b)
				}
				unix.Close(dfd)
			}
		}
	}
	if len(done) > 0 {
		termtext.Fprintf(w, "jail: git: what the gitlinks of %s name was reduced, removed or unheaded too: %s\n", dir, strings.Join(done, ", "))
	}
	if len(held) > 0 {
		termtext.Fprintf(w, "jail: git: WARNING: the gitlinks of %s name git directories a live run holds, not reduced; look at their hooks and config before running git there: %s\n", dir, strings.Join(held, ", "))
	}
}

// ReducePending is ReducePending for this run's state directory and
// report: called last, once the run's sandbox, locks and placeholders
// are gone.
func (r *Run) ReducePending() {
	if r == nil {
		return
	}
	reducePending(r.opt.StateDir, r.opt.Report, newNameSet(r.opt.Protected, r.opt.Later))
}
