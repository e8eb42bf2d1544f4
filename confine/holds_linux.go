//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Holds: what one run's end may not do to another live run's mounts.
//
// The kernel lets a rename or an unlink in one mount namespace move or
// drop a dentry that is a mountpoint in another: the other namespace's
// mount goes with the old dentry (a rename), or is detached lazily (an
// rmdir, an unlink, a rename over it). Only a mountpoint of the caller's
// own namespace is refused with EBUSY. So when one run's supervisor,
// guardian or adopter, or jail clean, moves aside or removes something on
// the host (a protected name the sandbox made, a repository to reduce, a
// placeholder, a persistent home), a second run's sandbox that has a
// mount there (its placeholder .envrc, its read-only .vscode, its .git
// overlay, a pin of the way to them) would lose it, and write through the
// freed name onto the host, where nothing reduces what it writes.
//
// The rule that prevents it: every run takes a shared flock on each host
// object its sandbox has a mount on in a tree that runs can change (the
// workspace and every other writable tree, the roots of those trees
// included: hold), before the init mounts anything, and keeps it until
// its sandbox has ended. Every host-side change of such an object takes
// the lock exclusively first, without waiting (Claim), and leaves the
// object alone when it cannot: the caller records it and the last run out
// finishes it (gitview's pending reductions). A lock is the object's, not
// jail's: runs of different users (root and a user in one tree) see each
// other's, and a run killed with SIGKILL lets go of its locks as it dies.
//
// A sandbox can take a flock on what it can open in its workspace too.
// On an object it holds, a reduction waits for its run's end, when that
// run's end (after its sandbox is gone) does it: no longer than that
// sandbox could keep a file of its own live there anyway. A lock it
// holds exclusively makes a run that needs the object wait at most
// holdWait, then refuse to start, naming the holder.
//
// An object that cannot be locked itself (a symlink, a file the user may
// not read) stands under its directory's lock: every such object a run
// has a mount on lies in a directory it holds (the init pins every
// directory between a writable tree's root and a mount inside it, and
// the root is held), and Claim takes the directory's lock in its place.
//
// The order makes it sound: a run locks, then checks that the name still
// holds the object its plan names (the init checks again when it mounts);
// a reducer locks exclusively, then renames or removes, then unlocks. A
// run that locks while a reducer holds the lock waits, then finds the name
// changed and does not start on it.

// ErrHeld is a host object that a live run's sandbox has a mount on (or,
// for one that cannot be locked itself, the directory that holds it).
var ErrHeld = errors.New("a live sandbox has a mount on it")

