//go:build linux

package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/policy"
)

// BenchmarkGitConfigRead is what reading a bash call's git config costs
// before it is judged (shellView.gitConfig): a workspace that is a
// repository under the git view, the persistent home with jail's global
// config including the user's, git run in a subdirectory.
func BenchmarkGitConfigRead(b *testing.B) {
	d := b.TempDir()
	ws, home := filepath.Join(d, "ws"), filepath.Join(d, "home")
	for _, p := range []string{filepath.Join(ws, "src"), filepath.Join(home, ".config/git")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v: %s", err, out)
	}
	os.WriteFile(filepath.Join(home, ".config/git/jail.gitconfig"), []byte("[include]\n\tpath = \"/home/u/.gitconfig\"\n"), 0o644)
	os.WriteFile(filepath.Join(d, "user.gitconfig"), []byte("[user]\n\tname = u\n[core]\n\tpager = less\n"), 0o644)
	v := &shellView{mounts: []confine.Mount{
		{Kind: confine.Bind, Source: "/etc", Dest: "/etc"},
		{Kind: confine.Bind, Source: ws, Dest: "/w/p", Writable: true},
		{Kind: confine.Overlay, Source: filepath.Join(ws, ".git"), Dest: "/w/p/.git"},
		{Kind: confine.Bind, Source: home, Dest: "/home/u", Writable: true},
		{Kind: confine.Bind, Source: filepath.Join(d, "user.gitconfig"), Dest: "/home/u/.gitconfig"},
	}, dir: "/w/p/src", env: []string{"HOME=/home/u", "GIT_CONFIG_GLOBAL=/home/u/.config/git/jail.gitconfig"}}
	read := v.gitConfig(nil)
	for b.Loop() {
		if why := read(policy.GitWhere{Dirs: []string{"."}, Git: true}); why != "" {
			b.Fatal(why)
		}
	}
}
