//go:build linux

package confine

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The plan cache. Most of a `jail run` is the Go runtime starting and the
// plan being made, yet a project's runs repeat the same plan. The
// supervisor stores the plan of a run it could repeat without Go (no
// JSON result, timeout, limits or proxy) together with every fact about
// the host it was made from; the binary's constructor (fast_linux.c)
// checks each fact again on the next run and, when all hold, runs that
// plan without starting Go at all. A fact that does not hold, or anything
// it does not understand, sends the run down the Go path, which plans
// afresh and replaces the entry. docs/plan-cache.md has the rules.

// Fact kinds, shared with fast_linux.c (FACT_* in jail_linux.h).
const (
	factRealpath = 1 // realpath(path) is value
	factType     = 2 // lstat(path) has file type typ (0: does not exist)
	factLink     = 3 // readlink(path) is value
	factFile     = 4 // stat(path) is the file st, or fails with ENOENT or ENOTDIR when absent
	factDir      = 5 // lstat(path) is a directory with this device, inode and owner
	factDirs     = 6 // DirsHash of the directory path is value (its subdirectories and .git and HEAD entries; not its own .git with root)
	factGlob     = 7 // the names in directory path matching the pattern value are names
	factTree     = 8 // the entries tree of the walk of path (rootonly_linux.go) still hash to hash
	factStat     = 9 // lstat(path) has this type, device and inode (full: and size, mode, mtime and ctime), or fails with ENOENT or ENOTDIR when absent
)

// Facts are what a plan depends on in the host's file system, in the order
// they were observed. A nil *Facts records nothing.
type Facts struct {
	list []fact
	// unsure is set when a plan depends on something no fact captures;
	// such a plan is not cached.
	unsure bool
	// placeholders are the placeholder directories the plan made.
	placeholders map[string]bool
}

type fact struct {
	kind        uint32
	path, value string
	typ         uint32
	present     bool
	st          [5]uint64   // dev, ino, size, mtime ns, ctime ns (factDir: dev, ino, uid, birth ns; factDirs: dev, ino, mtime, ctime)
	mode        uint32      // factStat: st_mode (only its type unless full)
	full        bool        // factStat: size, mode, mtime and ctime count too
	hash        uint64      // factDirs
	root        bool        // factDirs: the workspace's root, whose .git does not count
	quiet       bool        // factDirs: the sweep need not list it while its identity holds (DirsHashed)
	names       []string    // factGlob: the matches, sorted
	tree        []treeEntry // factTree: the walk's entries, in its order
}

func (f *Facts) add(x fact) {
	if f != nil {
		f.list = append(f.list, x)
	}
}

func (f *Facts) realpath(path, resolved string) {
	f.add(fact{kind: factRealpath, path: path, value: resolved})
}

// fileType records the type of path from an lstat (mode 0: absent).
func (f *Facts) fileType(path string, mode uint32) {
	f.add(fact{kind: factType, path: path, typ: (mode & unix.S_IFMT) >> 12})
}

// Type records that the plan depends on the file type of path, from an
// lstat (mode 0: absent), for a planner outside this package.
func (f *Facts) Type(path string, mode uint32) { f.fileType(path, mode) }

// dir records the identity of a directory the plan binds by path: a
// workspace recreated under the same name, or a persistent home wiped by
// jail clean, is a different inode and must be planned afresh (the home's
// name is derived from the workspace's identity).
func (f *Facts) dir(path string, st *unix.Stat_t) {
	var birth uint64
	var sx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &sx) == nil && sx.Mask&unix.STATX_BTIME != 0 {
		birth = uint64(sx.Btime.Sec)*1e9 + uint64(sx.Btime.Nsec)
	}
	f.add(fact{kind: factDir, path: path, st: [5]uint64{st.Dev, st.Ino, uint64(st.Uid), birth}})
}

// glob records the names in directory dir that match pat (none when dir
// cannot be opened without following a symlink).
func (f *Facts) glob(dir, pat string, names []string) {
	f.add(fact{kind: factGlob, path: dir, value: pat, names: names})
}

