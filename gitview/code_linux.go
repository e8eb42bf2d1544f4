//go:build linux

package gitview

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/jail-sandbox/jail/gitstate"
	"golang.org/x/sys/unix"
)

// The sandbox cannot write the hooks directory, .envrc or .vscode/ of the
// workspace, but it can write a blob, stage it at .githooks/pre-commit and
// commit it: the git directory is its overlay, and its commits and index
// are adopted. The host's tree then differs from the adopted history at
// that path, and the host's next git restore, checkout, reset --hard or
// stash writes the sandbox's hook into the hooks directory, where the
// host's next commit runs it. So the adoption asks, before it moves a ref,
// which paths the commits new since launch add or change (the host's own
// git lists them, as for the gitlinks: committedGitlinks), and holds a ref
// whose commits touch a file the host's tools run code from; and an index
// that stages such a file the host's did not have is not adopted
// (gitstate.Options.Hold, Options.Protected; docs/git-adoption.md).

// codeFiles says which work-tree paths of one repository are files the
// host's tools run code from.
type codeFiles struct {
	// names are the protected names (held while a run lasts, and after
	// it), matched against every component of a path; nil when the run's
	// names are not known (an earlier run recovered without its launch
	// walk): then every name beginning with a dot is taken for one.
	names *nameSet
	// hooks are the hooks directories of the host's git (core.hooksPath
	// of the repository's, the user's and the system's config), the
	// config files they include and the files their program keys name
	// (programKeys), that lie in the work tree, relative to it.
	hooks []string
	// gitfd is the host's git directory, whose objects hold the blobs
	// whose content decides (.gitattributes, .gitmodules).
	gitfd int
}

// newCodeFiles is the codeFiles of the repository whose host git
// directory is gitfd and whose work tree is worktree.
func newCodeFiles(names *nameSet, gitfd int, worktree string) *codeFiles {
	c := &codeFiles{names: names, gitfd: gitfd}
	if !filepath.IsAbs(worktree) {
		return c
	}
	var t configTargets
	home := os.Getenv("HOME")
	for _, f := range userConfigs(home, os.Getenv("XDG_CONFIG_HOME")) {
		t.read(f, -1, home, worktree, 0, nil)
	}
	if fd, err := unix.Openat(gitfd, "config", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		t.read(filepath.Join(worktree, ".git", "config"), fd, home, worktree, 0, nil)
		unix.Close(fd)
	}
	if fd, err := unix.Openat(gitfd, "config.worktree", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		t.read(filepath.Join(worktree, ".git", "config.worktree"), fd, home, worktree, 0, nil)
		unix.Close(fd)
	}
	// The files the host's config includes and the programs it runs,
	// where they lie in the work tree, are held as the hooks are: a
	// commit changing .gitconfig (include.path = ../.gitconfig) or
	// tools/fsmon (core.fsmonitor) would be written there by the host's
	// next checkout, and run by its next git status.
	named := append(append([]string{}, t.hooks...), t.includes...)
	for _, p := range t.programs {
		// A word naming a directory of the work tree (sh -c 'cd src
		// && ...') is where the command runs, not what it runs.
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			named = append(named, p)
		}
	}
	for _, h := range named {
		if rel, err := filepath.Rel(worktree, filepath.Clean(h)); err == nil && rel != "." && !strings.HasPrefix(rel, "../") && rel != ".." {
			c.hooks = appendNew(c.hooks, rel)
		}
	}
	return c
}

// protected reports whether the work-tree path p, staging or committing
// the blob oid, is a file the host's tools run code from.
func (c *codeFiles) protected(p, oid string) bool {
	p = filepath.Clean(p)
	for _, h := range c.hooks {
		// At or below the hooks directory, or above it: a commit that
		// makes sub a symlink to a directory the sandbox wrote moves
		// the hooks directory sub/hooks there on the host's checkout.
		if within(p, h) || within(h, p) {
			return true
		}
	}
	for _, comp := range strings.Split(p, "/") {
		if c.names == nil {
			if strings.HasPrefix(comp, ".") {
				return true
			}
			continue
		}
		if ok, _ := c.names.match(comp); ok {
			return true
		}
	}
	switch filepath.Base(p) {
	case ".gitattributes", ".gitmodules", ".lfsconfig":
		env, done, err := c.gitEnv([]string{oid})
		if err != nil {
			return true
		}
		defer done()
		b, err := runHostGitEnv(c.gitfd, nil, env, "cat-file", "blob", oid)
		return err != nil || gitstate.TreeFileActs(p, b) != ""
	}
	return false
}

