//go:build linux

package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/home"
	"github.com/jail-sandbox/jail/policy"
	"golang.org/x/sys/unix"
)

// Setup is what a profile adds to a run besides its layout: the variables
// to pass and the hosts to open.
type Setup struct {
	Name string
	// Env lists the variables to pass from the caller; Set, NAME=VALUE
	// variables to set.
	Env   []string
	Set   []string
	Allow []string
}

// Check refuses what Apply would refuse about the caller's choices (no
// home, a variable that moves the agent's files outside the home or into
// the workspace) without making anything, so a refused run makes nothing
// on the host.
func Check(layout *confine.Layout, name string, prof policy.Profile, userHome string, getenv func(string) string) error {
	if !filepath.IsAbs(userHome) {
		return fmt.Errorf("profile %s: no home directory to find the agent's files in", name)
	}
	_, _, err := rebase(name, prof.ConfigEnv, userHome, layout.Workspace, getenv)
	return err
}

// Apply adds profile prof to layout (docs/agents.md): its Own directories
// are the sandbox's own with the host's entries bound read-only in them
// (Private names, state and seeds excepted), its RW state bound read-write
// from the host (directories created private when missing, files bound
// when they exist or created empty), its RO paths bound read-only (one
// beneath an RW directory kept read-only in place, made empty first
// beneath the directory's descriptor, so the sandbox cannot create it),
// and its Seed files copied into the workspace's persistent home h (nil:
// none, and nothing is seeded). userHome is the caller's home, where "~"
// points on both sides; getenv reads the caller's environment, whose
// ConfigEnv variables move the profile's paths.
func Apply(layout *confine.Layout, name string, prof policy.Profile, userHome, homesRoot string, h *home.Home, getenv func(string) string) (*Setup, error) {
	if !filepath.IsAbs(userHome) {
		return nil, fmt.Errorf("profile %s: no home directory to find the agent's files in", name)
	}
	expand, moved, err := rebase(name, prof.ConfigEnv, userHome, layout.Workspace, getenv)
	if err != nil {
		return nil, err
	}
	var rwDirs []string
	for _, p := range prof.RW {
		abs := expand(p)
		if err := makeState(userHome, abs, true); err != nil {
			return nil, fmt.Errorf("profile %s: create %s: %w", name, abs, err)
		}
		if st, err := os.Lstat(abs); err == nil && !bound(layout, abs) {
			layout.ReadWrite = append(layout.ReadWrite, abs)
			if st.IsDir() {
				rwDirs = append(rwDirs, abs)
			}
		}
	}
	for _, p := range prof.RWFiles {
		abs := expand(p)
		if filepath.Ext(abs) != ".json" || slices.Contains(prof.Create, p) {
			if err := makeState(userHome, abs, false); err != nil {
				return nil, fmt.Errorf("profile %s: create %s: %w", name, abs, err)
			}
		}
		if _, err := os.Lstat(abs); err == nil && !bound(layout, abs) {
			layout.ReadWrite = append(layout.ReadWrite, abs)
		}
	}
	// What an Own directory does not show from the host: the private
	// names, what is bound read-write already, and the seeded files.
	skip := map[string]bool{}
	for _, l := range [][]string{prof.Private, prof.RW, prof.RWFiles, prof.Seed} {
		for _, p := range l {
			skip[expand(p)] = true
		}
	}
	for _, p := range prof.Own {
		dir := expand(p)
		ents, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue // the sandbox's own from the start
		}
		if err != nil {
			return nil, fmt.Errorf("profile %s: read %s: %w", name, dir, err)
		}
		for _, e := range ents {
			abs := filepath.Join(dir, e.Name())
			if skip[abs] || bound(layout, abs) || transient(e.Name()) {
				continue
			}
			// Directories and files only, and only what resolves (a
			// dangling link or a socket is not shown).
			if st, err := os.Stat(abs); err != nil || !st.IsDir() && !st.Mode().IsRegular() {
				continue
			}
			layout.ReadOnly = append(layout.ReadOnly, abs)
		}
	}
	for _, p := range prof.RO {
		abs := expand(p)
		root := ""
		for _, d := range rwDirs {
			if abs != d && strings.HasPrefix(abs, d+"/") {
				root = d
			}
		}
		if root == "" {
			// A config directory or file: bound read-only as it is, when
			// it exists (one missing is the sandbox's own, in its home,
			// and never the host's).
			if _, err := os.Stat(abs); err == nil && !bound(layout, abs) {
				layout.ReadOnly = append(layout.ReadOnly, abs)
			}
			continue
		}
		rel, _ := filepath.Rel(root, abs)
		if err := makeBeneath(root, rel); err != nil {
			return nil, fmt.Errorf("profile %s: %s: %w", name, abs, err)
		}
		// Covered in place, like a protected path: the init opens it
		// without following a symlink, and covers a symlink instead.
		layout.Extra = append(layout.Extra, confine.Mount{Kind: confine.Protect, Dest: abs})
	}
	if h != nil {
		for _, p := range prof.Seed {
			src := expand(p)
			rel, _ := filepath.Rel(userHome, src)
			data, err := os.ReadFile(src)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("profile %s: seed %s: %w", name, src, err)
			}
			if err := home.Seed(homesRoot, h, rel, data); err != nil {
				return nil, fmt.Errorf("profile %s: %w", name, err)
			}
		}
	}
	var set []string
	for _, e := range prof.SetEnv {
		n, v, _ := strings.Cut(e, "=")
		if strings.HasPrefix(v, "~/") {
			v = policy.ExpandProfilePath(v, userHome)
		}
		set = append(set, n+"="+v)
	}
	return &Setup{Name: name, Env: append(slices.Clone(prof.Env), moved...), Set: set, Allow: prof.Allow}, nil
}

