package confine

import "testing"

func TestCanWrite(t *testing.T) {
	ms := []Mount{
		{Kind: Bind, Source: "/usr", Dest: "/usr", Exec: true},
		{Kind: Symlink, Source: "usr/bin", Dest: "/bin"},
		{Kind: Proc, Dest: "/proc"},
		{Kind: Dev, Dest: "/dev"},
		{Kind: Tmpfs, Dest: "/tmp", Writable: true},
		{Kind: Bind, Source: "/h", Dest: "/home/u", Writable: true},
		{Kind: Bind, Source: "/home/u/.local/bin", Dest: "/home/u/.local/bin", Exec: true},
		{Kind: Pin, Dest: "/home/u/.local"},
		{Kind: Bind, Source: "/w", Dest: "/w", Writable: true},
		{Kind: Protect, Dest: "/w/.git/hooks"},
		{Kind: Symlink, Source: "/tmp/x", Dest: "/usr/local/evil"},
	}
	for dir, want := range map[string]bool{
		"/usr/bin": false, "/bin": false, "/bin/../tmp/x": true, "/usr/local/evil/bin": true,
		"/proc/self/cwd": true, "/dev/fd": true, "/tmp/bin": true, "/home/u/bin": true,
		"/home/u/.local/bin": false, "/home/u/.local": true, "/w/bin": true, "/w/.git/hooks": false,
		"/snap/bin": false, "/": false, "bin": true, "": true,
	} {
		if got := CanWrite(ms, dir); got != want {
			t.Errorf("CanWrite(%q) = %v, want %v", dir, got, want)
		}
	}
}
