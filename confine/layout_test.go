//go:build linux

package confine

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// tempDir is t.TempDir with symlinks resolved, so it compares equal to
// what Build and ResolvePath return.
func tempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mkdirs(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// build runs Build and registers Release; tests that check Release call
// it themselves (Release is idempotent).
func build(t *testing.T, l *Layout) ([]Mount, *Placeholders, error) {
	t.Helper()
	ms, ph, err := l.Build()
	if ph == nil {
		t.Fatal("Build returned nil Placeholders")
	}
	t.Cleanup(ph.Release)
	return ms, ph, err
}

func mustBuild(t *testing.T, l *Layout) ([]Mount, *Placeholders) {
	t.Helper()
	ms, ph, err := build(t, l)
	if err != nil {
		t.Fatal(err)
	}
	return ms, ph
}

// findMount returns the mount at dest without its identity (the device
// and inode the init checks, which tests compare apart).
func findMount(ms []Mount, dest string) (Mount, bool) {
	for _, m := range ms {
		if m.Dest == dest {
			m.Dev, m.Ino = 0, 0
			return m, true
		}
	}
	return Mount{}, false
}

func mountsOfKind(ms []Mount, k MountKind) []Mount {
	var out []Mount
	for _, m := range ms {
		if m.Kind == k {
			out = append(out, m)
		}
	}
	return out
}

func TestBuildWorkspace(t *testing.T) {
	dir := tempDir(t)
	real := filepath.Join(dir, "real")
	mkdirs(t, real)
	symlink(t, real, filepath.Join(dir, "link"))
	writeFile(t, filepath.Join(dir, "file"), "")
	symlink(t, "/", filepath.Join(dir, "rootlink"))

	ms, _ := mustBuild(t, &Layout{Workspace: filepath.Join(dir, "link")})
	want := Mount{Kind: Bind, Source: real, Dest: real, Writable: true, Exec: true}
	if m, ok := findMount(ms, real); !ok || m != want {
		t.Errorf("workspace mount: got %+v (found %v), want %+v", m, ok, want)
	}
	if _, ok := findMount(ms, filepath.Join(dir, "link")); ok {
		t.Error("the workspace is mounted at its unresolved path")
	}

	refused := []struct {
		name string
		l    Layout
		want string
	}{
		{"missing", Layout{Workspace: filepath.Join(dir, "missing")}, "workspace"},
		{"a file", Layout{Workspace: filepath.Join(dir, "file")}, "is not a directory"},
		{"-w /", Layout{Workspace: "/", System: DefaultSystem()}, "contains the system directory /"},
		{"-w / without system dirs", Layout{Workspace: "/"}, "contains the system directory /"},
		{"a symlink to /", Layout{Workspace: filepath.Join(dir, "rootlink")}, "contains the system directory /"},
		{"a parent of a system dir", Layout{Workspace: dir, System: []string{filepath.Join(real, "usr")}}, "contains the system directory " + filepath.Join(real, "usr")},
		{"a system dir itself", Layout{Workspace: real, System: []string{real}}, "contains the system directory"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := build(t, &c.l)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestBuildSystemSymlinks(t *testing.T) {
	dir := tempDir(t)
	ws := filepath.Join(dir, "ws")
	sys := filepath.Join(dir, "sys")
	mkdirs(t, ws, filepath.Join(sys, "usr"), filepath.Join(dir, "elsewhere"))
	// Merged /usr: the link targets are in the host's /usr, where the
	// check requires them to stay.
	symlink(t, "/usr/bin", filepath.Join(sys, "bin"))
	symlink(t, "/usr/../usr/lib", filepath.Join(sys, "lib"))
	symlink(t, filepath.Join(dir, "elsewhere"), filepath.Join(sys, "opt"))

	ms, _ := mustBuild(t, &Layout{Workspace: ws, System: []string{
		filepath.Join(sys, "usr"), filepath.Join(sys, "bin"), filepath.Join(sys, "lib"), filepath.Join(sys, "lib32"),
	}})
	for _, want := range []Mount{
		{Kind: Bind, Source: filepath.Join(sys, "usr"), Dest: filepath.Join(sys, "usr"), Exec: true},
		// The target is recreated as written, not resolved: inside the
		// sandbox it is read against the sandbox's root.
		{Kind: Symlink, Source: "/usr/bin", Dest: filepath.Join(sys, "bin")},
		{Kind: Symlink, Source: "/usr/../usr/lib", Dest: filepath.Join(sys, "lib")},
	} {
		if m, ok := findMount(ms, want.Dest); !ok || m != want {
			t.Errorf("got %+v (found %v), want %+v", m, ok, want)
		}
	}
	if _, ok := findMount(ms, filepath.Join(sys, "lib32")); ok {
		t.Error("a missing system directory was mounted")
	}

	_, _, err := build(t, &Layout{Workspace: ws, System: []string{filepath.Join(sys, "opt")}})
	if err == nil || !strings.Contains(err.Error(), "outside /usr") {
		t.Errorf("a system symlink leaving /usr: got %v, want it refused", err)
	}
}

// TestBuildDefaultOrder builds the view jail run builds on this host and
// checks it is one the child can apply: parents first, every covering
// entry after what it covers, and Validate accepts it.
func TestBuildDefaultOrder(t *testing.T) {
	dir := tempDir(t)
	ws := filepath.Join(dir, "ws")
	ro, rw := filepath.Join(dir, "ro"), filepath.Join(dir, "rw")
	mkdirs(t, ws, ro, rw)
	home := "/home/jail-test-home" // need not exist: it becomes a tmpfs
	ms, ph := mustBuild(t, &Layout{
		Workspace: ws,
		Home:      home,
		System:    DefaultSystem(),
		Secrets:   DefaultSecrets(),
		ReadOnly:  []string{ro},
		ReadWrite: []string{rw},
		Hidden:    []string{"secret.txt", "/etc/hostname"},
		Protected: []string{".envrc", ".vscode", ".jail", "*.code-workspace"},
	})
	s := &Spec{Argv: []string{"/bin/true"}, Dir: ws, Net: NetNone, Mounts: ms}
	if err := s.Validate(); err != nil {
		t.Fatalf("Build's mounts fail Validate: %v", err)
	}
	for i, m := range ms {
		for _, later := range ms[i+1:] {
			if later.Kind != Hide && later.Kind != Protect && within(m.Dest, later.Dest) {
				t.Errorf("%s (%s) comes before its parent %s (%s)", m.Dest, m.Kind, later.Dest, later.Kind)
			}
		}
		if m.Kind == Hide || m.Kind == Protect {
			for _, later := range ms[i+1:] {
				if later.Kind != Hide && later.Kind != Protect && within(m.Dest, later.Dest) {
					t.Errorf("%s %s is mounted before the tree %s it covers", m.Kind, m.Dest, later.Dest)
				}
			}
		}
	}
	for _, want := range []Mount{
		{Kind: Bind, Source: "/usr", Dest: "/usr", Exec: true},
		{Kind: Hide, Dest: "/etc/shadow"},
		{Kind: Bind, Source: "/sys", Dest: "/sys"},
		{Kind: Proc, Dest: "/proc"},
		{Kind: Dev, Dest: "/dev"},
		{Kind: Tmpfs, Dest: "/tmp", Writable: true, Exec: true},
		{Kind: Tmpfs, Dest: home, Writable: true, Exec: true},
		{Kind: Bind, Source: ws, Dest: ws, Writable: true, Exec: true},
		{Kind: Bind, Source: ro, Dest: ro, Exec: true},
		{Kind: Bind, Source: rw, Dest: rw, Writable: true, Exec: true},
		{Kind: Hide, Dest: "/etc/hostname"},
		{Kind: Protect, Dest: filepath.Join(ws, ".vscode")},
		{Kind: Protect, Dest: filepath.Join(ws, ".jail")},
	} {
		m, ok := findMount(ms, want.Dest)
		for _, full := range ms {
			if full.Dest == want.Dest && (full.Kind == Bind || full.Kind == Protect) && full.Ino == 0 {
				t.Errorf("%s %s carries no identity for the init to check", full.Kind, full.Dest)
			}
		}
		if !ok || m != want {
			t.Errorf("got %+v (found %v), want %+v", m, ok, want)
		}
	}
	// A hidden path that does not exist inside the writable workspace
	// needs no mount (nothing to hide; a vanished one is the init's error).
	if _, ok := findMount(ms, filepath.Join(ws, "secret.txt")); ok {
		t.Error("a missing hide target inside the workspace got a mount")
	}
	ph.Release()
	if ents, err := os.ReadDir(ws); err != nil || len(ents) != 0 {
		t.Errorf("Release left %d entries in the workspace (%v)", len(ents), err)
	}
}

func TestBuildHome(t *testing.T) {
	dir := tempDir(t)
	ws := filepath.Join(dir, "ws")
	mkdirs(t, ws)
	for _, c := range []struct {
		home  string
		tmpfs bool
	}{
		{"/home/someone", true},
		{ws, false},                       // the workspace is the home
		{filepath.Join(ws, "sub"), false}, // inside the workspace
		{"/tmp/home", false},              // inside the private /tmp
		{"/", false},                      // nonsense homes are ignored
		{"relative/home", false},
		{"", false},
	} {
		ms, _ := mustBuild(t, &Layout{Workspace: ws, Home: c.home})
		n := 0
		for _, m := range mountsOfKind(ms, Tmpfs) {
			if m.Dest != "/tmp" && m.Dest != "/var/tmp" {
				n++
				if m.Dest != c.home {
					t.Errorf("home %q: tmpfs at %s", c.home, m.Dest)
				}
			}
		}
		if (n == 1) != c.tmpfs || n > 1 {
			t.Errorf("home %q: %d home tmpfs mounts, want tmpfs=%v", c.home, n, c.tmpfs)
		}
	}
}

func TestBuildUserBinds(t *testing.T) {
	dir := tempDir(t)
	ws := filepath.Join(dir, "ws")
	data := filepath.Join(dir, "data")
	mkdirs(t, ws, data)
	link := filepath.Join(dir, "datalink")
	symlink(t, data, link)

	ms, _ := mustBuild(t, &Layout{Workspace: ws, ReadOnly: []string{link + "/"}, ReadWrite: []string{data},
		Extra: []Mount{{Kind: Bind, Source: link, Dest: "/etc/resolv.conf"}, {Kind: Tmpfs, Dest: "/run"}}})
	// The source is resolved, the destination is where the user named it.
	for _, want := range []Mount{
		{Kind: Bind, Source: data, Dest: link, Exec: true},
		{Kind: Bind, Source: data, Dest: data, Writable: true, Exec: true},
		{Kind: Bind, Source: data, Dest: "/etc/resolv.conf"},
		{Kind: Tmpfs, Dest: "/run"},
	} {
		if m, ok := findMount(ms, want.Dest); !ok || m != want {
			t.Errorf("got %+v (found %v), want %+v", m, ok, want)
		}
	}

	for _, c := range []struct {
		l    Layout
		want string
	}{
		{Layout{ReadOnly: []string{"data"}}, "--ro data: must be an absolute path"},
		{Layout{ReadOnly: []string{"./data"}}, "--ro ./data: must be an absolute path"},
		{Layout{ReadWrite: []string{"../data"}}, "--rw ../data: must be an absolute path"},
		{Layout{ReadOnly: []string{"/"}}, "binding the whole root"},
		{Layout{ReadWrite: []string{"/usr/.."}}, "binding the whole root"},
		{Layout{ReadWrite: []string{filepath.Join(dir, "missing")}}, "--rw " + filepath.Join(dir, "missing")},
		{Layout{Extra: []Mount{{Kind: Bind, Source: filepath.Join(dir, "missing"), Dest: "/x"}}}, "mount /x"},
	} {
		c.l.Workspace = ws
		_, _, err := build(t, &c.l)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error containing %q", c.l, err, c.want)
		}
	}
}

func TestSortMounts(t *testing.T) {
	ms := []Mount{
		{Kind: Hide, Dest: "/etc/shadow"},
		{Kind: Protect, Dest: "/w/.git"},
		{Kind: Bind, Source: "/w", Dest: "/w/sub"},
		{Kind: Bind, Source: "/etc", Dest: "/etc"},
		{Kind: Hide, Dest: "/opt"},
		{Kind: Bind, Source: "/w", Dest: "/w"},
		{Kind: Tmpfs, Dest: "/tmp"},
	}
	sortMounts(ms)
	var got []string
	for _, m := range ms {
		got = append(got, m.Dest)
	}
	// Depth first; equal depth keeps the given order; a covering entry
	// sorts after the plain entries of its own depth.
	want := []string{"/etc", "/w", "/tmp", "/opt", "/w/sub", "/etc/shadow", "/w/.git"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sortMounts: got %v, want %v", got, want)
	}
}

func TestResolvePath(t *testing.T) {
	dir := tempDir(t)
	ws := filepath.Join(dir, "ws")
	mkdirs(t, filepath.Join(ws, "sub"), filepath.Join(dir, "outside"), filepath.Join(dir, "wsx"))
	writeFile(t, filepath.Join(ws, "file"), "")
	symlink(t, "sub", filepath.Join(ws, "in"))
	symlink(t, "/etc", filepath.Join(ws, "out"))
	symlink(t, "../outside", filepath.Join(ws, "escape"))
	symlink(t, "in/../../outside", filepath.Join(ws, "sneaky"))
	symlink(t, "../ws/sub", filepath.Join(ws, "roundtrip"))
	symlink(t, "nowhere", filepath.Join(ws, "dangling"))

	cases := []struct {
		p, base, within string
		want            string // "" means refused
	}{
		{"sub", ws, ws, filepath.Join(ws, "sub")},
		{"sub/../file", ws, ws, filepath.Join(ws, "file")},
		{filepath.Join(ws, "sub") + "/", "/", ws, filepath.Join(ws, "sub")},
		{".", ws, ws, ws},
		{"in", ws, ws, filepath.Join(ws, "sub")},
		{"roundtrip", ws, ws, filepath.Join(ws, "sub")},
		{"../outside", ws, ws, ""},
		{"sub/../../outside", ws, ws, ""},
		{"out", ws, ws, ""},
		{"escape", ws, ws, ""},
		{"sneaky", ws, ws, ""},
		{"escape", ws, "", filepath.Join(dir, "outside")},
		{"out", ws, "", "/etc"},
		{"/etc", ws, ws, ""},
		{filepath.Join(dir, "wsx"), ws, ws, ""}, // shares a prefix, not a parent
		{"missing", ws, ws, ""},
		{"dangling", ws, ws, ""},
		{"", ws, ws, ""},
		{"su\x00b", ws, ws, ""},
	}
	for _, c := range cases {
		got, err := ResolvePath(c.p, c.base, c.within)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("ResolvePath(%q, %q, %q) = %q, want it refused", c.p, c.base, c.within, got)
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("ResolvePath(%q, %q, %q) = %q, %v; want %q", c.p, c.base, c.within, got, err, c.want)
		}
	}
}

// protectLayout is a workspace with nothing but the given protected paths.
func protectLayout(ws string, rels ...string) *Layout {
	return &Layout{Workspace: ws, Protected: rels}
}

func protectDests(ms []Mount) []string {
	var d []string
	for _, m := range mountsOfKind(ms, Protect) {
		d = append(d, m.Dest)
	}
	return d
}

func isDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.IsDir()
}

// looksLikePlaceholder reports whether path is an empty directory: what
// git ignores and the host's tools can still write into (the sandbox sees
// it under a read-only mount).
func looksLikePlaceholder(t *testing.T, path string) bool {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Errorf("placeholder %s: %v", path, err)
		return false
	}
	ents, _ := os.ReadDir(path)
	if !fi.IsDir() || len(ents) != 0 {
		t.Errorf("placeholder %s is %v with %d entries, want an empty directory", path, fi.Mode(), len(ents))
		return false
	}
	return true
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// xattrs reports whether the file system of dir keeps user xattrs.
func xattrs(t *testing.T, dir string) bool {
	t.Helper()
	probe := filepath.Join(dir, "xattr-probe")
	writeFile(t, probe, "")
	defer os.Remove(probe)
	return unix.Setxattr(probe, "user.probe", []byte("1"), 0) == nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func TestProtect(t *testing.T) {
	t.Run("existing dir is protected in place", func(t *testing.T) {
		ws := tempDir(t)
		mkdirs(t, filepath.Join(ws, ".git", "hooks"))
		ms, ph := mustBuild(t, protectLayout(ws, ".git/hooks"))
		if got, want := protectDests(ms), []string{filepath.Join(ws, ".git/hooks")}; !reflect.DeepEqual(got, want) {
			t.Fatalf("protected %v, want %v", got, want)
		}
		ph.Release()
		if !isDir(filepath.Join(ws, ".git", "hooks")) {
			t.Error("Release removed a directory jail did not create")
		}
	})

	t.Run("missing path gets a placeholder that Release removes", func(t *testing.T) {
		ws := tempDir(t)
		ms, ph := mustBuild(t, protectLayout(ws, ".envrc"))
		p := filepath.Join(ws, ".envrc")
		if got := protectDests(ms); !reflect.DeepEqual(got, []string{p}) {
			t.Fatalf("protected %v, want [%s]", got, p)
		}
		if !looksLikePlaceholder(t, p) {
			t.Fatal("no placeholder")
		}
		ph.Release()
		if exists(p) {
			t.Error("Release left the placeholder")
		}
		ph.Release() // idempotent
	})

	t.Run("missing parent gets the placeholder", func(t *testing.T) {
		ws := tempDir(t)
		ms, ph := mustBuild(t, protectLayout(ws, ".claude/commands", ".claude/hooks"))
		p := filepath.Join(ws, ".claude")
		if got := protectDests(ms); !reflect.DeepEqual(got, []string{p}) {
			t.Fatalf("protected %v, want [%s]", got, p)
		}
		if !looksLikePlaceholder(t, p) || exists(filepath.Join(p, "commands")) {
			t.Fatal("want a placeholder at .claude and nothing beneath it")
		}
		ph.Release()
		if exists(p) {
			t.Error("Release left the placeholder")
		}
	})

	t.Run("symlink in the way is protected, never followed", func(t *testing.T) {
		dir := tempDir(t)
		ws, outside := filepath.Join(dir, "ws"), filepath.Join(dir, "outside")
		mkdirs(t, ws, outside)
		symlink(t, outside, filepath.Join(ws, ".claude"))
		symlink(t, outside, filepath.Join(ws, ".vscode"))
		symlink(t, filepath.Join(dir, "nowhere"), filepath.Join(ws, ".envrc"))
		ms, ph := mustBuild(t, protectLayout(ws, ".claude/hooks", ".vscode", ".envrc"))
		want := []string{filepath.Join(ws, ".claude"), filepath.Join(ws, ".envrc"), filepath.Join(ws, ".vscode")}
		if got := protectDests(ms); !reflect.DeepEqual(got, want) {
			t.Fatalf("protected %v, want %v", got, want)
		}
		ph.Release()
		if exists(filepath.Join(outside, "hooks")) || exists(filepath.Join(dir, "nowhere")) {
			t.Error("a placeholder was created through a symlink, outside the workspace")
		}
		for _, l := range want {
			if fi, err := os.Lstat(l); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("%s is no longer the symlink it was", l)
			}
		}
	})

	t.Run("a file in the way is protected (git worktree)", func(t *testing.T) {
		ws := tempDir(t)
		gitFile := filepath.Join(ws, ".git")
		writeFile(t, gitFile, "gitdir: /elsewhere/.git/worktrees/ws\n")
		ms, ph := mustBuild(t, protectLayout(ws, ".git/hooks", ".git/config"))
		if got := protectDests(ms); !reflect.DeepEqual(got, []string{gitFile}) {
			t.Fatalf("protected %v, want [%s]", got, gitFile)
		}
		ph.Release()
		if b, err := os.ReadFile(gitFile); err != nil || !strings.HasPrefix(string(b), "gitdir:") {
			t.Errorf(".git file changed: %q, %v", b, err)
		}
	})

	t.Run("a protected parent covers its children in any order", func(t *testing.T) {
		ws := tempDir(t)
		mkdirs(t, filepath.Join(ws, ".git", "hooks"))
		for _, rels := range [][]string{{".git", ".git/hooks"}, {".git/hooks", ".git"}} {
			ms, _ := mustBuild(t, protectLayout(ws, rels...))
			if got := protectDests(ms); !reflect.DeepEqual(got, []string{filepath.Join(ws, ".git")}) {
				t.Errorf("%v: protected %v, want only .git", rels, got)
			}
		}
	})

	t.Run("paths leaving the workspace are refused", func(t *testing.T) {
		ws := tempDir(t)
		for _, r := range []string{"/etc", "..", "../x", ".", "a/../../x", ""} {
			_, _, err := build(t, protectLayout(ws, r))
			if err == nil || !strings.Contains(err.Error(), "must be relative to the workspace") {
				t.Errorf("%q: got %v, want it refused", r, err)
			}
		}
	})

	t.Run("an invalid entry is refused before anything is made", func(t *testing.T) {
		ws := tempDir(t)
		_, ph, err := build(t, protectLayout(ws, ".envrc", "../x"))
		if err == nil {
			t.Fatal("../x accepted")
		}
		ph.Release()
		if exists(filepath.Join(ws, ".envrc")) {
			t.Error("a failed Build left a placeholder")
		}
	})

	t.Run("Release removes only the object it made", func(t *testing.T) {
		ws := tempDir(t)
		_, ph := mustBuild(t, protectLayout(ws, ".jail"))
		p := filepath.Join(ws, ".jail")
		// Replace the placeholder while the old inode still exists, so the
		// new file cannot reuse its inode number.
		if err := os.Rename(p, filepath.Join(ws, "moved")); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, "")
		ph.Release()
		if !exists(p) {
			t.Error("Release removed a file that is not its placeholder")
		}
		if !exists(filepath.Join(ws, "moved")) {
			t.Error("Release removed a name it did not create")
		}
	})

	t.Run("Release moves aside what another hand put in its placeholder's place", func(t *testing.T) {
		ws := tempDir(t)
		_, ph := mustBuild(t, protectLayout(ws, ".envrc"))
		p := filepath.Join(ws, ".envrc")
		if err := os.Rename(p, filepath.Join(ws, "moved")); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, "touch /tmp/x\n")
		var out strings.Builder
		ph.Report = &out
		ph.Release()
		if exists(p) {
			t.Error("what replaced the placeholder stays at its name")
		}
		if m, _ := filepath.Glob(filepath.Join(ws, ".envrc.jail-*")); len(m) != 1 {
			t.Errorf("moved aside as %v", m)
		}
		if !strings.Contains(out.String(), "moved aside") || !strings.Contains(out.String(), ".envrc") {
			t.Errorf("no line names it: %q", out.String())
		}
	})

	t.Run("an empty file of the user is not taken for a placeholder", func(t *testing.T) {
		ws := tempDir(t)
		p := filepath.Join(ws, ".envrc")
		writeFile(t, p, "")
		ms, ph := mustBuild(t, protectLayout(ws, ".envrc"))
		if got := protectDests(ms); !reflect.DeepEqual(got, []string{p}) {
			t.Fatalf("protected %v, want [%s]", got, p)
		}
		ph.Release()
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
			t.Errorf("the user's file changed: %v, %v", fi, err)
		}
	})

	t.Run("own locks do not keep the placeholder", func(t *testing.T) {
		ws := tempDir(t)
		mkdirs(t, filepath.Join(ws, ".vscode"))
		writeFile(t, filepath.Join(ws, ".envrc"), "use nix\n")
		_, ph := mustBuild(t, protectLayout(ws, ".jail", ".vscode", ".envrc"))
		ph.Release()
		if exists(filepath.Join(ws, ".jail")) {
			t.Error("the run's own lock kept its placeholder")
		}
		if !isDir(filepath.Join(ws, ".vscode")) || !exists(filepath.Join(ws, ".envrc")) {
			t.Error("an existing protected object was removed")
		}
	})

	t.Run("a concurrent holder keeps the placeholder", func(t *testing.T) {
		ws := tempDir(t)
		p := filepath.Join(ws, ".jail")
		l := protectLayout(ws, ".jail")
		_, first := mustBuild(t, l)
		before := inode(t, p)
		// A second run starting now finds the placeholder, takes it over
		// (if the mark can be set here) or locks it as an existing
		// directory, and protects it.
		ms2, second := mustBuild(t, l)
		if !reflect.DeepEqual(protectDests(ms2), []string{p}) || inode(t, p) != before {
			t.Fatalf("second run: protected %v; placeholder replaced: %v", protectDests(ms2), inode(t, p) != before)
		}
		first.Release()
		if !exists(p) {
			t.Fatal("the first run removed a placeholder the second run still uses")
		}
		second.Release()
		if xattrs(t, ws) && exists(p) {
			t.Error("the last run relying on a placeholder left it")
		}
	})

	t.Run("a placeholder left by a killed run goes with the next run", func(t *testing.T) {
		ws := tempDir(t)
		if !xattrs(t, ws) {
			t.Skipf("requires user xattrs on %s to recognise a leftover placeholder", ws)
		}
		p := filepath.Join(ws, ".jail")
		_, killed := mustBuild(t, protectLayout(ws, ".jail"))
		for _, h := range killed.held { // SIGKILL: descriptors closed, nothing removed
			unix.Close(h.fd)
			unix.Close(h.parent)
		}
		killed.held = nil
		_, next := mustBuild(t, protectLayout(ws, ".jail"))
		next.Release()
		if exists(p) {
			t.Error("a placeholder no run holds any more was not removed by the next run")
		}
	})

	t.Run("a placeholder the host wrote into stays, unmarked", func(t *testing.T) {
		ws := tempDir(t)
		p := filepath.Join(ws, ".vscode")
		_, ph := mustBuild(t, protectLayout(ws, ".vscode"))
		writeFile(t, filepath.Join(p, "settings.json"), "{}") // the user's editor, during the run
		ph.Release()
		if b, err := os.ReadFile(filepath.Join(p, "settings.json")); err != nil || string(b) != "{}" {
			t.Fatalf("the editor's file is gone: %q %v", b, err)
		}
		buf := make([]byte, 64)
		if _, err := unix.Getxattr(p, placeholderXattr, buf); err == nil {
			t.Error("a directory the user wrote into is still marked as jail's placeholder")
		}
	})

	t.Run("a placeholder carries the mark that identifies a leftover", func(t *testing.T) {
		ws := tempDir(t)
		if !xattrs(t, ws) {
			t.Skipf("requires user xattrs on %s", ws)
		}
		_, ph := mustBuild(t, protectLayout(ws, ".envrc"))
		defer ph.Release()
		fd, err := unix.Open(filepath.Join(ws, ".envrc"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if !isPlaceholder(fd) {
			buf := make([]byte, 64)
			_, err := unix.Fgetxattr(fd, placeholderXattr, buf)
			t.Errorf("the placeholder has no %s mark (%v): a copy left by a killed run is never cleaned up", placeholderXattr, err)
		}
	})

	t.Run("a glob in the last component protects what matches", func(t *testing.T) {
		ws := tempDir(t)
		writeFile(t, filepath.Join(ws, "a.code-workspace"), "{}")
		writeFile(t, filepath.Join(ws, "b.txt"), "")
		facts := &Facts{}
		l := protectLayout(ws, "*.code-workspace")
		l.Facts = facts
		ms, ph := mustBuild(t, l)
		defer ph.Release()
		if got := protectDests(ms); !reflect.DeepEqual(got, []string{filepath.Join(ws, "a.code-workspace")}) {
			t.Fatalf("protected %v", got)
		}
		found := false
		for _, f := range facts.list {
			found = found || f.kind == factGlob && f.path == ws && reflect.DeepEqual(f.names, []string{"a.code-workspace"})
		}
		if !found {
			t.Error("no glob fact for the plan cache")
		}
	})

	t.Run("the parents of a protected path are pinned", func(t *testing.T) {
		ws := tempDir(t)
		mkdirs(t, filepath.Join(ws, ".claude"))
		ms, ph := mustBuild(t, protectLayout(ws, ".claude/commands"))
		defer ph.Release()
		pins := mountsOfKind(ms, Pin)
		if len(pins) != 1 || pins[0].Dest != filepath.Join(ws, ".claude") || pins[0].Ino != inode(t, filepath.Join(ws, ".claude")) {
			t.Fatalf("pins %+v, want .claude with its inode", pins)
		}
	})

	t.Run("nil Placeholders", func(t *testing.T) {
		var ph *Placeholders
		ph.Release() // must not panic: Build's callers defer it before checking err
	})
}

// TestBuildGuarded: a guarded directory that a writable bind shows is
// created, made read-only, and every directory between the bind's root and
// it is pinned by a bind onto itself; one that no writable bind shows adds
// nothing but a fact.
func TestBuildGuarded(t *testing.T) {
	dir := tempDir(t)
	ws := filepath.Join(dir, "home")
	data := filepath.Join(dir, "data")
	mkdirs(t, ws, data)
	inWS := filepath.Join(ws, ".cache", "jail")
	inRW := filepath.Join(data, "cfg", "x", "jail")
	elsewhere := filepath.Join(dir, "other", "jail")
	facts := &Facts{}
	ms, _ := mustBuild(t, &Layout{Workspace: ws, ReadWrite: []string{data}, Guarded: []string{inWS, inRW, elsewhere}, Facts: facts})
	for _, d := range []string{inWS, inRW} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s not created private: %v %v", d, fi, err)
		}
	}
	if _, err := os.Stat(elsewhere); err == nil {
		t.Errorf("%s created though no writable bind shows it", elsewhere)
	}
	for _, want := range []Mount{
		{Kind: Pin, Dest: filepath.Join(ws, ".cache")},
		{Kind: Protect, Dest: inWS},
		{Kind: Pin, Dest: filepath.Join(data, "cfg")},
		{Kind: Pin, Dest: filepath.Join(data, "cfg", "x")},
		{Kind: Protect, Dest: inRW},
	} {
		if m, ok := findMount(ms, want.Dest); !ok || m != want {
			t.Errorf("got %+v (found %v), want %+v", m, ok, want)
		}
	}
	if _, ok := findMount(ms, filepath.Dir(elsewhere)); ok {
		t.Errorf("a mount for an unshown guarded directory")
	}
	// The facts hold each guard's resolution ("" for one that does not
	// exist), the workspace's and the bind's.
	got := map[string]string{}
	for _, f := range facts.list {
		if f.kind == factRealpath {
			got[f.path] = f.value
		}
	}
	for p, want := range map[string]string{inWS: inWS, inRW: inRW, elsewhere: "", ws: ws, data: data} {
		if v, ok := got[p]; !ok || v != want {
			t.Errorf("realpath fact of %s: %q (recorded %v), want %q", p, v, ok, want)
		}
	}
}