// rebase returns the function that turns a profile path (~/x) into a host
// path, following the ConfigEnv variables the caller set: a path under an
// entry's ~/path is taken at the same place under $NAME (or $NAME/REL),
// the longest such entry winning. It also returns the variables set, to
// pass into the sandbox. A variable that points outside the home, or into
// the workspace, is refused: the profile shows the agent's files of the
// home, and nothing else of the host.
func rebase(name string, configEnv []string, userHome, workspace string, getenv func(string) string) (func(string) string, []string, error) {
	type move struct{ from, to string }
	var moves []move
	var moved []string
	for _, e := range configEnv {
		n, def, _ := strings.Cut(e, "=")
		v, rel, _ := strings.Cut(n, "/")
		val := getenv(v)
		if val == "" {
			continue
		}
		dir := filepath.Clean(val)
		ws := filepath.Clean(workspace)
		if !filepath.IsAbs(dir) || dir == userHome || !strings.HasPrefix(dir, userHome+"/") || dir == ws || strings.HasPrefix(dir, ws+"/") {
			return nil, nil, fmt.Errorf("profile %s: %s=%s is not a directory under your home %s outside the workspace: the profile shows only the agent's files in the home (unset %s, or run with --profile none and bind it yourself with --ro/--rw)", name, v, val, userHome, v)
		}
		if !slices.Contains(moved, v) {
			moved = append(moved, v)
		}
		from := userHome
		if def != "~" {
			from = policy.ExpandProfilePath(def, userHome)
		}
		moves = append(moves, move{from, filepath.Join(dir, rel)})
	}
	expand := func(p string) string {
		abs := policy.ExpandProfilePath(p, userHome)
		best := -1
		for i, m := range moves {
			if (abs == m.from || strings.HasPrefix(abs, m.from+"/")) && (best < 0 || len(m.from) > len(moves[best].from)) {
				best = i
			}
		}
		if best < 0 {
			return abs
		}
		return moves[best].to + strings.TrimPrefix(abs, moves[best].from)
	}
	return expand, moved, nil
}

// transient says a name is a file an agent running on the host makes and
// removes within moments (a temporary file it renames into place, a
// lock): bound, it could be gone by the time the sandbox is built, which
// would refuse the run; and the agent inside makes its own.
func transient(name string) bool {
	return strings.Contains(name, ".tmp") || strings.HasSuffix(name, ".lock")
}

// bound says the caller already binds abs itself (--ro, --rw): its
// choice stands, and the profile does not bind the same path again.
func bound(layout *confine.Layout, abs string) bool {
	for _, p := range append(append([]string{}, layout.ReadOnly...), layout.ReadWrite...) {
		if filepath.Clean(p) == abs {
			return true
		}
	}
	return false
}

// makeState creates the state path abs under the home when it is missing
// (a directory, or an empty file), and the directories on the way, beneath
// the home's descriptor without following a symlink.
func makeState(userHome, abs string, dir bool) error {
	rel, err := filepath.Rel(userHome, abs)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("not under the home %s", userHome)
	}
	return makeAt(userHome, rel, dir)
}

// makeBeneath creates rel beneath root when it is missing, and the
// directories on the way: a directory, or, for a name with an extension,
// a file ("{}" for JSON, which agents parse; empty otherwise). Every component is opened beneath root's
// descriptor without following a symlink, since a sandbox may have
// written there; a symlink or anything else already there is left for
// the init to cover.
func makeBeneath(root, rel string) error {
	return makeAt(root, rel, filepath.Ext(rel) == "")
}

// makeAt is makeBeneath with the kind of the last component given: a
// directory when dir is set, else a file.
func makeAt(root, rel string, dir bool) error {
	rootfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(rootfd)
	parts := strings.Split(rel, "/")
	fd := rootfd
	for i, part := range parts {
		last := i == len(parts)-1
		next, err := unix.Openat2(fd, part, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if errors.Is(err, unix.ENOENT) {
			if last && !dir {
				f, err := unix.Openat(fd, part, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
				if err != nil && !errors.Is(err, unix.EEXIST) {
					return err
				}
				if err == nil {
					if filepath.Ext(part) == ".json" {
						unix.Write(f, []byte("{}\n"))
					}
					unix.Close(f)
				}
				break
			}
			if err := unix.Mkdirat(fd, part, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
				return err
			}
			next, err = unix.Openat2(fd, part, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		}
		if err != nil {
			break // a symlink (ELOOP) or a race: the init covers what is there
		}
		var st unix.Stat_t
		unix.Fstat(next, &st)
		if fd != rootfd {
			unix.Close(fd)
		}
		fd = next
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			break
		}
	}
	if fd != rootfd {
		unix.Close(fd)
	}
	return nil
}
