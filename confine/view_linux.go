package confine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// View reads files as a sandbox made with its mounts sees them when it
// starts, for the supervisor, which judges a call by what the call's
// programs will read (the git config of a bash call's git commands,
// docs/actions.md). A path is resolved one component at a time in the
// sandbox's own terms: the deepest mount that shows it decides where it
// lies on the host, and a symlink is read and followed as the sandbox
// would follow it, from its own directory in the sandbox, at most 40
// times. Every host object is reached by descriptor, beneath the mount's
// source opened without following a symlink and checked against the
// identity the launch resolved (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS):
// a name another sandbox swaps meanwhile makes the read fail, it never
// leads the supervisor elsewhere.
//
// What a sandbox sees at its start that no sandbox wrote: a read-only
// bind (system files, the user's own git config), an overlay (the git
// view: its upper is fresh, its lower the host's git directory, which
// only adoption writes), jail's own files and empty objects. Shared
// says that a file lies in a writable bind instead (the workspace, the
// persistent home, a --rw path): a sandbox may have written it, in an
// earlier call or beside this one.
type View struct {
	ms []Mount
}

// NewView is the view of a sandbox made with the mounts ms.
func NewView(ms []Mount) *View { return &View{ms: ms} }

// ErrViewUnsafe is returned for a path the view will not read: one under
// /proc or /dev (whose links lead anywhere), a loop of symlinks, or one
// whose host object changed while it was read.
var ErrViewUnsafe = errors.New("cannot be read safely")

// maxViewHops is how many symlinks a lookup follows (the kernel's
// MAXSYMLINKS).
const maxViewHops = 40

// entry is where a resolved sandbox path lies.
type entry struct {
	mode   uint32 // S_IFDIR, S_IFREG, S_IFLNK, 0 for nothing there
	mount  *Mount // the deepest mount showing it
	rel    string // beneath mount.Source for Bind and Overlay
	empty  bool   // an empty object of jail's (Hide, Tmpfs, a protected symlink)
	shared bool
}

// mountAt is the deepest mount that shows p (the last of equal depth: it
// was mounted over the others). Pins show what their parent shows.
func (v *View) mountAt(p string) *Mount {
	var deepest *Mount
	for i := range v.ms {
		m := &v.ms[i]
		if m.Kind == Pin || !within(p, m.Dest) {
			continue
		}
		if deepest == nil || len(m.Dest) >= len(deepest.Dest) {
			deepest = m
		}
	}
	return deepest
}

// lstat tells what is at the sandbox path p (absolute, clean, every
// component before the last a directory already resolved), without
// following a symlink at p itself.
func (v *View) lstat(p string) (entry, error) {
	e, err := v.lstatMount(p)
	if err == nil && e.mode == 0 && v.below(p) {
		// A directory the init made for a mount below it.
		return entry{mode: unix.S_IFDIR, empty: true}, nil
	}
	return e, err
}

// below reports whether a mount lies strictly below p.
func (v *View) below(p string) bool {
	for i := range v.ms {
		if v.ms[i].Dest != p && within(v.ms[i].Dest, p) {
			return true
		}
	}
	return false
}

