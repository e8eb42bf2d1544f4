//go:build linux

package gitview

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkWalk times the launch walk of the tree JAIL_BENCH_TREE names
// (bench/git.sh's 100k-file tree, say), without and with the protected
// names looked for in each directory.
func BenchmarkWalk(b *testing.B) {
	dir := os.Getenv("JAIL_BENCH_TREE")
	if dir == "" {
		b.Skip("set JAIL_BENCH_TREE to a tree to walk")
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	names := newNameSet([]string{".vscode", ".idea", ".devcontainer", "*.code-workspace", ".claude/settings.json", ".mcp.json",
		".codex", ".envrc", ".jail", ".gemini", ".cursor", ".zed", "opencode.json", ".opencode", "opencode.*", ".aider.conf.yml",
		".husky", ".pre-commit-config.yaml", "lefthook.yml", "lefthook-local.yml", ".lefthook", "lefthook*", ".lefthook*"}, nil)
	for _, c := range []struct {
		name  string
		names *nameSet
	}{{"plain", nil}, {"names", names}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				walkNames(fd, "", c.names)
			}
		})
	}
}

// BenchmarkSweep times the sweep after a run (sweep_linux.go) of the tree
// JAIL_BENCH_TREE names: every directory listed, node_modules included.
func BenchmarkSweep(b *testing.B) {
	dir := os.Getenv("JAIL_BENCH_TREE")
	if dir == "" {
		b.Skip("set JAIL_BENCH_TREE to a tree to walk")
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	for i := 0; i < b.N; i++ {
		if s := sweep(fd, "", 0, nil, nil, nil); s.dirs == 0 {
			b.Fatal("nothing swept")
		}
	}
}
