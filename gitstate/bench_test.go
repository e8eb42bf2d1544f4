//go:build linux

package gitstate

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// benchRepo makes a repository with files files committed, then a sandbox
// run that changes one file and commits: the typical run to adopt.
func benchRepo(b *testing.B, files int) (*testRepo, *overlay, *Snapshot) {
	requireGitB(b)
	root := b.TempDir()
	r := &testRepo{dir: filepath.Join(root, "repo"), home: filepath.Join(root, "home")}
	os.MkdirAll(r.home, 0o755)
	for i := 0; i < files; i++ {
		p := filepath.Join(r.dir, fmt.Sprintf("d%02d/f%05d.txt", i%100, i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprint(i)), 0o644)
	}
	mustRun(b, r, "git", "init", "-q", "-b", "main")
	mustRun(b, r, "git", "add", "-A")
	mustRun(b, r, "git", "commit", "-q", "-m", "files")
	base, err := Take(openDirFDB(b, r.gitdir()))
	if err != nil {
		b.Fatal(err)
	}
	o := &overlay{r: r, upper: filepath.Join(root, "upper"), work: filepath.Join(root, "work")}
	for _, d := range []string{o.upper, o.work} {
		os.MkdirAll(d, 0o755)
	}
	if out, err := o.tryRun(`echo changed > d00/f00000.txt && git commit -q -am change`); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	return r, o, base
}

func requireGitB(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("requires git")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		b.Skip("requires unshare")
	}
}

func mustRun(b *testing.B, r *testRepo, name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = r.dir, gitEnv(r.home)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %v: %v %s", name, args, err, out)
	}
}

func openDirFDB(b *testing.B, path string) int {
	fd, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fd.Close() })
	return int(fd.Fd())
}

// BenchmarkAdopt times Adopt of one commit (refs, reflogs, index, message)
// into a fresh copy of the host's git directory each iteration.
func BenchmarkAdopt(b *testing.B) {
	for _, files := range []int{100, 10000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			r, o, base := benchRepo(b, files)
			ufd := openDirFDB(b, o.upper)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dst := filepath.Join(b.TempDir(), "git")
				if out, err := exec.Command("cp", "-a", r.gitdir(), dst).CombinedOutput(); err != nil {
					b.Fatalf("cp: %v %s", err, out)
				}
				g, err := os.Open(dst)
				if err != nil {
					b.Fatal(err)
				}
				// Adopt ends with a syncfs: flush the copy first so it
				// does not pay for it.
				unix.Syncfs(int(g.Fd()))
				b.StartTimer()
				rep, err := Adopt(int(g.Fd()), ufd, base, Options{RunID: "bench"})
				b.StopTimer()
				g.Close()
				if err != nil || !contains(rep.Applied, "index") || !contains(rep.Applied, "refs/heads/main") {
					b.Fatalf("%v %+v", err, rep)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkTake times the snapshot at launch.
func BenchmarkTake(b *testing.B) {
	for _, files := range []int{100, 10000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			r, _, _ := benchRepo(b, files)
			g := openDirFDB(b, r.gitdir())
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := Take(g); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseIndex times reading a 10000-entry index (checksum
// included).
func BenchmarkParseIndex(b *testing.B) {
	r, _, _ := benchRepo(b, 10000)
	data, err := os.ReadFile(filepath.Join(r.gitdir(), "index"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ParseIndex(data, 20); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdoptNewClone times AdoptNew of a clone of a repository of
// about 50 MB (incompressible files over a few commits, so the pack is
// that large), as `git clone URL` into an empty workspace leaves it:
// every object goes through git index-pack --strict.
func BenchmarkAdoptNewClone(b *testing.B) {
	requireGitB(b)
	root := b.TempDir()
	src := &testRepo{dir: filepath.Join(root, "src"), home: filepath.Join(root, "home")}
	os.MkdirAll(src.dir, 0o755)
	os.MkdirAll(src.home, 0o755)
	mustRun(b, src, "git", "init", "-q", "-b", "main")
	buf := make([]byte, 1<<20)
	for c := 0; c < 5; c++ {
		for i := 0; i < 10; i++ {
			rand.Read(buf)
			os.WriteFile(filepath.Join(src.dir, fmt.Sprintf("f%02d-%d.bin", i, c)), buf, 0o644)
		}
		mustRun(b, src, "git", "add", "-A")
		mustRun(b, src, "git", "commit", "-q", "-m", fmt.Sprint("c", c))
	}
	mustRun(b, src, "git", "clone", "-q", "--no-local", src.dir, filepath.Join(root, "clone"))
	clone := filepath.Join(root, "clone", ".git")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dst := filepath.Join(b.TempDir(), "git")
		os.Mkdir(dst, 0o755)
		g, err := os.Open(dst)
		if err != nil {
			b.Fatal(err)
		}
		s, err := os.Open(clone)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		rep, err := AdoptNew(int(g.Fd()), int(s.Fd()), Options{RunID: "bench"})
		b.StopTimer()
		g.Close()
		s.Close()
		if err != nil || rep.Incomplete || !contains(rep.Applied, "refs/heads/main") {
			b.Fatalf("%v %+v", err, rep)
		}
		b.StartTimer()
	}
}
