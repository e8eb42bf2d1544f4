//go:build linux

package home

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenListRemove(t *testing.T) {
	data := t.TempDir()
	root := Root("/nonexistent", data)
	ws1, ws2 := t.TempDir(), t.TempDir()
	h1, err := Open(root, ws1)
	if err != nil {
		t.Fatal(err)
	}
	h1again, err := Open(root, ws1)
	if err != nil || h1again.Path != h1.Path {
		t.Fatalf("second Open of one workspace: %v, %v; want %s", h1again, err, h1.Path)
	}
	h2, err := Open(root, ws2)
	if err != nil {
		t.Fatal(err)
	}
	if h1.Path == h2.Path {
		t.Fatalf("two workspaces share the home %s", h1.Path)
	}
	// What a sandbox leaves: read-only directories (Go's module cache),
	// a symlink out of the home, which removal must not follow.
	outside := filepath.Join(t.TempDir(), "keep")
	os.WriteFile(outside, []byte("keep"), 0o600)
	os.MkdirAll(filepath.Join(h1.Path, "go/pkg/mod/x"), 0o755)
	os.WriteFile(filepath.Join(h1.Path, "go/pkg/mod/x/f"), make([]byte, 10000), 0o444)
	os.Chmod(filepath.Join(h1.Path, "go/pkg/mod/x"), 0o555)
	os.Symlink(filepath.Dir(outside), filepath.Join(h1.Path, "link"))
	es, err := List(root)
	if err != nil || len(es) != 2 {
		t.Fatalf("List: %v, %v", es, err)
	}
	for _, e := range es {
		if e.Gone || (e.Workspace != ws1 && e.Workspace != ws2) {
			t.Errorf("entry %+v", e)
		}
		if e.Workspace == ws1 && e.Bytes < 10000 {
			t.Errorf("home of ws1 counted %d bytes, want at least 10000", e.Bytes)
		}
	}
	if err := Remove(root, h1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(h1.Path); !os.IsNotExist(err) {
		t.Fatalf("home still there: %v", err)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "keep" {
		t.Fatalf("removal followed the symlink: %q, %v", b, err)
	}
	os.RemoveAll(ws2)
	es, _ = List(root)
	if len(es) != 1 || !es[0].Gone {
		t.Fatalf("after removing ws2: %+v, want one gone entry", es)
	}
	// A workspace made again under the same name is another directory:
	// it gets a fresh home.
	os.Mkdir(ws2, 0o755)
	h3, err := Open(root, ws2)
	if err != nil || h3.Path == h2.Path {
		t.Fatalf("recreated workspace got %v (%v), the old home was %s", h3, err, h2.Path)
	}
}

func TestOpenRefusesSymlinkedState(t *testing.T) {
	data := t.TempDir()
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(data, "jail")); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Root("/nonexistent", data), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "symlink is refused") {
		t.Fatalf("Open through a symlinked jail directory: %v", err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Fatalf("Open created %v through the symlink", ents)
	}
}

func TestSeedKeepsWhatIsThere(t *testing.T) {
	data := t.TempDir()
	root := Root("/nonexistent", data)
	h, err := Open(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := Seed(root, h, ".claude.json", []byte("host")); err != nil {
		t.Fatal(err)
	}
	if err := Seed(root, h, ".claude.json", []byte("again")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(h.Path, ".claude.json")); string(b) != "host" {
		t.Fatalf("seeded %q, want the first copy kept", b)
	}
	target := filepath.Join(t.TempDir(), "target")
	os.Symlink(target, filepath.Join(h.Path, "planted.json"))
	Seed(root, h, "planted.json", []byte("x"))
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Fatalf("Seed wrote through a planted symlink")
	}
}
