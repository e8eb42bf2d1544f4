//go:build linux

package tools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Workspace is the directory every path argument is resolved beneath,
// held open as a descriptor so a rename of its path changes nothing.
type Workspace struct {
	fd   int
	path string // absolute, as this process sees it: for absolute arguments and messages
}

// OpenWorkspace opens dir as the root of path resolution.
func OpenWorkspace(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	fd, err := unix.Open(abs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("workspace: open %s: %w", abs, err)
	}
	return &Workspace{fd: fd, path: abs}, nil
}

// Close releases the descriptor.
func (w *Workspace) Close() error { return unix.Close(w.fd) }

// Path is the workspace's absolute path.
func (w *Workspace) Path() string { return w.path }

// ErrOutside is returned for any path that leaves the workspace: "../",
// an absolute path elsewhere, a symlink pointing out, a magic link.
var ErrOutside = errors.New("outside the workspace")

// Rel turns a path argument into a path relative to the workspace. An
// absolute path is accepted when it names the workspace or lies beneath it
// lexically; whether it really stays inside is the kernel's decision in
// Resolve, after every symlink and ".." is followed.
func (w *Workspace) Rel(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	if p == "" {
		return ".", nil
	}
	if filepath.IsAbs(p) {
		c := filepath.Clean(p)
		if c == w.path {
			return ".", nil
		}
		if !strings.HasPrefix(c, w.path+"/") {
			return "", fmt.Errorf("%s: %w %s", p, ErrOutside, w.path)
		}
		return c[len(w.path)+1:], nil
	}
	return p, nil
}

// Open resolves p (relative to the workspace, or absolute inside it) with
// Resolve and returns the file.
func (w *Workspace) Open(p string, flags int, mode uint32) (*os.File, error) {
	rel, err := w.Rel(p)
	if err != nil {
		return nil, err
	}
	fd, err := Resolve(w.fd, rel, flags, mode)
	if err != nil {
		return nil, w.explain(p, err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(w.path, rel)), nil
}

// ErrNotRegular is a file tool asked to read something that is not a
// regular file (a FIFO, a device, a socket, a directory).
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens p for reading only if it is a regular file, and never
// blocks doing so: a FIFO or a device planted in the workspace would
// otherwise hold the worker in open(2) or read(2) until the call's
// deadline kills it. The open is O_NONBLOCK (a FIFO without a writer opens
// at once, a device's open does not wait), fstat refuses anything that is
// not regular, then O_NONBLOCK is cleared for ordinary reads.
func (w *Workspace) OpenRegular(p string) (*os.File, error) {
	rel, err := w.Rel(p)
	if err != nil {
		return nil, err
	}
	fd, err := ResolveRegular(w.fd, rel, 0)
	if errors.Is(err, ErrNotRegular) {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if err != nil {
		return nil, w.explain(p, err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(w.path, rel)), nil
}

// ResolveRegular is [Resolve] for reading a regular file (see
// [Workspace.OpenRegular]); flags are added to O_RDONLY|O_NONBLOCK. A
// non-regular file gives an error wrapping [ErrNotRegular] that names its
// type.
func ResolveRegular(dirfd int, path string, flags int) (int, error) {
	fd, err := Resolve(dirfd, path, unix.O_RDONLY|unix.O_NONBLOCK|flags, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, fmt.Errorf("%w (%s): file tools read regular files only", ErrNotRegular, fileType(st.Mode))
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// fileType names a file type for an error message.
func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symlink"
	}
	return "an unknown type"
}

// explain turns Resolve's errno into a message a model can act on.
func (w *Workspace) explain(p string, err error) error {
	switch {
	case errors.Is(err, unix.EXDEV):
		return fmt.Errorf("%s: %w %s (after following symlinks and \"..\")", p, ErrOutside, w.path)
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%s: too many symlinks, or a /proc magic link: %w", p, ErrOutside)
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("%s: no such file or directory", p)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%s: a component of the path is not a directory", p)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Errorf("%s: permission denied by the sandbox", p)
	case errors.Is(err, unix.EROFS):
		return fmt.Errorf("%s: read-only (a protected path or a read-only workspace)", p)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// resolveHow is the one resolution rule: the kernel walks the path beneath
// the starting directory and refuses, with EXDEV, any step that leaves it
// ("..", an absolute symlink, a relative one climbing out), and, with
// ELOOP, /proc's magic links. Symlinks that stay inside are followed.
const resolveHow = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

// Resolve opens path beneath the directory dirfd with openat2 and
// RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS. It is the only way tools open a
// path: the containment check and the open are one system call, so a
// symlink swapped in between cannot win a race. Directory walkers call it
// with a subdirectory's descriptor and one name.
func Resolve(dirfd int, path string, flags int, mode uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: resolveHow}
	for tries := 0; ; tries++ {
		fd, err := unix.Openat2(dirfd, path, &how)
		// EAGAIN: a concurrent rename anywhere in the file system made the
		// kernel's ".." check unsafe for this walk; it asks us to retry.
		if (err == unix.EAGAIN && tries < 64) || err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, err
		}
		return fd, nil
	}
}

// dirAndBase resolves the parent directory of p and returns it open with
// the final name, for operations on the name itself (mkdirat, renameat,
// unlinkat): the name is one component, so nothing but the resolved parent
// is involved. With mkdirs, missing parents are created one at a time,
// each beneath the last.
func (w *Workspace) dirAndBase(p string, mkdirs bool) (*os.File, string, error) {
	rel, err := w.Rel(p)
	if err != nil {
		return nil, "", err
	}
	rel = filepath.Clean(rel)
	dir, base := filepath.Split(rel)
	if base == "." || base == ".." || base == "" {
		return nil, "", fmt.Errorf("%s: not a file name", p)
	}
	if dir == "" {
		dir = "."
	}
	fd, err := Resolve(w.fd, dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err == nil {
		return os.NewFile(uintptr(fd), filepath.Join(w.path, dir)), base, nil
	}
	if !mkdirs || !errors.Is(err, unix.ENOENT) {
		return nil, "", w.explain(p, err)
	}
	// Create each missing component beneath the previous, resolved one.
	cur, err := Resolve(w.fd, ".", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, "", w.explain(p, err)
	}
	for _, comp := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
		if comp == "" || comp == "." {
			continue
		}
		next, err := Resolve(cur, comp, unix.O_PATH|unix.O_DIRECTORY, 0)
		if errors.Is(err, unix.ENOENT) && comp != ".." {
			if err = unix.Mkdirat(cur, comp, 0o777); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = Resolve(cur, comp, unix.O_PATH|unix.O_DIRECTORY, 0)
			}
		}
		unix.Close(cur)
		if err != nil {
			return nil, "", w.explain(p, err)
		}
		cur = next
	}
	return os.NewFile(uintptr(cur), filepath.Join(w.path, dir)), base, nil
}
