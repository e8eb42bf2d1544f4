//go:build linux

package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
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

// TestMakeInHomeConcurrent: sandboxes of one workspace started at once (jail serve) make the
// same symlinks and files in the one persistent home, one of them replacing a link whose
// target changed: none fails, and the link ends with the new target.
func TestMakeInHomeConcurrent(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("old-target", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	hfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(hfd)
	for round := range 50 {
		// Each round the host's link points elsewhere and the file is
		// new: every goroutine sees the name missing or stale at once.
		os.Remove(filepath.Join(dir, "file"))
		target := fmt.Sprintf("target-%d", round)
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, 16)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs <- makeInHome(hfd, "link", Mount{Kind: Symlink, Source: target})
				errs <- makeInHome(hfd, "file", Mount{Kind: File, Source: "content\n"})
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	if got, _ := os.Readlink(filepath.Join(dir, "link")); got != "target-49" {
		t.Fatalf("link -> %q, want target-49", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "file")); string(b) != "content\n" {
		t.Fatalf("file: %q", b)
	}
}
