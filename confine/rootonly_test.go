//go:build linux

package confine

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRootOnlyWalk: the walk hides what others may not read (a file, or a
// directory they may not read and search) without descending into it,
// leaves symlinks and already-mounted paths alone, and its hash changes
// with each way an entry can become root-only.
func TestRootOnlyWalk(t *testing.T) {
	root := t.TempDir()
	os.Chmod(root, 0o755)
	mk := func(rel string, mode os.FileMode) {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
	}
	mk("open.conf", 0o644)
	mk("key.pem", 0o600)
	mk("sub/inner.conf", 0o640)
	mk("sub/ok.conf", 0o644)
	mk("private/token", 0o644)
	os.Chmod(filepath.Join(root, "private"), 0o700)
	mk("mounted/secret", 0o600)
	os.Symlink("key.pem", filepath.Join(root, "link"))

	walk := func() *treeWalk {
		t.Helper()
		w := &treeWalk{mounted: map[string]bool{filepath.Join(root, "mounted"): true}, left: maxUnreadableWalk, hash: treeHashInit}
		if err := w.root(root); err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := walk()
	var got []string
	for _, p := range w.hide {
		got = append(got, p[len(root)+1:])
	}
	slices.Sort(got)
	if want := []string{"key.pem", "private", "sub/inner.conf"}; !slices.Equal(got, want) {
		t.Fatalf("hidden %v, want %v", got, want)
	}
	for _, e := range w.entries {
		if e.name == "token" || e.name == "link" || e.name == "secret" {
			t.Errorf("the walk recorded %s (inside a hidden directory, a symlink, or under a mount)", e.name)
		}
	}
	if again := walk(); again.hash != w.hash {
		t.Fatal("the same tree hashed differently")
	}
	for _, change := range []func(){
		func() { os.Chmod(filepath.Join(root, "sub", "ok.conf"), 0o600) },
		func() { mk("sub/new.conf", 0o644) },
		func() { os.Chmod(filepath.Join(root, "sub"), 0o711) },
	} {
		before := walk().hash
		change()
		if walk().hash == before {
			t.Fatal("a change the cached run must see left the walk's hash as it was")
		}
	}
}

func TestRootOnlyWalkBounded(t *testing.T) {
	root := t.TempDir()
	for i := range 5 {
		os.WriteFile(filepath.Join(root, string(rune('a'+i))), nil, 0o644)
	}
	w := &treeWalk{mounted: map[string]bool{}, left: 3, hash: treeHashInit}
	if err := w.root(root); err == nil {
		t.Fatal("a walk over its bound did not fail")
	}
}
