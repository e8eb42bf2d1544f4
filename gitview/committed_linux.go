//go:build linux

package gitview

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jail-sandbox/jail/gitstate"
	"github.com/jail-sandbox/jail/termtext"
	"golang.org/x/sys/unix"
)

// The adopted index never gains a gitlink the host's did not have, but
// the sandbox's commits are adopted with their trees: a commit whose tree
// holds a gitlink at a/b/c/d/e/f puts it in the host's index once the
// host checks it out (git reset --hard, git checkout), and from then on
// the host's git status at the top descends into a/b/c/d/e/f and runs
// what the repository there says. So after adoption jail lists the
// gitlinks the sandbox's new commits introduce, whatever their depth,
// and the post-run scan treats each such path as it treats a .git the
// walk found: a repository, bare directory, gitfile or symlink there that
// the launch did not know is reduced or removed.

// gitBins are where the git that lists them is looked for (a fixed list:
// PATH is the caller's).
var gitBins = []string{"/usr/bin/git", "/bin/git", "/usr/local/bin/git"}

// maxCommittedOut bounds what git may print; maxCommittedTime how long it
// may take.
const (
	maxCommittedOut  = 64 << 20
	maxCommittedTime = 60 * time.Second
)

// committedGitlinks lists the gitlink paths (relative to the work tree)
// that the commits reachable from the refs of the git directory gitfd,
// and from none of base's values, add or change; base nil for a
// repository made in the sandbox (every commit is new). The host's own
// git lists them, run by jail with a fixed environment: no system or
// global config, no pager, no external diff or textconv, and nothing of
// the repository's config that could run a program on this path (git log
// runs no hook or fsmonitor).
func committedGitlinks(gitfd int, base map[string]string) ([]string, error) {
	now, err := gitstate.Take(gitfd)
	if err != nil {
		return nil, err
	}
	var revs bytes.Buffer
	tips := 0
	for name, v := range now.Refs() {
		if strings.HasPrefix(v, "ref: ") || base[name] == v {
			continue
		}
		fmt.Fprintln(&revs, v)
		tips++
	}
	if tips == 0 {
		return nil, nil
	}
	for _, v := range base {
		if !strings.HasPrefix(v, "ref: ") {
			fmt.Fprintln(&revs, "^"+v)
		}
	}
	out, err := runHostGit(gitfd, &revs, "-c", "log.showSignature=false", "-c", "core.fsmonitor=false",
		"log", "--stdin", "--format=", "--raw", "-r", "-m", "--root", "--no-renames", "--no-ext-diff",
		"--no-textconv", "--no-abbrev", "-z")
	if err != nil {
		return nil, err
	}
	// Records: ":OLDMODE NEWMODE OLD NEW STATUS\0PATH\0".
	var paths []string
	seen := map[string]bool{}
	fields := bytes.Split(out, []byte{0})
	for i := 0; i+1 < len(fields); i++ {
		rec := string(fields[i])
		if !strings.HasPrefix(rec, ":") {
			continue
		}
		i++
		f := strings.Fields(rec)
		if len(f) >= 2 && f[1] == "160000" {
			p := filepath.Clean(string(fields[i]))
			if !seen[p] && p != "." && !strings.HasPrefix(p, "../") && !filepath.IsAbs(p) {
				seen[p] = true
				paths = append(paths, p)
			}
		}
	}
	return paths, nil
}

// runHostGit runs the host's git on the git directory gitfd (passed as
// descriptor 3) and returns its standard output.
func runHostGit(gitfd int, stdin io.Reader, args ...string) ([]byte, error) {
	return runHostGitEnv(gitfd, stdin, nil, args...)
}