func (f *Facts) link(path, target string) {
	f.add(fact{kind: factLink, path: path, value: target})
}

// Dirs records that the plan depends on which subdirectories and .git
// and HEAD entries the directory path holds (the git view's walk for nested
// repositories): a change there sends the next run down the Go path. For
// the workspace's root its own .git does not count (the git view makes
// one for each run, and a fact of its own says what was there). A
// directory that cannot be read makes the plan unsure.
func (f *Facts) Dirs(path string, root bool) {
	if f == nil {
		return
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		f.unsure = true
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	// This run's placeholders are not counted: a cached run checks the
	// fact before it makes its own.
	h, err := dirsHash(fd, root, func(name string) bool { return f.placeholders[filepath.Join(path, name)] })
	if err == nil {
		err = unix.Fstat(fd, &st)
	}
	if err != nil {
		f.unsure = true
		return
	}
	f.DirsHashed(path, root, h, &st, false)
}

// placeholder records that the plan made a placeholder directory at path,
// which exists only while the run lasts.
func (f *Facts) placeholder(path string) {
	if f == nil {
		return
	}
	if f.placeholders == nil {
		f.placeholders = map[string]bool{}
	}
	f.placeholders[path] = true
}

// DirsHash sums a hash of the name of each subdirectory and each file
// WatchedName names of the directory fd (but .git itself with skipGit;
// a HEAD is what makes a directory a bare repository for git), with
// their count: independent of the order the file system lists them in,
// and unchanged by files coming and going (jail_dir_hash in twins_linux.c
// computes the same).
func DirsHash(fd int, skipGit bool) (uint64, error) {
	return dirsHash(fd, skipGit, func(string) bool { return false })
}

// dirsHash is DirsHash leaving out the entries skip names.
func dirsHash(fd int, skipGit bool, skip func(name string) bool) (uint64, error) {
	d, err := unix.Dup(fd)
	if err != nil {
		return 0, err
	}
	f := os.NewFile(uintptr(d), "dir")
	defer f.Close()
	if _, err := f.Seek(0, 0); err != nil {
		return 0, err
	}
	ents, err := f.ReadDir(-1)
	if err != nil {
		return 0, err
	}
	var names []string
	var dirs []bool
	for _, e := range ents {
		t := e.Type()
		if t == os.ModeIrregular { // DT_UNKNOWN
			var st unix.Stat_t
			if unix.Fstatat(fd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				t = os.ModeDir
			}
		}
		if skip(e.Name()) {
			continue
		}
		names = append(names, e.Name())
		dirs = append(dirs, t == os.ModeDir)
	}
	return DirsHashOf(names, dirs, skipGit), nil
}

// WatchedName reports whether DirsHash counts a file (not a directory)
// of this name: .git and HEAD, which make a repository for git's
// discovery, and the editor, agent and hooks-manager files that the git
// view looks for below the workspace's root (the file names of the
// default protected list; jail_watched_name in twins_linux.c).
func WatchedName(name string) bool {
	switch name {
	case ".git", "HEAD", ".envrc", ".mcp.json", ".aider.conf.yml", ".pre-commit-config.yaml":
		return true
	}
	return strings.HasPrefix(name, "lefthook") || strings.HasPrefix(name, ".lefthook") ||
		strings.HasPrefix(name, "opencode.") || strings.HasSuffix(name, ".code-workspace")
}

// DirsHashOf is DirsHash of a directory listing: names, and whether each
// is a directory (a symlink is not).
func DirsHashOf(names []string, dirs []bool, skipGit bool) uint64 {
	var sum, n uint64
	for i, name := range names {
		if !dirs[i] && !WatchedName(name) || skipGit && name == ".git" {
			continue
		}
		h := uint64(14695981039346656037)
		for j := 0; j < len(name); j++ {
			h ^= uint64(name[j])
			h *= 1099511628211
		}
		if dirs[i] {
			h += 0x9e3779b97f4a7c15
		}
		sum += h
		n++
	}
	return sum ^ n*0xff51afd7ed558ccd
}

// DirsHashed records a Dirs fact whose hash the caller computed with
// DirsHashOf from a listing it made of the directory st. The constructor
// first compares the directory's device, inode, mtime and ctime: only a
// directory whose entries changed is listed again.
//
// quiet says that the listing held no symlink, .git or HEAD, that the
// walk recorded a Dirs fact for each of its subdirectories (node_modules
// aside), and that st's ctime was older than the listing by more than a
// tick of the file systems' clock: while the directory has exactly st's
// identity, it holds exactly those entries, and the sweep after a cached
// run (sweep_dir) opens its subdirectories by their recorded names
// instead of listing it.
func (f *Facts) DirsHashed(path string, root bool, hash uint64, st *unix.Stat_t, quiet bool) {
	f.add(fact{kind: factDirs, path: path, hash: hash, root: root, quiet: quiet && !root,
		st: [5]uint64{st.Dev, st.Ino, uint64(st.Mtim.Nano()), uint64(st.Ctim.Nano())}})
}

// Unsure marks the plan as depending on more than its facts.
func (f *Facts) Unsure() {
	if f != nil {
		f.unsure = true
	}
}

// File records the identity of a file the plan was made from (a policy
// file), or its absence.
func (f *Facts) File(path string) {
	if f == nil {
		return
	}
	var st unix.Stat_t
	err := unix.Stat(path, &st)
	switch {
	case err == nil:
		f.add(fact{kind: factFile, path: path, present: true, st: identity(&st)})
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		f.add(fact{kind: factFile, path: path})
	default:
		f.unsure = true
	}
}

// Stat records the lstat of path, or its absence: with full, a file
// whose content, mode or (for a directory) entries changed is a change
// (its mtime or ctime moved, which no process can set back for ctime);
// without, only its type, device and inode count (a directory replaced
// by another of the same name). The git view records this way every file
// a repository's launch state is read from (gitstate.TakeInputs).
func (f *Facts) Stat(path string, full bool) {
	if f == nil {
		return
	}
	var st unix.Stat_t
	err := unix.Lstat(path, &st)
	switch {
	case err == nil:
		x := fact{kind: factStat, path: path, present: true, full: full, mode: st.Mode & unix.S_IFMT, st: [5]uint64{st.Dev, st.Ino}}
		if full {
			x.mode = st.Mode
			x.st = identity(&st)
		}
		f.add(x)
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
		f.add(fact{kind: factStat, path: path, full: full})
	default:
		f.unsure = true
	}
}

// FilesUnchanged reports whether every file recorded with File or Stat
// still has the identity it had then: a policy file edited while it was
// loaded, or a ref moved while a repository's state was read, must not be
// cached under its new identity with the plan of the old.
func (f *Facts) FilesUnchanged() bool {
	again := &Facts{}
	for _, x := range f.list {
		switch x.kind {
		case factFile:
			again.File(x.path)
		case factStat:
			again.Stat(x.path, x.full)
		default:
			continue
		}
		if again.unsure || !sameFact(again.list[len(again.list)-1], x) {
			return false
		}
	}
	return true
}

func sameFact(a, b fact) bool {
	return a.kind == b.kind && a.path == b.path && a.value == b.value && a.typ == b.typ && a.present == b.present && a.st == b.st &&
		a.mode == b.mode && a.full == b.full && slices.Equal(a.names, b.names)
}

func identity(st *unix.Stat_t) [5]uint64 {
	return [5]uint64{st.Dev, st.Ino, uint64(st.Size),
		uint64(st.Mtim.Sec)*1e9 + uint64(st.Mtim.Nsec), uint64(st.Ctim.Sec)*1e9 + uint64(st.Ctim.Nsec)}
}

// cacheKeyEnv are the variables a plan is made from besides the files:
// the workspace (PWD names the working directory as the shell sees it),
// the home, the locations of the user's policy, of the cache and of the
// persistent sandbox homes, and PATH, whose entries under the home decide
// which tool roots are bound.
// The command's environment is built afresh on every run, from the
// pass-list the entry keeps.
func cacheKeyEnv() []string {
	return []string{"PWD", "HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "PATH"}
}

// CacheEntry is one run's plan and what it was made from.
type CacheEntry struct {
	// Args are the arguments between "run" and the first "--", which
	// they include; the command after it comes from each run.
	Args []string
	// Facts are the host facts the layout was built from; policy files
	// are added by the caller.
	Facts *Facts
	// Pass and Extra build the command's environment as `jail run` does
	// (pass-list patterns, then NAME or NAME=VALUE in order).
	Pass, Extra []string
	// Workspace is the resolved workspace and Placeholders the run's:
	// the cached run makes the same placeholders itself.
	Workspace    string
	Placeholders *Placeholders
	// JSON makes the cached run print the result object of `jail run
	// --json` on stderr, as the Go path does, with PolicySHA256 in it.
	JSON         bool
	PolicySHA256 string
	// Timeout, when not zero, kills the whole sandbox that long after the
	// command started; TimeoutNote is the line the Go path prints then.
	Timeout     time.Duration
	TimeoutNote string
	// Fresh, when set, is a directory each cached run makes anew: the
	// private git directory of a workspace without a repository
	// (package gitview, docs/git.md).
	Fresh *CacheFresh
}

// CacheFresh is what a cached run redoes of a git view: it makes its own
// RUN directory in KeyDir (16 hex digits, locked for the run) and
// replaces Run, the RUN name of the run that stored the plan, with its
// own wherever the plan names it. Then either (Rel) an empty host
// directory Rel in the workspace, marked user.jail=git and held with a
// shared flock, for a fresh private git directory; or (Overlays) the
// upper and work directories of each of the repositories g0 ... gN-1
// shown as overlays, and Meta as the RUN directory's record (the
// repositories' identities and launch states, and the launch walk), which
// the facts of the entry keep true. After the run it removes the RUN
// directory (and the empty .git) when the sandbox changed nothing there
// and no directory the walk recorded changed, and otherwise hands them to
// the Go adopter (the hidden command AdoptCommand; "meta" mode for
// overlays, which reduces against the launch walk the record holds).
type CacheFresh struct {
	KeyDir, Run, Rel string
	Overlays         int
	Meta             []byte
}

// maxCachedHolds is how many objects a cached run holds at most
// (MAX_LOCKS in fast_linux.c).
const maxCachedHolds = 64

// AdoptCommand is the hidden command a cached run executes, and waits
// for, to adopt a repository its sandbox made: jail AdoptCommand KEYFD
// RUNFD RUN, with the RUN directory locked on RUNFD (ADOPT_COMMAND in
// fast_linux.c); also, with the mode "pending", to finish what earlier
// runs' ends left to the last run out (gitview.ReducePending).
const AdoptCommand = "__git-adopt"

// GuardCommand is the hidden command of a run's git state guardian
// (gitview's startGuard): jail GuardCommand WORKSPACE RUN LAUNCH-NS MODE, carried
// out by C before the Go runtime (JAIL_GUARD_COMMAND in
// gitguard_linux.h).
const GuardCommand = "__git-guard"

// limitCode is a LimitMethod as the cached run reads it (LIMIT_* in
// jail_linux.h).
func limitCode(m LimitMethod) uint32 {
	switch m {
	case LimitCgroup2:
		return 1
	case LimitCgroup1:
		return 2
	case LimitRLimit:
		return 3
	}
	return 0
}

// PlanCacheDir is where plans are cached: $XDG_CACHE_HOME/jail/plans, or
// ~/.cache/jail/plans. Empty when neither is an absolute path.
func PlanCacheDir(home, xdgCache string) string {
	base := xdgCache
	if !filepath.IsAbs(base) {
		if !filepath.IsAbs(home) {
			return ""
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "jail", "plans")
}

// planCacheName is the entry's file name: FNV-1a of the uid, the working
// directory and the arguments, each NUL-terminated (jail_cache_name in
// twins_linux.c). The entry itself holds the whole key.
func planCacheName(uid int, cwd string, args []string) string {
	h := uint64(14695981039346656037)
	add := func(s string) {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= 1099511628211
		}
		h ^= 0
		h *= 1099511628211
	}
	add(strconv.Itoa(uid))
	add(cwd)
	for _, a := range args {
		add(a)
	}
	return fmt.Sprintf("%016x.plan", h)
}

const cacheMagic = "JAILFST4"

// maxCacheEntry bounds an entry; fast_linux.c refuses larger ones.
const maxCacheEntry = 1 << 20

// CachePlan writes the cache entry of a run whose sandbox has started.
// It does nothing (and says why) when the run cannot be repeated without
// Go: no early child, a held sandbox, proxy sockets, rlimits, or a plan
// that depends on more than its facts.
func (c *Cmd) CachePlan(dir string, e *CacheEntry) error {
	if c.header == nil || c.setup == nil {
		return errors.New("plan cache: this run's sandbox cannot be repeated from a cache")
	}
	if e.Facts == nil || e.Facts.unsure || !e.Facts.FilesUnchanged() {
		return errors.New("plan cache: the plan depends on more than the facts it records")
	}
	if len(e.Args) == 0 || e.Args[len(e.Args)-1] != "--" {
		return errors.New("plan cache: the arguments must end with --")
	}
	var xst unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &xst); err != nil {
		return fmt.Errorf("plan cache: %w", err)
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return fmt.Errorf("plan cache: %w", err)
	}
	cwd, err := unix.Getwd()
	if err != nil {
		return fmt.Errorf("plan cache: %w", err)
	}
	s := c.Spec
	p := &plan{b: []byte(cacheMagic)}
	for _, v := range identity(&xst) {
		p.u64(v)
	}
	p.str(strings.TrimSpace(string(boot)))
	p.u32(uint32(os.Getuid()))
	p.u32(uint32(os.Getgid()))
	p.str(cwd)
	p.u32(uint32(len(e.Args)))
	for _, a := range e.Args {
		p.str(a)
	}
	p.u32(uint32(len(cacheKeyEnv())))
	for _, k := range cacheKeyEnv() {
		v, ok := os.LookupEnv(k)
		p.str(k)
		p.u32(boolU32(ok))
		p.str(v)
	}
	p.u32(uint32(len(e.Facts.list)))
	for _, f := range e.Facts.list {
		p.u32(f.kind)
		p.str(f.path)
		switch f.kind {
		case factRealpath, factLink:
			p.str(f.value)
		case factType:
			p.u32(f.typ)
		case factDir:
			p.u64(f.st[0])
			p.u64(f.st[1])
			p.u64(f.st[3])
			p.u32(uint32(f.st[2]))
		case factFile:
			p.u32(boolU32(f.present))
			if f.present {
				for _, v := range f.st {
					p.u64(v)
				}
			}
		case factDirs:
			// Bit 0: the root; bit 1: quiet (DirsHashed).
			p.u32(boolU32(f.root) | boolU32(f.quiet)<<1)
			for _, v := range f.st[:4] {
				p.u64(v)
			}
			p.u64(f.hash)
		case factGlob:
			p.str(f.value)
			p.u32(uint32(len(f.names)))
			for _, n := range f.names {
				p.str(n)
			}
		case factStat:
			p.u32(boolU32(f.full))
			p.u32(boolU32(f.present))
			if f.present {
				p.u32(f.mode)
				p.u64(f.st[0])
				p.u64(f.st[1])
				if f.full {
					for _, v := range f.st[2:] {
						p.u64(v)
					}
				}
			}
		case factTree:
			p.u32(uint32(len(f.tree)))
			for _, e := range f.tree {
				p.u32(e.parent)
				p.str(e.name)
				p.u32(boolU32(e.read))
			}
			p.u64(f.hash)
		}
	}
	made, ok := e.Placeholders.cacheParts()
	if !ok {
		return errors.New("plan cache: this run relies on a placeholder of another run")
	}
	p.str(e.Workspace)
	p.u32(uint32(len(made)))
	for _, m := range made {
		// The cached run makes the placeholder afresh and writes its
		// identity into the plan where the Go path wrote this one's.
		at, ok := c.protectAt[filepath.Join(e.Workspace, m.rel)]
		if !ok || at+16 > len(c.setup) {
			return fmt.Errorf("plan cache: no protect operation for the placeholder %s", m.rel)
		}
		p.str(m.rel)
		p.u32(uint32(at))
	}
	if len(e.Placeholders.locked) > maxCachedHolds {
		return errors.New("plan cache: more objects to hold than a cached run holds")
	}
	p.u32(uint32(len(e.Placeholders.locked)))
	for _, l := range e.Placeholders.locked {
		p.str(l)
	}
	if f := e.Fresh; f != nil {
		if len(f.Run) != 16 || !bytes.Contains(c.setup, []byte(f.Run)) {
			return errors.New("plan cache: the plan does not name the run's git directory")
		}
		if (f.Rel == "") == (f.Overlays == 0) || f.Overlays > 0 && len(f.Meta) == 0 || bytes.Contains(f.Meta, []byte(f.Run)) {
			return errors.New("plan cache: the git view is neither one fresh directory nor overlays")
		}
		p.u32(1)
		p.str(f.KeyDir)
		p.str(f.Run)
		p.str(f.Rel)
		p.u32(uint32(f.Overlays))
		p.bytes(f.Meta)
	} else {
		p.u32(0)
	}
	for _, list := range [][]string{e.Pass, e.Extra} {
		p.u32(uint32(len(list)))
		for _, v := range list {
			p.str(v)
		}
	}
	p.str(s.Dir)
	p.u32(boolU32(e.JSON))
	p.str(e.PolicySHA256)
	p.u64(uint64(max(e.Timeout, 0)))
	p.str(e.TimeoutNote)
	// The limits, which the cached run enforces the way this one did
	// (the same method; if it cannot, the Go supervisor plans afresh):
	// the method, the bounds, where a cgroup v2 goes, and the note and
	// sizes the result and the messages print.
	cgParent := ""
	if c.cg.method == LimitCgroup2 && len(c.cg.dirs) > 0 {
		cgParent = filepath.Dir(c.cg.dirs[0])
	}
	mem, census := c.Limits.MemoryBytes, int64(0)
	if c.cg.method == LimitRLimit && c.Limits.MemoryNoRLimit {
		mem = 0 // as rlimitsFor: no RLIMIT_DATA for the default bound
	}
	if c.cg.method == LimitRLimit {
		census = c.Limits.MemoryBytes // as startWatch: the census holds it
	}
	p.u32(limitCode(c.cg.method))
	p.u64(uint64(max(mem, 0)))
	p.u64(uint64(max(c.Limits.Pids, 0)))
	p.u64(uint64(max(census, 0)))
	p.str(cgParent)
	p.str(c.cg.why) // written by jail_result_json as the Go path writes it
	p.str(FormatSize(c.Limits.MemoryBytes))
	p.bytes(c.header)
	p.bytes(c.setup)
	for _, v := range append(append(append([]string{e.PolicySHA256, e.TimeoutNote}, e.Args...), e.Pass...), e.Extra...) {
		if strings.ContainsRune(v, 0) {
			return errors.New("plan cache: an argument contains a NUL byte")
		}
	}
	if len(p.b)+sha256.Size > maxCacheEntry {
		return fmt.Errorf("plan cache: entry of %d bytes, at most %d", len(p.b), maxCacheEntry)
	}
	key, err := cacheKey()
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(p.b)
	return writeCacheEntry(dir, planCacheName(os.Getuid(), cwd, e.Args), mac.Sum(p.b))
}

// PlanCacheReady reports why the plan cache cannot work here, if it
// cannot: its key needs the kernel's user keyring (jail check).
func PlanCacheReady() error {
	_, err := cacheKey()
	return err
}

// cacheKeyName is the user keyring key that authenticates the user's plan
// cache entries (CACHE_KEY_NAME in jail_linux.h).
const cacheKeyName = "jail:plan-cache"

// cacheKey returns the user's plan cache key, creating it in the kernel's
// user keyring when there is none. The keyring is out of every sandbox's
// reach (seccomp refuses keyctl, add_key and request_key), so an entry a
// sandbox wrote, wherever it could write one, fails authentication. The
// key lives as long as the user's keyring (until the user's last process
// ends or the machine reboots); a new key only makes old entries misses.
func cacheKey() ([]byte, error) {
	if id, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", cacheKeyName, 0); err == nil {
		key := make([]byte, 32)
		if n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, key, 0); err == nil && n == 32 {
			return key, nil
		}
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("plan cache: key: %w", err)
	}
	id, err := unix.AddKey("user", cacheKeyName, key, unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		return nil, fmt.Errorf("plan cache: no key in the user keyring (add_key: %w)", err)
	}
	// The user's own processes may find and read it (the next jail run
	// is one); nobody else may.
	const perm = 0x3f0b0000 // possessor: all (0x3f); user: view, read, search (0x0b)
	if err := unix.KeyctlSetperm(id, perm); err != nil {
		return nil, fmt.Errorf("plan cache: key permissions: %w", err)
	}
	return key, nil
}

