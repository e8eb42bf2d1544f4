//go:build linux

package gitview

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/confine"
	"golang.org/x/sys/unix"
)

func mkdirs(t *testing.T, root string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func openWS(t *testing.T, ws string) int {
	t.Helper()
	fd, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// TestWalk: .git directories and gitfiles below the root are found down
// to walkDepth; node_modules, git directories themselves, symlinks and
// the skipped directory are not entered.
func TestWalk(t *testing.T) {
	ws := t.TempDir()
	mkdirs(t, ws, ".git", "a/.git", "a/b/c/d/.git", "a/b/c/d/e/.git", "node_modules/x/.git", "state/jail/.git", "sub/.git/modules/m/.git")
	os.WriteFile(filepath.Join(ws, "lib", ".git"), nil, 0o644)
	mkdirs(t, ws, "lib")
	os.WriteFile(filepath.Join(ws, "lib", ".git"), []byte("gitdir: ../.git/modules/lib\n"), 0o644)
	outside := t.TempDir()
	mkdirs(t, outside, "r/.git")
	os.Symlink(outside, filepath.Join(ws, "link"))
	f := walk(openWS(t, ws), "state")
	slices.Sort(f.gitDirs)
	if want := []string{"a/.git", "a/b/c/d/.git", "sub/.git"}; !slices.Equal(f.gitDirs, want) {
		t.Errorf("git directories %v, want %v", f.gitDirs, want)
	}
	if !slices.Equal(f.gitFiles, []string{"lib/.git"}) {
		t.Errorf("gitfiles %v", f.gitFiles)
	}
	if f.truncated || !slices.Contains(f.visited, ".") || slices.Contains(f.visited, "node_modules") || slices.Contains(f.visited, "link") {
		t.Errorf("visited %v (truncated %v)", f.visited, f.truncated)
	}
}

// TestModules: submodules' git directories beneath modules/, names with
// slashes and submodules of submodules included.
func TestModules(t *testing.T) {
	ws := t.TempDir()
	for _, g := range []string{".git/modules/a", ".git/modules/ns/b", ".git/modules/a/modules/c"} {
		mkdirs(t, ws, g+"/objects", g+"/refs")
		os.WriteFile(filepath.Join(ws, g, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	}
	r := &Run{ws: openWS(t, ws), opt: Options{Workspace: ws}}
	got := r.modules(".git/modules", 0)
	slices.Sort(got)
	if want := []string{".git/modules/a", ".git/modules/a/modules/c", ".git/modules/ns/b"}; !slices.Equal(got, want) {
		t.Errorf("modules %v, want %v", got, want)
	}
}

func TestIsGitDir(t *testing.T) {
	ws := t.TempDir()
	mkdirs(t, ws, "r/objects", "r/refs", "c/objects", "c/refs", "e")
	for _, d := range []string{"r", "c"} {
		os.WriteFile(filepath.Join(ws, d, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	}
	os.WriteFile(filepath.Join(ws, "c", "commondir"), []byte("../r\n"), 0o644)
	fd := openWS(t, ws)
	if !isGitDir(fd, "r") || isGitDir(fd, "c") || isGitDir(fd, "e") || isGitDir(fd, "missing") {
		t.Error("isGitDir: want only r (c has a commondir, e is empty)")
	}
	if !isEmptyDir(fd, "e") || isEmptyDir(fd, "r") {
		t.Error("isEmptyDir")
	}
}

func TestExpand(t *testing.T) {
	for _, c := range []struct{ v, want string }{
		{"~/hooks", "/home/u/hooks"},
		{"~", "/home/u"},
		{"~other/x", ""},
		{"/abs/../x", "/x"},
		{".husky/_", "/ws/.husky/_"},
		{"", ""},
	} {
		if got := expand(c.v, "/home/u", "/ws"); got != c.want {
			t.Errorf("expand(%q) = %q, want %q", c.v, got, c.want)
		}
	}
	if got := expand("~/x", "", "/ws"); got != "" {
		t.Errorf("~ without a home: %q", got)
	}
}

// TestConfigTargets: hooks directories and include files are read from
// the user's config, includes followed, and each lands where the sandbox
// could write it: protected in the workspace (existing or not), guarded
// in another writable tree; targets elsewhere or in .git are left alone.
func TestConfigTargets(t *testing.T) {
	home, ws, rw := t.TempDir(), t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\thooksPath = "+ws+"/hooks\n[include]\n\tpath = more.cfg\n"), 0o644)
	os.WriteFile(filepath.Join(home, "more.cfg"), []byte("[includeIf \"gitdir:~/x/\"]\n\tpath = "+ws+"/local.cfg\n[include]\n\tpath = "+rw+"/shared.cfg\n\tpath = /etc/elsewhere.cfg\n\tpath = "+ws+"/.git/extra\n"), 0o644)
	os.WriteFile(filepath.Join(rw, "shared.cfg"), []byte("[core]\n\thooksPath = ~/h2\n"), 0o644)
	t.Setenv("XDG_CONFIG_HOME", "")
	r := &Run{opt: Options{Workspace: ws, Home: home, Writable: []string{rw, home}}}
	tg := &configTargets{}
	for _, f := range userConfigs(home, "") {
		tg.read(f, -1, home, ws, 0, nil)
	}
	r.guardTargets(tg)
	if want := []string{filepath.Join(home, "h2")}; !slices.Equal(r.guardDirs, want) {
		t.Errorf("guarded directories %v, want %v", r.guardDirs, want)
	}
	if want := []string{filepath.Join(home, "more.cfg"), filepath.Join(rw, "shared.cfg")}; !slices.Equal(r.guardFiles, want) {
		t.Errorf("guarded files %v, want %v", r.guardFiles, want)
	}
	if !slices.Equal(r.protect, []string{"hooks", "local.cfg"}) {
		t.Errorf("protected %v, want the hooks directory and the missing include in the workspace", r.protect)
	}
}

// TestRemoveAll removes what a sandbox can leave in an upper, a
// directory it made unreadable included, without following a symlink.
func TestRemoveAll(t *testing.T) {
	d, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "keep"), []byte("x"), 0o644)
	mkdirs(t, d, "run/a/b")
	os.Symlink(outside, filepath.Join(d, "run", "a", "link"))
	os.WriteFile(filepath.Join(d, "run", "a", "b", "f"), nil, 0o644)
	os.Chmod(filepath.Join(d, "run", "a", "b"), 0)
	fd := openWS(t, d)
	dfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	if err := removeAll(dfd, "run"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(d, "run")); err == nil {
		t.Error("run is still there")
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Error("removeAll followed a symlink")
	}
}

// TestWalkHashes: the hash the walk records of each directory is the one
// the plan cache's constructor computes (confine.DirsHash, the same
// function as jail_dir_hash).
func TestWalkHashes(t *testing.T) {
	ws := t.TempDir()
	mkdirs(t, ws, ".git", "a/.git", "a/b", "c")
	os.WriteFile(filepath.Join(ws, "c", ".git"), []byte("gitdir: x\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "file"), nil, 0o644)
	os.Symlink("a", filepath.Join(ws, "link"))
	f := walk(openWS(t, ws), "")
	for _, rel := range f.visited {
		fd, err := unix.Open(filepath.Join(ws, rel), unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		h, err := confine.DirsHash(fd, rel == ".")
		unix.Close(fd)
		if err != nil || h != f.hashes[rel] {
			t.Errorf("%s: walk %x, DirsHash %x (%v)", rel, f.hashes[rel], h, err)
		}
	}
}

// TestWalkQuiet: a directory is quiet (the plan cache's sweep need not
// list it while its identity holds) only when it held nothing but files
// and subdirectories the walk visited (or node_modules), no symlink, .git
// or HEAD, and changed longer ago than a tick of the clock file times come
// from; never the root, nor a directory at the walk's depth with
// subdirectories it did not enter.
func TestWalkQuiet(t *testing.T) {
	ws := t.TempDir()
	mkdirs(t, ws, "plain/sub", "mods/node_modules/x", "repo/.git", "bare/objects", "bare/refs", "links", "a/b/c/d/e", "a/b/c/leaf", "skip/state")
	for _, p := range []string{"plain/file", "plain/sub/file", "bare/HEAD", "head/HEAD"} {
		os.MkdirAll(filepath.Join(ws, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(ws, p), nil, 0o644)
	}
	os.Symlink("../plain", filepath.Join(ws, "links", "l"))
	time.Sleep(50 * time.Millisecond) // older than the walk by more than the clock's tick
	mkdirs(t, ws, "fresh")
	f := walk(openWS(t, ws), "skip/state")
	var got []string
	for rel := range f.quiet {
		got = append(got, rel)
	}
	slices.Sort(got)
	// Not: the root; repo (a .git); links (a symlink); head and bare (a
	// HEAD; bare's objects are not entered); a/b/c/d (at the walk's depth,
	// e not entered); skip (its state directory is left out); fresh (too
	// recent). a/b/c is: both its subdirectories were visited.
	want := []string{"a", "a/b", "a/b/c", "a/b/c/leaf", "bare/refs", "mods", "plain", "plain/sub"}
	if !slices.Equal(got, want) {
		t.Errorf("quiet %v, want %v", got, want)
	}
}

// TestWalkBare: a directory git takes for a git directory of its own
// (HEAD, objects and refs, or HEAD and commondir) is found, the root
// included, its objects not entered; HEAD alone, or a HEAD directory, is
// not one.
func TestWalkBare(t *testing.T) {
	ws := t.TempDir()
	mkdirs(t, ws, "objects", "refs", "b.git/objects/x/.git", "b.git/refs", "c", "d/HEAD", "d/objects", "d/refs", "e")
	for _, p := range []string{"HEAD", "b.git/HEAD", "c/HEAD", "e/HEAD"} {
		os.WriteFile(filepath.Join(ws, p), []byte("ref: refs/heads/main\n"), 0o644)
	}
	os.WriteFile(filepath.Join(ws, "c", "commondir"), []byte("../b.git\n"), 0o644)
	f := walk(openWS(t, ws), "")
	slices.Sort(f.bare)
	if want := []string{".", "b.git", "c"}; !slices.Equal(f.bare, want) {
		t.Errorf("bare %v, want %v", f.bare, want)
	}
	if len(f.gitDirs) != 0 {
		t.Errorf("entered a git directory: %v", f.gitDirs)
	}
}

// TestChangedSinceDeep: after a run, directories made during it are
// walked however deep; an old directory below the walk's depth whose
// parent changed is left alone (its repository is the user's).
func TestChangedSinceDeep(t *testing.T) {
	ws := t.TempDir()
	mkdirs(t, ws, "old/a/b/c/d/.git")
	time.Sleep(50 * time.Millisecond) // older than the walk by more than the clock's tick
	launch := walk(openWS(t, ws), "")
	mkdirs(t, ws, "new/a/b/c/d/e/f/.git", "old/a/b/c/x")
	os.WriteFile(filepath.Join(ws, "new/a/b/c/d/e/f/HEAD"), nil, 0o644)
	mkdirs(t, ws, "new/g/objects", "new/g/refs")
	os.WriteFile(filepath.Join(ws, "new/g/HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	now := launch.changedSince(openWS(t, ws))
	if !slices.Equal(now.gitDirs, []string{"new/a/b/c/d/e/f/.git"}) {
		t.Errorf("git directories %v, want the deep new one only", now.gitDirs)
	}
	if !slices.Equal(now.bare, []string{"new/g"}) {
		t.Errorf("bare %v", now.bare)
	}
}

// TestIndexGitlinks: the gitlink paths of a real index, at any depth.
func TestIndexGitlinks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("requires git: not installed")
	}
	ws := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", ws, "-c", "user.name=a", "-c", "user.email=a@b"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+ws)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	os.WriteFile(filepath.Join(ws, "f"), nil, 0o644)
	git("add", "f")
	oid := "0123456789012345678901234567890123456789"
	git("update-index", "--add", "--cacheinfo", "160000,"+oid+",a/b/c/d/e/f")
	git("update-index", "--add", "--cacheinfo", "160000,"+oid+",top")
	got, err := indexGitlinks(openWS(t, ws), ".git")
	if err != nil || !slices.Equal(got, []string{"a/b/c/d/e/f", "top"}) {
		t.Errorf("gitlinks %v (%v)", got, err)
	}
}

func TestCloneDest(t *testing.T) {
	for _, c := range []struct {
		args []string
		dest string
		ok   bool
	}{
		{[]string{"clone", "URL", "."}, ".", true},
		{[]string{"-C", "/x", "clone", "-q", "--depth", "1", "-b", "dev", "URL", "./"}, "./", true},
		{[]string{"clone", "-qb", "dev", "URL", "d"}, "d", true},
		{[]string{"clone", "--branch=dev", "--", "URL", "."}, ".", true},
		{[]string{"clone", "URL"}, "", false},
		{[]string{"status"}, "", false},
		{[]string{"-c", "clone", "status", "x", "y"}, "", false},
		{[]string{"-c", "alias.c=clone -q", "c", "URL", "."}, ".", true},
		{[]string{"--git-dir=/g", "--exec-path", "clone", "URL", "."}, ".", true},
	} {
		dest, ok := cloneDest(c.args)
		if dest != c.dest || ok != c.ok {
			t.Errorf("cloneDest(%q) = %q, %v; want %q, %v", c.args, dest, ok, c.dest, c.ok)
		}
	}
}

// TestWhy: each path the view holds has its reason, one that says jail
// holds it; others have none.
func TestWhy(t *testing.T) {
	r := &Run{repos: []*repo{{Rel: ".git"}, {Rel: "sub/.git", Fresh: true}}, protect: []string{"lib/.git", "HEAD", "un", "pkg/.vscode"},
		deep: map[string]bool{"pkg/.vscode": true}}
	for rel, want := range map[string]string{
		".git": "view of the host's git directory", "sub/.git": "private git directory", "lib/.git": "read-only",
		"HEAD": "bare repository", "un/x": "submodule", "pkg/.vscode/tasks.json": "editor", "src": "",
	} {
		got := r.Why(rel)
		if want == "" && got != "" || !strings.Contains(got, want) || want != "" && !strings.HasPrefix(got, "jail ") {
			t.Errorf("Why(%q) = %q, want it to say %q", rel, got, want)
		}
	}
}

// TestNameSet: the protected names below the root, by their first
// component, globs as prefixes, suffixes or patterns; only an exact name
// held while the run lasts is one at the root too.
func TestNameSet(t *testing.T) {
	m := newNameSet([]string{".vscode", ".claude/settings.json", "*.code-workspace", "x?y", "[ab]*"}, []string{".husky", "lefthook*", ".vscode"})
	for name, want := range map[string][2]bool{
		".vscode": {true, false}, ".claude": {true, false}, "a.code-workspace": {true, true}, "lefthook-local.yml": {true, true}, ".husky": {true, true},
		"xzy": {true, true}, "b.txt": {true, true}, "settings.json": {false, false}, "code-workspace": {false, false}, "c": {false, false},
	} {
		if ok, byGlob := m.match(name); ok != want[0] || byGlob != want[1] {
			t.Errorf("match(%q) = %v, %v; want %v", name, ok, byGlob, want)
		}
	}
}

// TestCodeFilesNamedByConfig: the work-tree files the repository's config
// includes or names as a program (each word of the value, relative to the
// work tree) are files the host runs code from; a directory a command cds
// to, and every other path, are not.
func TestCodeFilesNamedByConfig(t *testing.T) {
	ws := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	mkdirs(t, ws, "src", "tools")
	cmd := exec.Command("git", "init", "-q", ws)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	cfg := "[include]\n\tpath = ../.gitconfig\n[core]\n\tfsmonitor = tools/fsmon\n\tpager = less -R\n" +
		"[filter \"x\"]\n\tclean = \"sh scripts/clean.sh --in=conf/in.cfg\"\n[alias]\n\tb = \"!cd src && ./build.sh\"\n"
	f, err := os.OpenFile(filepath.Join(ws, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(cfg)
	f.Close()
	gitfd, err := unix.Open(filepath.Join(ws, ".git"), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(gitfd)
	c := newCodeFiles(newNameSet(nil, nil), gitfd, ws)
	for _, p := range []string{".gitconfig", "tools/fsmon", "scripts/clean.sh", "conf/in.cfg", "build.sh", "less", "tools"} {
		if !c.protected(p, "") {
			t.Errorf("%s is not a file the host runs code from", p)
		}
	}
	for _, p := range []string{"src/main.go", "README", "src", "tools2/x"} {
		if c.protected(p, "") {
			t.Errorf("%s is taken for a file the host runs code from", p)
		}
	}
}

// TestPathWord: the words of a program key held as files whether or not
// they exist.
func TestPathWord(t *testing.T) {
	for _, c := range []struct {
		w    string
		i    int
		want bool
	}{
		{"tools/fsmon", 0, true}, {"./x", 0, true}, {"../x", 1, true}, {"clean.sh", 1, true},
		{"clean.sh", 0, false}, {"less", 0, false}, {"filter-process", 1, false}, {"--wait", 1, false},
		{"%f", 2, false}, {"https://example.com/x", 1, false}, {"origin/main..HEAD", 2, false},
		{"HEAD@{1}", 1, false}, {"..", 1, false}, {".", 1, false},
	} {
		if got := pathWord(c.w, c.i); got != c.want {
			t.Errorf("pathWord(%q, %d) = %v, want %v", c.w, c.i, got, c.want)
		}
	}
}