// TestBuildGuardedThroughSymlinks: the symlinks on the way to a guarded
// directory are covered too (a dangling one is followed, and its target
// created), so the path cannot be redirected; a guarded directory that a
// deeper read-only or hidden mount covers needs nothing, and does not
// clash with the user's own mount there.
func TestBuildGuardedThroughSymlinks(t *testing.T) {
	dir := tempDir(t)
	ws := filepath.Join(dir, "home")
	mkdirs(t, ws)
	symlink(t, "dots/config", filepath.Join(ws, ".config")) // dangling
	g := filepath.Join(ws, ".config", "jail")
	ms, _ := mustBuild(t, &Layout{Workspace: ws, Guarded: []string{g}})
	target := filepath.Join(ws, "dots", "config", "jail")
	if fi, err := os.Stat(target); err != nil || !fi.IsDir() {
		t.Fatalf("the dangling link's target was not created: %v", err)
	}
	for _, want := range []Mount{
		{Kind: Pin, Dest: filepath.Join(ws, ".config")},
		{Kind: Pin, Dest: filepath.Join(ws, "dots")},
		{Kind: Pin, Dest: filepath.Join(ws, "dots", "config")},
		{Kind: Protect, Dest: target},
	} {
		if m, ok := findMount(ms, want.Dest); !ok || m != want {
			t.Errorf("got %+v (found %v), want %+v", m, ok, want)
		}
	}

	// Covered by the user's read-only bind, or hidden: no guard mounts.
	ws2 := filepath.Join(dir, "home2")
	cfg := filepath.Join(ws2, ".config")
	mkdirs(t, filepath.Join(cfg, "jail"))
	for _, l := range []*Layout{
		{Workspace: ws2, ReadOnly: []string{cfg}, Guarded: []string{filepath.Join(cfg, "jail")}},
		{Workspace: ws2, Hidden: []string{cfg}, Guarded: []string{filepath.Join(cfg, "jail")}},
	} {
		ms, _ := mustBuild(t, l)
		for _, m := range ms {
			if m.Kind == Bind && m.Dest == cfg && m.Writable {
				t.Errorf("a writable pin over the user's %+v", l)
			}
			if m.Dest == filepath.Join(cfg, "jail") {
				t.Errorf("a guard mount under a read-only or hidden path: %+v", m)
			}
		}
	}
}

