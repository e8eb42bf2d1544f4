package gitcmd

import (
	"io/fs"
	"path"
	"strings"
	"testing"
)

// mapFS is a sandbox's files for the scan: a path's content ("/" at the
// end: a directory), and which paths a sandbox may have written.
type mapFS struct {
	files  map[string]string
	shared func(p string) bool
}

func (m mapFS) Stat(p string) (bool, error) {
	if _, ok := m.files[p+"/"]; ok {
		return true, nil
	}
	if _, ok := m.files[p]; ok {
		return false, nil
	}
	for k := range m.files {
		if strings.HasPrefix(k, p+"/") {
			return true, nil
		}
	}
	return false, fs.ErrNotExist
}

func (m mapFS) ReadFile(p string, limit int64) ([]byte, bool, error) {
	d, ok := m.files[p]
	if !ok {
		return nil, false, fs.ErrNotExist
	}
	return []byte(d), m.shared(p), nil
}

func (m mapFS) ReadDir(p string, limit int) ([]string, bool, error) {
	var names []string
	for k := range m.files {
		if rest, ok := strings.CutPrefix(k, p+"/"); ok && rest != "" && !strings.Contains(strings.TrimSuffix(rest, "/"), "/") {
			names = append(names, strings.TrimSuffix(rest, "/"))
		}
	}
	if names == nil {
		if ok, _ := m.Stat(p); !ok {
			return nil, false, fs.ErrNotExist
		}
	}
	return names, m.shared(p), nil
}

func (m mapFS) Writable(dir string) bool { return m.shared(dir) }

func repo(files map[string]string, gitDir, config string) {
	files[path.Join(gitDir, "HEAD")] = "ref: refs/heads/main\n"
	files[path.Join(gitDir, "objects")+"/"] = ""
	files[path.Join(gitDir, "refs")+"/"] = ""
	files[path.Join(gitDir, "config")] = config
}

