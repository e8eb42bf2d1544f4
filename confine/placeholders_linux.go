//go:build linux

package confine

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/jail-sandbox/jail/termtext"
	"golang.org/x/sys/unix"
)

// A protected path that does not exist cannot be made read-only: a mount
// needs something to sit on. Placeholders are that something: an empty
// directory jail makes at the first missing component of each protected
// path while a run lasts, covers read-only inside the sandbox, and removes
// when the run ends. An empty directory is what git ignores (the host's
// `git status --porcelain` is the same before, during and after a run),
// and the host's own tools can create files in it during the run (the
// user's editor making .vscode/settings.json); inside, the sandbox sees
// those read-only and can neither create nor change anything there.
//
// Everything jail does with a placeholder on the host goes through
// descriptors: the parent is opened beneath the workspace without
// following any symlink and held for the whole run, the directory is made
// with mkdirat and removed with unlinkat(parent, name, AT_REMOVEDIR), and
// only while the name still holds the inode jail made (checked on the
// held parent). rmdir removes nothing but an empty directory, so whatever
// a concurrent sandbox swaps in at that name meanwhile, jail can at worst
// remove an empty directory of the same tree, never a file, never
// anything outside it (a renamed parent only moves the held descriptor
// within its mount: renames across mounts fail with EXDEV).
//
// Concurrent runs in one workspace: every run holds a shared flock on each
// placeholder and on every other object its sandbox has a mount on
// (holds_linux.go: a removed or renamed directory would take the other
// run's mount with it, since the kernel refuses neither for a mountpoint
// of another namespace). A placeholder
// is removed only by a run that can then take the lock exclusively, so
// the last run that relies on it removes it. Placeholders carry the xattr
// user.jail=placeholder: a later run takes over one that an earlier run
// left (jail killed with SIGKILL) and removes it at its own end. One the
// host's tools wrote into during the run is no longer empty: it loses the
// mark and stays, as the user's.

// placeholderXattr marks a placeholder directory.
const (
	placeholderXattr = "user.jail"
	placeholderValue = "placeholder"
)

// Placeholders are the placeholder directories one run relies on (made or
// taken over), and the shared locks it holds on the host objects its
// sandbox has mounts on (holds_linux.go).
type Placeholders struct {
	held []placeholder
	// locks are the descriptors holding the shared locks, locked what
	// the plan cache's run locks again: workspace-relative, or absolute
	// outside the workspace.
	locks  []int
	locked []string
	// Report takes the line naming what another hand put at a
	// placeholder's name while the run lasted (Release moves it aside).
	Report io.Writer
}

// placeholder is one directory a run relies on: the held parent, the
// name in it, the directory itself (holding the shared lock) and its
// identity.
type placeholder struct {
	rel          string // workspace-relative, for the plan cache
	parent, fd   int
	name         string
	dev, ino     uint64
	made, stolen bool // made by this run; taken over from another
}

// errAppeared is a placeholder's name that exists now: another process
// created it between the walk and the mkdir.
var errAppeared = errors.New("appeared while it was being protected")

// create makes the placeholder directory at prefix beneath the workspace
// (wsfd), or takes over the placeholder another run left there.
func (ph *Placeholders) create(wsfd int, prefix string) (placeholder, error) {
	dir, name := filepath.Split(prefix)
	var pfd int
	var err error
	if dir == "" {
		pfd, err = unix.FcntlInt(uintptr(wsfd), unix.F_DUPFD_CLOEXEC, 3)
	} else {
		pfd, err = openIn(wsfd, filepath.Clean(dir))
	}
	if err != nil {
		return placeholder{}, fmt.Errorf("open the parent of %s: %w", prefix, err)
	}
	p := placeholder{rel: prefix, parent: pfd, fd: -1, name: name}
	// Mode as mkdir(1) makes it: the user's tools write here during the
	// run; inside the sandbox a read-only mount covers it.
	if err := unix.Mkdirat(pfd, name, 0o777); err != nil {
		unix.Close(pfd)
		if errors.Is(err, unix.EEXIST) {
			return placeholder{}, errAppeared
		}
		return placeholder{}, fmt.Errorf("create placeholder %s: %w", prefix, err)
	}
	p.made = true
	fd, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(pfd)
		return placeholder{}, fmt.Errorf("open placeholder %s: %w", prefix, err)
	}
	p.fd = fd
	// Not every file system has user xattrs; without the mark a leftover
	// placeholder is simply not taken over by a later run.
	_ = unix.Fsetxattr(fd, placeholderXattr, []byte(placeholderValue), 0)
	if err := ph.finish(&p); err != nil {
		return placeholder{}, err
	}
	return p, nil
}

// takeOver relies on the placeholder another run made at prefix (an empty
// directory with the mark): a shared lock, then a check that it is still
// there (its last holder may have removed it just before). It returns
// ok=false when prefix is not such a placeholder.
func (ph *Placeholders) takeOver(wsfd int, prefix string) (p placeholder, ok bool, err error) {
	fd, err := openDirIn(wsfd, prefix)
	if err != nil {
		return placeholder{}, false, nil
	}
	if !isPlaceholder(fd) || !emptyDir(fd) {
		unix.Close(fd)
		return placeholder{}, false, nil
	}
	dir, name := filepath.Split(prefix)
	var pfd int
	if dir == "" {
		pfd, err = unix.FcntlInt(uintptr(wsfd), unix.F_DUPFD_CLOEXEC, 3)
	} else {
		pfd, err = openIn(wsfd, filepath.Clean(dir))
	}
	if err != nil {
		unix.Close(fd)
		return placeholder{}, false, nil
	}
	p = placeholder{rel: prefix, parent: pfd, fd: fd, name: name, stolen: true}
	if err := ph.finish(&p); err != nil {
		return placeholder{}, false, nil
	}
	return p, true, nil
}