// runHostGitEnv is runHostGit with env added to (and overriding) its
// fixed environment.
func runHostGitEnv(gitfd int, stdin io.Reader, env []string, args ...string) ([]byte, error) {
	bin := ""
	for _, b := range gitBins {
		var st unix.Stat_t
		if unix.Stat(b, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&0o111 != 0 && st.Mode&0o022 == 0 {
			bin = b
			break
		}
	}
	if bin == "" {
		return nil, errors.New("no git in " + strings.Join(gitBins, ", "))
	}
	d, err := unix.Dup(gitfd)
	if err != nil {
		return nil, err
	}
	gf := os.NewFile(uintptr(d), "git-dir")
	defer gf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = stdin
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{gf}
	cmd.Env = []string{
		"PATH=/usr/bin:/bin", "HOME=/proc/self/fd/3", "LC_ALL=C", "GIT_DIR=/proc/self/fd/3",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_PAGER=cat", "PAGER=cat",
		"GIT_NO_REPLACE_OBJECTS=1", "GIT_TERMINAL_PROMPT=0", "GIT_NO_LAZY_FETCH=1", "GIT_OPTIONAL_LOCKS=0",
	}
	cmd.Env = append(cmd.Env, env...) // os/exec keeps the last value of a name
	var out, errb limited
	out.max, errb.max = maxCommittedOut, 4<<10
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // lifetime: the command's; received below
	select {
	case err = <-done:
	case <-time.After(maxCommittedTime):
		cmd.Process.Kill()
		<-done
		err = fmt.Errorf("took longer than %s", maxCommittedTime)
	}
	if err == nil && out.over {
		err = fmt.Errorf("printed more than %d bytes", maxCommittedOut)
	}
	if err != nil {
		msg := strings.TrimSpace(errb.b.String())
		if msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return nil, fmt.Errorf("git log: %w", err)
	}
	return out.b.Bytes(), nil
}

// limited keeps the first max bytes written to it.
type limited struct {
	b    bytes.Buffer
	max  int
	over bool
}

func (l *limited) Write(p []byte) (int, error) {
	keep := p
	if room := l.max - l.b.Len(); room < len(p) {
		l.over = true
		keep = p[:max(room, 0)]
	}
	l.b.Write(keep)
	return len(p), nil
}

// committedPaths lists, workspace-relative, the gitlinks the sandbox's
// commits add in each repository of the view with a work tree (the
// workspace's own, and those below the root), once adopted.
func (r *Run) committedPaths() []string {
	var out []string
	for _, g := range r.repos {
		if filepath.Base(g.Rel) != ".git" || strings.HasPrefix(g.Rel, ".git/") || strings.Contains(g.Rel, "/.git/") || !isGitDir(r.ws, g.Rel) {
			continue
		}
		var base map[string]string
		if !g.Fresh {
			snap, err := gitstate.UnmarshalSnapshot(g.Base)
			if err != nil {
				continue
			}
			base = snap.Refs()
		}
		paths, err := committedGitlinks(g.fd, base)
		if err != nil {
			termtext.Fprintf(r.opt.Report, "jail: git: %s: the gitlinks the sandbox's commits add cannot be listed (%v); before you check out its commits, look at what their submodule paths hold\n", g.Rel, err)
			continue
		}
		for _, p := range paths {
			out = append(out, filepath.Join(filepath.Dir(g.Rel), p))
		}
	}
	return out
}

// gitlinksOf lists, workspace-relative, the gitlinks the commits of the
// repository jail has just adopted anew at dir/.git (reduce) hold: all of
// its commits are the sandbox's. Without them, a repository made in a
// subdirectory with a gitlink to node_modules/evil (where the walk does
// not look) would leave evil's core.fsmonitor for the host's git reset
// and git status there to run.
func gitlinksOf(w io.Writer, wsfd int, dir string) []string {
	gfd, err := openGitDir(wsfd, filepath.Join(dir, ".git"))
	if err != nil {
		return nil
	}
	defer unix.Close(gfd)
	paths, err := committedGitlinks(gfd, nil)
	if err != nil {
		termtext.Fprintf(w, "jail: git: %s: the gitlinks the sandbox's commits add cannot be listed (%v); before you check out its commits, look at what their submodule paths hold\n", dir, err)
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, filepath.Join(dir, p))
	}
	return out
}

// addCommitted adds to a post-run walk what stands at each gitlink path
// the sandbox committed (committedPaths): a .git there, or the directory
// itself when git takes it for a git directory.
func (f *found) addCommitted(wsfd int, paths []string) {
	buf := make([]byte, 16<<10)
	for _, p := range paths {
		var st unix.Stat_t
		git := filepath.Join(p, ".git")
		if fstatBeneath(wsfd, git, &st) == nil {
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				f.gitDirs = appendNew(f.gitDirs, git)
			} else {
				f.gitFiles = appendNew(f.gitFiles, git)
			}
			continue
		}
		fd, err := openGitDir(wsfd, p)
		if err != nil {
			continue
		}
		if ents, _, _ := listDir(fd, buf, nil); gitShaped(ents) {
			f.bare = appendNew(f.bare, p)
		}
		unix.Close(fd)
	}
}
