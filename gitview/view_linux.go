//go:build linux

package gitview

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/gitstate"
	"github.com/jail-sandbox/jail/termtext"
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
	// Home and XDGConfig locate the user's git config, as the host's git
	// finds it ($HOME, $XDG_CONFIG_HOME).
	Home, XDGConfig string
	// Writable are the resolved host trees besides the workspace that
	// the sandbox may write (--rw): config targets there are guarded.
	Writable []string
	// Protected are the protected paths looked for below the workspace's
	// root as well (policy.DefaultProtected): the first component of
	// each is read-only in every directory the walk visits where it
	// exists at launch, and moved aside after the run where the sandbox
	// made it (docs/workspace.md). Later (policy.DefaultProtectedLater)
	// are protected so at the root too.
	Protected, Later []string // Tree marks the view of a --rw tree that is a repository (Trees),
	// made beside the workspace's: the user's global config, and the
	// --rw trees, are the workspace view's to look at.
	Tree bool
	// Shown are the --rw trees that get a view of their own (Trees): the
	// workspace's view does not name them as unprotected.
	Shown []string
}

// Run is the git view of one sandbox: the mounts that make it, and what
// Finish adopts once the sandbox has ended.
type Run struct {
	opt     Options
	mounts  []confine.Mount
	protect []string
	// deep are the protected names below the root in protect.
	deep map[string]bool
	// guardDirs and guardFiles are config targets in writable trees
	// outside the workspace (Guarded).
	guardDirs, guardFiles []string
	ws                    int    // the workspace, O_PATH
	keyfd                 int    // the workspace's directory in the state directory
	keyDir                string // its path, resolved
	name                  string // the RUN directory's name
	dirfd                 int    // the RUN directory, flocked
	repos                 []*repo
	// unshown are the git directories the walk found that are read-only
	// as a whole instead of shown (past maxRepos): their config still
	// names what the host's git runs in their work trees.
	unshown []string
	// launch is what the walk found at launch; nil when there was none
	// (a read-only workspace).
	launch *found
	// noState is why there is no state directory; git directories are
	// then read-only.
	noState error
	// pendingDone is set once the runs left unfinished were recovered.
	pendingDone bool
	// guard is the pipe to the run's guardian (guard_linux.go), nil when
	// there is none.
	guard *os.File
	// t0 is when the view began to be made (unix ns): a directory born
	// since is the sandbox's.
	t0 int64
	// meta is the RUN directory's record as written (writeMeta), which a
	// cached run writes again (Cache).
	meta []byte
	// inputs are, for each repository the plan cache's facts cover, the
	// files its launch state was read from (gitstate.TakeInputs).
	inputs map[string][]string
}

// repo is one host git directory the sandbox sees through the view.
type repo struct {
	// Rel is the git directory's path beneath the workspace.
	Rel string `json:"rel"`
	// Dev and Ino identify the host directory at launch.
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
	// Base is the launch state (gitstate.Snapshot) of an overlaid
	// repository.
	Base []byte `json:"base,omitempty"`
	// Fresh marks a directory with no repository at launch: the sandbox
	// gets an empty private git directory there, adopted as a repository
	// made from nothing (gitstate.AdoptNew).
	Fresh bool `json:"fresh,omitempty"`
	fd    int  // the host directory, opened by descriptor
}

// meta is what the RUN directory records of the run, for a later run
// that adopts it when this one could not.
type meta struct {
	Workspace string  `json:"workspace"`
	Repos     []*repo `json:"repos"`
	// Launch is what the launch walk found below the root, so that a
	// later run can reduce the repositories a run killed before its end
	// made in subdirectories. Absent in a cached run's meta (written by
	// the plan cache, whose plan was made where there were none).
	Launch *walkMeta `json:"launch,omitempty"`
	// NoWalk marks a run that made no walk (a read-only workspace):
	// nothing of it is reduced.
	NoWalk bool `json:"nowalk,omitempty"`
}

// walkMeta is the part of a launch walk (found) a later run needs.
type walkMeta struct {
	GitDirs  []string `json:"gitdirs,omitempty"`
	GitFiles []string `json:"gitfiles,omitempty"`
	Bare     []string `json:"bare,omitempty"`
	// Prot are the protected names in each directory visited (found.prot;
	// no omitempty: absent, it says nothing is known of them).
	Prot map[string][]string `json:"prot"`
	// Held and Later are the protected names the walk looked for
	// (Options.Protected, Options.Later).
	Held  []string `json:"held,omitempty"`
	Later []string `json:"later,omitempty"`
	// Over are the protected names past maxDeep (found.over).
	Over []string `json:"over,omitempty"`
	// Ents are the identities of what it found (found.ents).
	Ents map[string][2]uint64 `json:"ents,omitempty"`
}

// launchFound is the launch walk a RUN directory's meta records.
func (w *walkMeta) launchFound() *found {
	if w == nil {
		return nil
	}
	return &found{gitDirs: w.GitDirs, gitFiles: w.GitFiles, bare: w.Bare, prot: w.Prot, names: w.nameSet(), over: w.Over, ents: w.Ents}
}

// nameSet is the protected names the launch walk looked for (nil for
// none recorded).
func (w *walkMeta) nameSet() *nameSet {
	if w == nil || len(w.Held)+len(w.Later) == 0 {
		return nil
	}
	return newNameSet(w.Held, w.Later)
}

// freshXattr marks a .git directory jail made for a run: whichever run
// ends last removes it if it is still empty.
const (
	freshXattr = "user.jail"
	freshValue = "git"
)

// Prepare builds the git view of a sandbox in o.Workspace (docs/git.md).
// Upper directories that earlier runs in the workspace left unadopted
// are adopted first. The caller adds Mounts to the sandbox and Protected
// to its protected paths, and calls Finish after the sandbox has ended,
// also when it failed to start.
func Prepare(o Options) (*Run, error) {
	if o.Report == nil {
		o.Report = io.Discard
	}
	r := &Run{opt: o, ws: -1, keyfd: -1, dirfd: -1, t0: coarseNow()}
	var err error
	r.ws, err = unix.Open(o.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("git view: open workspace: %w", err)
	}
	if err := r.prepare(); err != nil {
		r.Finish()
		return nil, err
	}
	r.configTargets()
	r.startGuard()
	// Said on every run: the plan cache's run would not say it.
	if !o.Tree && warnWritableRepos(o.Report, slices.DeleteFunc(slices.Clone(o.Writable), func(t string) bool { return slices.Contains(o.Shown, t) }), newNameSet(o.Protected, o.Later)) {
		o.Facts.Unsure()
	}
	return r, nil
}

// configTargets finds the hooks directories, included config files and
// program files the host's git would use in each work tree here
// (workTrees) and keeps them out of the sandbox's reach.
func (r *Run) configTargets() {
	t := &configTargets{}
	user := t
	if r.opt.Tree {
		// What the user's config names outside this tree is the
		// workspace's view's to hold; relative to this tree's work
		// trees, this view's.
		user = &configTargets{}
	}
	for _, wt := range r.workTrees() {
		for _, f := range userConfigs(r.opt.Home, r.opt.XDGConfig) {
			user.read(f, -1, r.opt.Home, wt.top, 0, r.opt.Facts)
		}
		// config.worktree too: git reads it when extensions.worktreeConfig
		// is set (the plan cache looks at both again: gitDirTouched).
		for _, c := range wt.configs {
			t.readFile(c, r.opt.Home, wt.top, r)
		}
	}
	if user != t {
		in := func(p string) bool { return within(p, r.opt.Workspace) }
		for _, h := range user.hooks {
			if in(h) {
				t.hooks = appendNew(t.hooks, h)
			}
		}
		for _, i := range user.includes {
			if in(i) {
				t.includes = appendNew(t.includes, i)
			}
		}
		for _, p := range user.programs {
			if in(p) {
				t.programs = appendNew(t.programs, p)
				if user.pathWords[p] {
					if t.pathWords == nil {
						t.pathWords = map[string]bool{}
					}
					t.pathWords[p] = true
				}
			}
		}
	}
	r.guardTargets(t)
}

