//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// newRootBase is where the new root's tmpfs is mounted before pivot_root.
// Bind sources are opened as descriptors before it is covered, so host
// paths under /tmp stay reachable.
const newRootBase = "/tmp"

// emptyFile is created in the new root's tmpfs and bound over hidden files
// and planted symlinks.
const emptyFile = "/.jail-empty"

// devNodes are the device files of the minimal /dev.
func devNodes() []string { return []string{"null", "zero", "full", "random", "urandom", "tty"} }

// openSource opens a bind source that the supervisor resolved. Resolution
// refuses any symlink in any component: the supervisor passed the canonical
// path, so a symlink now means the tree changed since it checked.
func openSource(path string) (int, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		unix.Close(fd)
		return -1, unix.ELOOP
	}
	return fd, nil
}

// openIn opens rel beneath dirfd without following any symlink, the final
// component included: a symlink there is returned as itself.
func openIn(dirfd int, rel string) (int, error) {
	return unix.Openat2(dirfd, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// mkdirAllIn creates rel (and its parents) beneath dirfd as directories,
// refusing symlinks on the way.
func mkdirAllIn(dirfd int, rel string, mode uint32) error {
	cur := ""
	for _, part := range strings.Split(rel, "/") {
		if part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		if err := unix.Mkdirat(dirfd, cur, mode); err != nil && err != unix.EEXIST {
			return fmt.Errorf("mkdir %s: %w", cur, err)
		}
	}
	return nil
}

// createMountpoint makes an empty directory or file at rel beneath dirfd,
// matching the type of what will be mounted there.
func createMountpoint(dirfd int, rel string, dir bool) error {
	if dir {
		return mkdirAllIn(dirfd, rel, 0o755)
	}
	if err := mkdirAllIn(dirfd, filepath.Dir(rel), 0o755); err != nil {
		return err
	}
	fd, err := unix.Openat(dirfd, rel, unix.O_CREAT|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return fmt.Errorf("create %s: %w", rel, err)
	}
	return unix.Close(fd)
}

// attachTree clones the mount tree at srcfd, sets its attributes on every
// mount of the clone, and attaches it onto dstfd. Doing it by descriptor
// with the new mount API means no path is looked up twice, and
// mount_setattr with AT_RECURSIVE makes submounts read-only too (a plain
// MS_REMOUNT|MS_RDONLY would leave /usr/local or /home/x/ws/.mnt writable).
func attachTree(srcfd, dstfd int, attrSet uint64) error {
	tree, err := unix.OpenTree(srcfd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	if attrSet != 0 {
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: attrSet}); err != nil {
			return fmt.Errorf("mount_setattr: %w", err)
		}
	}
	if err := unix.MoveMount(tree, "", dstfd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// setReadOnly makes the mount at path (in the current view) read-only.
func setReadOnly(path string, recursive bool) error {
	flags := 0
	if recursive {
		flags = unix.AT_RECURSIVE
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, path, uint(flags), &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("mount_setattr %s read-only: %w", path, err)
	}
	return nil
}

// rootBuilder carries the state of buildRoot: the new root's descriptor and
// the destinations that are binds of host trees (where mountpoints must
// already exist, because creating one would write to the host).
type rootBuilder struct {
	root     int
	hostDest []string
}

func (b *rootBuilder) insideHostTree(dest string) bool {
	for _, d := range b.hostDest {
		if within(dest, d) {
			return true
		}
	}
	return false
}

// rel turns a sandbox path into one relative to the new root.
func rel(dest string) string { return strings.TrimPrefix(dest, "/") }

// destFd returns an O_PATH descriptor of dest in the new root, creating the
// mountpoint when dest is in jail's own tmpfs.
func (b *rootBuilder) destFd(dest string, dir bool) (int, error) {
	if !b.insideHostTree(dest) {
		if err := createMountpoint(b.root, rel(dest), dir); err != nil {
			return -1, err
		}
	}
	fd, err := openIn(b.root, rel(dest))
	if err != nil {
		return -1, fmt.Errorf("open mountpoint %s: %w", dest, err)
	}
	return fd, nil
}

// buildRoot builds the sandbox's file-system view and pivots into it. It is
// the whole of layer 2 and runs in the child's fresh mount namespace.
func buildRoot(s *Spec) error {
	// Nothing mounted here may propagate back to the host's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}

	// Open every host object before the base is covered.
	src := make(map[int]int)
	defer func() {
		for _, fd := range src {
			unix.Close(fd)
		}
	}()
	for i, m := range s.Mounts {
		if m.Kind != Bind {
			continue
		}
		fd, err := openSource(m.Source)
		if err != nil {
			return fmt.Errorf("open bind source %s (it must exist and contain no symlink): %w", m.Source, err)
		}
		src[i] = fd
	}
	devs := make(map[string]int)
	defer func() {
		for _, fd := range devs {
			unix.Close(fd)
		}
	}()
	for _, m := range s.Mounts {
		if m.Kind != Dev {
			continue
		}
		for _, n := range devNodes() {
			fd, err := openSource("/dev/" + n)
			if err != nil {
				return fmt.Errorf("open /dev/%s: %w", n, err)
			}
			devs[n] = fd
		}
	}

	if err := unix.Mount("tmpfs", newRootBase, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount new root tmpfs: %w", err)
	}
	root, err := unix.Open(newRootBase, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open new root: %w", err)
	}
	defer unix.Close(root)
	b := &rootBuilder{root: root}
	if err := createMountpoint(root, rel(emptyFile), false); err != nil {
		return err
	}
	empty, err := openIn(root, rel(emptyFile))
	if err != nil {
		return fmt.Errorf("open %s: %w", emptyFile, err)
	}
	defer unix.Close(empty)

	for i, m := range s.Mounts {
		var err error
		switch m.Kind {
		case Bind:
			err = b.bind(m, src[i])
		case Tmpfs:
			err = b.tmpfs(m)
		case Hide:
			err = b.hide(m, empty)
		case Protect:
			err = b.protect(m, empty)
		case Symlink:
			err = b.symlink(m)
		case Proc:
			err = b.proc(m)
		case Dev:
			err = b.dev(m, devs)
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", m.Kind, m.Dest, err)
		}
	}

	// pivot_root(".", ".") stacks the old root on top of the new one; the
	// detach below then removes it, so no path leads back to the host.
	if err := unix.Fchdir(root); err != nil {
		return fmt.Errorf("chdir new root: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("chdir /: %w", err)
	}
	// The root tmpfs holds only mountpoints; nothing may be created there.
	return setReadOnly("/", false)
}

func (b *rootBuilder) bind(m Mount, srcfd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(srcfd, &st); err != nil {
		return err
	}
	dst, err := b.destFd(m.Dest, st.Mode&unix.S_IFMT == unix.S_IFDIR)
	if err != nil {
		return err
	}
	defer unix.Close(dst)
	attr := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
	if !m.Writable {
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	if err := attachTree(srcfd, dst, attr); err != nil {
		return err
	}
	b.hostDest = append(b.hostDest, m.Dest)
	return nil
}

func (b *rootBuilder) tmpfs(m Mount) error {
	if b.insideHostTree(m.Dest) {
		return errors.New("a tmpfs inside a bound host tree needs an existing directory there; use hide")
	}
	if err := mkdirAllIn(b.root, rel(m.Dest), 0o755); err != nil {
		return err
	}
	path := newRootBase + m.Dest
	if err := unix.Mount("tmpfs", path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount tmpfs: %w", err)
	}
	if !m.Writable {
		return setReadOnly(path, false)
	}
	return nil
}

// cover puts a read-only empty object over dest: the empty file for files
// and symlinks, an empty read-only tmpfs for directories.
func (b *rootBuilder) cover(fd int, dest string, empty int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(fd, "", &st, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return attachTree(empty, fd, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	}
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("fsopen tmpfs: %w", err)
	}
	defer unix.Close(fsfd)
	if err := unix.FsconfigSetString(fsfd, "mode", "0555"); err != nil {
		return fmt.Errorf("fsconfig: %w", err)
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return fmt.Errorf("fsconfig create: %w", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return fmt.Errorf("fsmount: %w", err)
	}
	defer unix.Close(mfd)
	if err := unix.MoveMount(mfd, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

func (b *rootBuilder) hide(m Mount, empty int) error {
	fd, err := openIn(b.root, rel(m.Dest))
	if errors.Is(err, unix.ENOENT) {
		return nil // nothing there to hide
	}
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer unix.Close(fd)
	return b.cover(fd, m.Dest, empty)
}

// protect makes dest read-only in place. The supervisor chose dest as the
// first component that is a symlink, the path itself, or a placeholder it
// created for a missing path; any other finding means the workspace
// changed under us, and the launch fails rather than leave it writable.
func (b *rootBuilder) protect(m Mount, empty int) error {
	fd, err := openIn(b.root, rel(m.Dest))
	if err != nil {
		return fmt.Errorf("open protected path: %w", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstatat(fd, "", &st, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		// A planted symlink is covered, not followed: the link can then be
		// neither used nor replaced (a mountpoint cannot be unlinked).
		return b.cover(fd, m.Dest, empty)
	}
	return attachTree(fd, fd, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
}

func (b *rootBuilder) symlink(m Mount) error {
	if b.insideHostTree(m.Dest) {
		return errors.New("symlinks are only created in jail's own tmpfs")
	}
	if err := mkdirAllIn(b.root, filepath.Dir(rel(m.Dest)), 0o755); err != nil {
		return err
	}
	return unix.Symlinkat(m.Source, b.root, rel(m.Dest))
}

func (b *rootBuilder) proc(m Mount) error {
	if err := mkdirAllIn(b.root, rel(m.Dest), 0o555); err != nil {
		return err
	}
	path := newRootBase + m.Dest
	if err := unix.Mount("proc", path, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount proc: %w", err)
	}
	// Host-wide knobs: sysctls, the magic SysRq trigger (writable by a
	// caller that is root, whose uid 0 maps to the host's), interrupt and
	// bus tuning. Read-only in place, as bubblewrap does.
	for _, sub := range []string{"sys", "sysrq-trigger", "irq", "bus"} {
		fd, err := openIn(b.root, rel(m.Dest+"/"+sub))
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("open /proc/%s: %w", sub, err)
		}
		err = attachTree(fd, fd, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("/proc/%s read-only: %w", sub, err)
		}
	}
	return nil
}

func (b *rootBuilder) dev(m Mount, devs map[string]int) error {
	if err := mkdirAllIn(b.root, rel(m.Dest), 0o755); err != nil {
		return err
	}
	path := newRootBase + m.Dest
	if err := unix.Mount("tmpfs", path, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755"); err != nil {
		return fmt.Errorf("mount /dev tmpfs: %w", err)
	}
	for _, n := range devNodes() {
		dst, err := b.destFd(m.Dest+"/"+n, false)
		if err != nil {
			return err
		}
		err = attachTree(devs[n], dst, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
		unix.Close(dst)
		if err != nil {
			return fmt.Errorf("bind /dev/%s: %w", n, err)
		}
	}
	if err := mkdirAllIn(b.root, rel(m.Dest+"/pts"), 0o755); err != nil {
		return err
	}
	// A private devpts instance: the sandbox's ptys are its own, and the
	// host's /dev/pts (other users' terminals) is not there.
	if err := unix.Mount("devpts", path+"/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("mount devpts: %w", err)
	}
	if err := mkdirAllIn(b.root, rel(m.Dest+"/shm"), 0o1777); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", path+"/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	links := [][2]string{{"ptmx", "pts/ptmx"}, {"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"},
		{"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}}
	for _, l := range links {
		if err := unix.Symlinkat(l[1], b.root, rel(m.Dest+"/"+l[0])); err != nil {
			return fmt.Errorf("symlink /dev/%s: %w", l[0], err)
		}
	}
	return setReadOnly(path, false)
}

// fileExists reports whether path exists in the current view; used by the
// supervisor's checks.
func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
