package gitstate

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// lsFiles is git ls-files -s in our terms: "mode oid stage\tpath".
func lsFiles(ix *Index) string {
	var b strings.Builder
	for _, e := range ix.Entries {
		fmt.Fprintf(&b, "%06o %s %d\t%s\n", e.Mode, e.OID, e.Stage, e.Path)
	}
	return b.String()
}

func TestParseIndexMatchesGit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		init    []string
		version string
		hashLen int
	}{
		{"v2", nil, "2", 20},
		{"v3", nil, "3", 20},
		{"v4", nil, "4", 20},
		{"v4-sha256", []string{"--object-format=sha256"}, "4", 32},
		{"v2-sha256", []string{"--object-format=sha256"}, "2", 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t, tc.init...)
			for i := 0; i < 30; i++ {
				r.write(fmt.Sprintf("dir%d/sub/file-%03d.txt", i%4, i), strconv.Itoa(i))
			}
			r.write("exec.sh", "#!/bin/sh\n")
			os.Chmod(filepath.Join(r.dir, "exec.sh"), 0o755)
			os.Symlink("README", filepath.Join(r.dir, "link"))
			r.git("add", "-A")
			r.write("intent", "x")
			r.git("add", "-N", "intent") // an extended flag (v3 and up)
			if tc.version != "2" {
				r.git("update-index", "--index-version", tc.version)
			} else {
				r.git("rm", "-q", "--cached", "intent")
				r.git("update-index", "--index-version", "2")
			}
			data, err := os.ReadFile(filepath.Join(r.gitdir(), "index"))
			if err != nil {
				t.Fatal(err)
			}
			ix, err := ParseIndex(data, tc.hashLen)
			if err != nil {
				t.Fatal(err)
			}
			if v := strconv.Itoa(int(ix.Version)); v != tc.version {
				t.Errorf("version %s, want %s", v, tc.version)
			}
			if got, want := lsFiles(ix), r.git("ls-files", "-s"); got != want {
				t.Errorf("entries differ\nours:\n%s\ngit:\n%s", got, want)
			}
			// Any flipped byte is refused (the checksum), never a panic.
			for i := 0; i < len(data); i += 7 {
				bad := append([]byte{}, data...)
				bad[i] ^= 0x40
				if _, err := ParseIndex(bad, tc.hashLen); err == nil {
					t.Fatalf("a corrupted index (byte %d) was accepted", i)
				}
			}
		})
	}
}

func TestVerifyIndexPath(t *testing.T) {
	for _, p := range []string{".git/hooks/pre-commit", "a/.GIT/config", "a/.git./x", "a/.git  /x", "git~1/hooks/x", "/abs", "a//b", "a/../b", "./a", "a/", ".g\u200cit/config", `a\b`} {
		if verifyIndexPath(p, modeFile) == nil {
			t.Errorf("%q accepted", p)
		}
	}
	if verifyIndexPath(".gitmodules", modeSymlink) == nil {
		t.Error("a symlinked .gitmodules accepted")
	}
	for _, p := range []string{"a", ".gitignore", "dir/.github/x", "a.git/b", ".gitx", "ü/ñ"} {
		if err := verifyIndexPath(p, modeFile); err != nil {
			t.Errorf("%q refused: %v", p, err)
		}
	}
}

func TestAdoptIndexStagedFile(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	o.run(`echo new > staged && git add staged && echo changed >> README && git add README`)
	rep := o.adopt(base, Options{RunID: "i1"})
	if !contains(rep.Applied, "index") {
		t.Fatalf("index not applied: %+v", rep)
	}
	if got := r.git("status", "--porcelain"); got != "M  README\nA  staged\n" {
		t.Fatalf("host status: %q", got)
	}
	r.fsck()
}

