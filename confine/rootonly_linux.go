//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// A caller that is root keeps uid 0 in its sandbox, the owner of every
// root-owned file, so what only root may read under /etc and /opt would be
// readable (docs/supervisor.md). The planner walks those trees and hides
// each entry others may not read (a directory: read and search) with a
// Hide of its own; it does not descend into what it hides, and it leaves
// symlinks alone (their targets are walked where they are).
//
// The walk is a fact of the plan (factTree): every entry it looked at, and
// for each directory it read the directory's mtime and ctime, so a cached
// run proves the tree unchanged with one lstat per entry instead of
// listing every directory again. A file made root-only since (chmod: its
// ctime and mode), a new file or a renamed one (its directory's mtime and
// ctime), or a mount over an entry (its device and inode) sends the next
// run down the Go path, which walks again and hides it.

// maxUnreadableWalk bounds the entries the walk visits (the trees are
// bound whole, so this is a bound on what a launch reads, not on the
// file system): beyond it the launch fails and names the key.
const maxUnreadableWalk = 100000

// maxWalkDepth is how deep the walk descends; deeper directories are not
// read (the kernel's own path limits are far beyond any real /etc).
const maxWalkDepth = 64

// treeEntry is one entry the walk looked at: the index of its directory in
// the walk's list (treeRoot for the root), its name, and whether it is a
// directory the walk read (whose mtime and ctime then count too).
type treeEntry struct {
	parent uint32
	name   string
	read   bool
}

const treeRoot = ^uint32(0)

// treeHash folds the values a cached run compares for one entry into h,
// FNV-1a over their little-endian bytes (tree_fold in fast_linux.c).
func treeHash(h uint64, st *unix.Stat_t, read bool) uint64 {
	vals := []uint64{st.Dev, st.Ino, uint64(st.Mode)}
	if read {
		vals = append(vals, uint64(st.Mtim.Nano()), uint64(st.Ctim.Nano()))
	}
	for _, v := range vals {
		for i := 0; i < 8; i++ {
			h ^= v >> (8 * i) & 0xff
			h *= 1099511628211
		}
	}
	return h
}

const treeHashInit = uint64(14695981039346656037)

// openToOthers reports whether others may read a file, or read and
// search a directory: what an unprivileged caller could.
func openToOthers(mode uint32) bool {
	if mode&unix.S_IFMT == unix.S_IFDIR {
		return mode&(unix.S_IROTH|unix.S_IXOTH) == unix.S_IROTH|unix.S_IXOTH
	}
	return mode&unix.S_IROTH != 0
}

// rootOnly returns a Hide for every entry beneath each of l.RootOnly that
// others may not read, and records the walk as a fact. Paths at which ms
// already mounts something (a bind of the workspace under /opt, a hidden
// secret) are neither walked nor hidden again: the sandbox sees that
// mount there, not the host's entry.
func (l *Layout) rootOnly(ms []Mount) ([]Mount, error) {
	mounted := map[string]bool{}
	for _, m := range ms {
		mounted[m.Dest] = true
	}
	var hides []Mount
	for _, root := range l.RootOnly {
		if !slices.ContainsFunc(ms, func(m Mount) bool { return m.Kind == Bind && m.Dest == root && m.Source == root }) {
			continue // not bound (absent, or a symlink recreated)
		}
		w := &treeWalk{mounted: mounted, left: maxUnreadableWalk, hash: treeHashInit}
		if err := w.root(root); err != nil {
			if errors.Is(err, unix.E2BIG) {
				return nil, fmt.Errorf("more than %d entries under %s to find what only root may read (set [sandbox] root_only = \"show\" to skip the walk)", maxUnreadableWalk, root)
			}
			return nil, fmt.Errorf("finding what only root may read under %s: %w", root, err)
		}
		for _, p := range w.hide {
			hides = append(hides, Mount{Kind: Hide, Dest: p})
		}
		l.Facts.add(fact{kind: factTree, path: root, tree: w.entries, hash: w.hash})
	}
	return hides, nil
}

type treeWalk struct {
	mounted map[string]bool
	left    int
	entries []treeEntry
	hash    uint64
	hide    []string
}

func (w *treeWalk) root(root string) error {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return w.dir(fd, root, treeRoot, "", 0)
}

// dir records the directory fd (at path, named name in the entry parent)
// and walks it. Its identity and times are taken before it is read, so a
// change while it is read shows on the next run.
func (w *treeWalk) dir(fd int, path string, parent uint32, name string, depth int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	idx := uint32(len(w.entries))
	w.entries = append(w.entries, treeEntry{parent: parent, name: name, read: true})
	w.hash = treeHash(w.hash, &st, true)
	if depth > maxWalkDepth {
		return nil
	}
	d, err := unix.Dup(fd)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(d), path)
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		if w.left--; w.left < 0 {
			return unix.E2BIG
		}
		p := filepath.Join(path, n)
		if w.mounted[p] {
			continue
		}
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed meanwhile: its directory's times changed
			}
			return err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			continue
		}
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		if !openToOthers(st.Mode) || !isDir {
			w.entries = append(w.entries, treeEntry{parent: idx, name: n})
			w.hash = treeHash(w.hash, &st, false)
			if !openToOthers(st.Mode) {
				w.hide = append(w.hide, p)
			}
			continue
		}
		sub, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
				continue // replaced meanwhile: its directory's times changed
			}
			return err
		}
		err = w.dir(sub, p, idx, n, depth+1)
		unix.Close(sub)
		if err != nil {
			return err
		}
	}
	return nil
}
