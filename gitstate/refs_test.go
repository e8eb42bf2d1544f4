package gitstate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestAdoptCommitAndBranch(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	o.run(`echo two > b && git add b && git commit -q -m second && git branch feature && git tag v1`)
	if _, err := os.Stat(filepath.Join(o.upper, "refs/heads/main")); err != nil {
		t.Fatalf("the sandbox's commit is not in the upper: %v", err)
	}
	// Before adoption the host has not moved.
	if got := r.git("log", "--format=%s"); got != "first\n" {
		t.Fatalf("host log before adoption: %q", got)
	}
	rep := o.adopt(base, Options{RunID: "r1"})
	if got := r.git("log", "--format=%s", "main"); got != "second\nfirst\n" {
		t.Fatalf("host log after adoption: %q", got)
	}
	for _, ref := range []string{"refs/heads/main", "refs/heads/feature", "refs/tags/v1"} {
		if !contains(rep.Applied, ref) {
			t.Errorf("%s not applied: %+v", ref, rep)
		}
		if r.rev(ref) != r.rev("main") {
			t.Errorf("%s = %s, want main's", ref, r.rev(ref))
		}
	}
	if len(rep.Conflicts) != 0 {
		t.Errorf("conflicts: %v", rep.Conflicts)
	}
	if !contains(rep.Applied, "logs/refs/heads/main") {
		t.Errorf("reflog of main not appended: %+v", rep)
	}
	if got := r.git("reflog", "--format=%gs", "main"); !strings.Contains(got, "commit: second") {
		t.Errorf("host reflog of main: %q", got)
	}
	r.fsck()
}

func TestAdoptConflictKeepsBoth(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	o.run(`echo sandbox > s && git add s && git commit -q -m sandbox`)
	sandboxMain := strings.TrimSpace(o.run(`git rev-parse main`))
	// The host commits on main during the run.
	r.write("h", "host\n")
	r.git("add", "h")
	r.git("commit", "-q", "-m", "host")
	hostMain := r.rev("main")
	rep := o.adopt(base, Options{RunID: "r2"})
	if r.rev("main") != hostMain {
		t.Fatalf("host main moved to %s", r.rev("main"))
	}
	if got := r.rev("refs/jail/r2/heads/main"); got != sandboxMain {
		t.Fatalf("refs/jail/r2/heads/main = %q, want the sandbox's %s", got, sandboxMain)
	}
	if !contains(rep.Conflicts, "refs/heads/main") || !contains(rep.Conflicts, "refs/jail/r2/heads/main") {
		t.Fatalf("conflict not reported: %+v", rep)
	}
	if contains(rep.Applied, "logs/refs/heads/main") {
		t.Errorf("reflog of a conflicting ref adopted: %+v", rep)
	}
	r.fsck()
}

func TestAdoptDeletionsLooseAndPacked(t *testing.T) {
	r := newRepo(t)
	r.git("branch", "packed1")
	r.git("branch", "packed2")
	r.git("pack-refs", "--all")
	r.git("branch", "loose1")
	r.git("branch", "keep")
	base := r.take()
	if _, ok := base.Packed["refs/heads/packed1"]; !ok {
		t.Fatalf("packed1 not packed in the snapshot: %+v", base)
	}
	o := r.overlay()
	o.run(`git branch -q -D packed1 loose1`)
	rep := o.adopt(base, Options{RunID: "r3"})
	for _, gone := range []string{"refs/heads/packed1", "refs/heads/loose1"} {
		if v := r.rev(gone); v != "" {
			t.Errorf("%s still %s on the host", gone, v)
		}
		if !contains(rep.Applied, gone+" deleted") {
			t.Errorf("%s deletion not reported: %+v", gone, rep)
		}
	}
	for _, kept := range []string{"refs/heads/packed2", "refs/heads/keep", "refs/heads/main"} {
		if r.rev(kept) == "" {
			t.Errorf("%s lost", kept)
		}
	}
	r.fsck()
}

