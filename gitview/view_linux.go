//go:build linux

package gitview

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/gitstate"
	"golang.org/x/sys/unix"
)

// Options say where a run's git view is made.
type Options struct {
	// Workspace is the resolved workspace.
	Workspace string
	// StateDir is jail's git state directory (StateDir).
	StateDir string
	// ReadOnly is set when the workspace is bound read-only: its git
	// directories are read-only with it, and nothing is adopted.
	ReadOnly bool
	// Facts, when not nil, records what the view depends on for the plan
	// cache.
	Facts *confine.Facts
	// Report takes the lines a run says about git (what was adopted or
	// dropped, upper directories left by earlier runs).
	Report io.Writer
}

// Run is the git view of one sandbox: the mounts that make it, and what
// Finish adopts once the sandbox has ended.
type Run struct {
	opt     Options
	mounts  []confine.Mount
	protect []string
	name    string // the RUN directory's name
	keyfd   int    // the workspace's directory in the state directory
	dirfd   int    // the RUN directory, flocked
	repos   []*repo
}

// repo is one host git directory shown as an overlay.
type repo struct {
	Rel      string `json:"rel"` // beneath the workspace
	Dev, Ino uint64
	Base     []byte `json:"base"` // gitstate.Snapshot, binary
	fd       int    // the host git directory, opened by descriptor
}

// meta is what the RUN directory records of the run, for a later run
// that adopts it when this one could not.
type meta struct {
	Workspace string  `json:"workspace"`
	Repos     []*repo `json:"repos"`
}

// Prepare builds the git view of a sandbox in o.Workspace: a read-only
// lower and a private upper for each git directory the host's git would
// use there. Upper directories that earlier runs in the workspace left
// unadopted are adopted first. The caller adds Mounts to the sandbox and
// Protected to its protected paths, and calls Finish after the sandbox
// has ended (also when it failed to start).
func Prepare(o Options) (*Run, error) {
	r := &Run{opt: o, keyfd: -1, dirfd: -1}
	if o.Report == nil {
		r.opt.Report = io.Discard
	}
	wsfd, err := unix.Open(o.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("git view: open workspace: %w", err)
	}
	defer unix.Close(wsfd)
	var st unix.Stat_t
	err = unix.Fstatat(wsfd, ".git", &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
		// No repository: .git may not be created in the sandbox.
		o.Facts.Type(filepath.Join(o.Workspace, ".git"), 0)
		r.protect = append(r.protect, ".git")
		return r, nil
	case err != nil:
		return nil, fmt.Errorf("git view: %s/.git: %w", o.Workspace, err)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR || o.ReadOnly || !isGitDir(wsfd, ".git"):
		// A gitfile or a symlink naming the git directory elsewhere:
		// kept as it is, so it cannot be pointed at a directory the
		// sandbox made. A directory git does not take for a repository
		// is kept as it is too: filled in, it would become one. A
		// read-only workspace covers .git already.
		r.protect = append(r.protect, ".git")
		return r, nil
	}
	// A repository: the plan depends on the directory's identity and
	// contents, which the plan cache cannot check yet.
	o.Facts.Unsure()
	sd, err := openStateDir(o.StateDir)
	if err != nil {
		return nil, fmt.Errorf("%w (set XDG_STATE_HOME to a directory of yours)", err)
	}
	r.keyfd, err = privateSubdir(sd, workspaceKey(o.Workspace))
	unix.Close(sd)
	if err != nil {
		return nil, fmt.Errorf("git state: %w", err)
	}
	r.adoptPending()
	r.name = newRunName()
	if err := unix.Mkdirat(r.keyfd, r.name, 0o700); err != nil {
		r.Finish()
		return nil, fmt.Errorf("git state: %w", err)
	}
	if r.dirfd, err = openDir(r.keyfd, r.name); err == nil {
		err = unix.Flock(r.dirfd, unix.LOCK_EX|unix.LOCK_NB)
	}
	if err != nil {
		r.Finish()
		return nil, fmt.Errorf("git state: %w", err)
	}
	if err := r.add(wsfd, ".git"); err != nil {
		r.Finish()
		return nil, err
	}
	if err := r.writeMeta(); err != nil {
		r.Finish()
		return nil, err
	}
	return r, nil
}

// Mounts are the sandbox's mounts of the git view, parents first.
func (r *Run) Mounts() []confine.Mount {
	if r == nil {
		return nil
	}
	return r.mounts
}