// MakePlanCacheDir creates the cache directory (PlanCacheDir), private
// to the user.
func MakePlanCacheDir(dir string) error {
	fd, err := openPlanCacheDir(dir)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// openPlanCacheDir opens dir (ROOT/jail/plans), creating jail and plans
// as private directories without following a symlink at either, and
// checks that both are the user's own with no access for anyone else. A
// directory that exists is never changed: jail does not chmod what it
// finds. ROOT ($XDG_CACHE_HOME or ~/.cache) must exist, or be ~/.cache in
// an existing home: a user without a home (HOME=/nonexistent) gets no
// cache rather than a new home.
func openPlanCacheDir(dir string) (int, error) {
	root := filepath.Dir(filepath.Dir(dir))
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) && filepath.Base(root) == ".cache" {
		if err := unix.Mkdir(root, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, fmt.Errorf("plan cache: %w", err)
		}
		fd, err = unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return -1, fmt.Errorf("plan cache: %s: %w", root, err)
	}
	for _, name := range []string{"jail", "plans"} {
		if err := unix.Mkdirat(fd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(fd)
			return -1, fmt.Errorf("plan cache: %w", err)
		}
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("plan cache: %s: %w", name, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil || int(st.Uid) != os.Getuid() || st.Mode&0o077 != 0 {
			unix.Close(next)
			return -1, fmt.Errorf("plan cache: %s is not a private directory of this user (mode 0700); not used", filepath.Join(root, "jail", name))
		}
		fd = next
	}
	return fd, nil
}

// writeCacheEntry stores b as dir/name, atomically, by descriptor: no
// symlink in the cache directory is followed.
func writeCacheEntry(dir, name string, b []byte) error {
	fd, err := openPlanCacheDir(dir)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := fmt.Sprintf(".tmp-%x", rnd)
	f, err := unix.Openat(fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("plan cache: %w", err)
	}
	file := os.NewFile(uintptr(f), tmp)
	_, werr := file.Write(b)
	cerr := file.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(fd, tmp, fd, name)
	}
	if werr != nil {
		unix.Unlinkat(fd, tmp, 0)
		return fmt.Errorf("plan cache: %w", werr)
	}
	pruneCache(fd)
	return nil
}

// Entries are pruned when there are more than maxCacheEntries: the least
// recently stored go first, down to three quarters.
const maxCacheEntries = 256

func pruneCache(dirfd int) {
	d, err := unix.Dup(dirfd)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(d), "plans")
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil || len(names) <= maxCacheEntries {
		return
	}
	type entry struct {
		name string
		mod  int64
	}
	var es []entry
	for _, n := range names {
		var st unix.Stat_t
		if strings.HasSuffix(n, ".plan") && unix.Fstatat(dirfd, n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			es = append(es, entry{n, st.Mtim.Sec*1e9 + st.Mtim.Nsec})
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.mod, b.mod) })
	for _, e := range es[:max(0, len(es)-maxCacheEntries*3/4)] {
		unix.Unlinkat(dirfd, e.name, 0)
	}
}
