//go:build linux

package container

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSaveArtifact(t *testing.T) {
	ws := t.TempDir()
	a, err := SaveArtifact(ws, ".jail/desktop/screenshots", ".png", []byte("png bytes"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.Path, ".jail/desktop/screenshots/") || !strings.HasSuffix(a.Path, ".png") || a.Size != 9 {
		t.Fatalf("artifact %+v", a)
	}
	b, err := os.ReadFile(filepath.Join(ws, a.Path))
	sum := sha256.Sum256(b)
	if err != nil || string(b) != "png bytes" || hex.EncodeToString(sum[:]) != a.SHA256 {
		t.Fatalf("file %q %v, hash %s", b, err, a.SHA256)
	}
	b2, _ := SaveArtifact(ws, ".jail/desktop/screenshots", ".png", []byte("second"))
	if b2.Path == a.Path {
		t.Fatal("two saves share a name")
	}
}

// TestSaveArtifactSymlinks: a sandbox can write the workspace; a symlink it planted at any
// step of the way is refused, and nothing is written where it points.
func TestSaveArtifactSymlinks(t *testing.T) {
	for _, at := range []string{".jail", ".jail/desktop", ".jail/desktop/screenshots"} {
		ws, outside := t.TempDir(), t.TempDir()
		if dir := filepath.Dir(at); dir != "." {
			os.MkdirAll(filepath.Join(ws, dir), 0o755)
		}
		if err := os.Symlink(outside, filepath.Join(ws, at)); err != nil {
			t.Fatal(err)
		}
		if _, err := SaveArtifact(ws, ".jail/desktop/screenshots", ".png", []byte("x")); err == nil {
			t.Errorf("symlink at %s: saved", at)
		}
		var found []string
		filepath.Walk(outside, func(p string, info os.FileInfo, err error) error {
			if err == nil && p != outside {
				found = append(found, p)
			}
			return nil
		})
		if len(found) > 0 {
			t.Errorf("symlink at %s: wrote outside the workspace: %v", at, found)
		}
	}
	if _, err := SaveArtifact(t.TempDir(), "../up", ".png", []byte("x")); err == nil {
		t.Error("a directory above the workspace was accepted")
	}
}