// Protected are workspace-relative paths the sandbox must not change:
// a .git that is not a directory, or is missing.
func (r *Run) Protected() []string {
	if r == nil {
		return nil
	}
	return r.protect
}

// add shows the git directory rel (beneath wsfd) as an overlay.
func (r *Run) add(wsfd int, rel string) error {
	fd, err := unix.Openat2(wsfd, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return fmt.Errorf("git view: open %s: %w", rel, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return fmt.Errorf("git view: %s: %w", rel, err)
	}
	snap, err := gitstate.Take(fd)
	var base []byte
	if err == nil {
		base, err = snap.MarshalBinary()
	}
	if err != nil {
		unix.Close(fd)
		return fmt.Errorf("git view: the state of %s: %w", rel, err)
	}
	g := &repo{Rel: rel, Dev: st.Dev, Ino: st.Ino, Base: base, fd: fd}
	r.repos = append(r.repos, g)
	sub := "g" + strconv.Itoa(len(r.repos)-1)
	if err := unix.Mkdirat(r.dirfd, sub, 0o700); err != nil {
		return fmt.Errorf("git state: %w", err)
	}
	sfd, err := openDir(r.dirfd, sub)
	if err != nil {
		return fmt.Errorf("git state: %w", err)
	}
	defer unix.Close(sfd)
	for _, d := range []string{"upper", "work"} {
		if err := unix.Mkdirat(sfd, d, 0o700); err != nil {
			return fmt.Errorf("git state: %w", err)
		}
	}
	run := filepath.Join(r.opt.StateDir, workspaceKey(r.opt.Workspace), r.name, sub)
	dest := filepath.Join(r.opt.Workspace, rel)
	r.mounts = append(r.mounts, confine.Mount{Kind: confine.Overlay, Source: dest, Upper: filepath.Join(run, "upper"),
		Work: filepath.Join(run, "work"), Dest: dest, Writable: true, Exec: true})
	// Objects are content-addressed data: written live, so a commit made
	// inside costs no copy and survives whatever happens to the upper.
	var ost unix.Stat_t
	if unix.Fstatat(fd, "objects", &ost, unix.AT_SYMLINK_NOFOLLOW) == nil && ost.Mode&unix.S_IFMT == unix.S_IFDIR {
		r.mounts = append(r.mounts, confine.Mount{Kind: confine.Bind, Source: filepath.Join(dest, "objects"),
			Dest: filepath.Join(dest, "objects"), Writable: true})
	}
	return nil
}

func (r *Run) writeMeta() error {
	b, err := json.Marshal(meta{Workspace: r.opt.Workspace, Repos: r.repos})
	if err != nil {
		return err
	}
	fd, err := unix.Openat(r.dirfd, "meta", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("git state: %w", err)
	}
	f := os.NewFile(uintptr(fd), "meta")
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("git state: %w", err)
	}
	return nil
}

// Finish adopts what the sandbox changed in each git directory, says what
// was applied, dropped or in conflict, and removes the run's upper. The
// sandbox must have ended: nothing may write the upper any more. A run
// whose adoption fails keeps its upper, and says where.
func (r *Run) Finish() {
	if r == nil {
		return
	}
	if r.dirfd >= 0 {
		ok := true
		for i, g := range r.repos {
			ok = adoptOne(r.opt.Report, r.dirfd, r.name, i, g) && ok
		}
		if ok {
			if err := removeAll(r.keyfd, r.name); err != nil {
				fmt.Fprintf(r.opt.Report, "jail: git: cannot remove %s: %v\n", r.path(), err)
			}
		}
		unix.Close(r.dirfd)
		r.dirfd = -1
	}
	for _, g := range r.repos {
		unix.Close(g.fd)
	}
	r.repos = nil
	if r.keyfd >= 0 {
		unix.Close(r.keyfd)
		r.keyfd = -1
	}
}

func (r *Run) path() string {
	return filepath.Join(r.opt.StateDir, workspaceKey(r.opt.Workspace), r.name)
}

