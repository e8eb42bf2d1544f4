//go:build linux

package home

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/jail-sandbox/jail/confine"
	"golang.org/x/sys/unix"
)

// Root is where the homes live: $XDG_DATA_HOME/jail/homes, or
// ~/.local/share/jail/homes. Empty when neither is an absolute path.
func Root(homeDir, xdgData string) string {
	base := xdgData
	if !filepath.IsAbs(base) {
		if !filepath.IsAbs(homeDir) {
			return ""
		}
		base = filepath.Join(homeDir, ".local", "share")
	}
	return filepath.Join(base, "jail", "homes")
}

// Home is one workspace's persistent home.
type Home struct {
	// Path is the resolved host path of the home directory.
	Path string
	// ID names it: derived from the workspace's identity.
	ID string
	// Workspace is the resolved workspace it belongs to.
	Workspace string
}

// ID is the name of the home of the workspace at resolved path ws with
// file identity st: a hash of the path, device, inode and, where the file
// system records it, birth time (file systems such as tmpfs hand a freed
// inode number to the next directory made, which is another workspace).
func ID(ws string, st *unix.Stat_t) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d\x00%d", ws, st.Dev, st.Ino, birth(ws))))
	return hex.EncodeToString(h[:10])
}

// birth is the birth time of path in nanoseconds, 0 where the file system
// does not record one.
func birth(path string) int64 {
	var sx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_BTIME, &sx) != nil || sx.Mask&unix.STATX_BTIME == 0 {
		return 0
	}
	return sx.Btime.Sec*1e9 + int64(sx.Btime.Nsec)
}

// record is the <id>.json file beside each home: which workspace it
// belongs to, for jail clean. It lives in the homes directory, which no
// sandbox can reach, not in the home itself.
type record struct {
	Workspace string `json:"workspace"`
	Dev       uint64 `json:"dev"`
	Ino       uint64 `json:"ino"`
	Birth     int64  `json:"birth,omitempty"`
}

// Open returns the home of workspace ws (resolved), creating it, and
// the directories above it, when missing. root is Root's result.
func Open(root, ws string) (*Home, error) {
	var st unix.Stat_t
	if err := unix.Stat(ws, &st); err != nil {
		return nil, fmt.Errorf("home: workspace %s: %w", ws, err)
	}
	dirfd, base, err := openRoot(root, true)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	id := ID(ws, &st)
	if err := unix.Mkdirat(dirfd, id, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("home: create %s: %w", filepath.Join(base, id), err)
	}
	fd, err := openOwnDir(dirfd, id, false)
	if err != nil {
		return nil, fmt.Errorf("home: %s: %w", filepath.Join(base, id), err)
	}
	unix.Close(fd)
	rec, _ := json.Marshal(record{Workspace: ws, Dev: st.Dev, Ino: st.Ino, Birth: birth(ws)})
	if old, err := readAt(dirfd, id+".json"); err != nil || string(old) != string(rec) {
		if err := writeAt(dirfd, id+".json", rec); err != nil {
			return nil, fmt.Errorf("home: record %s: %w", filepath.Join(base, id+".json"), err)
		}
	}
	return &Home{Path: filepath.Join(base, id), ID: id, Workspace: ws}, nil
}

// openRoot opens the homes directory (DATA/jail/homes) by descriptor and
// returns it with its resolved path. DATA ($XDG_DATA_HOME, or
// ~/.local/share) is the user's own and may be reached through a symlink;
// jail and homes are jail's, created private when create is set, and must
// be directories (not symlinks) of this user that nobody else may write.
func openRoot(root string, create bool) (int, string, error) {
	if root == "" {
		return -1, "", errors.New("home: no home directory or XDG_DATA_HOME to keep homes in")
	}
	data := filepath.Dir(filepath.Dir(root))
	if create && filepath.Base(data) == "share" && filepath.Base(filepath.Dir(data)) == ".local" {
		// ~/.local/share beneath an existing home; a missing home is not
		// made (HOME=/nonexistent gets no persistent home).
		if _, err := os.Stat(filepath.Dir(filepath.Dir(data))); err == nil {
			os.Mkdir(filepath.Dir(data), 0o700)
			os.Mkdir(data, 0o700)
		}
	} else if create {
		// $XDG_DATA_HOME that does not exist yet is made, as the XDG
		// base directory spec asks of a program that writes there (0700).
		os.Mkdir(data, 0o700)
	}
	resolved, err := filepath.EvalSymlinks(data)
	if err != nil {
		return -1, "", fmt.Errorf("home: %s: %w", data, err)
	}
	fd, err := unix.Open(resolved, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", fmt.Errorf("home: %s: %w", resolved, err)
	}
	path := resolved
	for _, name := range []string{"jail", "homes"} {
		path = filepath.Join(path, name)
		if create {
			if err := unix.Mkdirat(fd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return -1, "", fmt.Errorf("home: create %s: %w", path, err)
			}
		}
		next, err := openOwnDir(fd, name, true)
		unix.Close(fd)
		if err != nil {
			return -1, "", fmt.Errorf("home: %s: %w", path, err)
		}
		fd = next
	}
	return fd, path, nil
}