// TestBuildGuardedThroughAlias: a writable bind of a directory that the
// host also shows under another name (a bind mount) still shows the
// guarded directory inside it, and gets the guard.
func TestBuildGuardedThroughAlias(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("requires root to bind-mount an alias of a directory: running as uid " + strconv.Itoa(os.Geteuid()))
	}
	dir := tempDir(t)
	home, alias, ws := filepath.Join(dir, "home"), filepath.Join(dir, "alias"), filepath.Join(dir, "ws")
	g := filepath.Join(home, ".config", "jail")
	mkdirs(t, g, alias, ws)
	if err := unix.Mount(home, alias, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s on %s: %v", home, alias, err)
	}
	t.Cleanup(func() { unix.Unmount(alias, unix.MNT_DETACH) })
	ms, _ := mustBuild(t, &Layout{Workspace: ws, ReadWrite: []string{alias}, Guarded: []string{g}})
	for _, want := range []Mount{
		{Kind: Pin, Dest: filepath.Join(alias, ".config")},
		{Kind: Protect, Dest: filepath.Join(alias, ".config", "jail")},
	} {
		if m, ok := findMount(ms, want.Dest); !ok || m != want {
			t.Errorf("got %+v (found %v), want %+v", m, ok, want)
		}
	}
}

// TestBuildGuardedThroughInnerAlias: a host mount inside a writable bind
// that shows the home under another name gets the guard too.
func TestBuildGuardedThroughInnerAlias(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("requires root to bind-mount an alias of a directory: running as uid " + strconv.Itoa(os.Geteuid()))
	}
	dir := tempDir(t)
	home, ws := filepath.Join(dir, "home"), filepath.Join(dir, "ws")
	alias := filepath.Join(ws, "halias")
	g := filepath.Join(home, ".config", "jail")
	mkdirs(t, g, alias)
	if err := unix.Mount(home, alias, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s on %s: %v", home, alias, err)
	}
	t.Cleanup(func() { unix.Unmount(alias, unix.MNT_DETACH) })
	ms, _ := mustBuild(t, &Layout{Workspace: ws, Guarded: []string{g}})
	for _, want := range []Mount{
		{Kind: Pin, Dest: alias},
		{Kind: Pin, Dest: filepath.Join(alias, ".config")},
		{Kind: Protect, Dest: filepath.Join(alias, ".config", "jail")},
	} {
		if m, ok := findMount(ms, want.Dest); !ok || m != want {
			t.Errorf("got %+v (found %v), want %+v", m, ok, want)
		}
	}
}