// hold is gitstate.Options.Hold for a repository whose refs at launch
// were base (nil: one the sandbox made, all of whose commits are new):
// the protected paths the commits reachable from oids and from none of
// the host's own refs in base add or change.
//
// The refs under refs/jail/ are not the host's: they hold what an earlier
// run's sandbox wrote and jail held or kept aside (Report.Held,
// Conflicts). A commit reachable from them is judged as new, so a held
// commit stays held however many runs later a sandbox points a branch,
// a tag or a notes ref at it. Every other ref in base is the host's own
// or one an earlier adoption wrote after asking Hold.
func (c *codeFiles) hold(base map[string]string) func([]string) ([]string, error) {
	return func(oids []string) ([]string, error) {
		var revs bytes.Buffer
		for _, o := range oids {
			fmt.Fprintln(&revs, o)
		}
		for name, v := range base {
			if !strings.HasPrefix(v, "ref: ") && !strings.HasPrefix(name, "refs/jail/") {
				for _, o := range strings.Split(v, "\n") {
					fmt.Fprintln(&revs, "^"+o)
				}
			}
		}
		env, done, err := c.gitEnv(oids)
		if err != nil {
			return nil, err
		}
		defer done()
		out, err := runHostGitEnv(c.gitfd, &revs, env, "-c", "log.showSignature=false", "-c", "core.fsmonitor=false",
			"log", "--stdin", "--format=", "--raw", "-r", "-m", "--root", "--no-renames", "--no-ext-diff",
			"--no-textconv", "--no-abbrev", "-z")
		if err != nil {
			return nil, err
		}
		// Records: ":OLDMODE NEWMODE OLD NEW STATUS\0PATH\0".
		seen := map[string]bool{}
		var paths []string
		fields := bytes.Split(out, []byte{0})
		for i := 0; i+1 < len(fields); i++ {
			rec := string(fields[i])
			if !strings.HasPrefix(rec, ":") {
				continue
			}
			i++
			f := strings.Fields(rec)
			if len(f) < 5 || f[4] == "D" || f[1] == "160000" {
				continue // a deletion writes nothing; gitlinks are committedGitlinks'
			}
			p := string(fields[i])
			if !seen[p] && c.protected(p, f[3]) {
				seen[p] = true
				paths = append(paths, p)
			}
		}
		sort.Strings(paths)
		return paths, nil
	}
}

// options are the adoption's options for this repository.
func (c *codeFiles) options(o gitstate.Options, base map[string]string) gitstate.Options {
	o.Hold = c.hold(base)
	o.Protected = c.protected
	return o
}

// gitEnv is what git needs, besides runHostGit's environment, to read the
// objects of c's git directory while a new repository is being adopted
// into it: HEAD is written last (gitstate.AdoptNew), and git takes a
// directory without one for no repository. Then git runs on an empty git
// directory of jail's own (private, in the temporary directory) that reads
// the objects of c's (GIT_OBJECT_DIRECTORY). done removes it.
func (c *codeFiles) gitEnv(oids []string) (env []string, done func(), err error) {
	if unix.Faccessat(c.gitfd, "HEAD", unix.F_OK, unix.AT_SYMLINK_NOFOLLOW) == nil {
		return nil, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "jail-git-")
	if err != nil {
		return nil, nil, fmt.Errorf("a git directory to read the objects with: %w", err)
	}
	done = func() { os.RemoveAll(dir) }
	cfg := "[core]\n\trepositoryformatversion = 0\n"
	if len(oids) > 0 && len(oids[0]) == 64 {
		cfg = "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha256\n"
	}
	for _, f := range []struct{ name, data string }{{"HEAD", "ref: refs/heads/main\n"}, {"config", cfg}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.data), 0o600); err != nil {
			done()
			return nil, nil, fmt.Errorf("a git directory to read the objects with: %w", err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "refs"), 0o700); err != nil {
		done()
		return nil, nil, fmt.Errorf("a git directory to read the objects with: %w", err)
	}
	return []string{"GIT_DIR=" + dir, "GIT_OBJECT_DIRECTORY=/proc/self/fd/3/objects"}, done, nil
}