// ErrInUse is a home that a live run has bound: jail clean leaves it.
var ErrInUse = errors.New("in use by a live run")

// errNotOwn is a directory of jail's that is a symlink, not a directory,
// or not the user's.
var errNotOwn = errors.New("not a directory of this user's that only the user may write (a symlink is refused); not used: remove it, or fix its owner and mode")

// openOwnDir opens dirfd/name as a directory without following a symlink
// and checks it is the user's; private also refuses write access for
// others (a home itself is the sandbox's to chmod, and is not checked for
// that).
func openOwnDir(dirfd int, name string, private bool) (int, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return -1, errNotOwn
	}
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || int(st.Uid) != os.Getuid() || private && st.Mode&0o022 != 0 {
		unix.Close(fd)
		return -1, errNotOwn
	}
	return fd, nil
}

func readAt(dirfd int, name string) ([]byte, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	b := make([]byte, 64<<10)
	n, err := f.Read(b)
	if err != nil {
		return nil, err
	}
	return b[:n], nil
}

// writeAt stores b as dirfd/name: a new file, renamed into place.
func writeAt(dirfd int, name string, b []byte) error {
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := fmt.Sprintf(".tmp-%x", rnd)
	fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dirfd, tmp, dirfd, name)
	}
	if werr != nil {
		unix.Unlinkat(dirfd, tmp, 0)
	}
	return werr
}

// Entry is one home as jail clean lists it.
type Entry struct {
	ID string
	// Path is the home's host path.
	Path string
	// Workspace is the workspace it belongs to ("" when its record is
	// missing or unreadable).
	Workspace string
	// Gone is set when that workspace no longer exists, or is another
	// directory now (another inode under the same name).
	Gone bool
	// Bytes is the disk space the home takes (allocated blocks; files
	// with several links are counted once).
	Bytes int64
	// Leftover marks what an interrupted removal left (.removing-ID-*):
	// no run uses it, and jail clean removes it with its home.
	Leftover bool
}

// trashPrefix starts the name a home is renamed to while it is removed.
const trashPrefix = ".removing-"