// TestBuildHomeUnderUserBind: a home inside a tree the user binds is
// hidden there (an empty read-only directory), not refused; a home bound
// itself gets no tmpfs over it.
func TestBuildHomeUnderUserBind(t *testing.T) {
	// Not under /tmp, which the sandbox's own /tmp replaces.
	dir, err := os.MkdirTemp("/var/tmp", "jail-home-")
	if err != nil {
		t.Skipf("requires a writable /var/tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	dir, _ = filepath.EvalSymlinks(dir)
	ws, homes := filepath.Join(dir, "ws"), filepath.Join(dir, "homes")
	home := filepath.Join(homes, "u")
	mkdirs(t, ws, home)
	ms, _ := mustBuild(t, &Layout{Workspace: ws, Home: home, ReadOnly: []string{homes}})
	if m, ok := findMount(ms, home); !ok || m.Kind != Hide {
		t.Errorf("home under --ro %s: %+v (found %v), want a hide", homes, m, ok)
	}
	ms, _ = mustBuild(t, &Layout{Workspace: ws, Home: home, ReadWrite: []string{home}})
	if m, ok := findMount(ms, home); !ok || m.Kind != Bind || !m.Writable {
		t.Errorf("--rw of the home: %+v (found %v), want the bind alone", m, ok)
	}
}

func TestBuildSharedTmpWorkspaceRefused(t *testing.T) {
	for _, ws := range []string{"/tmp", "/var/tmp", "/var"} {
		if _, err := os.Stat(ws); err != nil {
			continue
		}
		_, ph, err := (&Layout{Workspace: ws}).Build()
		ph.Release()
		if err == nil || !strings.Contains(err.Error(), "shared temporary directory") || !strings.Contains(err.Error(), "mktemp -d") {
			t.Errorf("workspace %s: %v, want a refusal naming the shared temporary directory and the fix", ws, err)
		}
	}
}

func TestBuildSystemData(t *testing.T) {
	dir := tempDir(t)
	ws := filepath.Join(dir, "ws")
	data := filepath.Join(dir, "dpkg")
	link := filepath.Join(dir, "link")
	mkdirs(t, ws, data)
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	ms, _ := mustBuild(t, &Layout{Workspace: ws, SystemData: []string{data, link, filepath.Join(dir, "missing"), ws}})
	var binds []string
	for _, m := range mountsOfKind(ms, Bind) {
		if m.Dest != ws && m.Dest != "/sys" {
			binds = append(binds, m.Dest)
			if m.Writable || m.Exec || m.Source != m.Dest {
				t.Errorf("system data %s: %+v, want a read-only, not executable bind of itself", m.Dest, m)
			}
		}
	}
	if !slices.Equal(binds, []string{data}) {
		t.Errorf("system data bound: %v, want only %s (not a symlink, a missing path or the workspace)", binds, data)
	}
	var vartmp bool
	for _, m := range mountsOfKind(ms, Tmpfs) {
		vartmp = vartmp || m.Dest == "/var/tmp" && m.Writable
	}
	if !vartmp {
		t.Error("no private writable /var/tmp")
	}
}
