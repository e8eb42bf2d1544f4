//go:build linux

package tools

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// outsideDir makes a directory next to the workspace holding a secret.
func outsideDir(t *testing.T) (dir, secret string) {
	t.Helper()
	dir, _ = filepath.EvalSymlinks(t.TempDir())
	secret = filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, secret
}

func TestResolveRefusesEscapes(t *testing.T) {
	f := newFixture(t)
	out, secret := outsideDir(t)
	f.write("inside.txt", "inside\n")
	f.write("sub/deep.txt", "deep\n")
	os.Symlink(secret, filepath.Join(f.dir, "abs-link"))
	rel, _ := filepath.Rel(f.dir, secret)
	os.Symlink(rel, filepath.Join(f.dir, "rel-link"))
	os.Symlink(out, filepath.Join(f.dir, "dir-link"))
	os.Symlink("/proc/self/root/etc/passwd", filepath.Join(f.dir, "magic-link"))
	os.Symlink("inside.txt", filepath.Join(f.dir, "ok-link"))
	os.Symlink("../inside.txt", filepath.Join(f.dir, "sub/up-link"))

	for _, p := range []string{"../" + filepath.Base(f.dir) + "/../" + filepath.Base(out) + "/secret", "..", "sub/../../x", secret, "/etc/passwd",
		"abs-link", "rel-link", "dir-link/secret", "magic-link", "sub/../abs-link"} {
		_, err := f.ws.Open(p, unix.O_RDONLY, 0)
		if !errors.Is(err, ErrOutside) {
			t.Errorf("Open(%q) = %v, want ErrOutside", p, err)
		}
		for _, tool := range []string{"read", "edit", "write"} {
			args := map[string]any{"path": p, "content": "x", "old_string": "SECRET", "new_string": "PWNED"}
			if tool == "read" {
				args = map[string]any{"path": p}
			}
			if tool == "write" {
				delete(args, "old_string")
				delete(args, "new_string")
			} else if tool == "edit" {
				delete(args, "content")
			}
			r := f.call(tool, args)
			if !r.IsError || !strings.Contains(r.Content, "outside the workspace") && !strings.Contains(r.Content, "symlink") && !strings.Contains(r.Content, "not a file name") {
				t.Errorf("%s %q: %v %q", tool, p, r.IsError, r.Content)
			}
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "SECRET\n" {
		t.Fatalf("secret changed: %q", b)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 1 {
		t.Fatalf("outside directory gained entries: %v", ents)
	}
	// Inside stays usable: absolute paths inside, symlinks inside.
	for _, p := range []string{"inside.txt", filepath.Join(f.dir, "inside.txt"), "ok-link", "sub/up-link", "./sub/../inside.txt"} {
		if fh, err := f.ws.Open(p, unix.O_RDONLY, 0); err != nil {
			t.Errorf("Open(%q): %v", p, err)
		} else {
			fh.Close()
		}
	}
}

// TestResolveSymlinkSwapRace swaps a symlink between a file inside and a
// secret outside while read, edit, write, grep and glob run: no call may
// ever see or change the secret.
func TestResolveSymlinkSwapRace(t *testing.T) {
	f := newFixture(t)
	_, secret := outsideDir(t)
	f.write("target.txt", "inside SECRET-LOOKALIKE\n")
	f.write("d/real.txt", "inside\n")
	outDir := filepath.Dir(secret)
	link := filepath.Join(f.dir, "link")
	dlink := filepath.Join(f.dir, "dlink")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		// Lifetime: until stop is set at the end of the test.
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			tmp := link + ".tmp"
			dtmp := dlink + ".tmp"
			if i%2 == 0 {
				os.Symlink("target.txt", tmp)
				os.Symlink("d", dtmp)
			} else {
				os.Symlink(secret, tmp)
				os.Symlink(outDir, dtmp)
			}
			os.Rename(tmp, link)
			os.Rename(dtmp, dlink)
		}
	}()
	deadline := time.Now().Add(2 * time.Second)
	inside, refused := 0, 0
	for time.Now().Before(deadline) {
		r := f.call("read", map[string]any{"path": "link"})
		if strings.Contains(r.Content, "SECRET\n") || strings.Contains(r.Content, "\tSECRET") {
			t.Fatalf("read through the swapped link saw the secret: %q", r.Content)
		}
		if r.IsError {
			refused++
		} else {
			inside++
		}
		f.call("edit", map[string]any{"path": "link", "old_string": "SECRET", "new_string": "PWNED", "replace_all": true})
		f.call("write", map[string]any{"path": "dlink/secret", "content": "PWNED"})
		r = f.call("read", map[string]any{"path": "dlink/secret"})
		if strings.Contains(r.Content, "SECRET") {
			t.Fatalf("read through the swapped directory link saw the secret: %q", r.Content)
		}
		f.call("grep", map[string]any{"pattern": "SECRET", "path": "dlink"})
	}
	stop.Store(true)
	wg.Wait()
	if b, _ := os.ReadFile(secret); string(b) != "SECRET\n" {
		t.Fatalf("secret changed: %q", b)
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 1 {
		t.Fatalf("outside directory gained entries: %v", ents)
	}
	if inside == 0 || refused == 0 {
		t.Logf("race coverage: %d reads inside, %d refused", inside, refused)
	}
}