// List returns every home under root, sorted by workspace, with sizes.
// A missing homes directory is an empty list.
func List(root string) ([]Entry, error) {
	dirfd, base, err := openRoot(root, false)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	names, err := readNames(dirfd)
	if err != nil {
		return nil, fmt.Errorf("home: list %s: %w", base, err)
	}
	var out []Entry
	for _, n := range names {
		var st unix.Stat_t
		leftover := strings.HasPrefix(n, trashPrefix)
		if strings.HasPrefix(n, ".") && !leftover || strings.HasSuffix(n, ".json") ||
			unix.Fstatat(dirfd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		e := Entry{ID: n, Path: filepath.Join(base, n), Gone: true, Leftover: leftover}
		rec := n
		if leftover {
			// Named after the home it was: its workspace is the one
			// that home's record names, while that record is there.
			rec = leftoverOf(n)
		}
		if b, err := readAt(dirfd, rec+".json"); err == nil {
			var r record
			if json.Unmarshal(b, &r) == nil {
				e.Workspace = r.Workspace
				var ws unix.Stat_t
				e.Gone = unix.Stat(r.Workspace, &ws) != nil || ws.Dev != r.Dev || ws.Ino != r.Ino || birth(r.Workspace) != r.Birth
			}
		}
		seen := map[[2]uint64]bool{}
		if fd, err := unix.Openat(dirfd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			e.Bytes = st.Blocks*512 + sizeAt(fd, seen)
			unix.Close(fd)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Workspace != out[j].Workspace {
			return out[i].Workspace < out[j].Workspace
		}
		if out[i].Leftover != out[j].Leftover {
			return !out[i].Leftover
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// leftoverOf is the home ID in a leftover's name (.removing-ID-RANDOM).
func leftoverOf(name string) string {
	id := strings.TrimPrefix(name, trashPrefix)
	if i := strings.LastIndexByte(id, '-'); i >= 0 {
		id = id[:i]
	}
	return id
}

// Find returns the entries of the workspace at resolved path ws: its
// home, if it has one, and what interrupted removals of its homes left.
func Find(root, ws string) ([]Entry, error) {
	var st unix.Stat_t
	if err := unix.Stat(ws, &st); err != nil {
		return nil, fmt.Errorf("home: workspace %s: %w", ws, err)
	}
	es, err := List(root)
	if err != nil {
		return nil, err
	}
	id := ID(ws, &st)
	var out []Entry
	for _, e := range es {
		if e.ID == id || e.Leftover && leftoverOf(e.ID) == id {
			out = append(out, e)
		}
	}
	return out, nil
}

// Remove deletes the home id and its record. The home is first renamed
// to a hidden name, so a run starting meanwhile makes a fresh one rather
// than getting half of the old; then its tree is removed beneath held
// descriptors, never following a symlink.
//
// A leftover's name (an Entry with Leftover set) removes that tree, and
// the record of its home when the home itself is gone.
func Remove(root, id string) error {
	leftover := strings.HasPrefix(id, trashPrefix)
	if leftover && strings.Contains(id, "/") || !leftover && (id == "" || strings.ContainsAny(id, "/.")) {
		return fmt.Errorf("home: %q is not a home's name", id)
	}
	dirfd, base, err := openRoot(root, false)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if leftover {
		if err := removeAt(dirfd, id); err != nil {
			return fmt.Errorf("home: remove %s: %w", filepath.Join(base, id), err)
		}
		var st unix.Stat_t
		if of := leftoverOf(id); unix.Fstatat(dirfd, of, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			unix.Unlinkat(dirfd, of+".json", 0)
		}
		return nil
	}
	// A live run has the home bound, and holds it (confine.Claim): it is
	// not taken away under the sandbox, whose mount the rename would
	// move along to the trash.
	unlock, err := confine.Claim(dirfd, id)
	if errors.Is(err, confine.ErrHeld) {
		by := "a process jail cannot name"
		// O_PATH: the sandbox may have made its home unreadable.
		if hfd, err := unix.Openat(dirfd, id, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			if d := confine.DescribeHolders(hfd); d != "" {
				by = d
			}
			unix.Close(hfd)
		}
		return fmt.Errorf("%w (%s); run jail clean again once it has ended", ErrInUse, by)
	}
	if err != nil {
		return fmt.Errorf("home: remove %s: %w", filepath.Join(base, id), err)
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	trash := fmt.Sprintf(".removing-%s-%x", id, rnd)
	err = unix.Renameat(dirfd, id, dirfd, trash)
	unlock()
	if err != nil {
		return fmt.Errorf("home: remove %s: %w", filepath.Join(base, id), err)
	}
	if err := removeAt(dirfd, trash); err != nil {
		return fmt.Errorf("home: remove %s: %w", filepath.Join(base, id), err)
	}
	if err := unix.Unlinkat(dirfd, id+".json", 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("home: remove %s: %w", filepath.Join(base, id+".json"), err)
	}
	return nil
}

func readNames(fd int) ([]string, error) {
	d, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(d), ".")
	defer f.Close()
	return f.Readdirnames(-1)
}

// sizeAt sums the blocks of everything beneath the directory fd, without
// following symlinks; seen counts each inode once.
func sizeAt(fd int, seen map[[2]uint64]bool) int64 {
	names, err := readNames(fd)
	if err != nil {
		return 0
	}
	var total int64
	for _, n := range names {
		var st unix.Stat_t
		if unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		k := [2]uint64{st.Dev, st.Ino}
		if seen[k] {
			continue
		}
		seen[k] = true
		total += st.Blocks * 512
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			if sub, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
				total += sizeAt(sub, seen)
				unix.Close(sub)
			}
		}
	}
	return total
}

// removeAt removes dirfd/name and everything beneath it by descriptor.
// Directories are opened with O_NOFOLLOW and made writable by their owner
// first (Go's module cache is read-only on purpose); a symlink is removed
// as itself. A name swapped meanwhile by a sandbox using the home fails
// the open or is unlinked as whatever it is: nothing outside is reached.
func removeAt(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) {
		return err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) {
		// A directory the sandbox made unreadable (chmod 000): made
		// accessible through a descriptor that cannot be a symlink's
		// target, then opened again.
		if p, perr := unix.Openat(dirfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); perr == nil {
			unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(p), 0o700, 0)
			unix.Close(p)
		}
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && int(st.Uid) == os.Getuid() && st.Mode&0o700 != 0o700 {
		unix.Fchmod(fd, 0o700)
	}
	names, err := readNames(fd)
	for _, n := range names {
		if rerr := removeAt(fd, n); rerr != nil && err == nil {
			err = rerr
		}
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// Seed writes data at rel beneath home h when nothing is there yet: the
// sandbox's own copy of a host file (an agent's ~/.claude.json). The home
// is the sandbox's to change, so every component is opened beneath the
// homes directory's descriptor without following a symlink, and the file
// is created exclusively: whatever the sandbox put there stays.
func Seed(root string, h *Home, rel string, data []byte) error {
	dirfd, _, err := openRoot(root, false)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	fd, err := openOwnDir(dirfd, h.ID, false)
	if err != nil {
		return fmt.Errorf("home: %s: %w", h.Path, err)
	}
	parts := strings.Split(filepath.Clean(rel), "/")
	for _, dir := range parts[:len(parts)-1] {
		if err := unix.Mkdirat(fd, dir, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(fd)
			return fmt.Errorf("home: seed %s: %w", rel, err)
		}
		next, err := unix.Openat(fd, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return nil // not a directory of the home's own: left as the sandbox made it
		}
		fd = next
	}
	defer unix.Close(fd)
	f, err := unix.Openat(fd, parts[len(parts)-1], unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("home: seed %s: %w", rel, err)
	}
	file := os.NewFile(uintptr(f), rel)
	_, werr := file.Write(data)
	if cerr := file.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("home: seed %s: %w", rel, werr)
	}
	return nil
}
