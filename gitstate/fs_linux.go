package gitstate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// resolveHow is the rule for every open this package makes: the kernel walks
// the name beneath the held directory and refuses any symlink (ELOOP), any
// step out of it (EXDEV) and /proc's magic links. Nothing here follows a
// symlink, in the host's git directory or in the sandbox's upper.
const resolveHow = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openBeneath opens name beneath dirfd under resolveHow. The final
// component is never followed either (O_NOFOLLOW on top of the resolve
// flags, for the O_PATH case where ELOOP would otherwise not apply).
func openBeneath(dirfd int, name string, flags int, mode uint32) (int, error) {
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	if flags&unix.O_PATH == 0 {
		// openat2 refuses any other flag beside O_PATH.
		flags |= unix.O_NOCTTY
	}
	how := unix.OpenHow{
		Flags:   uint64(flags),
		Mode:    uint64(mode),
		Resolve: resolveHow,
	}
	for tries := 0; ; tries++ {
		fd, err := unix.Openat2(dirfd, name, &how)
		// EAGAIN: a rename elsewhere made the kernel's beneath check
		// unsafe for this walk; the kernel asks for a retry.
		if (err == unix.EAGAIN && tries < 64) || err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, err
		}
		return fd, nil
	}
}

// openDir opens the directory name beneath dirfd ("." for dirfd itself).
func openDir(dirfd int, name string) (int, error) {
	return openBeneath(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
}

// fstatat stats name beneath dirfd without following a symlink. name is
// resolved with openat2 first, so a symlinked parent fails rather than
// being followed.
func lstatBeneath(dirfd int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := openBeneath(dirfd, name, unix.O_PATH, 0)
	if err != nil {
		return st, err
	}
	defer unix.Close(fd)
	err = unix.Fstat(fd, &st)
	return st, err
}

// errTooLarge and friends describe why a file was not read.
var (
	errTooLarge    = errors.New("larger than the limit")
	errNotRegular  = errors.New("not a regular file")
	errHardLinked  = errors.New("hard-linked (more than one name)")
	errLimitedRead = errors.New("read limit reached")
)

// fileInfo is what readFile learnt about the file it read.
type fileInfo struct {
	Mode  uint32
	Dev   uint64
	Ino   uint64
	Size  int64
	Mtime int64 // nanoseconds since the epoch
}

// readFile reads the regular file name beneath dirfd, at most max bytes.
// With single, a file with more than one link is refused: a hard link in
// the sandbox's upper may be another file's inode. The file is opened
// O_NONBLOCK so a FIFO swapped in cannot hang the reader, then checked by
// fstat on the open descriptor, which is what is read.
func readFile(dirfd int, name string, max int64, single bool) ([]byte, fileInfo, error) {
	var fi fileInfo
	fd, err := openBeneath(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fi, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fi, err
	}
	fi = fileInfo{Mode: st.Mode, Dev: st.Dev, Ino: st.Ino, Size: st.Size, Mtime: st.Mtim.Nano()}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fi, errNotRegular
	}
	if single && st.Nlink != 1 {
		return nil, fi, errHardLinked
	}
	if st.Size > max {
		return nil, fi, fmt.Errorf("%d bytes, %w of %d", st.Size, errTooLarge, max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fi, err
	}
	if int64(len(data)) > max {
		return nil, fi, fmt.Errorf("%w of %d bytes", errTooLarge, max)
	}
	return data, fi, nil
}

// dirEntry is one name in a directory and its type from d_type (or lstat
// when the file system gives none).
type dirEntry struct {
	Name string
	Type uint32 // S_IFMT bits
}

// readDir lists the directory dirfd (which it does not close) with at most
// max entries; more is an error naming the limit.
func readDir(dirfd int, max int) ([]dirEntry, error) {
	fd, err := unix.Dup(dirfd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "dir")
	defer f.Close()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	var out []dirEntry
	for {
		ents, err := f.ReadDir(256)
		for _, e := range ents {
			var t uint32
			switch m := e.Type(); {
			case m.IsDir():
				t = unix.S_IFDIR
			case m.IsRegular():
				t = unix.S_IFREG
			case m&os.ModeSymlink != 0:
				t = unix.S_IFLNK
			case m&os.ModeNamedPipe != 0:
				t = unix.S_IFIFO
			case m&os.ModeSocket != 0:
				t = unix.S_IFSOCK
			case m&os.ModeCharDevice != 0:
				t = unix.S_IFCHR
			case m&os.ModeDevice != 0:
				t = unix.S_IFBLK
			}
			out = append(out, dirEntry{Name: e.Name(), Type: t})
			if len(out) > max {
				return out, fmt.Errorf("more than %d entries: %w", max, errLimitedRead)
			}
		}
		if err == io.EOF || len(ents) == 0 {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// mkdirAll creates each missing directory of rel beneath dirfd, one
// component at a time on the held parent, and returns the last one open.
// A component that exists as anything but a directory is an error (ENOTDIR
// from openat2; a symlink is ELOOP).
func mkdirAll(dirfd int, rel string, perm uint32) (int, error) {
	cur, err := unix.Dup(dirfd)
	if err != nil {
		return -1, err
	}
	if rel == "" || rel == "." {
		return cur, nil
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." {
			unix.Close(cur)
			return -1, fmt.Errorf("bad path component %q", c)
		}
		if err := unix.Mkdirat(cur, c, perm); err != nil && err != unix.EEXIST {
			unix.Close(cur)
			return -1, fmt.Errorf("mkdir %s: %w", c, err)
		}
		next, err := openDir(cur, c)
		unix.Close(cur)
		if err != nil {
			return -1, fmt.Errorf("open %s: %w", c, err)
		}
		cur = next
	}
	return cur, nil
}

// splitName splits "a/b/c" into "a/b" and "c" ("" and "c" for one name).
func splitName(name string) (string, string) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return "", name
	}
	return name[:i], name[i+1:]
}

// lockFile is git's lock protocol on one file: "<name>.lock" created with
// O_EXCL in the file's (held) directory, written, then renamed over the
// name. A git process running at the same time sees the lock and
// waits or fails, as it would with another git.
type lockFile struct {
	dirfd int // owned
	base  string
	fd    int
	done  bool
}

// lockRetry is how long acquiring a lock waits for another holder: git's
// own default for packed-refs (core.packedRefsTimeout) is one second.
const lockRetry = time.Second

// lock takes name's lock beneath dirfd, creating missing parent
// directories. mode is the new file's permission bits.
func lock(dirfd int, name string, mode uint32) (*lockFile, error) {
	dir, base := splitName(name)
	dfd, err := mkdirAll(dirfd, dir, 0o777)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(lockRetry)
	delay := time.Millisecond
	for {
		fd, err := openBeneath(dfd, base+".lock", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, mode)
		if err == nil {
			// The umask may have cut the bits; the copy keeps the
			// original's mode.
			if err := unix.Fchmod(fd, mode); err != nil {
				unix.Close(fd)
				unix.Unlinkat(dfd, base+".lock", 0)
				unix.Close(dfd)
				return nil, err
			}
			return &lockFile{dirfd: dfd, base: base, fd: fd}, nil
		}
		if err != unix.EEXIST || time.Now().After(deadline) {
			unix.Close(dfd)
			if err == unix.EEXIST {
				return nil, fmt.Errorf("%s.lock exists (another git process holds it)", name)
			}
			return nil, err
		}
		time.Sleep(delay)
		if delay < 50*time.Millisecond {
			delay *= 2
		}
	}
}

// commit writes data to the lock and renames it over the name. It does
// not fsync (git's default core.fsync does not sync refs or the index
// either); Adopt and AdoptNew sync the file system once at the end, before
// the caller may remove the sandbox's copy.
func (l *lockFile) commit(data []byte) error {
	if l.done {
		return errors.New("lock already released")
	}
	f := os.NewFile(uintptr(l.fd), l.base+".lock")
	_, err := f.Write(data)
	cerr := f.Close()
	l.fd = -1
	if err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(l.dirfd, l.base+".lock", l.dirfd, l.base)
	}
	if err != nil {
		unix.Unlinkat(l.dirfd, l.base+".lock", 0)
	}
	unix.Close(l.dirfd)
	l.done = true
	return err
}

// release drops the lock without changing the file.
func (l *lockFile) release() {
	if l.done {
		return
	}
	if l.fd >= 0 {
		unix.Close(l.fd)
	}
	unix.Unlinkat(l.dirfd, l.base+".lock", 0)
	unix.Close(l.dirfd)
	l.done = true
}

// xattr reads an extended attribute of the open file fd, "" when absent.
func xattr(fd int, name string) string {
	buf := make([]byte, 64)
	n, err := unix.Fgetxattr(fd, name, buf)
	if err != nil {
		return ""
	}
	return string(buf[:n])
}