// adoptOne adopts repository i of a RUN directory into the host git
// directory g.fd, and reports whether its upper may be removed.
func adoptOne(w io.Writer, dirfd int, run string, i int, g *repo) bool {
	up, err := openDir(dirfd, filepath.Join("g"+strconv.Itoa(i), "upper"))
	if errors.Is(err, unix.ENOENT) {
		return true // never mounted
	}
	if err != nil {
		fmt.Fprintf(w, "jail: git: %s: the sandbox's changes cannot be read: %v\n", g.Rel, err)
		return false
	}
	defer unix.Close(up)
	if names, err := readNames(up); err == nil && len(names) == 0 {
		return true // the sandbox changed nothing
	}
	base, err := gitstate.UnmarshalSnapshot(g.Base)
	if err != nil {
		fmt.Fprintf(w, "jail: git: %s: launch state unreadable: %v\n", g.Rel, err)
		return false
	}
	rep, err := gitstate.Adopt(g.fd, up, base, gitstate.Options{RunID: run})
	if rep != nil {
		if s := rep.Summary(); s != "" {
			fmt.Fprintf(w, "jail: git: %s: %s\n", g.Rel, s)
		}
	}
	if err != nil {
		fmt.Fprintf(w, "jail: git: %s: the sandbox's changes were not adopted: %v\n", g.Rel, err)
		return false
	}
	return true
}

// adoptPending adopts the RUN directories of this workspace that no live
// run holds: left by a run that ended before it could adopt them (jail
// killed, the machine stopped).
func (r *Run) adoptPending() {
	names, err := readNames(r.keyfd)
	if err != nil {
		return
	}
	for _, n := range names {
		if !isRunName(n) {
			continue
		}
		fd, err := openDir(r.keyfd, n)
		if err != nil {
			continue
		}
		if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
			unix.Close(fd) // a live run's
			continue
		}
		if r.adoptLeft(fd, n) {
			if err := removeAll(r.keyfd, n); err != nil {
				fmt.Fprintf(r.opt.Report, "jail: git: cannot remove %s: %v\n", n, err)
			}
		}
		unix.Close(fd)
	}
}

// adoptLeft adopts the RUN directory fd left by an earlier run, after
// checking that each git directory it names is still the one it was made
// from (same device and inode); it reports whether it may be removed.
func (r *Run) adoptLeft(fd int, name string) bool {
	where := filepath.Join(r.opt.StateDir, workspaceKey(r.opt.Workspace), name)
	mfd, err := unix.Openat(fd, "meta", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return true // ended before its sandbox could start
	}
	if err != nil {
		fmt.Fprintf(r.opt.Report, "jail: git: an earlier run's changes in %s cannot be read: %v\n", where, err)
		return false
	}
	f := os.NewFile(uintptr(mfd), "meta")
	b, err := io.ReadAll(io.LimitReader(f, 64<<20))
	f.Close()
	var m meta
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil || m.Workspace != r.opt.Workspace {
		fmt.Fprintf(r.opt.Report, "jail: git: %s is not an earlier run of this workspace; kept\n", where)
		return false
	}
	fmt.Fprintf(r.opt.Report, "jail: git: adopting the changes of an earlier run that ended before it could (%s)\n", where)
	wsfd, err := unix.Open(r.opt.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(wsfd)
	ok := true
	for i, g := range m.Repos {
		g.fd, err = unix.Openat2(wsfd, g.Rel, &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		var st unix.Stat_t
		if err == nil {
			err = unix.Fstat(g.fd, &st)
		}
		if err == nil && (st.Dev != g.Dev || st.Ino != g.Ino) {
			err = errors.New("it was replaced since")
		}
		if err != nil {
			fmt.Fprintf(r.opt.Report, "jail: git: %s: not adopted (%v); the changes stay in %s\n", g.Rel, err, where)
			ok = false
		} else {
			ok = adoptOne(r.opt.Report, fd, name, i, g) && ok
		}
		if g.fd >= 0 {
			unix.Close(g.fd)
		}
	}
	return ok
}

// isGitDir reports whether rel beneath dirfd is what git takes for a git
// directory of its own (setup.c's is_git_directory): HEAD, objects/ and
// refs/, and no commondir.
func isGitDir(dirfd int, rel string) bool {
	fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstatat(fd, "HEAD", &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return false
	}
	// A commondir names a second git directory, which this view does not
	// show: such a .git stays read-only as a whole (docs/git.md).
	if unix.Fstatat(fd, "commondir", &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		return false
	}
	for _, d := range []string{"objects", "refs"} {
		if unix.Fstatat(fd, d, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return false
		}
	}
	return true
}