func (r *Run) prepare() error {
	gitPath := filepath.Join(r.opt.Workspace, ".git")
	// The walk first: what it records of the workspace's root must not
	// see the .git this run makes there.
	var f *found
	if !r.opt.ReadOnly {
		// The state directory exists before the walk looks: a workspace
		// that holds it (the home) would otherwise look changed on the
		// next run. The walk leaves jail's state out (no sandbox sees
		// it, and other workspaces' runs change it).
		skip := ""
		if err := r.openKey(); err != nil {
			r.noState = err
		} else {
			skip = r.skipState()
			// Before the walk: a run killed before its end may have left
			// repositories its sandbox made below the root, which this
			// walk would otherwise take for the user's.
			r.adoptPending()
		}
		f = walkNames(r.ws, skip, newNameSet(r.opt.Protected, r.opt.Later))
		if len(f.visited) > cacheDirs {
			r.opt.Facts.Unsure()
		}
	}
	if r.noState != nil {
		r.readOnly(f)
		r.launch = f
		return nil
	}
	if err := r.prepareRoot(gitPath); err != nil {
		return err
	}
	if f != nil && r.nested(f) {
		r.opt.Facts.Unsure()
	}
	r.launch = f
	return r.writeMeta()
}

// readOnly is the view without a state directory to keep uppers in: every
// git directory read-only, and .git not creatable where there is none.
func (r *Run) readOnly(f *found) {
	termtext.Fprintf(r.opt.Report, "jail: git: no directory for the sandbox's git changes (%v): git directories are read-only in this sandbox; set XDG_STATE_HOME to a directory of yours\n", r.noState)
	r.protect = append(r.protect, ".git")
	if f != nil {
		for _, g := range append(append([]string{}, f.gitDirs...), f.gitFiles...) {
			r.protect = appendNew(r.protect, g)
		}
	}
}

