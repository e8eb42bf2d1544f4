//go:build linux

package confine

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestView reads a sandbox's files through its mounts as the sandbox
// would: symlinks followed in the sandbox's terms (an absolute target
// lands on the mount that shows it there, not on the host's path), what
// a writable bind holds is shared, what a read-only bind, an overlay's
// lower, jail's own file or an empty object holds is not.
func TestView(t *testing.T) {
	host := t.TempDir()
	mk := func(rel, data string) {
		p := filepath.Join(host, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, rel string) {
		if err := os.Symlink(target, filepath.Join(host, rel)); err != nil {
			t.Fatal(err)
		}
	}
	mk("ws/a/config", "ws")
	mk("ws/.git/config", "upper-lower")
	mk("home/.gitconfig.local", "home")
	mk("user.gitconfig", "user")
	mk("etc/secret", "secret")
	mk("ws/hidden/x", "hidden")
	link("/h/.gitconfig.local", "ws/abs")      // absolute: the sandbox's /h
	link("../w/a", "ws/rel")                   // relative, from the sandbox's /w
	link(filepath.Join(host, "etc"), "ws/out") // the host's path: not the sandbox's
	link("loop", "ws/loop")
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(host, "ws"), &st); err != nil {
		t.Fatal(err)
	}
	ms := []Mount{
		{Kind: Bind, Source: filepath.Join(host, "ws"), Dest: "/w", Writable: true, Dev: uint64(st.Dev), Ino: st.Ino},
		{Kind: Overlay, Source: filepath.Join(host, "ws/.git"), Dest: "/w/.git"},
		{Kind: Hide, Dest: "/w/hidden"},
		{Kind: Bind, Source: filepath.Join(host, "home"), Dest: "/h", Writable: true},
		{Kind: Bind, Source: filepath.Join(host, "user.gitconfig"), Dest: "/h/.gitconfig"},
		{Kind: File, Source: "jail's", Dest: "/h/.config/git/jail.gitconfig"},
		{Kind: Tmpfs, Dest: "/tmp", Writable: true},
		{Kind: Proc, Dest: "/proc"},
	}
	v := NewView(ms)
	for _, c := range []struct {
		p, data string
		shared  bool
		err     error
	}{
		{"/w/a/config", "ws", true, nil},
		{"/w/.git/config", "upper-lower", false, nil},
		{"/w/abs", "home", true, nil},
		{"/w/rel/config", "ws", true, nil},
		{"/w/a/../a/config", "ws", true, nil},
		{"/h/.gitconfig", "user", false, nil},
		{"/h/.config/git/jail.gitconfig", "jail's", false, nil},
		{"/w/hidden/x", "", false, fs.ErrNotExist},
		{"/w/out/secret", "", false, fs.ErrNotExist},
		{"/tmp/x", "", false, fs.ErrNotExist},
		{"/w/loop", "", false, ErrViewUnsafe},
		{"/proc/self/cwd/a/config", "", false, ErrViewUnsafe},
	} {
		data, shared, err := v.ReadFile(c.p, 1<<10)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%s: %q, %v; want %v", c.p, data, err, c.err)
			}
			continue
		}
		if err != nil || string(data) != c.data || shared != c.shared {
			t.Errorf("%s: %q shared %v, %v; want %q shared %v", c.p, data, shared, err, c.data, c.shared)
		}
	}
	if dir, err := v.Stat("/w/rel"); err != nil || !dir {
		t.Errorf("stat /w/rel: %v %v", dir, err)
	}
	if dir, err := v.Stat("/w/hidden"); err != nil || !dir {
		t.Errorf("stat /w/hidden: %v %v", dir, err)
	}
	if names, shared, err := v.ReadDir("/w/hidden", 10); err != nil || len(names) != 0 || shared {
		t.Errorf("list /w/hidden: %v %v %v", names, shared, err)
	}
	if names, shared, err := v.ReadDir("/w/a", 10); err != nil || len(names) != 1 || !shared {
		t.Errorf("list /w/a: %v %v %v", names, shared, err)
	}
	if _, _, err := v.ReadFile("/w/a/config", 1); err == nil {
		t.Errorf("a file past the limit was read")
	}
	// The workspace swapped for another directory since the launch.
	if err := os.Rename(filepath.Join(host, "ws"), filepath.Join(host, "ws2")); err != nil {
		t.Fatal(err)
	}
	mk("ws/a/config", "swapped")
	if data, _, err := v.ReadFile("/w/a/config", 1<<10); !errors.Is(err, ErrViewUnsafe) {
		t.Errorf("a swapped bind source was read: %q, %v", data, err)
	}
}