func (v *View) lstatMount(p string) (entry, error) {
	m := v.mountAt(p)
	if m == nil {
		return entry{}, nil // the sandbox's own root holds only mountpoints
	}
	at := p == m.Dest
	switch m.Kind {
	case Bind, Overlay:
		rel := strings.TrimPrefix(strings.TrimPrefix(p, m.Dest), "/")
		mode, err := hostMode(m, rel)
		return entry{mode: mode, mount: m, rel: rel, shared: m.Kind == Bind && m.Writable}, err
	case Protect:
		// A read-only view of what the mount below shows; a symlink at
		// Dest is covered by an empty file.
		e, err := v.without(m).lstat(p)
		e.shared = false
		if at && e.mode == unix.S_IFLNK {
			e.mode, e.empty = unix.S_IFREG, true
		}
		return e, err
	case Hide:
		// An empty object of the type of what it covers.
		if !at {
			return entry{}, nil
		}
		e, err := v.without(m).lstat(p)
		e.shared, e.empty = false, true
		if e.mode == unix.S_IFLNK {
			e.mode = unix.S_IFREG
		}
		return e, err
	case Tmpfs:
		if at {
			return entry{mode: unix.S_IFDIR, mount: m, empty: true}, nil
		}
		return entry{}, nil // empty when the sandbox starts
	case File:
		if at {
			return entry{mode: unix.S_IFREG, mount: m}, nil
		}
		return entry{}, nil
	case Symlink:
		if at {
			return entry{mode: unix.S_IFLNK, mount: m}, nil
		}
		return entry{}, nil
	}
	return entry{}, fmt.Errorf("%s: %w", p, ErrViewUnsafe) // Proc, Dev
}

// without is the view with the mount m taken away: what lies under it.
func (v *View) without(m *Mount) *View {
	out := &View{ms: make([]Mount, 0, len(v.ms))}
	for i := range v.ms {
		if &v.ms[i] != m {
			out.ms = append(out.ms, v.ms[i])
		}
	}
	return out
}

// hostMode is the type of rel beneath m's source on the host, 0 when
// nothing is there.
func hostMode(m *Mount, rel string) (uint32, error) {
	fd, err := openHost(m, rel, unix.O_PATH|unix.O_NOFOLLOW)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	return st.Mode & unix.S_IFMT, nil
}

// openHost opens rel beneath m's source (the whole source when rel is
// empty) with flags, following no symlink: the source by its absolute
// path, checked against the identity the launch resolved, then rel
// beneath it.
func openHost(m *Mount, rel string, flags int) (int, error) {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	if rel == "" {
		how.Flags = uint64(flags) | unix.O_CLOEXEC
	}
	src, err := unix.Openat2(unix.AT_FDCWD, m.Source, how)
	if err != nil {
		return -1, hostErr(m.Source, err)
	}
	if m.Ino != 0 && m.Kind == Bind {
		var st unix.Stat_t
		if err := unix.Fstat(src, &st); err != nil || st.Ino != m.Ino || uint64(st.Dev) != m.Dev {
			unix.Close(src)
			return -1, fmt.Errorf("%s: changed since the launch: %w", m.Source, ErrViewUnsafe)
		}
	}
	if rel == "" {
		return src, nil
	}
	defer unix.Close(src)
	fd, err := unix.Openat2(src, rel, &unix.OpenHow{Flags: uint64(flags) | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return -1, hostErr(path.Join(m.Source, rel), err)
	}
	return fd, nil
}

func hostErr(p string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return fs.ErrNotExist
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV), errors.Is(err, unix.EAGAIN):
		// A symlink where the walk had seen a directory: swapped meanwhile.
		return fmt.Errorf("%s: %w", p, ErrViewUnsafe)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// resolve follows p (absolute) to what it names in the sandbox, through
// every symlink on the way and, with follow, at its end.
func (v *View) resolve(p string, follow bool) (string, entry, error) {
	if !path.IsAbs(p) {
		return "", entry{}, fmt.Errorf("%s: not an absolute path", p)
	}
	todo := strings.Split(p, "/")
	var done []string // resolved components: real directories of the sandbox
	hops := 0
	e := entry{mode: unix.S_IFDIR}
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		if e.mode != unix.S_IFDIR {
			return "", entry{}, fs.ErrNotExist
		}
		cur := "/" + strings.Join(append(done, c), "/")
		var err error
		if e, err = v.lstat(cur); err != nil {
			return "", entry{}, err
		}
		if e.mode == 0 {
			if len(todo) > 0 {
				return "", entry{}, fs.ErrNotExist
			}
			return cur, e, nil
		}
		if e.mode != unix.S_IFLNK || !follow && len(todo) == 0 {
			done = append(done, c)
			continue
		}
		if hops++; hops > maxViewHops {
			return "", entry{}, fmt.Errorf("%s: too many symlinks: %w", p, ErrViewUnsafe)
		}
		target, err := v.readlink(e)
		if err != nil {
			return "", entry{}, err
		}
		if path.IsAbs(target) {
			done = nil
		}
		todo = append(strings.Split(target, "/"), todo...)
		e = entry{mode: unix.S_IFDIR}
	}
	return "/" + strings.Join(done, "/"), e, nil
}