func TestAdoptIndexChangedOnHost(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	o.run(`echo new > staged && git add staged`)
	r.write("hostfile", "h")
	r.git("add", "hostfile")
	rep := o.adopt(base, Options{RunID: "i2"})
	if !contains(rep.Conflicts, "index: changed on the host") {
		t.Fatalf("no index conflict: %+v", rep)
	}
	if got := r.git("diff", "--cached", "--name-only"); got != "hostfile\n" {
		t.Fatalf("host index: %q", got)
	}
}

// A nested repository the sandbox made, staged as a gitlink: the host's
// git status would run its core.fsmonitor. The index is refused, unless
// the caller says jail adopted that repository (the control).
func TestAdoptIndexRefusesNewGitlink(t *testing.T) {
	for _, allowed := range []bool{false, true} {
		t.Run(fmt.Sprint("allowed=", allowed), func(t *testing.T) {
			r := newRepo(t)
			base := r.take()
			o := r.overlay()
			marker := filepath.Join(t.TempDir(), "ran")
			o.run(`git init -q sub && cd sub && echo x > x && git add x && git commit -q -m sub
git config core.fsmonitor 'touch ` + marker + `; false'
cd .. && git add sub`)
			opt := Options{RunID: "g"}
			if allowed {
				opt.Submodules = []string{"sub"}
			}
			rep := o.adopt(base, opt)
			r.git("status")
			_, err := os.Stat(marker)
			ran := err == nil
			if allowed {
				if !contains(rep.Applied, "index") || !ran {
					t.Fatalf("control: index applied %v, fsmonitor ran %v: %+v", contains(rep.Applied, "index"), ran, rep)
				}
				return
			}
			if !contains(rep.Dropped, "index: stages new gitlinks (nested repositories) sub") {
				t.Errorf("not dropped: %+v", rep)
			}
			if ran {
				t.Fatal("the planted repository's fsmonitor ran on the host")
			}
		})
	}
}

// TestAdoptIndexSplitIndex: a split index (made by the sandbox, and the
// host's own with core.splitIndex) is adopted with the entries of its
// shared index, written whole; the host's git reads it as it would have
// read the split one.
func TestAdoptIndexSplitIndex(t *testing.T) {
	for _, hostSplit := range []bool{false, true} {
		r := newRepo(t)
		if hostSplit {
			r.git("config", "core.splitIndex", "true")
			r.git("update-index", "--split-index")
		}
		base := r.take()
		o := r.overlay()
		o.run(`echo new > staged && git add staged && git update-index --split-index && ls .git/sharedindex.* >/dev/null &&
echo two > staged2 && git add staged2 && git rm -q --cached README`)
		rep := o.adopt(base, Options{RunID: "i3"})
		if !contains(rep.Applied, "index (split") {
			t.Fatalf("host split %v: split index not adopted: %+v", hostSplit, rep)
		}
		if got := r.git("status", "--porcelain"); got != "D  README\nA  staged\nA  staged2\n?? README\n" {
			t.Fatalf("host split %v: host status: %q", hostSplit, got)
		}
	}
}

