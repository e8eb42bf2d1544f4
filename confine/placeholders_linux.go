//go:build linux

package confine

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A protected path that does not exist cannot be made read-only: a mount
// needs something to sit on. Placeholders are that something: empty
// read-only files jail links into the workspace at the first missing
// component of each protected path, covers with a read-only mount inside
// the sandbox, and removes when the run ends.
//
// All placeholders of one run are hard links to a single inode made with
// O_TMPFILE, so a run allocates one inode however many paths it protects
// (file systems such as ext4 get slow when inodes are created and freed
// at a high rate). A file serves for directory names too: mkdir and
// creating anything beneath fail just the same.
//
// Concurrent runs in one workspace: every run holds a shared flock on the
// protected objects it relies on, and a placeholder is removed only by a
// run that can take the lock exclusively. Placeholders carry the xattr
// user.jail=placeholder, so one left behind (jail killed with SIGKILL) is
// recognised and removed by the next run in that workspace.

// placeholderXattr marks a placeholder inode.
const (
	placeholderXattr = "user.jail"
	placeholderValue = "placeholder"
)

// Placeholders are the placeholder links one run created, and the locks
// it holds on protected objects.
type Placeholders struct {
	inode int // O_TMPFILE inode all links share; -1 before the first
	made  []placeholder
	locks []int
}

type placeholder struct {
	path     string
	dev, ino uint64
}