func (v *View) readlink(e entry) (string, error) {
	if e.mount.Kind == Symlink {
		return e.mount.Source, nil
	}
	fd, err := openHost(e.mount, e.rel, unix.O_PATH|unix.O_NOFOLLOW)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", fmt.Errorf("readlink %s: %w", path.Join(e.mount.Source, e.rel), err)
	}
	return string(buf[:n]), nil
}

// Stat reports what the sandbox path p names, following symlinks:
// a directory, a regular file, or nothing (fs.ErrNotExist).
func (v *View) Stat(p string) (dir bool, err error) {
	_, e, err := v.resolve(p, true)
	if err != nil {
		return false, err
	}
	switch e.mode {
	case unix.S_IFDIR:
		return true, nil
	case unix.S_IFREG:
		return false, nil
	case 0:
		return false, fs.ErrNotExist
	}
	return false, fmt.Errorf("%s: neither a file nor a directory: %w", p, ErrViewUnsafe)
}

// ReadFile returns the regular file the sandbox path p names, at most
// limit bytes (more is an error), and whether a sandbox may have written
// it (View). A missing file is fs.ErrNotExist; anything but a regular
// file (a FIFO would block) is an error.
func (v *View) ReadFile(p string, limit int64) (data []byte, shared bool, err error) {
	_, e, err := v.resolve(p, true)
	if err != nil {
		return nil, false, err
	}
	switch {
	case e.mode == 0:
		return nil, false, fs.ErrNotExist
	case e.mode != unix.S_IFREG:
		return nil, false, fmt.Errorf("%s: not a regular file", p)
	case e.empty || e.mount == nil:
		return nil, false, nil
	case e.mount.Kind == File:
		return []byte(e.mount.Source), false, nil
	}
	fd, err := openHost(e.mount, e.rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK)
	if err != nil {
		return nil, false, err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, false, fmt.Errorf("%s: not a regular file (changed meanwhile?)", p)
	}
	data, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", p, err)
	}
	if int64(len(data)) > limit {
		return nil, false, fmt.Errorf("%s: larger than %d bytes", p, limit)
	}
	return data, e.shared, nil
}

// ReadDir returns the names in the directory the sandbox path p names,
// at most limit of them (more is an error), and whether a sandbox may
// have written them. Mounts below p are not listed: the callers look
// for files a sandbox made (hooks), which are never mounts.
func (v *View) ReadDir(p string, limit int) (names []string, shared bool, err error) {
	_, e, err := v.resolve(p, true)
	if err != nil {
		return nil, false, err
	}
	switch {
	case e.mode == 0:
		return nil, false, fs.ErrNotExist
	case e.mode != unix.S_IFDIR:
		return nil, false, fmt.Errorf("%s: not a directory", p)
	case e.empty || e.mount == nil || e.mount.Kind != Bind && e.mount.Kind != Overlay:
		return nil, false, nil
	}
	fd, err := openHost(e.mount, e.rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
	if err != nil {
		return nil, false, err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	names, err = f.Readdirnames(limit + 1)
	if err != nil && err != io.EOF {
		return nil, false, fmt.Errorf("list %s: %w", p, err)
	}
	if len(names) > limit {
		return nil, false, fmt.Errorf("%s: more than %d entries", p, limit)
	}
	return names, e.shared, nil
}

// Writable reports whether the sandbox can write, or create, the
// directory dir ([CanWrite]).
func (v *View) Writable(dir string) bool { return CanWrite(v.ms, dir) }
