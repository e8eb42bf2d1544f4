package gitcmd

import (
	"errors"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// FS is how a sandbox sees its files when a call starts (confine.View):
// what git inside it will read.
type FS interface {
	// Stat reports whether p names a directory (else a regular file),
	// following symlinks; fs.ErrNotExist when nothing is there.
	Stat(p string) (dir bool, err error)
	// ReadFile returns the regular file p, at most limit bytes, and
	// whether a sandbox may have written it (shared).
	ReadFile(p string, limit int64) (data []byte, shared bool, err error)
	// ReadDir returns the names in the directory p, at most limit.
	ReadDir(p string, limit int) (names []string, shared bool, err error)
	// Writable reports whether the sandbox can write, or create, dir.
	Writable(dir string) bool
}

// Where is where a call's git commands run.
type Where struct {
	// Dirs are the directories git starts in (absolute, as the sandbox
	// sees them); GitDirs the git directories the line names itself
	// (--git-dir).
	Dirs, GitDirs []string
	// Env is the environment git starts with (NAME=VALUE): HOME,
	// XDG_CONFIG_HOME and GIT_CONFIG_GLOBAL say where its global config
	// is.
	Env []string
	// Writes are files the call writes (absolute): one in a hooks
	// directory git runs hooks from in Dirs is reported.
	Writes []string
	// Git says the call runs git itself: without it only Writes are
	// judged.
	Git bool
}

// Bounds of one scan: past them the scan reports, the worse reading.
const (
	maxScanFiles    = 64
	maxScanBytes    = 1 << 20
	maxHooks        = 256
	maxIncludeDepth = 10 // git's MAX_INCLUDE_DEPTH
)

// SandboxProgram returns why git, run where w says in the sandbox fsys,
// may run a program a sandbox chose, or "" for none: a setting that runs
// a program or reads another file ([RunsProgram], an alias that is a
// shell command) in a config file git reads there that a sandbox may
// have written (the workspace's own files, the persistent home), an
// include of a file that is missing where the sandbox can create it, a
// hook in a git directory a sandbox may have written, or a file that
// cannot be read safely. Git reads the system config, the global one
// (GIT_CONFIG_GLOBAL, or ~/.gitconfig and the XDG one), and for each
// directory the repository git finds there as git finds it (.git, a
// gitfile, a bare directory, walking up), its commondir's config and
// config.worktree, and every include, ten deep. The user's own files
// (read-only in the sandbox, the host's git directory under the git
// view) are not counted: what they run is the user's choice.
func SandboxProgram(fsys FS, w Where) string {
	s := &scan{fs: fsys, env: map[string]string{}, read: map[string]bool{}, git: w.Git}
	for _, kv := range w.Env {
		k, v, _ := strings.Cut(kv, "=")
		s.env[k] = v
	}
	s.home = s.env["HOME"]
	if !s.has("GIT_CONFIG_NOSYSTEM") {
		sys := "/etc/gitconfig"
		if v, ok := s.env["GIT_CONFIG_SYSTEM"]; ok {
			sys = v
		}
		s.file(sys, 0)
	}
	if v, ok := s.env["GIT_CONFIG_GLOBAL"]; ok {
		s.file(v, 0)
	} else {
		xdg := s.env["XDG_CONFIG_HOME"]
		if xdg == "" && s.home != "" {
			xdg = path.Join(s.home, ".config")
		}
		if xdg != "" {
			s.file(path.Join(xdg, "git/config"), 0)
		}
		if s.home != "" {
			s.file(path.Join(s.home, ".gitconfig"), 0)
		}
	}
	global := s.hooksPath
	seen := map[string]bool{}
	for _, d := range w.Dirs {
		if g, common := s.discover(d); g != "" && !seen[g] {
			seen[g] = true
			s.repo(g, common)
		}
	}
	for _, g := range w.GitDirs {
		if !seen[g] {
			seen[g] = true
			s.repo(g, s.commonDir(g))
		}
	}
	if global != "" {
		if h := s.expand("/", global); h != "" && (path.IsAbs(global) || strings.HasPrefix(global, "~")) {
			s.hooks = append(s.hooks, h)
		}
	}
	for _, f := range w.Writes {
		for _, h := range s.hooks {
			if f = path.Clean(f); strings.HasPrefix(f, h+"/") {
				s.why = "the line writes " + quote(f) + ", a hook of the hooks directory " + quote(h) + " git's config names (core.hooksPath)"
				return s.why
			}
		}
	}
	if !s.git {
		return ""
	}
	return s.why
}

type scan struct {
	fs        FS
	env       map[string]string
	home      string
	read      map[string]bool
	hooksPath string   // core.hooksPath as the files read so far set it
	hooks     []string // the hooks directories of the repositories read
	git       bool     // the call runs git: what its config runs counts
	why       string
}

func (s *scan) has(k string) bool {
	v, ok := s.env[k]
	return ok && v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// report keeps the first reason; a call that does not run git has none
// of these (only its writes count).
func (s *scan) report(why string) {
	if s.why == "" && s.git {
		s.why = why
	}
}

// file reads one config file and the files it includes.
func (s *scan) file(p string, depth int) {
	if s.why != "" || p == "" {
		return
	}
	if !path.IsAbs(p) {
		s.report("git reads the config file " + quote(p) + ", a path relative to where it runs")
		return
	}
	p = path.Clean(p)
	if s.read[p] {
		return
	}
	if len(s.read) >= maxScanFiles {
		s.report("git reads more than " + strconv.Itoa(maxScanFiles) + " config files here")
		return
	}
	s.read[p] = true
	data, shared, err := s.fs.ReadFile(p, maxScanBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		s.report("git reads the config file " + quote(p) + ", which jail cannot read safely (" + err.Error() + ")")
		return
	}
	sets, err := ParseConfig(data)
	if err != nil {
		if shared {
			s.report(quote(p) + " is a config file git refuses (" + err.Error() + ")")
		}
		return // git reads nothing of it
	}
	for _, kv := range sets {
		k, v := kv.Key, kv.Value
		switch {
		case isInclude(k):
			s.include(p, k, v, depth)
		case strings.EqualFold(k, "core.hookspath"):
			s.hooksPath = v
			if shared {
				s.report(quote(p) + " sets " + k + " = " + quote(v))
			}
		case shared && strings.HasPrefix(k, "alias.") && strings.HasPrefix(v, "!"):
			s.report(quote(p) + " sets " + k + " = " + quote(v) + ", a shell command")
		case shared && RunsProgram(k):
			s.report(quote(p) + " sets " + k + " = " + quote(v))
		}
		if s.why != "" {
			return
		}
	}
}

// include follows an include of the file p: git reads the target as
// if it stood there, whatever includeIf's condition (the worse reading).
func (s *scan) include(p, k, v string, depth int) {
	if depth+1 > maxIncludeDepth {
		s.report(quote(p) + " includes files more than " + strconv.Itoa(maxIncludeDepth) + " deep")
		return
	}
	if v == "" {
		return
	}
	t := s.expand(path.Dir(p), v)
	if t == "" {
		s.report(quote(p) + " sets " + k + " = " + quote(v) + ", a path jail cannot resolve")
		return
	}
	if _, err := s.fs.Stat(t); errors.Is(err, fs.ErrNotExist) {
		if s.fs.Writable(path.Dir(t)) {
			s.report(quote(p) + " includes " + quote(t) + ", which does not exist and the sandbox can create")
		}
		return
	}
	s.file(t, depth+1)
}

// expand is a path value of a config file in dir as git reads it: ~/
// the home, relative to the file's directory; "" for one it cannot.
func (s *scan) expand(dir, v string) string {
	switch {
	case v == "~" || strings.HasPrefix(v, "~/"):
		if s.home == "" {
			return ""
		}
		return path.Join(s.home, strings.TrimPrefix(v, "~"))
	case strings.HasPrefix(v, "~"):
		return "" // ~user
	case path.IsAbs(v):
		return path.Clean(v)
	}
	return path.Join(dir, v)
}

// discover finds the repository git uses in dir as git does
// (setup_git_directory): dir/.git (a directory, or a gitfile naming
// one), else dir itself when it is a git directory (bare), else the
// same one level up. It returns the git directory and its common one.
func (s *scan) discover(dir string) (gitDir, common string) {
	if !path.IsAbs(dir) {
		s.report("git runs in " + quote(dir) + ", a directory jail cannot place")
		return "", ""
	}
	for d := path.Clean(dir); s.why == ""; d = path.Dir(d) {
		dotgit := path.Join(d, ".git")
		isDir, err := s.fs.Stat(dotgit)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			s.report("git looks for a repository at " + quote(dotgit) + ", which jail cannot read safely (" + err.Error() + ")")
			return "", ""
		case isDir:
			if c, ok := s.gitDir(dotgit); ok {
				return dotgit, c
			}
		default:
			if g := s.gitFile(dotgit); g != "" {
				return g, s.commonDir(g)
			}
		}
		if s.why == "" {
			if c, ok := s.gitDir(d); ok {
				return d, c
			}
		}
		if d == "/" {
			break
		}
	}
	return "", ""
}

// gitDir reports whether git takes d for a git directory (HEAD, and
// objects/ and refs/ in its common directory), and that common one.
func (s *scan) gitDir(d string) (string, bool) {
	if isDir, err := s.fs.Stat(path.Join(d, "HEAD")); err != nil || isDir {
		return "", false
	}
	c := s.commonDir(d)
	for _, sub := range []string{"objects", "refs"} {
		if isDir, err := s.fs.Stat(path.Join(c, sub)); err != nil || !isDir {
			return "", false
		}
	}
	return c, true
}

// commonDir is the git directory d's common directory (its commondir
// file, relative to d), d itself without one.
func (s *scan) commonDir(d string) string {
	data, _, err := s.fs.ReadFile(path.Join(d, "commondir"), 4096)
	if err != nil {
		return d
	}
	c := strings.TrimSpace(string(data))
	if c == "" {
		return d
	}
	if !path.IsAbs(c) {
		c = path.Join(d, c)
	}
	return path.Clean(c)
}

// gitFile reads the gitfile f ("gitdir: DIR", DIR relative to its own
// directory).
func (s *scan) gitFile(f string) string {
	data, _, err := s.fs.ReadFile(f, 4096)
	if err != nil {
		s.report("git reads the gitfile " + quote(f) + ", which jail cannot read safely (" + err.Error() + ")")
		return ""
	}
	g, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return "" // git refuses it
	}
	g = strings.TrimSpace(g)
	if !path.IsAbs(g) {
		g = path.Join(path.Dir(f), g)
	}
	return path.Clean(g)
}