// TestUnsplitMatchesGit: what Unsplit makes of split indexes git wrote
// (entries added, changed, removed and re-added since the split, at each
// index version) is what git ls-files -s lists.
func TestUnsplitMatchesGit(t *testing.T) {
	for _, version := range []string{"2", "3", "4"} {
		r := newRepo(t)
		for i := 0; i < 40; i++ {
			r.write(fmt.Sprintf("d%d/f%02d", i%3, i), strconv.Itoa(i))
		}
		r.git("add", "-A")
		r.git("update-index", "--index-version", version)
		r.git("update-index", "--split-index")
		for i := 0; i < 40; i += 3 {
			r.write(fmt.Sprintf("d%d/f%02d", i%3, i), "changed")
		}
		r.write("d1/new", "n")
		r.write("intent", "x")
		r.git("add", "-A")
		r.git("add", "-N", "intent")
		r.git("rm", "-q", "--cached", "d0/f03", "d2/f05")
		data, err := os.ReadFile(filepath.Join(r.gitdir(), "index"))
		if err != nil {
			t.Fatal(err)
		}
		if !IsSplit(data, 20) {
			t.Fatalf("v%s: git wrote no split index", version)
		}
		whole, err := Unsplit(data, 20, func(id string) ([]byte, error) {
			return os.ReadFile(filepath.Join(r.gitdir(), "sharedindex."+id))
		})
		if err != nil {
			t.Fatal(err)
		}
		ix, err := ParseIndex(whole, 20)
		if err != nil {
			t.Fatal(err)
		}
		want := r.git("ls-files", "-s")
		if got := lsFiles(ix); got != want {
			t.Errorf("v%s: entries differ\nours:\n%s\ngit:\n%s", version, got, want)
		}
		// git itself reads the whole index as it read the split one.
		if err := os.WriteFile(filepath.Join(r.gitdir(), "index"), whole, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := r.git("ls-files", "-s"); got != want || !strings.Contains(r.git("ls-files", "-s", "--", "d1/new"), "d1/new") {
			t.Errorf("v%s: git ls-files -s on the whole index:\n%s", version, got)
		}
		// Corrupt bitmaps are refused, never a panic.
		for i := len(data) - 120; i < len(data)-20; i++ {
			bad := append([]byte{}, data[:len(data)-20]...)
			bad[i] ^= 0x41
			sum := sha1.Sum(bad)
			bad = append(bad, sum[:]...)
			Unsplit(bad, 20, func(id string) ([]byte, error) { return os.ReadFile(filepath.Join(r.gitdir(), "sharedindex."+id)) })
		}
	}
}

// withExtension appends an extension to a real index and fixes the
// checksum.
func withExtension(data []byte, sig string, payload []byte) []byte {
	body := append([]byte{}, data[:len(data)-20]...)
	body = append(body, sig...)
	body = binary.BigEndian.AppendUint32(body, uint32(len(payload)))
	body = append(body, payload...)
	sum := sha1.Sum(body)
	return append(body, sum[:]...)
}

func TestAdoptIndexDropsFsmonitorToken(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	o.run(`echo new > staged && git add staged`)
	up := filepath.Join(o.upper, "index")
	data, err := os.ReadFile(up)
	if err != nil {
		t.Fatal(err)
	}
	token := append([]byte{0, 0, 0, 2}, []byte(`"); system("touch /tmp/x"); ("`+"\x00")...)
	token = append(token, 0, 0, 0, 0)
	planted := withExtension(data, "FSMN", token)
	if ix, err := ParseIndex(planted, 20); err != nil || !slices.Contains(ix.Extensions, "FSMN") {
		t.Fatalf("planted index: %v %v", ix, err)
	}
	if err := os.WriteFile(up, planted, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := o.adopt(base, Options{RunID: "f"})
	if !contains(rep.Applied, "index") {
		t.Fatalf("%+v", rep)
	}
	got, _ := os.ReadFile(filepath.Join(r.gitdir(), "index"))
	ix, err := ParseIndex(got, 20)
	if err != nil || slices.Contains(ix.Extensions, "FSMN") {
		t.Fatalf("adopted index: %v %v", ix, err)
	}
	if s := r.git("status", "--porcelain"); s != "A  staged\n" {
		t.Fatalf("status %q", s)
	}
}

// The host moves its branch during the run without touching its index:
// the sandbox's index was staged against the old commit and is not
// adopted. On a new branch at the same commit it is.
func TestAdoptIndexFollowsHEAD(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	o.run(`git checkout -q -b topic && echo new > staged && git add staged`)
	rep := o.adopt(base, Options{RunID: "h1"})
	if !contains(rep.Applied, "index") || !contains(rep.Applied, "HEAD") {
		t.Fatalf("%+v", rep)
	}
	r2 := newRepo(t)
	base = r2.take()
	o = r2.overlay()
	o.run(`echo new > staged && git add staged`)
	r2.git("update-ref", "refs/heads/main", strings.TrimSpace(r2.git("commit-tree", "-p", "main", "-m", "host", "main^{tree}")))
	rep = o.adopt(base, Options{RunID: "h2"})
	if !contains(rep.Conflicts, "index: the sandbox's HEAD") {
		t.Fatalf("%+v", rep)
	}
}

// A gitlink the host's index already had is the host's own submodule: an
// index that keeps staging it is adopted.
func TestAdoptIndexKeepsExistingGitlink(t *testing.T) {
	r := newRepo(t)
	r.git("update-index", "--add", "--cacheinfo", "160000,"+r.rev("HEAD")+",sub")
	r.git("commit", "-q", "-m", "gitlink")
	base := r.take()
	o := r.overlay()
	o.run(`echo new > staged && git add staged`)
	rep := o.adopt(base, Options{RunID: "k"})
	if !contains(rep.Applied, "index") {
		t.Fatalf("%+v", rep)
	}
	if got := r.git("ls-files", "-s", "sub"); !strings.HasPrefix(got, "160000 ") {
		t.Fatalf("gitlink lost: %q", got)
	}
}

// statOf is what git's index says of path's stat data ("ctime: S:N" and
// the rest, git ls-files --debug).
func (r *testRepo) statOf(path string) string {
	return r.git("ls-files", "--debug", "--", path)
}

// An index a git status inside refreshed keeps the stat data its files
// bear out (the work tree given), so that neither the host's next git
// status nor the sandbox's hashes every file again; without the work
// tree it is cleared, as before.
func TestAdoptIndexKeepsVerifiedStat(t *testing.T) {
	for _, verify := range []bool{true, false} {
		r := newRepo(t)
		// Stale stat data on the host: the file's times move (its mtime
		// an hour back, so that no entry is racily clean).
		past := time.Now().Add(-time.Hour)
		if err := os.Chtimes(filepath.Join(r.dir, "README"), past, past); err != nil {
			t.Fatal(err)
		}
		base := r.take()
		o := r.overlay()
		o.run(`git status --porcelain`)
		opt := Options{RunID: "v1"}
		if verify {
			opt.WorkTree = openDirFD(t, r.dir)
		}
		rep := o.adopt(base, opt)
		if !contains(rep.Applied, "index") {
			t.Fatalf("index not applied: %+v", rep)
		}
		cleared := strings.Contains(r.statOf("README"), "ctime: 0:0")
		if cleared == verify {
			t.Fatalf("verify %v: stat data cleared %v:\n%s", verify, cleared, r.statOf("README"))
		}
		if got := r.git("status", "--porcelain"); got != "" {
			t.Fatalf("host status: %q", got)
		}
	}
}

// An entry whose stat data the sandbox made match a file whose content is
// not the entry's (a changed README with the committed blob's id put back
// in the index, checksum and all) has it cleared: the host's git status
// shows the change.
func TestAdoptIndexForgedStatCleared(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("requires perl")
	}
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	o.run(`A=$(git rev-parse :README)
printf 'HELLO\n' > README
touch -d '1 hour ago' README
git add README
B=$(git rev-parse :README)
perl -e 'use Digest::SHA qw(sha1); local $/; open F, "<.git/index" or die; $d = <F>; close F; $d = substr($d, 0, -20);
  $a = pack("H*", $ARGV[0]); $b = pack("H*", $ARGV[1]); $d =~ s/\Q$b\E/$a/ or die "no entry"; open O, ">.git/index" or die; print O $d . sha1($d); close O' "$A" "$B"
git status --porcelain`)
	rep := o.adopt(base, Options{RunID: "v2", WorkTree: openDirFD(t, r.dir)})
	if !contains(rep.Applied, "index") {
		t.Fatalf("index not applied: %+v", rep)
	}
	if !strings.Contains(r.statOf("README"), "ctime: 0:0") {
		t.Fatalf("forged stat data kept:\n%s", r.statOf("README"))
	}
	if got := r.git("status", "--porcelain"); got != " M README\n" {
		t.Fatalf("host status %q, want the change to README shown", got)
	}
}
