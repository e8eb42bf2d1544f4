package policy

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A project policy file is read from the workspace only: a symlink (at
// the file or at .jail) and a FIFO or device are refused without blocking.
func TestProjectFileNotFollowed(t *testing.T) {
	ws := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.toml")
	os.WriteFile(outside, []byte("[sandbox]\nhide = [\"/x\"]\n"), 0o600)
	os.MkdirAll(filepath.Join(ws, ".jail"), 0o755)
	proj := ProjectFile(ws)
	os.Symlink(outside, proj)
	env := Env{Home: t.TempDir(), Workspace: ws}
	if _, _, err := LoadLayered("", proj, env); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("a symlinked project file was read: %v", err)
	}
	os.Remove(proj)
	if err := syscall.Mkfifo(proj, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadLayered("", proj, env); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a FIFO project file: %v", err)
	}
	os.Remove(proj)
	os.RemoveAll(filepath.Join(ws, ".jail"))
	os.Symlink(filepath.Dir(outside), filepath.Join(ws, ".jail"))
	os.Rename(outside, filepath.Join(filepath.Dir(outside), "policy.toml"))
	if _, _, err := LoadLayered("", proj, env); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("a project file through a symlinked .jail was read: %v", err)
	}
}
