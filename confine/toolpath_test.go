//go:build linux

package confine

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// homeDir is a directory for a test home outside /tmp (a home in /tmp is
// inside the private /tmp and gets no mounts of its own).
func homeDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "jail-home-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	r, err := filepath.EvalSymlinks(d)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestToolRoot(t *testing.T) {
	const h = "/home/u"
	for _, c := range []struct {
		p, root string
	}{
		{"/home/u/.pyenv/shims", "/home/u/.pyenv"},
		{"/home/u/.cargo/bin", "/home/u/.cargo"},
		{"/home/u/go/bin", "/home/u/go"},
		{"/home/u/.nvm/versions/node/v20.1.0/bin", "/home/u/.nvm"},
		{"/home/u/.local/bin", "/home/u/.local/bin"},
		{"/home/u/.local/share/mise/shims", "/home/u/.local/share/mise"},
		{"/home/u/.config/composer/vendor/bin", "/home/u/.config/composer"},
		{"/home/u/bin", "/home/u/bin"},
		{"/home/u", ""},              // the home itself
		{"/home/u/.local", ""},       // a shared directory
		{"/home/u/.local/share", ""}, // likewise
		{"/home/u/.ssh/bin", ""},     // a secret place
		{"/home/u/.config/jail", ""},
		{"/home/u/.local/share/jail/x/bin", ""},
		{"/home/u/.docker/cli-plugins", ""},
		{"/opt/bin", ""},
	} {
		r, ok := toolRoot(h, c.p)
		if r != c.root || ok != (c.root != "") {
			t.Errorf("toolRoot(%s) = %q, %v; want %q", c.p, r, ok, c.root)
		}
	}
}

// TestToolPaths builds a home with a version manager (a current symlink
// into a versions tree), npm's ~/.local layout and a secret, and checks
// what the layout binds.
func TestToolPaths(t *testing.T) {
	dir := homeDir(t)
	home, ws := filepath.Join(dir, "home"), filepath.Join(dir, "ws")
	mkdirs(t, ws, filepath.Join(home, ".vm/versions/1.0/bin"), filepath.Join(home, ".vm/versions/1.0/lib"),
		filepath.Join(home, ".local/bin"), filepath.Join(home, ".local/lib/node_modules/pkg/bin"),
		filepath.Join(home, ".local/share/secret"), filepath.Join(home, ".ssh/bin"), filepath.Join(home, "notes"))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("versions/1.0", filepath.Join(home, ".vm/current")))
	must(os.Symlink("../lib/node_modules/pkg/bin/cli.js", filepath.Join(home, ".local/bin/pkg")))
	must(os.WriteFile(filepath.Join(home, ".local/lib/node_modules/pkg/bin/cli.js"), nil, 0o755))
	path := []string{filepath.Join(home, ".vm/current/bin"), filepath.Join(home, ".local/bin"), home,
		filepath.Join(home, ".ssh/bin"), "relative/bin", "/usr/bin"}
	ms, _ := mustBuild(t, &Layout{Workspace: ws, Home: home, Path: path, Facts: &Facts{}})
	var binds, links []string
	for _, m := range ms {
		if !pathWithin(m.Dest, home) || m.Dest == home {
			continue
		}
		switch m.Kind {
		case Bind:
			if m.Writable || !m.Exec || m.Source != m.Dest {
				t.Errorf("tool root %+v: want a read-only, executable bind of itself", m)
			}
			binds = append(binds, m.Dest)
		case Symlink:
			links = append(links, m.Dest+" -> "+m.Source)
		default:
			t.Errorf("unexpected mount in the home: %+v", m)
		}
	}
	wantBinds := []string{filepath.Join(home, ".local/bin"), filepath.Join(home, ".local/lib"), filepath.Join(home, ".vm")}
	slices.Sort(binds)
	if !slices.Equal(binds, wantBinds) {
		t.Errorf("bound %v, want %v", binds, wantBinds)
	}
	if len(links) != 0 {
		t.Errorf("symlinks %v: the current link lies inside the bound root", links)
	}
	// A version manager whose bin directory is reached through a symlink
	// in the home itself: the link is recreated in the home's tmpfs.
	must(os.Symlink(".vm/current/bin", filepath.Join(home, "vmbin")))
	ms, _ = mustBuild(t, &Layout{Workspace: ws, Home: home, Path: []string{filepath.Join(home, "vmbin")}})
	found := false
	for _, m := range ms {
		found = found || m.Kind == Symlink && m.Dest == filepath.Join(home, "vmbin") && m.Source == ".vm/current/bin"
	}
	if !found {
		t.Errorf("the symlink ~/vmbin is not recreated: %+v", ms)
	}
}