// hold takes the shared locks of a sandbox whose mounts are ms, in
// workspace ws: the root of every writable host tree (the workspace, each
// --rw tree, the persistent home homeDir), and every object a mount sits
// on inside one, but those in jail's own state (state) and the
// placeholders, which are held already. It fails when an object is no
// longer the one the plan names.
func (ph *Placeholders) hold(ms []Mount, ws, homeDir string, state []string) error {
	seen := map[[2]uint64]bool{}
	for _, p := range ph.held {
		seen[[2]uint64{p.dev, p.ino}] = true
	}
	inState := func(p string) bool {
		return slices.ContainsFunc(state, func(d string) bool { return pathWithin(p, d) })
	}
	var take func(dirfd int, root, path string, m *Mount, checked bool, resolve uint64) error
	take = func(dirfd int, root, path string, m *Mount, checked bool, resolve uint64) error {
		if m.Kind == Bind && m.Writable && path != "." && path != "/" {
			// A file the sandbox writes through a bind (an agent's
			// history) is one its own programs may flock (codex waits on
			// its history file's lock for good): it is held through its
			// directory instead. No reducer renames such a file; the
			// protected names it does rename are read-only mounts.
			var st unix.Stat_t
			if unix.Fstatat(dirfd, path, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
				return take(dirfd, root, filepath.Dir(path), m, false, resolve)
			}
		}
		fd, st, err := openLockable(dirfd, path, resolve)
		if errors.Is(err, errUnlockable) {
			return nil // its directory is held: the object stands under it
		}
		if err != nil {
			if !checked && errors.Is(err, unix.ENOENT) {
				return nil
			}
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EXDEV) {
				// A symlink or something else swapped in on the way.
				return fmt.Errorf("hold %s: it changed while it was being protected (a concurrent run or sandbox renamed it); run again", m.Dest)
			}
			return fmt.Errorf("hold %s: %w", m.Dest, err)
		}
		if checked && m.Ino != 0 && (st.Dev != m.Dev || st.Ino != m.Ino) {
			unix.Close(fd)
			return fmt.Errorf("hold %s: it changed while it was being protected (a concurrent run or sandbox renamed it); run again", m.Dest)
		}
		k := [2]uint64{st.Dev, st.Ino}
		if seen[k] {
			unix.Close(fd)
			return nil
		}
		if err := lockShared(fd); err != nil {
			by := DescribeHolders(fd)
			unix.Close(fd)
			if errors.Is(err, unix.EWOULDBLOCK) {
				if by == "" {
					by = "a process jail cannot name"
				}
				return fmt.Errorf("hold %s: another process holds an exclusive lock on it (%s); run again once it has let go", m.Dest, by)
			}
			return fmt.Errorf("hold %s: %w", m.Dest, err)
		}
		// Locked: no reducer can move it now. Still the object named?
		var now unix.Stat_t
		if err := unix.Fstatat(dirfd, path, &now, unix.AT_SYMLINK_NOFOLLOW); err != nil || now.Dev != st.Dev || now.Ino != st.Ino {
			unix.Close(fd)
			return fmt.Errorf("hold %s: it was moved while it was being protected (a concurrent run ended); run again", m.Dest)
		}
		seen[k] = true
		ph.locks = append(ph.locks, fd)
		full := filepath.Join(root, path)
		if rel, err := filepath.Rel(ws, full); err == nil && !strings.HasPrefix(rel, "..") && ws != "" {
			ph.locked = append(ph.locked, rel)
		} else {
			ph.locked = append(ph.locked, full)
		}
		return nil
	}
	roots := map[string]int{}
	defer func() {
		for _, fd := range roots {
			unix.Close(fd)
		}
	}()
	for i := range ms {
		m := &ms[i]
		// The persistent home lies in jail's state, which is held too:
		// jail clean must not remove it under a live run.
		isHome := homeDir != "" && m.Source == homeDir
		if m.Kind != Bind || !m.Writable || !isHome && (inState(m.Source) || m.Source != m.Dest) {
			continue
		}
		if err := take(unix.AT_FDCWD, "", m.Source, m, true, unix.RESOLVE_NO_SYMLINKS); err != nil {
			return err
		}
	}
	for i := range ms {
		m := &ms[i]
		switch m.Kind {
		case Bind, Overlay, Protect, Pin, Hide:
		default:
			continue
		}
		w, rel := writableParent(ms, m.Dest)
		if w == nil || inState(w.Source) || rel == "" {
			continue
		}
		rfd, ok := roots[w.Source]
		if !ok {
			var err error
			if rfd, err = unix.Openat2(unix.AT_FDCWD, w.Source, &unix.OpenHow{
				Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_NO_SYMLINKS,
			}); err != nil {
				return fmt.Errorf("hold %s: %w", w.Dest, err)
			}
			roots[w.Source] = rfd
		}
		// The object at the mount's place: the one its identity names,
		// unless the mount shows another object there (a bind from
		// elsewhere: the git view's private directory, a host path
		// bound into the persistent home).
		checked := m.Kind == Protect || m.Kind == Pin || m.Kind == Hide || m.Source == m.Dest && w.Source == w.Dest
		if err := take(rfd, w.Source, rel, m, checked, unix.RESOLVE_BENEATH|unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS); err != nil {
			return err
		}
	}
	return nil
}

// holdWait bounds how long a run waits for a shared lock: a reducer holds
// one exclusively for a rename's time, but any process that can open the
// object (a sandbox, in its workspace) can take flock itself, and a
// launch must not hang on it.
const holdWait = 3 * time.Second