// RecordWalk records the directories the walk looked at as facts of the
// plan, once the sandbox's layout is built (which may make directories
// of jail's own in the workspace, such as a guarded policy directory).
func (r *Run) RecordWalk() {
	if r == nil || r.launch == nil || len(r.launch.visited) > cacheDirs {
		return
	}
	for _, d := range r.launch.visited {
		// The walk's own hash, unless the directory changed since (the
		// layout made one of jail's directories in it).
		var st unix.Stat_t
		if unix.Fstatat(r.ws, d, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && idOf(&st) == r.launch.ids[d] {
			r.opt.Facts.DirsHashed(filepath.Join(r.opt.Workspace, d), d == ".", r.launch.hashes[d], &st, r.launch.quiet[d])
		} else {
			r.opt.Facts.Dirs(filepath.Join(r.opt.Workspace, d), d == ".")
		}
	}
}

// prepareRoot shows the workspace's own .git.
func (r *Run) prepareRoot(gitPath string) error {
	for try := 0; ; try++ {
		var st unix.Stat_t
		err := unix.Fstatat(r.ws, ".git", &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case errors.Is(err, unix.ENOENT) && r.opt.ReadOnly:
			r.opt.Facts.Type(gitPath, 0)
			return nil
		case errors.Is(err, unix.ENOENT) && unix.Faccessat(r.ws, ".", unix.W_OK, unix.AT_EACCESS) != nil:
			// A workspace the caller cannot write (a shared directory
			// as an unprivileged user): the sandbox, with the caller's
			// rights, cannot make .git there either. Not a fact the
			// plan cache checks, so never cached.
			r.opt.Facts.Type(gitPath, 0)
			r.opt.Facts.Unsure()
			return nil
		case errors.Is(err, unix.ENOENT), err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && !r.opt.ReadOnly && isEmptyDir(r.ws, ".git"):
			// No repository: an empty .git on the host, which git
			// ignores, and a private git directory mounted in it.
			r.opt.Facts.Type(gitPath, 0)
			if err == nil {
				// An empty .git at launch: the plan cache makes .git
				// itself (Cache), so it cannot repeat this one.
				r.opt.Facts.Unsure()
			}
			if err := r.openRun(); err != nil {
				return err
			}
			// The host's git takes the workspace's root for a bare
			// repository when its .git is not one (the empty .git
			// here): HEAD, objects/ and refs/ made there would make
			// the sandbox's config and hooks the host's while the run
			// lasts. HEAD held (an empty directory while it lasts, or
			// read-only when there is one) keeps it from being one.
			r.protect = appendNew(r.protect, "HEAD")
			retry, err := r.addFresh(".git", err != nil)
			if retry && try < 3 {
				continue // another run removed it meanwhile
			}
			return err
		case err != nil:
			return fmt.Errorf("git view: %s: %w", gitPath, err)
		case st.Mode&unix.S_IFMT != unix.S_IFDIR || r.opt.ReadOnly || !isGitDir(r.ws, ".git"):
			// A gitfile or a symlink naming the git directory elsewhere:
			// kept as it is, so it cannot be pointed at a directory the
			// sandbox made. A directory git does not take for a
			// repository is kept as it is too: filled in, it would
			// become one. A read-only workspace covers .git already.
			r.opt.Facts.Type(gitPath, st.Mode)
			r.protect = append(r.protect, ".git")
			return nil
		default:
			// A repository: the plan depends on the directory's
			// identity and on the files its launch state is read from,
			// which become facts of the plan (repoFacts).
			if err := r.openRun(); err != nil {
				return err
			}
			return r.addOverlay(".git")
		}
	}
}

// openKey opens (making what is missing) the workspace's directory in
// the state directory.
func (r *Run) openKey() error {
	if r.keyfd >= 0 {
		return nil
	}
	sd, err := openStateDir(r.opt.StateDir)
	if errors.Is(err, unix.ENOENT) || r.opt.StateDir == "" {
		// No home to keep state in: the temporary directory.
		var ferr error
		if sd, _, ferr = openFallbackStateDir(); ferr == nil {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("%w (set XDG_STATE_HOME to a directory of yours)", err)
	}
	r.keyfd, err = privateSubdir(sd, workspaceKey(r.opt.Workspace))
	unix.Close(sd)
	if err != nil {
		return fmt.Errorf("git state: %w", err)
	}
	// The sandbox's init opens the mounts' sources by path with no
	// symlink allowed on the way: the directory's own path, as the
	// kernel names it, not a path through a symlinked ~/.local.
	if r.keyDir, err = os.Readlink(fmt.Sprintf("/proc/self/fd/%d", r.keyfd)); err != nil {
		return fmt.Errorf("git state: %w", err)
	}
	return nil
}

// openRun makes this run's RUN directory and locks it, after adopting
// what earlier runs left.
func (r *Run) openRun() error {
	if r.dirfd >= 0 {
		return nil
	}
	if err := r.openKey(); err != nil {
		return err
	}
	r.adoptPending()
	r.name = newRunName()
	// Made under a name no run has and locked before it gets its RUN
	// name: a run starting at the same time takes a RUN directory
	// nobody holds for one an earlier run left, and would adopt and
	// remove this one between its mkdir and its flock.
	tmp := ".new-" + r.name
	if err := unix.Mkdirat(r.keyfd, tmp, 0o700); err != nil {
		return fmt.Errorf("git state: %w", err)
	}
	var err error
	if r.dirfd, err = openDir(r.keyfd, tmp); err == nil {
		if err = unix.Flock(r.dirfd, unix.LOCK_EX|unix.LOCK_NB); err == nil {
			err = unix.Renameat(r.keyfd, tmp, r.keyfd, r.name)
		}
	}
	if err != nil {
		return fmt.Errorf("git state: %w", err)
	}
	return nil
}

// Cache is what a cached run must redo of this view (a fresh private
// git directory, or the uppers of the repositories shown as overlays,
// made anew by each run, and the RUN directory's record), or nil when the
// view is the same for every run. ok is false when the plan cache cannot
// redo it.
func (r *Run) Cache() (c *confine.CacheFresh, ok bool) {
	if r == nil || len(r.repos) == 0 {
		return nil, true
	}
	if len(r.repos) == 1 && r.repos[0].Fresh {
		if len(r.mounts) != 1 {
			return nil, false
		}
		return &confine.CacheFresh{KeyDir: r.keyDir, Run: r.name, Rel: r.repos[0].Rel}, true
	}
	for _, g := range r.repos {
		if g.Fresh || r.inputs[g.Rel] == nil {
			return nil, false
		}
	}
	if len(r.meta) == 0 {
		return nil, false
	}
	return &confine.CacheFresh{KeyDir: r.keyDir, Run: r.name, Overlays: len(r.repos), Meta: r.meta}, true
}

// maxStateInputs bounds the files of a repository's launch state the
// plan cache checks on each run (a few lstat calls each): a repository
// with more loose refs is planned each time.
const maxStateInputs = 512

// repoFacts records what the plan depends on of the repository rel,
// before its launch state is taken (addOverlay): that it is the same
// directory, still a repository of its own to git (isGitDir), and every
// file its launch state is read from unchanged. The cached run then
// writes the record this run made (its Base) as its own. (Its modules/
// is listed by modules, which records what it looked at.)
func (r *Run) repoFacts(rel string) {
	facts := r.opt.Facts
	if facts == nil {
		return
	}
	fd, err := openGitDir(r.ws, rel)
	if err != nil {
		facts.Unsure()
		return
	}
	defer unix.Close(fd)
	dir := filepath.Join(r.opt.Workspace, rel)
	facts.Stat(dir, false)
	r.gitDirFacts(rel)
	paths, ok := gitstate.TakeInputs(fd, maxStateInputs)
	if !ok {
		facts.Unsure()
		return
	}
	for _, p := range paths {
		facts.Stat(filepath.Join(dir, p), true)
	}
	if r.inputs == nil {
		r.inputs = map[string][]string{}
	}
	r.inputs[rel] = paths
}

// gitDirFacts records what isGitDir looks at in rel: the type and
// identity of HEAD, commondir, objects and refs, or their absence.
func (r *Run) gitDirFacts(rel string) {
	for _, n := range []string{"HEAD", "commondir", "objects", "refs"} {
		r.opt.Facts.Stat(filepath.Join(r.opt.Workspace, rel, n), false)
	}
}

// Env are variables the command needs because of the view. A workspace
// with no repository shows an empty .git (the private directory a
// repository made inside goes to): Go's build takes any .git for a
// repository and fails when git finds none there ("error obtaining VCS
// status"), so VCS stamping is off, as it would have nothing to stamp
// on the host either. --env GOFLAGS=... wins over it.
func (r *Run) Env() []string {
	if r == nil {
		return nil
	}
	for _, g := range r.repos {
		if g.Fresh && g.Rel == ".git" {
			return []string{"GOFLAGS=-buildvcs=false"}
		}
	}
	return nil
}

// Workspace is the tree the view is of (Options.Workspace).
func (r *Run) Workspace() string {
	if r == nil {
		return ""
	}
	return r.opt.Workspace
}

// Mounts are the sandbox's mounts of the git view, parents first.
func (r *Run) Mounts() []confine.Mount {
	if r == nil {
		return nil
	}
	return r.mounts
}

// Covers reports whether the workspace-relative path rel lies in a git
// directory the view shows (an overlay or a fresh private directory):
// protecting it as well would be moot, and for a fresh directory wrong
// (the path is made on the host, under the mount).
func (r *Run) Covers(rel string) bool {
	if r == nil {
		return false
	}
	rel = filepath.Clean(rel)
	for _, g := range r.repos {
		if rel == g.Rel || strings.HasPrefix(rel, g.Rel+"/") {
			return true
		}
	}
	return false
}

// Protected are workspace-relative paths the sandbox must not change:
// a .git that is neither a repository nor absent.
func (r *Run) Protected() []string {
	if r == nil {
		return nil
	}
	return r.protect
}

// openGitDir opens the directory rel beneath the workspace by
// descriptor, following no symlink.
func openGitDir(wsfd int, rel string) (int, error) {
	return unix.Openat2(wsfd, rel, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// newRepo opens the host directory rel and records it as the view's
// next repository, with its own directory gN in the RUN directory.
func (r *Run) newRepo(rel string) (*repo, int, error) {
	fd, err := openGitDir(r.ws, rel)
	if err != nil {
		return nil, -1, fmt.Errorf("git view: open %s: %w", rel, err)
	}
	return r.addRepo(rel, fd)
}

// addRepo records the host directory fd (opened at rel) as the view's
// next repository, with its own directory gN in the RUN directory, and
// returns that directory.
func (r *Run) addRepo(rel string, fd int) (*repo, int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, -1, fmt.Errorf("git view: %s: %w", rel, err)
	}
	g := &repo{Rel: rel, Dev: st.Dev, Ino: st.Ino, fd: fd}
	r.repos = append(r.repos, g)
	sub := repoDir(len(r.repos) - 1)
	if err := unix.Mkdirat(r.dirfd, sub, 0o700); err != nil {
		return nil, -1, fmt.Errorf("git state: %w", err)
	}
	sfd, err := openDir(r.dirfd, sub)
	if err != nil {
		return nil, -1, fmt.Errorf("git state: %w", err)
	}
	return g, sfd, nil
}

// repoDir names repository i's directory in a RUN directory.
func repoDir(i int) string { return "g" + strconv.Itoa(i) }

// runPath is the host path of repository i's directory in this run.
func (r *Run) runPath(i int) string {
	return filepath.Join(r.keyDir, r.name, repoDir(i))
}

// addOverlay shows the repository rel as an overlay over a private
// upper, objects/ included.
func (r *Run) addOverlay(rel string) error {
	r.repoFacts(rel)
	g, sfd, err := r.newRepo(rel)
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	snap, err := gitstate.Take(g.fd)
	if err == nil {
		g.Base, err = snap.MarshalBinary()
	}
	if err != nil {
		return fmt.Errorf("git view: the state of %s: %w", rel, err)
	}
	if want, ok := r.inputs[rel]; ok {
		// A ref made or removed while the state was read: the facts
		// recorded before may not name every file it was read from.
		if again, ok := gitstate.TakeInputs(g.fd, maxStateInputs); !ok || !slices.Equal(again, want) {
			delete(r.inputs, rel)
			r.opt.Facts.Unsure()
		}
	}
	for _, d := range []string{"upper", "work"} {
		if err := unix.Mkdirat(sfd, d, 0o700); err != nil {
			return fmt.Errorf("git state: %w", err)
		}
	}
	run := r.runPath(len(r.repos) - 1)
	dest := filepath.Join(r.opt.Workspace, rel)
	r.mounts = append(r.mounts, confine.Mount{Kind: confine.Overlay, Source: dest, Upper: filepath.Join(run, "upper"),
		Work: filepath.Join(run, "work"), Dest: dest, Writable: true, Exec: true})
	// Objects go through the upper like the rest: git does not check an
	// object's hash when it reads one for a checkout, a diff or a show, so
	// an object the sandbox rewrote in place would reach the host's work
	// tree and screen. New objects are adopted verified (gitstate).
	return nil
}

// addFresh gives the sandbox an empty private git directory at rel,
// mounted on an empty host directory there (made now when create is
// set). Each run holds a shared flock on the host directory; retry is
// set when a run that ended meanwhile removed it.
func (r *Run) addFresh(rel string, create bool) (retry bool, err error) {
	if create {
		err := unix.Mkdirat(r.ws, rel, 0o755)
		if errors.Is(err, unix.EEXIST) {
			return true, errors.New("git view: .git appeared")
		}
		if err != nil {
			return false, fmt.Errorf("git view: make %s: %w", rel, err)
		}
	}
	fd, err := openGitDir(r.ws, rel)
	if err != nil {
		return true, fmt.Errorf("git view: open %s: %w", rel, err)
	}
	if create {
		// Not every file system has user xattrs; without the mark only
		// the run that made it removes it.
		unix.Fsetxattr(fd, freshXattr, []byte(freshValue), 0)
	}
	// Held shared for the run: a run that ends removes the directory
	// only when it can take the lock exclusively. One that did so just
	// before this run locked it leaves a name that is gone or another.
	unix.Flock(fd, unix.LOCK_SH)
	var held, named unix.Stat_t
	if unix.Fstat(fd, &held) != nil || unix.Fstatat(r.ws, rel, &named, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		held.Dev != named.Dev || held.Ino != named.Ino {
		unix.Close(fd)
		return true, errors.New("git view: .git changed while it was prepared")
	}
	g, sfd, err := r.addRepo(rel, fd)
	if err != nil {
		return false, err
	}
	unix.Close(sfd)
	g.Fresh = true
	r.mounts = append(r.mounts, confine.Mount{Kind: confine.Bind, Source: r.runPath(len(r.repos) - 1),
		Dest: filepath.Join(r.opt.Workspace, rel), Writable: true, Exec: true})
	return false, nil
}

func (r *Run) writeMeta() error {
	if r.dirfd < 0 {
		return nil
	}
	m := meta{Workspace: r.opt.Workspace, Repos: r.repos, NoWalk: r.launch == nil}
	if r.launch != nil {
		m.Launch = &walkMeta{GitDirs: r.launch.gitDirs, GitFiles: r.launch.gitFiles, Bare: r.launch.bare, Prot: r.launch.prot,
			Held: r.opt.Protected, Later: r.opt.Later, Over: r.launch.over, Ents: r.launch.ents}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	r.meta = b
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
// was applied, dropped or kept aside, and removes the run's upper. The
// sandbox must have ended: nothing may write the upper any more. A run
// whose adoption fails keeps its upper, and says where.
func (r *Run) Finish() {
	if r == nil {
		return
	}
	out := adopted
	if r.dirfd >= 0 {
		for i, g := range r.repos {
			out = out.and(adoptOne(r.opt.Report, r.ws, r.opt.Workspace, r.dirfd, r.name, i, g, newNameSet(r.opt.Protected, r.opt.Later)))
		}
	}
	var committed []string
	if r.launch != nil && r.ws >= 0 {
		committed = r.committedPaths()
	}
	for _, g := range r.repos {
		unix.Close(g.fd)
	}
	r.repos = nil
	// The reduction before the RUN directory goes: the guardian of a
	// run killed meanwhile finds the launch walk in its meta.
	if r.launch != nil && r.ws >= 0 {
		run := r.name
		if run == "" {
			run = newRunName()
		}
		now := r.launch.changedSince(r.ws)
		now.addCommitted(r.ws, committed)
		pend := newPending(r.opt.StateDir, r.opt.Workspace, run)
		scanNew(r.opt.Report, r.ws, r.keyfd, now, r.launch, run, pend)
		sweepAll(r.opt.Report, r.ws, r.keyfd, r.opt.Workspace, now.skip, r.t0, run, r.opt.Home, r.launch, now, pend)
		r.launch = nil
	}
	if r.dirfd >= 0 {
		if out == retry {
			termtext.Fprintf(r.opt.Report, "jail: git: the sandbox's git changes stay in %s; the next run in this workspace tries again (it holds the sandbox's hooks and config: do not run git in it)\n", r.path())
		} else {
			settle(r.opt.Report, r.keyfd, r.name, r.path(), out)
		}
		unix.Close(r.dirfd)
		r.dirfd = -1
	}
	r.guardDone()
	for _, fd := range []*int{&r.keyfd, &r.ws} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

func (r *Run) path() string { return filepath.Join(r.keyDir, r.name) }

// outcome is what became of a RUN directory's changes.
type outcome int

const (
	adopted outcome = iota // all of it adopted or reported dropped: the copy may go
	refused                // objects refused: kept aside for the user, not tried again
	retry                  // not adopted (an error): kept for the next run
)

// and is the outcome of two adoptions together.
func (o outcome) and(p outcome) outcome { return max(o, p) }

// settle removes a RUN directory whose changes were adopted, or moves
// one whose objects were refused to kept-RUN, out of the next run's way,
// and says where.
func settle(w io.Writer, keyfd int, name, where string, out outcome) {
	switch out {
	case adopted:
		if err := removeAll(keyfd, name); err != nil {
			termtext.Fprintf(w, "jail: git: cannot remove %s: %v\n", where, err)
		}
	case refused:
		kept := keptPrefix + name
		if err := unix.Renameat2(keyfd, name, keyfd, kept, unix.RENAME_NOREPLACE); err != nil {
			termtext.Fprintf(w, "jail: git: objects the sandbox wrote were refused; its git changes stay in %s\n", where)
			return
		}
		// The line leads the user there: no git run in it may take the
		// sandbox's git directories (their config names programs, their
		// hooks are programs) for repositories.
		if kfd, err := openDir(keyfd, kept); err == nil {
			names, _ := readNames(kfd)
			for _, n := range names {
				if gfd, err := openDir(kfd, n); err == nil {
					moveAside(gfd, "HEAD", "kept")
					unhead(gfd, "upper", "kept")
					unix.Close(gfd)
				}
			}
			unix.Close(kfd)
		}
		termtext.Fprintf(w, "jail: git: objects the sandbox wrote were refused, and refs naming them not adopted; the sandbox's git state is kept in %s (jail does not try it again; its HEAD files are renamed HEAD.jail-kept, so that no git takes it for a repository: it holds the sandbox's hooks and config, so read it, do not run git in it; remove it when done)\n", filepath.Join(filepath.Dir(where), kept))
	}
}

// keptPrefix names a RUN directory kept aside after its objects were
// refused.
const keptPrefix = "kept-"

// adoptOne adopts repository i of a RUN directory into the host git
// directory g.fd.
func adoptOne(w io.Writer, wsfd int, ws string, dirfd int, run string, i int, g *repo, names *nameSet) outcome {
	code := newCodeFiles(names, g.fd, filepath.Join(ws, filepath.Dir(g.Rel)))
	if g.Fresh {
		return adoptFresh(w, wsfd, ws, dirfd, run, i, g, code)
	}
	up, err := openDir(dirfd, filepath.Join(repoDir(i), "upper"))
	if errors.Is(err, unix.ENOENT) {
		return adopted // never mounted
	}
	if err != nil {
		termtext.Fprintf(w, "jail: git: %s: the sandbox's changes cannot be read: %v\n", g.Rel, err)
		return retry
	}
	defer unix.Close(up)
	if names, err := readNames(up); err == nil && len(names) == 0 {
		return adopted // the sandbox changed nothing
	}
	base, err := gitstate.UnmarshalSnapshot(g.Base)
	if err != nil {
		termtext.Fprintf(w, "jail: git: %s: launch state unreadable: %v\n", g.Rel, err)
		return retry
	}
	// The RUN directory is the scratch space of the git that verifies
	// the sandbox's objects: private, and in no sandbox's view. The work
	// tree of a .git (not a submodule's or bare git directory) lets the
	// index keep the stat data a git status inside refreshed, where the
	// files bear it out.
	opt := gitstate.Options{RunID: run, Scratch: dirfd, Worktree: worktreeJudge(wsfd, ws, g.Rel)}
	if filepath.Base(g.Rel) == ".git" && !strings.Contains(g.Rel, ".git/") {
		if wt, err := openGitDir(wsfd, filepath.Dir(g.Rel)); err == nil {
			defer unix.Close(wt)
			opt.WorkTree = wt
		}
	}
	rep, err := gitstate.Adopt(g.fd, up, base, code.options(opt, base.Refs()))
	report(w, g.Rel, rep)
	if err != nil {
		termtext.Fprintf(w, "jail: git: %s: the sandbox's changes were not adopted: %v\n", g.Rel, err)
		return retry
	}
	if rep.Incomplete {
		return refused
	}
	return adopted
}

// adoptFresh adopts the repository the sandbox made in the private git
// directory of repository i, if it made one, and removes the host's
// empty .git when no other run holds it.
func adoptFresh(w io.Writer, wsfd int, ws string, dirfd int, run string, i int, g *repo, code *codeFiles) outcome {
	src, err := openDir(dirfd, repoDir(i))
	if errors.Is(err, unix.ENOENT) {
		return adopted
	}
	if err != nil {
		termtext.Fprintf(w, "jail: git: %s: the sandbox's repository cannot be read: %v\n", g.Rel, err)
		return retry
	}
	defer unix.Close(src)
	out := adopted
	if names, err := readNames(src); err == nil && len(names) > 0 {
		rep, err := gitstate.AdoptNew(g.fd, src, code.options(gitstate.Options{RunID: run, Scratch: dirfd, Worktree: worktreeJudge(wsfd, ws, g.Rel)}, nil))
		report(w, g.Rel, rep)
		if err != nil {
			termtext.Fprintf(w, "jail: git: %s: the repository made in the sandbox was not adopted: %v\n", g.Rel, err)
			return retry
		}
		if rep.Incomplete {
			out = refused
		}
	}
	removeFresh(wsfd, g)
	return out
}

// removeFresh removes the host's .git directory a run made for the
// sandbox if it is still empty, no other run holds it, and it is still
// the directory at that name.
func removeFresh(wsfd int, g *repo) {
	if unix.Flock(g.fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return // another run's sandbox has it mounted
	}
	buf := make([]byte, len(freshValue))
	if n, err := unix.Fgetxattr(g.fd, freshXattr, buf); err != nil || string(buf[:n]) != freshValue {
		return // the user's own empty .git
	}
	if names, err := readNames(g.fd); err != nil || len(names) > 0 {
		return
	}
	var named unix.Stat_t
	if unix.Fstatat(wsfd, g.Rel, &named, unix.AT_SYMLINK_NOFOLLOW) != nil || named.Dev != g.Dev || named.Ino != g.Ino {
		return
	}
	// AT_REMOVEDIR removes only an empty directory, whatever is at the
	// name by now.
	unix.Unlinkat(wsfd, g.Rel, unix.AT_REMOVEDIR)
}

// report prints an adoption's one line when it holds something the user
// must know: what was dropped, changed on both sides, or held. What was
// applied alone is what the user's own git commands did (a commit, a
// branch, the index a git status refreshed) and goes unsaid: a line on
// every run of jail run -- git status was noise that buried the lines
// that matter.
func report(w io.Writer, rel string, rep *gitstate.Report) {
	if rep == nil || !rep.Notable() {
		return
	}
	where := ""
	if rel != ".git" {
		where = " (" + termtext.Escape(rel) + ")"
	}
	// Summary escapes the names it lists itself (termtext.Escape).
	fmt.Fprintf(w, "jail: %s%s\n", rep.Summary(), where)
	reportHeld(w, rel, rep)
}

// reportHeld prints one line per ref an adoption held (gitstate.Report.Held,
// escaped when made).
func reportHeld(w io.Writer, rel string, rep *gitstate.Report) {
	for _, h := range rep.Held {
		fmt.Fprintf(w, "jail: git: %s: held: %s (docs/git-adoption.md)\n", termtext.Escape(rel), h)
	}
}

// adoptPending adopts the RUN directories of this workspace that no live
// run holds: left by a run that ended before it could adopt them (jail
// killed, the machine stopped).
func (r *Run) adoptPending() {
	if r.pendingDone {
		return
	}
	r.pendingDone = true
	// What earlier runs' ends left to the last one out, when that one
	// was killed: before the walk, as the rest.
	reducePending(r.opt.StateDir, r.opt.Report, newNameSet(r.opt.Protected, r.opt.Later))
	recoverKey(r.opt.Report, r.ws, r.opt.Workspace, r.keyfd, r.keyDir, r.skipState(), newNameSet(r.opt.Protected, r.opt.Later), r.opt.StateDir)
}

// skipState is jail's state directory relative to the workspace, when
// the workspace holds it: walks leave it out.
func (r *Run) skipState() string {
	if rel, err := filepath.Rel(r.opt.Workspace, filepath.Dir(filepath.Dir(r.keyDir))); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return ""
}

// newLeftAge is how old a .new-RUN directory must be before it is taken
// for one a killed run left: a live run locks its own within
// microseconds of making it, and renames it right after.
const newLeftAge = 2 * time.Second

// recoverKey finishes what runs of the workspace ws (wsfd) left in its
// state directory keyfd (path keyDir) when they ended before their end
// (jail killed): each RUN directory no live run holds is adopted, then
// the repositories that run's sandbox made in subdirectories are reduced
// as its own end would have (scanNew against that run's launch walk);
// each .new-RUN directory a run was killed in the middle of making is
// removed when no run holds it, it is old enough and it is empty. skip is
// jail's state relative to the workspace ("" when outside it).
//
// protected are the protected names when a run's meta does not record
// them, nil when not known (codeFiles); stateDir is jail's git state
// directory, where what waits for the last run out is recorded.
func recoverKey(w io.Writer, wsfd int, ws string, keyfd int, keyDir, skip string, protected *nameSet, stateDir string) {
	entries, err := readNames(keyfd)
	if err != nil {
		return
	}
	for _, n := range entries {
		if t, ok := strings.CutPrefix(n, ".new-"); ok && isRunName(t) {
			removeNewLeft(keyfd, n)
			continue
		}
		if !isRunName(n) {
			continue
		}
		fd, err := openDir(keyfd, n)
		if err != nil {
			continue
		}
		if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
			unix.Close(fd) // a live run's
			continue
		}
		where := filepath.Join(keyDir, n)
		m, merr := readMeta(fd)
		out := adoptLeft(w, wsfd, ws, fd, where, n, protected)
		if merr == nil && m.Workspace == ws && !m.NoWalk {
			// The run ended without looking for what its sandbox made
			// below the root: reduce it now, against its launch walk.
			now, launch := walkNames(wsfd, skip, m.Launch.nameSet()), m.Launch.launchFound()
			pend := newPending(stateDir, ws, n)
			scanNew(w, wsfd, keyfd, now, launch, n, pend)
			// The run began about when its RUN directory was made.
			var sx unix.Statx_t
			t := time.Now().Add(-24 * time.Hour).UnixNano()
			if unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BTIME|unix.STATX_CTIME, &sx) == nil && sx.Mask&unix.STATX_BTIME != 0 {
				t = sx.Btime.Sec*1e9 + int64(sx.Btime.Nsec)
			}
			sweepAll(w, wsfd, keyfd, ws, skip, t, n, os.Getenv("HOME"), launch, now, pend)
		}
		settle(w, keyfd, n, where, out)
		unix.Close(fd)
	}
}

// removeNewLeft removes the directory name (.new-RUN) beneath keyfd when
// no run holds it, it is older than newLeftAge and it is empty: what a
// run killed between making and renaming it left.
func removeNewLeft(keyfd int, name string) {
	fd, err := openDir(keyfd, name)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil || unix.Fstat(fd, &st) != nil ||
		time.Since(time.Unix(st.Ctim.Unix())) < newLeftAge {
		return // a live run's, or one that may still lock it
	}
	var named unix.Stat_t
	if unix.Fstatat(keyfd, name, &named, unix.AT_SYMLINK_NOFOLLOW) != nil || named.Dev != st.Dev || named.Ino != st.Ino {
		return
	}
	// AT_REMOVEDIR removes only an empty directory.
	unix.Unlinkat(keyfd, name, unix.AT_REMOVEDIR)
}

// readMeta reads the meta record of the RUN directory fd.
func readMeta(fd int) (*meta, error) {
	mfd, err := unix.Openat(fd, "meta", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(mfd), "meta")
	b, err := io.ReadAll(io.LimitReader(f, 64<<20))
	f.Close()
	if err != nil {
		return nil, err
	}
	var m meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// adoptLeft adopts the RUN directory fd (locked by the caller) after
// checking that each git directory it names is still the one it was made
// from (same device and inode).
//
// names are the protected names of the run when its meta does not record
// them (a cached run's), nil when not known either (codeFiles).
func adoptLeft(w io.Writer, wsfd int, ws string, fd int, where, name string, names *nameSet) outcome {
	m, err := readMeta(fd)
	if errors.Is(err, unix.ENOENT) {
		return adopted // ended before its sandbox could start
	}
	if err != nil && !errors.As(err, new(*json.SyntaxError)) {
		termtext.Fprintf(w, "jail: git: an earlier run's changes in %s cannot be read: %v\n", where, err)
		return retry
	}
	if err != nil || m.Workspace != ws {
		termtext.Fprintf(w, "jail: git: %s is not a run of this workspace; kept\n", where)
		return retry
	}
	if ns := m.Launch.nameSet(); ns != nil {
		names = ns
	}
	out := adopted
	for i, g := range m.Repos {
		if g.Fresh && emptyOrMissing(fd, repoDir(i)) {
			// The sandbox made no repository: the empty .git made for
			// it goes, as that run's end would have removed it.
			if g.fd, err = openGitDir(wsfd, g.Rel); err == nil {
				var st unix.Stat_t
				if unix.Fstat(g.fd, &st) == nil && st.Dev == g.Dev && st.Ino == g.Ino {
					removeFresh(wsfd, g)
				}
				unix.Close(g.fd)
			}
			continue
		}
		g.fd, err = openGitDir(wsfd, g.Rel)
		var st unix.Stat_t
		if err == nil {
			err = unix.Fstat(g.fd, &st)
		}
		if err == nil && (st.Dev != g.Dev || st.Ino != g.Ino) {
			err = errors.New("it was replaced since")
		}
		if err != nil {
			if g.Fresh && errors.Is(err, unix.ENOENT) {
				err = errors.New("the .git made for it was removed")
			}
			termtext.Fprintf(w, "jail: git: %s: an earlier run's changes were not adopted (%v); they stay in %s\n", g.Rel, err, where)
			out = out.and(retry)
		} else {
			out = out.and(adoptOne(w, wsfd, ws, fd, name, i, g, names))
		}
		if g.fd >= 0 {
			unix.Close(g.fd)
		}
	}
	return out
}

// isEmptyDir reports whether rel beneath dirfd is a directory with
// nothing in it.
func isEmptyDir(dirfd int, rel string) bool {
	fd, err := openGitDir(dirfd, rel)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	names, err := readNames(fd)
	return err == nil && len(names) == 0
}

// isGitDir reports whether rel beneath dirfd is what git takes for a git
// directory of its own (setup.c's is_git_directory): HEAD, objects/ and
// refs/, and no commondir.
func isGitDir(dirfd int, rel string) bool {
	fd, err := openGitDir(dirfd, rel)
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

// emptyOrMissing reports whether the directory name beneath dirfd is
// missing or empty.
func emptyOrMissing(dirfd int, name string) bool {
	fd, err := openDir(dirfd, name)
	if errors.Is(err, unix.ENOENT) {
		return true
	}
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	names, err := readNames(fd)
	return err == nil && len(names) == 0
}

// AdoptMain is the hidden command a cached `jail run` executes after its
// sandbox ended (confine.AdoptCommand), and waits for, when the sandbox
// made a repository in its private git directory or changed the
// directories the plan's walk recorded: args are the resolved workspace,
// then the workspace's state directory and the RUN directory as
// inherited descriptors (the RUN directory locked) and the RUN name, or
// "-" for each of these three when there is nothing to adopt, when the
// run began (unix ns; directories born since are walked below the walk's
// depth), and the mode: "cached" (the default: the plan cache's run,
// whose plan was made where no .git lay below the root) or "meta" (the
// guardian of a Go supervisor's run, reducing against the launch walk the
// RUN directory records) or "pending" (a cached run that changed nothing,
// ending while pending reductions wait: only ReducePending). It adopts,
// then reduces the repositories the sandbox made in subdirectories and
// moves aside the protected names it made (protected and later, the
// default lists: scanNew), does what earlier runs' ends left to the last
// run out (ReducePending), reports on w, and returns 0 when all went
// well.
func AdoptMain(args []string, w io.Writer, protected, later []string) int {
	var since int64
	mode := "cached"
	if len(args) == 6 {
		mode, args = args[5], args[:5]
	}
	if len(args) == 5 {
		var err error
		if since, err = strconv.ParseInt(args[4], 10, 64); err != nil {
			since = 0
		}
		args = args[:4]
	}
	if len(args) != 4 || !filepath.IsAbs(args[0]) || (args[3] != "-" && !isRunName(args[3])) || (mode != "cached" && mode != "meta" && mode != "pending") {
		fmt.Fprintln(w, "jail: "+confine.AdoptCommand+": want WORKSPACE KEYFD RUNFD RUN [LAUNCH-NS [cached|meta|pending]]")
		return 2
	}
	// A line to a stderr whose reader went (the guardian's, after jail
	// was killed) is an error, not the end of an adoption half done.
	signal.Ignore(syscall.SIGPIPE)
	stateDir := StateDir(os.Getenv("HOME"), os.Getenv("XDG_STATE_HOME"))
	if mode == "pending" {
		// A cached run that changed nothing, ending while reductions that
		// earlier runs' ends left wait (pending_linux.go): it may be the
		// last run out.
		reducePending(stateDir, w, newNameSet(protected, later))
		return 0
	}
	wsfd, err := unix.Open(args[0], unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		termtext.Fprintf(w, "jail: git: %v\n", err)
		return 1
	}
	defer unix.Close(wsfd)
	code := 0
	run := newRunName()
	scratch := -1
	// The cached plan was made where no .git lay below the root: every
	// one there now is the sandbox's. A guardian of the Go supervisor's
	// run ("meta") reduces against the launch walk its RUN directory
	// records, and not at all without one.
	var launch *found
	var m *meta
	scan := mode == "cached"
	// reduce walks the workspace and reduces what the sandbox made below
	// the root (scanNew), with the gitlinks its commits add.
	reduce := func() {
		skip := ""
		if sd := stateDir; sd != "" {
			if rs, err := filepath.EvalSymlinks(filepath.Dir(sd)); err == nil {
				if rel, err := filepath.Rel(args[0], rs); err == nil && !strings.HasPrefix(rel, "..") {
					skip = rel
				}
			}
		}
		// Directories below the walk's depth made during the run (born
		// after the launch the plan cache's run says) are walked too.
		f := &found{skip: skip, depth: map[string]int{}, ids: map[string]dirID{}, hashes: map[string]uint64{},
			names: newNameSet(protected, later), prot: map[string][]string{}, deep: since > 0, at: since}
		f.walkFrom(wsfd, ".", 0)
		switch {
		case mode == "meta" && m != nil:
			// The commits the sandbox added to the repositories of the
			// run, as its Finish would have listed them.
			rr := &Run{ws: wsfd, opt: Options{Report: w}}
			for _, g := range m.Repos {
				if fd, err := openGitDir(wsfd, g.Rel); err == nil {
					g.fd = fd
					rr.repos = append(rr.repos, g)
				}
			}
			f.addCommitted(wsfd, rr.committedPaths())
			for _, g := range rr.repos {
				unix.Close(g.fd)
			}
		case args[3] != "-":
			// The repository made in the private git directory, adopted
			// now: every commit of it is the sandbox's.
			if gfd, err := openGitDir(wsfd, ".git"); err == nil {
				if isGitDir(wsfd, ".git") {
					paths, err := committedGitlinks(gfd, nil)
					if err != nil {
						termtext.Fprintf(w, "jail: git: the gitlinks the sandbox's commits add cannot be listed (%v); before you check out its commits, look at what their submodule paths hold\n", err)
					}
					f.addCommitted(wsfd, paths)
				}
				unix.Close(gfd)
			}
		}
		pend := newPending(stateDir, args[0], run)
		scanNew(w, wsfd, scratch, f, launch, run, pend)
		if since > 0 {
			sweepAll(w, wsfd, scratch, args[0], skip, since, run, os.Getenv("HOME"), launch, f, pend)
		}
	}
	if args[3] != "-" {
		run = args[3]
		runfd, _ := strconv.Atoi(args[2])
		scratch, _ = strconv.Atoi(args[1])
		var st unix.Stat_t
		if unix.Fstat(runfd, &st) == nil && st.Nlink == 0 {
			// Removed already: the supervisor adopted it before it was
			// killed (the Go supervisor's reduction included; the plan
			// cache's run reduces after, so a cached run is scanned).
			if mode == "meta" {
				reducePending(stateDir, w, newNameSet(protected, later))
				return 0
			}
		} else {
			// Against a launch walk, the reduction comes before the RUN
			// directory goes (as in Finish): a guardian finding it gone
			// takes the reduction for done.
			var before func()
			if rm, err := readMeta(runfd); mode == "meta" && err == nil && !rm.NoWalk && rm.Launch != nil {
				m = rm
				launch = m.Launch.launchFound()
				before = reduce
			}
			if !adoptHeld(w, wsfd, args[0], args[1], args[2], args[3], newNameSet(protected, later), before) {
				code = 1
			}
		}
	}
	if !scan {
		reducePending(stateDir, w, newNameSet(protected, later))
		return code
	}
	reduce()
	reducePending(stateDir, w, newNameSet(protected, later))
	return code
}

// adoptHeld adopts the RUN directory held on the descriptor runArg.
// before, when not nil, runs once the changes are adopted and before the
// RUN directory is removed.
func adoptHeld(w io.Writer, wsfd int, ws, keyArg, runArg, name string, names *nameSet, before func()) bool {
	keyfd, err1 := strconv.Atoi(keyArg)
	runfd, err2 := strconv.Atoi(runArg)
	if err1 != nil || err2 != nil {
		fmt.Fprintln(w, "jail: "+confine.AdoptCommand+": want WORKSPACE KEYFD RUNFD RUN")
		return false
	}
	unix.CloseOnExec(keyfd)
	unix.CloseOnExec(runfd)
	var held, named unix.Stat_t
	if unix.Fstat(runfd, &held) != nil || unix.Fstatat(keyfd, name, &named, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		held.Dev != named.Dev || held.Ino != named.Ino {
		fmt.Fprintln(w, "jail: git: the run's state directory is not where it was; nothing adopted")
		return false
	}
	where, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", runfd))
	out := adoptLeft(w, wsfd, ws, runfd, where, name, names)
	if before != nil {
		before()
	}
	if out == retry {
		return false
	}
	settle(w, keyfd, name, where, out)
	return out == adopted
}

// scanNew walks the workspace again after a sandbox ended and reduces
// every .git below the root, and every directory git takes for a bare
// repository, that was not there at launch (the walk then, nil for a
// cached plan's, which was made where there were none): a repository the
// sandbox made in a subdirectory (git clone URL sub, git clone --bare URL
// sub.git) is moved aside and adopted anew under its name
// (gitstate.AdoptNew: hooks and keys that run programs dropped), a
// gitfile or symlink is removed, and a directory that existed at launch
// and was made to look like a git directory loses its HEAD (renamed
// HEAD.jail-RUN, the directory's other files kept). It appeared on the
// host as the sandbox wrote it; from now on the host's git finds nothing
// in it that runs (docs/git.md). scratch is the workspace's directory in
// jail's state (-1 when there is none), where the git that verifies the
// objects keeps its own directory.
func scanNew(w io.Writer, wsfd, scratch int, f *found, launch *found, run string, pend *pending) {
	seen := map[string]bool{}
	if launch != nil {
		// What the launch found counts as there at launch only while it
		// is the same object (a sandbox may have renamed it away, and
		// this run's sandbox made another at its name).
		for _, k := range append(append([]string{}, launch.gitDirs...), launch.gitFiles...) {
			seen[k] = launch.sameEnt(wsfd, k)
		}
		for _, k := range launch.bare {
			seen[k] = true
		}
	}
	var reduced, removed, kept, unheaded, waiting []string
	// wait leaves an entry a live run's sandbox has a mount on to the
	// last run out (pending_linux.go): changing it now would take that
	// mount with it.
	wait := func(kind string, dfd int, name, rel string) {
		pend.add(kind, dfd, name, rel)
		waiting = append(waiting, rel)
	}
	todo := append(append([]string{}, f.gitDirs...), f.gitFiles...)
	for i := 0; i < len(todo); i++ {
		g := todo[i]
		if seen[g] {
			continue
		}
		seen[g] = true
		dir := filepath.Dir(g)
		dfd, err := openGitDir(wsfd, dir)
		if err != nil {
			kept = append(kept, g)
			continue
		}
		var st unix.Stat_t
		switch err := unix.Fstatat(dfd, ".git", &st, unix.AT_SYMLINK_NOFOLLOW); {
		case err != nil:
		case st.Mode&unix.S_IFMT == unix.S_IFREG && isAdoptedWorktree(wsfd, g):
			// A linked worktree of a shown repository, adopted: its
			// gitfile names the git directory jail wrote it into. What
			// the repository's config names relative to its top was
			// the sandbox's to write.
			asideWorktree(w, wsfd, dfd, g, run)
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			switch err := unlinkClaimed(dfd, ".git"); {
			case err == nil:
				removed = append(removed, g)
			case errors.Is(err, confine.ErrHeld):
				wait(pendGitfile, dfd, ".git", g)
			default:
				kept = append(kept, g)
			}
		case isEmptyDir(dfd, ".git"):
		default:
			switch err := reduce(w, dfd, scratch, ".git", g, run, f.names); {
			case err == nil:
				reduced = append(reduced, dir)
				// Its commits are all the sandbox's: what stands at
				// their gitlinks is judged as the walk's finds are,
				// wherever the walk did not look (node_modules).
				at := &found{}
				at.addCommitted(wsfd, gitlinksOf(w, wsfd, dir))
				todo = append(append(todo, at.gitDirs...), at.gitFiles...)
				for _, b := range at.bare {
					f.bare = appendNew(f.bare, b)
				}
			case errors.Is(err, confine.ErrHeld):
				wait(pendGit, dfd, ".git", g)
			default:
				kept = append(kept, g)
			}
		}
		unix.Close(dfd)
	}
	for _, b := range f.bare {
		if seen[b] {
			continue
		}
		_, existed := launch.idsOf()[b]
		if b != "." && launch != nil && !existed {
			// Made whole during the run: a repository of the sandbox's,
			// adopted anew under its own name.
			dfd, err := openGitDir(wsfd, filepath.Dir(b))
			if err == nil {
				err = reduce(w, dfd, scratch, filepath.Base(b), b, run, f.names)
				switch {
				case err == nil:
					reduced = append(reduced, b)
				case errors.Is(err, confine.ErrHeld):
					wait(pendBare, dfd, filepath.Base(b), b)
				default:
					kept = append(kept, b)
				}
				unix.Close(dfd)
			} else {
				kept = append(kept, b)
			}
			continue
		}
		// A directory of the user's (or one a cached plan knew nothing
		// of): only its HEAD goes aside, which is enough for git not
		// to take it for a repository.
		dfd, err := openGitDir(wsfd, b)
		if err == nil {
			_, err = moveAside(dfd, "HEAD", run)
			switch {
			case err == nil:
				unheaded = append(unheaded, b)
			case errors.Is(err, confine.ErrHeld):
				wait(pendHead, dfd, "HEAD", filepath.Join(b, "HEAD"))
			default:
				kept = append(kept, b)
			}
			unix.Close(dfd)
		} else {
			kept = append(kept, b)
		}
	}
	moved, notMoved, held := movedAside(wsfd, f, launch, run, pend)
	waiting = append(waiting, held...)
	if len(moved) > 0 {
		termtext.Fprintf(w, "jail: files that editors, agent CLIs and hooks managers run code from, which the sandbox made, were moved aside (renamed NAME.jail-%s...; look at them before you rename them back): %s\n", run, strings.Join(moved, ", "))
	}
	if len(notMoved) > 0 {
		termtext.Fprintf(w, "jail: WARNING: the sandbox made these files that editors, agent CLIs and hooks managers run code from, and jail could not move them aside; look at them before any tool opens this workspace: %s\n", strings.Join(notMoved, ", "))
	}
	if len(reduced) > 0 {
		termtext.Fprintf(w, "jail: git: repositories the sandbox made were reduced to what runs nothing (hooks and config keys that run programs dropped): %s\n", strings.Join(reduced, ", "))
	}
	if len(removed) > 0 {
		termtext.Fprintf(w, "jail: git: gitfiles and .git symlinks the sandbox made were removed: %s\n", strings.Join(removed, ", "))
	}
	if len(unheaded) > 0 {
		termtext.Fprintf(w, "jail: git: directories the sandbox made to look like git directories (HEAD, objects/, refs/) had their HEAD renamed HEAD.jail-%s, so that the host's git does not take them for repositories: %s\n", run, strings.Join(unheaded, ", "))
	}
	if len(kept) > 0 {
		termtext.Fprintf(w, "jail: git: WARNING: the sandbox made these git directories and jail could not reduce them; check their hooks and config before running git there: %s\n", strings.Join(kept, ", "))
	}
	pend.save(w, waiting)
}

// movedAside renames the protected names the walk after a run found (f)
// that were not there at launch (none are known for a cached plan's,
// which was made where there were none below the root): NAME becomes
// NAME.jail-RUN, by descriptor, in the directory that holds it. At the
// root an exact name held while the run lasts does not count (it is a
// protected path there, held whether or not it exists); for the others a
// cached plan was made where there were none (deepProtected). It returns
// the workspace-relative paths moved.
func movedAside(wsfd int, f, launch *found, run string, pend *pending) (out, failed, held []string) {
	for dir, names := range f.prot {
		var had []string
		if launch != nil {
			if launch.prot == nil {
				return nil, nil, nil // a launch that did not record them: nothing is known to be new
			}
			had = launch.prot[dir]
		}
		var dfd = -1
		for _, n := range names {
			_, byGlob := f.names.match(n)
			existed := slices.Contains(had, n)
			if existed && launch.sameEnt(wsfd, filepath.Join(dir, n)) {
				continue
			}
			// At the root a name held while the run lasts is this run's
			// protected path: its placeholder is released (and what was
			// put in its place moved aside) by confine; one the user had
			// at launch, which another hand replaced meanwhile (a run in
			// a parent directory, past whose walk and sweep this root
			// may lie: node_modules), is moved aside here. An empty
			// directory runs nothing (another run's placeholder is one).
			if dir == "." && !byGlob && (!existed || launch == nil || launch.ents == nil || isEmptyDir(wsfd, n)) {
				continue
			}
			if dfd < 0 {
				var err error
				if dfd, err = openGitDir(wsfd, dir); err != nil {
					for _, n := range names {
						failed = append(failed, filepath.Join(dir, n))
					}
					break
				}
			}
			switch _, err := moveAside(dfd, n, run); {
			case err == nil:
				out = append(out, filepath.Join(dir, n))
			case errors.Is(err, confine.ErrHeld):
				pend.add(pendAside, dfd, n, filepath.Join(dir, n))
				held = append(held, filepath.Join(dir, n))
			case err != unix.ENOENT:
				failed = append(failed, filepath.Join(dir, n))
			}
		}
		if dfd >= 0 {
			unix.Close(dfd)
		}
	}
	slices.Sort(out)
	slices.Sort(failed)
	slices.Sort(held)
	return out, failed, held
}

// moveAside renames name beneath dfd out of every tool's view, by descriptor and without
// overwriting anything: NAME.jail-RUN, or, when that name is taken (a sandbox can read its
// run id from its own mounts and make it first, to have the rename fail and its file stay
// live), NAME.jail-RUN-RANDOM, a suffix no sandbox can know in advance. It returns the name
// used.
func moveAside(dfd int, name, run string) (string, error) {
	// Locked first: a live run's sandbox may have a mount on it, which the
	// rename would take along (confine.Claim).
	unlock, err := confine.Claim(dfd, name)
	if err != nil {
		return "", err
	}
	defer unlock()
	aside := name + ".jail-" + run
	err = unix.Renameat2(dfd, name, dfd, aside, unix.RENAME_NOREPLACE)
	for i := 0; i < 4 && err == unix.EEXIST; i++ {
		var b [8]byte
		if _, rerr := rand.Read(b[:]); rerr != nil {
			return "", rerr
		}
		aside = fmt.Sprintf("%s.jail-%s-%x", name, run, b)
		err = unix.Renameat2(dfd, name, dfd, aside, unix.RENAME_NOREPLACE)
	}
	return aside, err
}

// idsOf is the identities of the directories a walk visited (none for
// no walk).
func (f *found) idsOf() map[string]dirID {
	if f == nil {
		return nil
	}
	return f.ids
}

// reduce moves the repository name (.git, or a bare repository's own
// directory) beneath dfd aside and adopts it anew into an empty
// directory of that name; what cannot be adopted stays aside, out of
// git's view, under NAME.jail-RUN. It returns confine.ErrHeld, having
// changed nothing, when a live run's sandbox has a mount on it, and
// errNotReduced when the repository stays as it was (said on w).
//
// Its commits are held like those of any repository (codeFiles; names
// are the protected names, its work tree's hooks directory is none: the
// config it gets names none).
func reduce(w io.Writer, dfd, scratch int, name, rel, run string, names *nameSet) error {
	aside, err := moveAside(dfd, name, run)
	if err != nil {
		if errors.Is(err, confine.ErrHeld) {
			return err
		}
		return errNotReduced
	}
	src, err := openDir(dfd, aside)
	if err != nil {
		return errNotReduced
	}
	defer unix.Close(src)
	if err := unix.Mkdirat(dfd, name, 0o755); err != nil {
		return errNotReduced
	}
	dst, err := openDir(dfd, name)
	if err != nil {
		return errNotReduced
	}
	defer unix.Close(dst)
	rep, err := gitstate.AdoptNew(dst, src, newCodeFiles(names, dst, "").options(gitstate.Options{RunID: run, Scratch: scratch}, nil))
	if err == nil && rep != nil && name == ".git" {
		// A work tree no launch knew of: what the user's config names
		// relative to its top was the sandbox's to write.
		asideTargets(w, dfd, filepath.Dir(rel), -1, "", run)
	}
	if err == nil && rep != nil && rep.Incomplete {
		// Its history is not all there; the original stays aside,
		// without the HEAD that would make git inside it take it for a
		// repository.
		fmt.Fprintf(w, "jail: %s (%s)\n", rep.Summary(), termtext.Escape(rel))
		termtext.Fprintf(w, "jail: git: %s: objects the sandbox wrote were refused; the repository as it made it stays in %s, out of git's view\n", rel, filepath.Join(filepath.Dir(rel), aside))
		moveAside(src, "HEAD", run)
		return nil
	}
	if err != nil || rep == nil {
		termtext.Fprintf(w, "jail: git: %s: the repository the sandbox made was not adopted (%v); it stays in %s, out of git's view\n", rel, err, filepath.Join(filepath.Dir(rel), aside))
		unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
		// Out of git's view by its name, but git run inside it would
		// take it for a repository still.
		moveAside(src, "HEAD", run)
		return errNotReduced
	}
	reportHeld(w, rel, rep)
	if err := removeAll(dfd, aside); err != nil {
		termtext.Fprintf(w, "jail: git: cannot remove %s: %v\n", filepath.Join(filepath.Dir(rel), aside), err)
	}
	// What did not come through the reduction that a user would miss
	// (a remote's URL, a key of theirs); the hooks and keys that run
	// programs the summary line after the reduction names as a class.
	var noted []string
	for _, d := range rep.Dropped {
		if strings.HasPrefix(d, "config ") && !strings.Contains(d, "can make git run a program") && !strings.Contains(d, "left out") {
			noted = append(noted, d)
		} else if strings.Contains(d, "left out whole;") {
			noted = append(noted, d) // the URL's line, not the keys that went with it
		}
	}
	if len(noted) > 0 {
		where := rel
		if filepath.Base(rel) == ".git" {
			where = filepath.Dir(rel)
		}
		// The entries are escaped when made (gitstate.Report).
		fmt.Fprintf(w, "jail: git: %s: %s\n", termtext.Escape(where), termtext.Line(strings.Join(noted, "; ")))
	}
	return nil
}

// errNotReduced is a repository reduce left as it was.
var errNotReduced = errors.New("not reduced")

// unlinkClaimed removes the gitfile or symlink name beneath dfd once no
// live run holds it (confine.Claim).
func unlinkClaimed(dfd int, name string) error {
	unlock, err := confine.Claim(dfd, name)
	if err != nil {
		return err
	}
	defer unlock()
	return unix.Unlinkat(dfd, name, 0)
}