func TestHiddenCommand(t *testing.T) {
	dir := homeDir(t)
	home, ws := filepath.Join(dir, "home"), filepath.Join(dir, "ws")
	mkdirs(t, ws, filepath.Join(home, ".ssh/bin"))
	tool := filepath.Join(home, "tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(home, ".ssh/bin/sshtool")
	if err := os.WriteFile(secret, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ms, _ := mustBuild(t, &Layout{Workspace: ws, Home: home, System: []string{"/usr", "/bin"}})
	for _, c := range []struct {
		name, found, bind string
		path              []string
	}{
		{"tool", tool, tool, []string{"/usr/bin", home}},                       // in the home itself: the file
		{"sshtool", secret, secret, []string{filepath.Join(home, ".ssh/bin")}}, // a secret place: the file
		{tool, tool, tool, nil},
		{"sh", "", "", []string{"/usr/bin", "/bin"}}, // shown inside
		{"nothing-here", "", "", []string{"/usr/bin", home}},
	} {
		found, bind, ok := HiddenCommand(c.name, c.path, ws, home, ms)
		if found != c.found || bind != c.bind || ok != (c.found != "") {
			t.Errorf("HiddenCommand(%s) = %q, %q, %v; want %q, %q", c.name, found, bind, ok, c.found, c.bind)
		}
	}
}

// TestToolPathsPlantedLinks: symlinks a sandbox could have planted in a
// project's bin (a PATH entry inside a tool root) never bring another
// root, a private file or a private directory; a public executable is
// shown alone.
func TestToolPathsPlantedLinks(t *testing.T) {
	dir := homeDir(t)
	home, ws := filepath.Join(dir, "home"), filepath.Join(dir, "ws")
	priv, pub := filepath.Join(home, "Private"), filepath.Join(home, "pub")
	mkdirs(t, ws, filepath.Join(home, "proj/bin"), filepath.Join(home, "proj/lib"), priv, filepath.Join(pub, "sub/bin"))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(priv, "secret"), nil, 0o600))
	must(os.WriteFile(filepath.Join(priv, "run"), nil, 0o700))
	must(os.Chmod(priv, 0o700))
	must(os.WriteFile(filepath.Join(pub, "sub/bin/tool"), nil, 0o755))
	must(os.Symlink(filepath.Join(priv, "secret"), filepath.Join(home, "proj/bin/a")))
	must(os.Symlink(filepath.Join(priv, "run"), filepath.Join(home, "proj/bin/b")))
	must(os.Symlink(filepath.Join(pub, "sub/bin/tool"), filepath.Join(home, "proj/bin/c")))
	must(os.RemoveAll(filepath.Join(home, "proj/lib")))
	must(os.Symlink(pub, filepath.Join(home, "proj/lib")))
	ms, _ := mustBuild(t, &Layout{Workspace: ws, Home: home, Path: []string{filepath.Join(home, "proj/bin"), filepath.Join(home, "proj/lib")}, Facts: &Facts{}})
	var binds []string
	for _, m := range ms {
		if m.Kind == Bind && pathWithin(m.Dest, home) && m.Dest != home {
			binds = append(binds, m.Dest)
		}
	}
	slices.Sort(binds)
	want := []string{filepath.Join(home, "proj"), filepath.Join(pub, "sub/bin/tool")}
	if !slices.Equal(binds, want) {
		t.Errorf("bound %v, want %v (the entry's root and the public executable alone)", binds, want)
	}
}
