//go:build linux

package tools

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// grepRepo builds a repository of n source-like files in nested
// directories, a .gitignore and an ignored directory, once per run.
func grepRepo(b *testing.B, n int) string {
	dir, _ := filepath.EvalSymlinks(b.TempDir())
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("func return if else for range struct interface package import var const type map chan go defer select case switch err nil ctx string int byte")
	var line strings.Builder
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("pkg%02d/sub%02d/file%05d.go", i%50, (i/50)%20, i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		var sb strings.Builder
		for l := range 60 + rng.IntN(80) {
			line.Reset()
			for range 4 + rng.IntN(8) {
				line.WriteString(words[rng.IntN(len(words))])
				line.WriteByte(' ')
			}
			if rng.IntN(5000) == 0 {
				line.WriteString("NeedleFunc(x)")
			}
			fmt.Fprintf(&sb, "%s// line %d\n", line.String(), l)
		}
		os.WriteFile(p, []byte(sb.String()), 0o644)
	}
	os.MkdirAll(filepath.Join(dir, "node_modules/x"), 0o755)
	os.WriteFile(filepath.Join(dir, "node_modules/x/big.js"), []byte(strings.Repeat("NeedleFunc junk\n", 10000)), 0o644)
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("node_modules/\n"), 0o644)
	os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	return dir
}

// BenchmarkGrep10k compares grep with ripgrep over a 10k-file repository,
// for a literal and for a regular expression, in the content mode:
//
//	go test ./tools/ -run '^$' -bench Grep10k
func BenchmarkGrep10k(b *testing.B) {
	dir := grepRepo(b, 10000)
	ws, err := OpenWorkspace(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	for _, pat := range []string{"NeedleFunc", `Needle\w+\(`, `(?i)needlefunc`} {
		b.Run("jail/"+pat, func(b *testing.B) {
			for range b.N {
				r := ws.grep(context.Background(), grepArgs{Pattern: pat}, 50000)
				if r.IsError || r.Meta["files"].(int) == 0 {
					b.Fatalf("grep: %v", r)
				}
			}
		})
		b.Run("rg/"+pat, func(b *testing.B) {
			rg, err := exec.LookPath("rg")
			if err != nil {
				b.Skip("requires rg on PATH")
			}
			for range b.N {
				cmd := exec.Command(rg, "-n", pat)
				cmd.Dir = dir
				if out, err := cmd.Output(); err != nil || len(out) == 0 {
					b.Fatalf("rg: %v", err)
				}
			}
		})
	}
}
