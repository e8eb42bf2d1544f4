//go:build linux

package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// Apply adds profile prof to layout: its config directories read-only
// (RO), with its state beneath them read-write (RW: directories created
// private on the host when missing, files bound when they exist), RO
// paths that lie beneath an RW directory kept read-only in place (missing
// ones made empty first, beneath the directory's descriptor, so the
// sandbox cannot create them), and the files it seeds into the
// workspace's persistent home h (nil: none, and nothing is seeded).
// userHome is the caller's home, where "~" points on both sides.
func Apply(layout *confine.Layout, name string, prof policy.Profile, userHome, homesRoot string, h *home.Home) (*Setup, error) {
	if !filepath.IsAbs(userHome) {
		return nil, fmt.Errorf("profile %s: no home directory to find the agent's files in", name)
	}
	var rwDirs []string
	for _, p := range prof.RW {
		abs := policy.ExpandProfilePath(p, userHome)
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
		abs := policy.ExpandProfilePath(p, userHome)
		if filepath.Ext(abs) != ".json" {
			if err := makeState(userHome, abs, false); err != nil {
				return nil, fmt.Errorf("profile %s: create %s: %w", name, abs, err)
			}
		}
		if _, err := os.Lstat(abs); err == nil && !bound(layout, abs) {
			layout.ReadWrite = append(layout.ReadWrite, abs)
		}
	}
	for _, p := range prof.RO {
		abs := policy.ExpandProfilePath(p, userHome)
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
			rel := strings.TrimPrefix(p, "~/")
			src := policy.ExpandProfilePath(p, userHome)
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
	return &Setup{Name: name, Env: prof.Env, Set: set, Allow: prof.Allow}, nil
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