// finish locks p shared and checks that its name still holds it, then
// keeps it; on failure p's descriptors are closed.
func (ph *Placeholders) finish(p *placeholder) error {
	var st, now unix.Stat_t
	err := flockRetry(p.fd, unix.LOCK_SH)
	if err == nil {
		err = unix.Fstat(p.fd, &st)
	}
	if err == nil {
		err = unix.Fstatat(p.parent, p.name, &now, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err == nil && (st.Dev != now.Dev || st.Ino != now.Ino || st.Nlink == 0) {
		err = errAppeared
	}
	if err != nil {
		if p.made {
			unix.Unlinkat(p.parent, p.name, unix.AT_REMOVEDIR)
		}
		unix.Close(p.fd)
		unix.Close(p.parent)
		return fmt.Errorf("placeholder %s: %w", p.rel, err)
	}
	p.dev, p.ino = st.Dev, st.Ino
	ph.held = append(ph.held, *p)
	return nil
}

// flockRetry is flock that retries when a signal interrupts it.
func flockRetry(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// isPlaceholder reports whether the object at fd carries the mark.
func isPlaceholder(fd int) bool {
	buf := make([]byte, len(placeholderValue))
	n, err := unix.Fgetxattr(fd, placeholderXattr, buf)
	return err == nil && string(buf[:n]) == placeholderValue
}

// emptyDir reports whether the directory at fd (opened O_RDONLY) holds
// nothing but . and ..; fd's offset is left at the start.
func emptyDir(fd int) bool {
	buf := make([]byte, 4096)
	n, err := unix.Getdents(fd, buf)
	unix.Seek(fd, 0, 0)
	if err != nil {
		return false
	}
	_, _, names := unix.ParseDirent(buf[:n], -1, nil)
	return len(names) == 0
}

// openDirIn opens the directory rel beneath dirfd for reading, without
// following any symlink (a FIFO or a device there is refused by
// O_DIRECTORY, never opened).
func openDirIn(dirfd int, rel string) (int, error) {
	return unix.Openat2(dirfd, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// Release removes the placeholders this run relied on, unless another run
// still holds one (that run removes it at its end), then drops its locks.
// It must be called after the sandbox exited.
func (ph *Placeholders) Release() {
	if ph == nil {
		return
	}
	ph.Unhold()
	var aside []string
	for _, p := range ph.held {
		if a := p.release(); a != "" {
			aside = append(aside, p.rel+" (now "+a+")")
		}
	}
	ph.held = nil
	if len(aside) > 0 && ph.Report != nil {
		termtext.Fprintf(ph.Report, "jail: files that editors, agent CLIs and hooks managers run code from were put in place of what this run protected while it lasted (by a sandbox whose workspace holds this one, or a swap), and were moved aside; look at them before you rename them back: %s\n", strings.Join(aside, ", "))
	}
}

// replaced moves aside what stands at p's name when it is not p's
// directory: another hand (a sandbox whose workspace holds this one, a
// run in a parent directory that renamed the placeholder away) put it
// there while the run lasted, and no walk of that run may reach it (below
// its depth, in node_modules). An empty directory or file is left
// (nothing in it runs; another run's placeholder is one), and so is what a live run
// holds (Claim). It returns the name it was moved to.
func (p placeholder) replaced() string {
	var st unix.Stat_t
	if unix.Fstatat(p.parent, p.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Dev == p.dev && st.Ino == p.ino ||
		st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size == 0 {
		return ""
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if fd, err := openDirIn(p.parent, p.name); err == nil {
			empty := emptyDir(fd)
			unix.Close(fd)
			if empty {
				return ""
			}
		}
	}
	unlock, err := Claim(p.parent, p.name)
	if err != nil {
		return ""
	}
	defer unlock()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return ""
	}
	aside := fmt.Sprintf("%s.jail-%x", p.name, b)
	if unix.Renameat2(p.parent, p.name, p.parent, aside, unix.RENAME_NOREPLACE) != nil {
		return ""
	}
	return aside
}

// release removes the placeholder by descriptor when no run holds it any
// more and its name still holds it; one that is not empty (the host's
// tools wrote into it) loses the mark and stays. What another hand put
// at its name instead is moved aside (replaced), and the name it went
// to returned.
func (p placeholder) release() string {
	defer unix.Close(p.parent)
	defer unix.Close(p.fd)
	if a := p.replaced(); a != "" {
		return a
	}
	// Converting the shared lock drops it first: of several runs ending
	// at once, the last to try gets it.
	if unix.Flock(p.fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return ""
	}
	var st unix.Stat_t
	if unix.Fstatat(p.parent, p.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Dev != p.dev || st.Ino != p.ino {
		return ""
	}
	err := unix.Unlinkat(p.parent, p.name, unix.AT_REMOVEDIR)
	if errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
		unix.Fremovexattr(p.fd, placeholderXattr)
	}
	return ""
}

// cacheParts are what a plan cache entry keeps of the placeholders: the
// workspace-relative paths this run made them at, and where in the plan
// each one's identity goes. A run that took over another run's
// placeholder is not cached (ok false): that one goes when its last
// holder ends.
func (ph *Placeholders) cacheParts() (made []placeholder, ok bool) {
	for _, p := range ph.held {
		if p.stolen {
			return nil, false
		}
		made = append(made, p)
	}
	return made, true
}