// repo reads the config of the git directory g (common directory c) and
// looks at the hooks git would run from it.
func (s *scan) repo(g, c string) {
	global := s.hooksPath
	defer func() { s.hooksPath = global }()
	s.file(path.Join(c, "config"), 0)
	s.file(path.Join(c, "config.worktree"), 0)
	s.file(path.Join(g, "config.worktree"), 0)
	if s.why != "" {
		return
	}
	hooks := path.Join(c, "hooks")
	if s.hooksPath != "" {
		// A relative core.hooksPath is relative to where hooks run: the
		// work tree, or a bare repository itself.
		wt := g
		if path.Base(g) == ".git" {
			wt = path.Dir(g)
		}
		if hooks = s.expand(wt, s.hooksPath); hooks == "" {
			s.report("core.hooksPath = " + quote(s.hooksPath) + " names a directory jail cannot resolve")
			return
		}
		s.hooks = append(s.hooks, hooks)
	}
	names, shared, err := s.fs.ReadDir(hooks, maxHooks)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		s.report("git runs hooks from " + quote(hooks) + ", which jail cannot list safely (" + err.Error() + ")")
	case shared:
		slices.Sort(names)
		for _, n := range names {
			if !strings.HasSuffix(n, ".sample") && !strings.HasPrefix(n, ".") {
				s.report("git runs the hook " + quote(path.Join(hooks, n)) + ", which a sandbox may have written")
				return
			}
		}
	}
}

// quote is a path or value for a reason, escaped and cut short.
func quote(s string) string {
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return strconv.Quote(s)
}
