//go:build linux

package gitview

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/jail-sandbox/jail/termtext"
	"golang.org/x/sys/unix"
)

// The state directory holds the uppers of running and unfinished runs:
//
//	STATE/jail/git/WSKEY/RUN/meta         what the run was made from (meta.go)
//	STATE/jail/git/WSKEY/RUN/gN/upper     the overlay's upper of repository N
//	STATE/jail/git/WSKEY/RUN/gN/work      its work directory
//
// WSKEY names the workspace (a hash of its resolved path), RUN the run (16
// random hex digits). A live run holds an exclusive flock on its RUN
// directory from before its sandbox starts until its upper is adopted and
// removed; a RUN directory nobody holds was left by a run that ended
// early, and the next run in the workspace adopts it.

// StateDir is where jail keeps git state between the launch of a sandbox
// and the adoption of its changes: $XDG_STATE_HOME/jail/git, or
// ~/.local/state/jail/git. Empty when neither is an absolute path.
func StateDir(home, xdgState string) string {
	base := xdgState
	if !filepath.IsAbs(base) {
		if !filepath.IsAbs(home) {
			return ""
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "jail", "git")
}

// openStateDir opens dir (BASE/jail/git), creating what is missing: BASE
// itself only as ~/.local/state beneath an existing home, jail and git
// always as private directories, without following a symlink at either.
// Both must be the user's own with no access for anyone else; jail never
// changes the mode of what it finds.
func openStateDir(dir string) (int, error) {
	base := filepath.Dir(filepath.Dir(dir))
	fd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) && strings.HasSuffix(base, "/.local/state") {
		// The home exists (or open fails below): ~/.local and
		// ~/.local/state are made as a desktop's first program would.
		for _, d := range []string{filepath.Dir(base), base} {
			if err := unix.Mkdir(d, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
				return -1, fmt.Errorf("git state: %w", err)
			}
		}
		fd, err = unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return -1, fmt.Errorf("git state: %s: %w", base, err)
	}
	for i, name := range []string{"jail", "git"} {
		// jail's own directory is shared with the plan cache and the
		// audit log, which may have made it 0755: it must be the user's
		// and writable by nobody else. The git directory is private.
		check := privateSubdir
		if i == 0 {
			check = ownSubdir
		}
		next, err := check(fd, name)
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("git state: %s: %w", filepath.Join(base, "jail", name), err)
		}
		fd = next
	}
	return fd, nil
}

// privateSubdir creates (if missing) and opens the directory name beneath
// dirfd, refusing a symlink and anything but a private directory of the
// user's.
func privateSubdir(dirfd int, name string) (int, error) {
	return userSubdir(dirfd, name, 0o077, "not a private directory of this user (mode 0700); not used")
}

// ownSubdir is privateSubdir for a directory others may read but not
// write.
func ownSubdir(dirfd int, name string) (int, error) {
	return userSubdir(dirfd, name, 0o022, "not a directory of this user that only this user may write; not used")
}