// lockShared takes a shared flock on fd, waiting at most holdWait
// (EWOULDBLOCK past it).
func lockShared(fd int) error {
	deadline := time.Now().Add(holdWait)
	for d := 100 * time.Microsecond; ; d = min(2*d, 50*time.Millisecond) {
		err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		if err == nil || !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return err
		}
		if time.Now().After(deadline) {
			return unix.EWOULDBLOCK
		}
		time.Sleep(d)
	}
}

// Unhold drops the shared locks of hold. It must be called after the
// sandbox has ended, and before this run changes anything it held (its
// own locks would refuse it).
func (ph *Placeholders) Unhold() {
	if ph == nil {
		return
	}
	for _, fd := range ph.locks {
		unix.Close(fd)
	}
	ph.locks = nil
}

// errUnlockable is an object that cannot be opened to be locked.
var errUnlockable = errors.New("cannot be locked itself")

// openLockable opens path (beneath dirfd with resolve) for a lock: a
// directory or a regular file, read-only, without following a symlink
// and without blocking (a FIFO swapped in is not waited on); anything
// else, and what the caller may not read, is errUnlockable.
func openLockable(dirfd int, path string, resolve uint64) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	pfd, err := unix.Openat2(dirfd, path, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: resolve})
	if err != nil {
		return -1, st, err
	}
	err = unix.Fstat(pfd, &st)
	unix.Close(pfd)
	if err != nil {
		return -1, st, err
	}
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		flags |= unix.O_DIRECTORY
	case unix.S_IFREG:
	default:
		return -1, st, errUnlockable
	}
	fd, err := unix.Openat2(dirfd, path, &unix.OpenHow{Flags: uint64(flags), Resolve: resolve})
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		return -1, st, errUnlockable
	}
	if err != nil {
		return -1, st, err
	}
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil || now.Dev != st.Dev || now.Ino != st.Ino || now.Mode&unix.S_IFMT != st.Mode&unix.S_IFMT {
		unix.Close(fd)
		return -1, st, errUnlockable
	}
	return fd, now, nil
}

// Claim locks the entry name beneath the directory dirfd exclusively,
// for a change on the host that would take a live run's mount with it (a
// rename, an unlink, a removal): ErrHeld when a live run holds it (the
// caller leaves it for the last run out), else a function that drops the
// lock once the change is made. An entry that cannot be locked itself (a
// symlink, one the caller may not read) is claimed through dirfd's
// directory, which every run with a mount on it holds.
func Claim(dirfd int, name string) (func(), error) {
	fd, _, err := openLockable(dirfd, name, unix.RESOLVE_BENEATH|unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS)
	if errors.Is(err, errUnlockable) {
		fd, err = unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrHeld
		}
		return nil, err
	}
	return func() { unix.Close(fd) }, nil
}

// Holders are the processes holding a flock on the object fd is open on,
// as /proc/locks names them (none when it cannot be read).
func Holders(fd int) []int {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return nil
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return nil
	}
	key := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	var pids []int
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		// "1: FLOCK  ADVISORY  READ  PID MAJ:MIN:INODE 0 EOF"; a waiter
		// has "->" after the number.
		if len(f) < 6 || f[1] != "FLOCK" || f[5] != key {
			continue
		}
		if pid, err := strconv.Atoi(f[4]); err == nil && pid > 0 && !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// DescribeHolders names the processes holding a flock on fd's object
// ("pid 123: jail run -- claude"), for a line that says which live run
// kept jail from changing it; "" when none can be named.
func DescribeHolders(fd int) string {
	var out []string
	for _, pid := range Holders(fd) {
		cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		line := strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
		if err != nil || line == "" {
			out = append(out, "pid "+strconv.Itoa(pid))
			continue
		}
		if len(line) > 80 {
			line = line[:77] + "..."
		}
		out = append(out, fmt.Sprintf("pid %d: %s", pid, line))
	}
	return strings.Join(out, "; ")
}
