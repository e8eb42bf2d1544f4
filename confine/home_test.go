//go:build linux

package confine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPersistentHomeBind: with HomeDir the home is that directory, bound
// read-write, and the mountpoints of binds beneath the home are made in it
// (the init creates nothing in a bound host tree); something the sandbox
// planted in the way refuses the launch instead of being followed.
func TestPersistentHomeBind(t *testing.T) {
	// The home must lie outside /tmp, which every sandbox has of its own.
	home, err := os.MkdirTemp("/var/tmp", "jail-home-test-")
	if err != nil {
		t.Skipf("requires a writable /var/tmp for a home outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	ws, hd := t.TempDir(), t.TempDir()
	tool := filepath.Join(home, ".cargo", "bin")
	os.MkdirAll(tool, 0o755)
	l := &Layout{Workspace: ws, Home: home, HomeDir: hd, ReadOnly: []string{tool}}
	ms, _ := mustBuild(t, l)
	m, ok := findMount(ms, home)
	if !ok || m.Kind != Bind || m.Source != hd || !m.Writable {
		t.Fatalf("home mount %+v (%v), want a writable bind of %s", m, ok, hd)
	}
	if st, err := os.Stat(filepath.Join(hd, ".cargo", "bin")); err != nil || !st.IsDir() {
		t.Fatalf("no mountpoint made in the persistent home: %v", err)
	}

	// A symlink planted where a mountpoint goes.
	hd2 := t.TempDir()
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(hd2, ".cargo"))
	l = &Layout{Workspace: ws, Home: home, HomeDir: hd2, ReadOnly: []string{tool}}
	_, _, err = build(t, l)
	if err == nil || !strings.Contains(err.Error(), "jail clean") {
		t.Fatalf("a symlink in the way: %v, want a refusal naming jail clean", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("the mountpoint was made through the symlink: %v", ents)
	}
}
