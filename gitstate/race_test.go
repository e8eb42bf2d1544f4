//go:build linux

package gitstate

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// swapLoop exchanges dir/a and dir/b with renameat2(RENAME_EXCHANGE) until
// stop is closed, as a second sandbox sharing the directory could, and
// leaves them as they were.
func swapLoop(t *testing.T, dir, a, b string, stop chan struct{}, wg *sync.WaitGroup) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer unix.Close(fd)
		n := 0
		for {
			select {
			case <-stop:
				if n%2 == 1 {
					unix.Renameat2(fd, a, fd, b, unix.RENAME_EXCHANGE)
				}
				return
			default:
			}
			if unix.Renameat2(fd, a, fd, b, unix.RENAME_EXCHANGE) == nil {
				n++
			}
		}
	}()
}

// A git directory below a workspace's reach (deeper than the launch walk,
// say) is plain workspace content to a sandbox, so one can swap
// objects/pack for a symlink to packs of its choosing while Adopt checks
// that a ref's object exists. The check must never look
// through the symlink: the ref to an object only those packs hold is
// dropped, every time.
func TestAdoptObjectCheckUnderRenameExchange(t *testing.T) {
	other := newRepo(t)
	other.write("only-there", "x")
	other.git("add", "only-there")
	other.git("commit", "-q", "-m", "only in the other repository")
	other.git("repack", "-q", "-a", "-d")
	foreign := other.rev("HEAD")
	r := newRepo(t)
	r.git("repack", "-q", "-a", "-d")
	base := r.take()
	o := r.overlay()
	o.run(`echo ` + foreign + ` > .git/refs/heads/foreign`)
	objs := filepath.Join(r.gitdir(), "objects")
	if err := os.Symlink(filepath.Join(other.gitdir(), "objects", "pack"), filepath.Join(objs, "pack-link")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		swapLoop(t, objs, "pack", "pack-link", stop, &wg)
		rep, err := Adopt(openDirFD(t, r.gitdir()), openDirFD(t, o.upper), base, Options{RunID: "x"})
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if r.rev("refs/heads/foreign") != "" || !contains(rep.Dropped, "refs/heads/foreign: points to") {
			t.Fatalf("round %d: a ref to an object only behind the symlink was adopted: %+v", i, rep)
		}
	}
}

// AdoptNew writes into the new .git while something swaps a directory
// there for a symlink to a directory outside: nothing may land outside,
// and every object is either adopted or reported.
func TestAdoptNewUnderRenameExchange(t *testing.T) {
	requireGit(t)
	root := t.TempDir()
	priv := filepath.Join(root, "private")
	outside := filepath.Join(root, "outside")
	host := &testRepo{t: t, dir: filepath.Join(root, "ws"), home: filepath.Join(root, "home")}
	for _, d := range []string{priv, outside, host.home, filepath.Join(host.gitdir(), "objects")} {
		os.MkdirAll(d, 0o755)
	}
	src := &testRepo{t: t, dir: priv, home: host.home}
	src.git("init", "-q", "-b", "main")
	for i := 0; i < 40; i++ {
		src.write("f", strings.Repeat("y", i))
		src.git("add", "f")
		src.git("commit", "-q", "-m", "c")
	}
	// Every loose object directory of the source, pre-made on the host
	// side, each with a symlink twin to swap with.
	ents, _ := os.ReadDir(filepath.Join(priv, ".git", "objects"))
	hobjs := filepath.Join(host.gitdir(), "objects")
	var dirs []string
	for _, e := range ents {
		if len(e.Name()) == 2 {
			dirs = append(dirs, e.Name())
			os.Mkdir(filepath.Join(hobjs, e.Name()), 0o755)
			os.Symlink(outside, filepath.Join(hobjs, e.Name()+"-link"))
		}
	}
	os.Mkdir(filepath.Join(hobjs, "pack"), 0o755)
	os.Mkdir(filepath.Join(hobjs, "info"), 0o755)
	// AdoptNew wants an empty .git: hand it objects/ only after the check
	// by swapping a prepared tree in.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, d := range dirs {
		swapLoop(t, hobjs, d, d+"-link", stop, &wg)
	}
	g := openDirFD(t, host.gitdir())
	rep, err := adoptNewPrepared(g, openDirFD(t, filepath.Join(priv, ".git")))
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", rep.Summary())
	if left, _ := os.ReadDir(outside); len(left) != 0 {
		t.Fatalf("AdoptNew wrote outside through a swapped symlink: %v", left)
	}
	for _, d := range rep.Dropped {
		if strings.HasPrefix(d, "objects/") && !strings.Contains(d, "too many levels of symbolic links") && !strings.Contains(d, "not a directory") {
			t.Errorf("unexpected drop: %s", d)
		}
	}
}

// adoptNewPrepared runs AdoptNew on a .git that already holds the objects
// skeleton (the race test's symlink twins): the emptiness check is the
// caller's there.
func adoptNewPrepared(gitdirFD, srcFD int) (*Report, error) {
	rep := &Report{}
	src := walkUpper(srcFD, Limits{}.withDefaults(), rep)
	a, err := newAdopter(gitdirFD, 40, Options{RunID: "race"}, rep)
	if err != nil {
		return rep, err
	}
	defer a.close()
	a.adoptObjects(src, nil)
	return rep, nil
}