// create links the run's placeholder inode at prefix beneath the
// workspace.
func (ph *Placeholders) create(wsfd int, ws, prefix string) (string, error) {
	dir, name := filepath.Split(prefix)
	pfd := wsfd
	if dir != "" {
		fd, err := openIn(wsfd, filepath.Clean(dir))
		if err != nil {
			return "", err
		}
		defer unix.Close(fd)
		pfd = fd
	}
	if ph.inode <= 0 {
		fd, err := newPlaceholderInode(wsfd)
		if err != nil {
			return "", fmt.Errorf("create placeholder: %w", err)
		}
		// Not every file system has user xattrs; without the mark a
		// leftover placeholder is simply not cleaned up automatically.
		_ = unix.Fsetxattr(fd, placeholderXattr, []byte(placeholderValue), 0)
		if err := unix.Fchmod(fd, 0o444); err != nil {
			unix.Close(fd)
			return "", fmt.Errorf("create placeholder: %w", err)
		}
		unix.Flock(fd, unix.LOCK_SH)
		ph.inode = fd
		ph.locks = append(ph.locks, fd)
	}
	// Linking through the descriptor's /proc entry is the unprivileged
	// way to give an O_TMPFILE inode a name.
	src := "/proc/self/fd/" + strconv.Itoa(ph.inode)
	if err := unix.Linkat(unix.AT_FDCWD, src, pfd, name, unix.AT_SYMLINK_FOLLOW); err != nil {
		return "", fmt.Errorf("create placeholder %s: %w", prefix, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(ph.inode, &st); err != nil {
		return "", err
	}
	path := filepath.Join(ws, prefix)
	ph.made = append(ph.made, placeholder{path: path, dev: st.Dev, ino: st.Ino})
	return path, nil
}

// newPlaceholderInode makes the run's placeholder inode: nameless with
// O_TMPFILE, or, on file systems without it (NFS, FUSE), under a unique
// temporary name that is removed again at once. The descriptor is never
// 0, 1 or 2, whose /proc entry would name the caller's stdio.
func newPlaceholderInode(wsfd int) (int, error) {
	// Created writable by its owner: an unprivileged owner may set a user
	// xattr only on an inode it can write. Read-only once marked.
	fd, err := unix.Openat(wsfd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		name := ".jail-placeholder-" + strconv.Itoa(unix.Getpid())
		fd, err = unix.Openat(wsfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return -1, err
		}
		defer unix.Unlinkat(wsfd, name, 0)
	}
	if fd < 3 {
		nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = nfd
	}
	return fd, nil
}

// isPlaceholder reports whether the object at fd carries the mark.
func isPlaceholder(fd int) bool {
	buf := make([]byte, len(placeholderValue))
	n, err := unix.Fgetxattr(fd, placeholderXattr, buf)
	return err == nil && string(buf[:n]) == placeholderValue
}

// removeStale removes prefix if it is a placeholder that no live run
// holds, and reports whether it did.
func (ph *Placeholders) removeStale(wsfd int, prefix string, st *unix.Stat_t) bool {
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != 0 {
		return false
	}
	fd, err := unix.Openat(wsfd, prefix, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if !isPlaceholder(fd) || unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false
	}
	if ph.inode > 0 {
		var mine unix.Stat_t
		if unix.Fstat(ph.inode, &mine) == nil && mine.Ino == st.Ino && mine.Dev == st.Dev {
			return false // this run's own
		}
	}
	dir, name := filepath.Split(prefix)
	pfd := wsfd
	if dir != "" {
		d, err := openIn(wsfd, filepath.Clean(dir))
		if err != nil {
			return false
		}
		defer unix.Close(d)
		pfd = d
	}
	return unix.Unlinkat(pfd, name, 0) == nil
}

// Release removes this run's placeholder links, unless another run holds
// the inode (it then protects those paths too and removes them itself).
func (ph *Placeholders) Release() {
	if ph == nil {
		return
	}
	if ph.inode > 0 && unix.Flock(ph.inode, unix.LOCK_EX|unix.LOCK_NB) == nil {
		for _, p := range ph.made {
			var st unix.Stat_t
			if unix.Lstat(p.path, &st) == nil && st.Dev == p.dev && st.Ino == p.ino {
				unix.Unlink(p.path)
			}
		}
	}
	for _, fd := range ph.locks {
		unix.Close(fd)
	}
	ph.inode, ph.made, ph.locks = 0, nil, nil
}

// LockExisting takes shared locks on the protected objects that already
// existed, so a concurrent run cannot remove a placeholder this run relies
// on. A placeholder another run left and no run holds any more is removed
// by the next Build in that workspace (removeStale).
func (ph *Placeholders) LockExisting(ms []Mount) {
	mine := map[string]bool{}
	for _, p := range ph.made {
		mine[p.path] = true
	}
	for _, m := range ms {
		if m.Kind != Protect || mine[m.Dest] {
			continue
		}
		// Only regular files and directories are locked: opening a FIFO
		// or a device planted at a protected path could block or act.
		var st unix.Stat_t
		if unix.Lstat(m.Dest, &st) != nil || (st.Mode&unix.S_IFMT != unix.S_IFREG && st.Mode&unix.S_IFMT != unix.S_IFDIR) {
			continue
		}
		fd, err := unix.Open(m.Dest, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if err := unix.Flock(fd, unix.LOCK_SH); err != nil && !errors.Is(err, unix.EINTR) {
			unix.Close(fd)
			continue
		}
		ph.locks = append(ph.locks, fd)
	}
}

// cacheParts are what a plan cache entry keeps of the placeholders: the
// workspace-relative paths this run created them at, and the protected
// paths that existed, which a cached run locks as LockExisting does.
func (ph *Placeholders) cacheParts(ws string, ms []Mount) (made, existing []string, err error) {
	mine := map[string]bool{}
	for _, p := range ph.made {
		rel, err := filepath.Rel(ws, p.path)
		if err != nil || rel == "." || strings.HasPrefix(rel, "../") {
			return nil, nil, fmt.Errorf("plan cache: placeholder %s outside the workspace %s", p.path, ws)
		}
		made = append(made, rel)
		mine[p.path] = true
	}
	for _, m := range ms {
		if m.Kind == Protect && !mine[m.Dest] {
			existing = append(existing, m.Dest)
		}
	}
	return made, existing, nil
}