// The host packs its refs while the sandbox runs: the loose files vanish
// from the live lower. No ref may be taken for deleted by the sandbox.
func TestAdoptHostPacksRefsDuringRun(t *testing.T) {
	r := newRepo(t)
	r.git("branch", "a")
	r.git("branch", "b")
	base := r.take()
	o := r.overlay()
	o.run(`git branch -q -D a && echo x > x && git add x && git commit -q -m x && git pack-refs --all`)
	r.git("pack-refs", "--all")
	r.git("branch", "c")
	rep := o.adopt(base, Options{RunID: "r4"})
	if r.rev("refs/heads/a") != "" {
		t.Errorf("a not deleted")
	}
	for _, kept := range []string{"refs/heads/b", "refs/heads/c"} {
		if r.rev(kept) == "" {
			t.Errorf("%s lost: %+v", kept, rep)
		}
	}
	if got := r.git("log", "-1", "--format=%s", "main"); got != "x\n" {
		t.Errorf("main = %q, want the sandbox's commit", got)
	}
	r.fsck()
}

func TestAdoptCheckoutNewBranch(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	o.run(`git checkout -q -b topic`)
	rep := o.adopt(base, Options{RunID: "r5"})
	if got := strings.TrimSpace(r.git("symbolic-ref", "HEAD")); got != "refs/heads/topic" {
		t.Fatalf("HEAD = %q: %+v", got, rep)
	}
}

func TestAdoptRefusesBadRefs(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	missing := strings.Repeat("ab", 20)
	o.run(`printf '%s\n' ` + missing + ` > .git/refs/heads/missing
printf 'garbage\n' > .git/refs/heads/garbage
printf '%s\n' "$(git rev-parse main)" > '.git/refs/heads/bad..name'
printf '%s\n' "$(git rev-parse main)" > .git/refs/jail/x 2>/dev/null || { mkdir -p .git/refs/jail && printf '%s\n' "$(git rev-parse main)" > .git/refs/jail/x; }
ln -s ../../../../etc/passwd .git/refs/heads/link
mkfifo .git/refs/heads/fifo
printf 'ref: ../../etc\n' > .git/ORIG_HEAD
rm .git/HEAD`)
	rep := o.adopt(base, Options{RunID: "r6"})
	for _, want := range []string{"refs/heads/missing: points to", "refs/heads/garbage", "bad..name", "refs/jail/x", "refs/heads/link: symbolic link", "refs/heads/fifo: FIFO", "ORIG_HEAD", "HEAD: deletion not adopted"} {
		if !contains(rep.Dropped, want) {
			t.Errorf("not dropped: %s\n%+v", want, rep.Dropped)
		}
	}
	if len(rep.Applied) != 0 {
		t.Errorf("applied: %v", rep.Applied)
	}
	out := r.git("for-each-ref", "--format=%(refname)")
	if out != "refs/heads/main\n" {
		t.Errorf("host refs: %q", out)
	}
}

func TestAdoptDropsHooksAndOtherState(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	marker := filepath.Join(t.TempDir(), "ran")
	o.run(`printf '#!/bin/sh\ntouch ` + marker + `\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit
echo x > y && git add y && git commit -q -m y --no-verify
mkdir -p .git/info && echo '*' > .git/info/exclude
printf '/tmp/nonexistent\n' > .git/commondir`)
	rep := o.adopt(base, Options{RunID: "r7"})
	for _, want := range []string{"hooks/pre-commit: not adopted (hooks are programs", "commondir: not adopted", "info/exclude"} {
		if !contains(rep.Dropped, want) {
			t.Errorf("not dropped: %s\n%v", want, rep.Dropped)
		}
	}
	r.write("z", "z\n")
	r.git("add", "z")
	r.git("commit", "-q", "-m", "z")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the sandbox's pre-commit hook ran on the host")
	}
}