// TestSandboxProgram pins what git, run in a directory, reads and what
// counts: settings that run programs in files a sandbox may have written
// (the workspace's, the home's), wherever discovery finds them, and not
// the user's own.
func TestSandboxProgram(t *testing.T) {
	env := []string{"HOME=/home/u", "GIT_CONFIG_GLOBAL=/home/u/.config/git/jail.gitconfig"}
	base := func() map[string]string {
		f := map[string]string{
			"/home/u/.gitconfig":                 "[core]\n\tpager = delta\n[include]\n\tpath = ~/.gitconfig.d/id\n",
			"/home/u/.gitconfig.d/id":            "[user]\n\tname = u\n",
			"/home/u/.config/git/jail.gitconfig": "[include]\n\tpath = \"/home/u/.gitconfig\"\n",
			"/etc/gitconfig":                     "[core]\n\tfsmonitor = sys\n",
		}
		repo(f, "/w/.git", "[core]\n\tfsmonitor = users-own\n[remote \"o\"]\n\turl = x\n")
		return f
	}
	// The workspace and the home are writable binds; the user's files
	// and the workspace's git directory (the git view) are not.
	shared := func(p string) bool {
		for _, ro := range []string{"/w/.git", "/home/u/.gitconfig", "/etc"} {
			if p == ro || strings.HasPrefix(p, ro+"/") {
				return false
			}
		}
		return strings.HasPrefix(p, "/w") || strings.HasPrefix(p, "/home/u")
	}
	for _, c := range []struct {
		name string
		edit func(f map[string]string)
		dirs []string
		want string
	}{
		{"the user's own", nil, []string{"/w", "/w/src"}, ""},
		{"the global config", func(f map[string]string) {
			f["/home/u/.config/git/jail.gitconfig"] += "[core]\n\tfsmonitor = evil\n"
		}, []string{"/w"}, "core.fsmonitor"},
		{"a shell alias in the global config", func(f map[string]string) {
			f["/home/u/.config/git/jail.gitconfig"] += "[alias]\n\tst = !evil\n"
		}, []string{"/w"}, "alias.st"},
		{"an include the sandbox can create", func(f map[string]string) {
			f["/home/u/.config/git/jail.gitconfig"] += "[includeIf \"gitdir:/w/\"]\n\tpath = ../../x.inc\n"
		}, []string{"/w"}, "does not exist"},
		{"an include of the user's", func(f map[string]string) {
			delete(f, "/home/u/.gitconfig.d/id")
		}, []string{"/w"}, "does not exist"},
		{"a repository of the workspace's", func(f map[string]string) {
			repo(f, "/w/node_modules/x/.git", "[core]\n\tFSMonitor = \"evil\"\n")
		}, []string{"/w/node_modules/x/lib"}, "core.fsmonitor"},
		{"the repository is not where git runs", func(f map[string]string) {
			repo(f, "/w/node_modules/x/.git", "[core]\n\tfsmonitor = evil\n")
		}, []string{"/w/src"}, ""},
		{"an empty .git is passed by", func(f map[string]string) {
			f["/w/sub/.git/"] = ""
		}, []string{"/w/sub"}, ""},
		{"a bare directory", func(f map[string]string) {
			repo(f, "/w/b", "[core]\n\tpager = evil\n")
		}, []string{"/w/b"}, "core.pager"},
		{"a gitfile", func(f map[string]string) {
			repo(f, "/home/u/r.git", "[diff \"x\"]\n\ttextconv = evil\n")
			f["/w/wt/.git"] = "gitdir: ../../home/u/r.git\n"
		}, []string{"/w/wt"}, "diff.x.textconv"},
		{"a commondir's config", func(f map[string]string) {
			repo(f, "/w/c", "[core]\n\thooksPath = h\n")
			f["/w/c/worktrees/a/HEAD"] = "x"
			f["/w/c/worktrees/a/commondir"] = "../..\n"
			f["/w/wt/.git"] = "gitdir: /w/c/worktrees/a\n"
		}, []string{"/w/wt"}, "core.hookspath"},
		{"a hook of a repository of the workspace's", func(f map[string]string) {
			repo(f, "/w/s/.git", "")
			f["/w/s/.git/hooks/pre-commit.sample"] = "x"
			f["/w/s/.git/hooks/pre-commit"] = "x"
		}, []string{"/w/s"}, "pre-commit"},
		{"core.hooksPath of the user's, relative to the work tree", func(f map[string]string) {
			f["/home/u/.gitconfig"] += "[core]\n\thooksPath = tools/hooks\n"
			repo(f, "/w/s/.git", "")
			f["/w/s/tools/hooks/pre-push"] = "x"
		}, []string{"/w/s"}, "/w/s/tools/hooks/pre-push"},
		{"samples only", func(f map[string]string) {
			repo(f, "/w/s/.git", "")
			f["/w/s/.git/hooks/pre-commit.sample"] = "x"
		}, []string{"/w/s"}, ""},
		{"a line git would not read", func(f map[string]string) {
			f["/home/u/.config/git/jail.gitconfig"] += "[core\n"
		}, []string{"/w"}, "git refuses"},
		{"an include loop", func(f map[string]string) {
			f["/home/u/.config/git/jail.gitconfig"] += "[include]\n\tpath = jail.gitconfig\n"
		}, []string{"/w"}, ""},
	} {
		f := base()
		if c.edit != nil {
			c.edit(f)
		}
		got := SandboxProgram(mapFS{files: f, shared: shared}, Where{Dirs: c.dirs, Env: env, Git: true})
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
	// --git-dir names the directory itself.
	f := base()
	repo(f, "/w/g", "[core]\n\tsshCommand = evil\n")
	if got := SandboxProgram(mapFS{files: f, shared: shared}, Where{GitDirs: []string{"/w/g"}, Env: env, Git: true}); !strings.Contains(got, "core.sshcommand") {
		t.Errorf("--git-dir: %q", got)
	}
	// Without GIT_CONFIG_GLOBAL, ~/.gitconfig and the XDG file are read.
	f = base()
	f["/home/u/.config/git/config"] = "[core]\n\tfsmonitor = evil\n"
	if got := SandboxProgram(mapFS{files: f, shared: shared}, Where{Dirs: []string{"/w"}, Env: []string{"HOME=/home/u"}, Git: true}); !strings.Contains(got, "/home/u/.config/git/config") {
		t.Errorf("XDG config: %q", got)
	}
}

// TestSandboxProgramHookWrites: a write into a hooks directory a config
// names (core.hooksPath of any name, relative to the work tree or the
// home's) is a hook's, with or without git on the line; elsewhere it is
// not, and without git the config's settings do not count.
func TestSandboxProgramHookWrites(t *testing.T) {
	f := map[string]string{
		"/home/u/.gitconfig": "[core]\n\thooksPath = ~/.githooks\n\tfsmonitor = x\n",
	}
	repo(f, "/w/.git", "[core]\n\thooksPath = tools/hooks\n")
	all := func(string) bool { return true }
	env := []string{"HOME=/home/u"}
	for _, c := range []struct {
		writes []string
		want   string
	}{
		{[]string{"/w/tools/hooks/pre-commit"}, "tools/hooks"},
		{[]string{"/w/src/a.go"}, ""},
		{[]string{"/home/u/.githooks/pre-push"}, ".githooks"},
		{[]string{"/w/tools/hooksx"}, ""},
	} {
		got := SandboxProgram(mapFS{files: f, shared: all}, Where{Dirs: []string{"/w/src"}, Writes: c.writes, Env: env})
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%v: got %q, want %q", c.writes, got, c.want)
		}
	}
}