// userSubdir creates (if missing, mode 0700) and opens the directory name
// beneath dirfd without following a symlink, and refuses it unless it is
// the user's with none of the mode bits in deny set.
func userSubdir(dirfd int, name string, deny uint32, refusal string) (int, error) {
	if err := unix.Mkdirat(dirfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || int(st.Uid) != os.Getuid() || st.Mode&deny != 0 {
		unix.Close(fd)
		return -1, errors.New(refusal)
	}
	return fd, nil
}

// openFallbackStateDir is the state directory when the home has none
// (HOME unset or missing, as on some CI runners): a private directory of
// the user's in the temporary directory. Another user who made the name
// first makes it fail, never shared.
func openFallbackStateDir() (int, string, error) {
	tmp, err := unix.Open(os.TempDir(), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", err
	}
	defer unix.Close(tmp)
	name := fmt.Sprintf("jail-%d", os.Getuid())
	top, err := privateSubdir(tmp, name)
	if err != nil {
		return -1, "", fmt.Errorf("%s: %w", filepath.Join(os.TempDir(), name), err)
	}
	defer unix.Close(top)
	fd, err := privateSubdir(top, "git")
	return fd, filepath.Join(os.TempDir(), name, "git"), err
}

// workspaceKey names a workspace's directory in the state directory.
func workspaceKey(ws string) string {
	h := sha256.Sum256([]byte(ws))
	return hex.EncodeToString(h[:8])
}

// newRunName is a fresh RUN name.
func newRunName() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// isRunName reports whether name is one newRunName could have made.
func isRunName(name string) bool {
	if len(name) != 16 {
		return false
	}
	_, err := hex.DecodeString(name)
	return err == nil
}

// openDir opens the directory name beneath dirfd without following a
// symlink.
func openDir(dirfd int, name string) (int, error) {
	return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// removeAll removes name beneath dirfd and everything in it, by
// descriptor: no symlink is followed, and a directory the sandbox made
// unreadable (an upper keeps the modes the sandbox set) is opened up first.
func removeAll(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return err
	}
	// A directory, whose own mode may deny listing it (0, say): it is
	// opened without following a symlink and its mode set through the
	// descriptor, so nothing else can be chmod'ed in its place.
	pfd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", pfd), 0o700)
	fd, err := unix.Openat(pfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	unix.Close(pfd)
	if err != nil {
		return err
	}
	names, err := readNames(fd)
	if err == nil {
		for _, n := range names {
			if err = removeAll(fd, n); err != nil {
				break
			}
		}
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// readNames lists the directory fd (not "." and "..").
func readNames(fd int) ([]string, error) {
	d, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(d), "dir")
	defer f.Close()
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	return f.Readdirnames(-1)
}

// Clean finishes, for `jail clean`, what runs killed before their end
// left in jail's git state directory dir: for the workspace ws (resolved),
// or for every workspace when ws is "", each RUN directory no live run
// holds is adopted and the repositories its sandbox made in
// subdirectories are reduced, as the next run in the workspace would do,
// and .new-RUN leftovers are removed; the pending reductions of every
// workspace that no live run holds any more are done (ReducePending). A
// workspace that no longer exists is skipped. It reports on w what it did and where kept-RUN directories
// (objects refused) are, and returns the first error met.
func Clean(dir, ws string, w io.Writer) error {
	sd, err := openStateDir(dir)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(sd)
	// What runs' ends left to the last run out, in every workspace.
	ReducePending(dir, w)
	keys := []string{workspaceKey(ws)}
	if ws == "" {
		if keys, err = readNames(sd); err != nil {
			return fmt.Errorf("git state: %w", err)
		}
	}
	for _, k := range keys {
		kfd, err := openDir(sd, k)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("git state: %s: %w", filepath.Join(dir, k), err)
		}
		cleanKey(kfd, filepath.Join(dir, k), ws, dir, w)
		unix.Close(kfd)
	}
	return nil
}

// cleanKey is Clean for one workspace's directory kfd.
func cleanKey(kfd int, keyDir, ws, stateDir string, w io.Writer) {
	names, err := readNames(kfd)
	if err != nil {
		return
	}
	for _, n := range names {
		if strings.HasPrefix(n, keptPrefix) {
			termtext.Fprintf(w, "jail clean: git: %s holds a sandbox's git state whose objects were refused; remove it when you no longer need it\n", filepath.Join(keyDir, n))
			continue
		}
		if ws != "" || !isRunName(n) {
			continue
		}
		// Every workspace: the workspace is the one a RUN directory
		// names, checked again against the key.
		fd, err := openDir(kfd, n)
		if err != nil {
			continue
		}
		if m, err := readMeta(fd); err == nil && filepath.IsAbs(m.Workspace) && workspaceKey(m.Workspace) == filepath.Base(keyDir) {
			ws = m.Workspace
		}
		unix.Close(fd)
	}
	if ws == "" {
		recoverNew(kfd)
		return
	}
	wsfd, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		recoverNew(kfd)
		return // gone: nothing to adopt into
	}
	defer unix.Close(wsfd)
	skip := ""
	if rel, err := filepath.Rel(ws, filepath.Dir(filepath.Dir(keyDir))); err == nil && !strings.HasPrefix(rel, "..") {
		skip = rel
	}
	recoverKey(w, wsfd, ws, kfd, keyDir, skip, nil, stateDir) // the names a run's meta does not record are not known here
}

// recoverNew removes the .new-RUN leftovers of a workspace's directory.
func recoverNew(kfd int) {
	names, _ := readNames(kfd)
	for _, n := range names {
		if t, ok := strings.CutPrefix(n, ".new-"); ok && isRunName(t) {
			removeNewLeft(kfd, n)
		}
	}
}