// Two adoptions of two sandboxes that both committed on main race; a host
// git commits on another branch in a loop meanwhile. Every commit must end
// up reachable from some ref: one sandbox's on main, the other's under
// refs/jail/, the host's on its branch.
func TestAdoptRacesLoseNoRef(t *testing.T) {
	r := newRepo(t)
	r.git("checkout", "-q", "-b", "hostside")
	base := r.take()
	o1, o2 := r.overlay(), r.overlay()
	// Both also make the same 300 branches (the same values: no conflict),
	// which keeps the adoptions busy while the host commits.
	many := `for i in $(seq 300); do echo "create refs/heads/b$i main"; done | git update-ref --stdin`
	o1.run(many + "\n" + `git update-ref refs/heads/main $(echo one | git commit-tree -p main main^{tree})`)
	o2.run(many + "\n" + `git update-ref refs/heads/main $(echo two | git commit-tree -p main main^{tree})`)
	c1 := strings.TrimSpace(o1.run(`git rev-parse main`))
	c2 := strings.TrimSpace(o2.run(`git rev-parse main`))
	g1, u1 := openDirFD(t, r.gitdir()), openDirFD(t, o1.upper)
	g2, u2 := openDirFD(t, r.gitdir()), openDirFD(t, o2.upper)
	var wg sync.WaitGroup
	var rep1, rep2 *Report
	var err1, err2 error
	stop := make(chan struct{})
	var hostCommits []string
	var hostErr error
	var adoptions sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// The host's own git commit, on the checked-out branch. It
			// fails loudly ("cannot lock ref") while an adoption holds a
			// lock it needs; the user would run it again, so does this.
			var err error
			for try := 0; ; try++ {
				if _, err = r.tryGit("commit", "-q", "--allow-empty", "-m", fmt.Sprint("host ", i)); err == nil {
					break
				}
				if try == 100 {
					hostErr = err
					return
				}
			}
			c := r.rev("HEAD")
			hostCommits = append(hostCommits, c)
		}
	}()
	adoptions.Add(2)
	go func() { defer adoptions.Done(); rep1, err1 = Adopt(g1, u1, base, Options{RunID: "a"}) }()
	go func() { defer adoptions.Done(); rep2, err2 = Adopt(g2, u2, base, Options{RunID: "b"}) }()
	adoptions.Wait()
	close(stop)
	wg.Wait()
	if err1 != nil || err2 != nil || hostErr != nil {
		t.Fatalf("adopt: %v, %v; host: %v", err1, err2, hostErr)
	}
	t.Logf("1: %s\n2: %s\nhost commits: %d", rep1.Summary(), rep2.Summary(), len(hostCommits))
	main := r.rev("main")
	saved := []string{r.rev("refs/jail/a/heads/main"), r.rev("refs/jail/b/heads/main")}
	switch {
	case main == c1 && saved[1] == c2:
	case main == c2 && saved[0] == c1:
	default:
		t.Fatalf("main=%s jail/a=%s jail/b=%s; want one of %s, %s on main and the other saved", main, saved[0], saved[1], c1, c2)
	}
	if len(hostCommits) > 0 && r.rev("hostside") != hostCommits[len(hostCommits)-1] {
		t.Fatalf("hostside = %s, want the host's last commit", r.rev("hostside"))
	}
	for _, c := range hostCommits {
		if _, err := r.tryGit("merge-base", "--is-ancestor", c, "hostside"); err != nil {
			t.Fatalf("host commit %s lost from hostside", c)
		}
	}
	if n := strings.Count(r.git("for-each-ref", "refs/heads/b*"), "\n"); n != 300 {
		t.Fatalf("%d of the 300 branches", n)
	}
	if got := strings.TrimSpace(r.git("symbolic-ref", "HEAD")); got != "refs/heads/hostside" {
		t.Fatalf("HEAD = %s", got)
	}
	r.fsck()
}

func TestSnapshotRoundTrip(t *testing.T) {
	r := newRepo(t)
	r.git("branch", "x")
	r.git("pack-refs", "--all")
	s := r.take()
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := UnmarshalSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Refs()["refs/heads/x"] != s.Refs()["refs/heads/x"] || s2.Loose["HEAD"] != "ref: refs/heads/main" || s2.Index != s.Index || string(s2.Config) != string(s.Config) {
		t.Fatalf("round trip differs:\n%+v\n%+v", s, s2)
	}
	bad := []byte(strings.Replace(string(b), "refs/heads/x", "refs/heads/x..y", 1))
	if _, err := UnmarshalSnapshot(bad); err == nil {
		t.Fatal("a snapshot with an invalid ref name was accepted")
	}
}
