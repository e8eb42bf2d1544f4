package gitstate

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// adoptIndex adopts the sandbox's index when the host's did not change
// during the run (its content is the Snapshot's), the file parses (see
// ParseIndex), and it stages no gitlink the host's index did not have
// unless Options.Submodules names the path: a gitlink makes the host's
// git status descend into that repository and run its core.fsmonitor.
func (a *adopter) adoptIndex(up *upperTree, base *Snapshot) {
	e := up.get("index")
	if e == nil || (e.kind != kindFile && e.kind != kindWhiteout) {
		return
	}
	e.used = true
	if e.kind == kindWhiteout {
		a.rep.dropped("index: deletion not adopted")
		return
	}
	data, err := up.read("index", maxIndexFile)
	if err != nil {
		a.rep.dropped("index: %v", err)
		return
	}
	split := IsSplit(data, a.hexLen/2)
	if data, err = Unsplit(data, a.hexLen/2, a.sharedIndex(up)); err != nil {
		a.rep.dropped("index: %v", err)
		return
	}
	ix, err := ParseIndex(data, a.hexLen/2)
	if err != nil {
		a.rep.dropped("index: %v", err)
		return
	}
	host, fi, err := readFile(a.gitfd, "index", maxIndexFile, false)
	present := err == nil
	if err != nil && !errors.Is(err, unix.ENOENT) {
		a.rep.dropped("index: the host's index: %v", err)
		return
	}
	if present != base.Index.Present || present && sha256.Sum256(host) != base.Index.Hash {
		a.rep.conflict("index: changed on the host during the run; the host's kept")
		return
	}
	if !a.headLast && a.headSandbox != a.headHost {
		// Staged against another commit than the host's HEAD, it would
		// show as changes undoing the difference.
		a.rep.conflict("index: the sandbox's HEAD (%s) is not the host's (%s); the host's index kept", orNone(a.headSandbox), orNone(a.headHost))
		return
	}
	// The host's index: its gitlinks, flags and stat data are the
	// sandbox's only where they were the host's already.
	var hostIx *Index
	if present {
		whole, err := Unsplit(host, a.hexLen/2, a.sharedIndex(nil))
		if err == nil {
			hostIx, err = ParseIndex(whole, a.hexLen/2)
		}
		if err != nil {
			a.rep.dropped("index: the host's index: %v", err)
			return
		}
	}
	if bad := newGitlinks(ix, hostIx, a.opt.Submodules); len(bad) > 0 {
		a.rep.dropped("index: stages new gitlinks (nested repositories) %s; the host's kept", strings.Join(bad, ", "))
		return
	}
	if bad := ix.protectedStaged(hostIx, a.opt.Protected); len(bad) > 0 {
		if len(bad) > 3 {
			bad = append(bad[:3:3], fmt.Sprintf("%d more", len(bad)-3))
		}
		a.rep.dropped("index: stages files the host's tools run code from (%s), which the host's git restore or checkout would write into the work tree; the host's kept", strings.Join(bad, ", "))
		return
	}
	// Every object an entry the sandbox staged names must be on the host
	// (its objects were adopted first): the host's git status and diff
	// would fail on one that is not.
	var missing []string
	for _, i := range ix.notHosts(hostIx, a.hexLen/2) {
		if e := ix.Entries[i]; e.Mode != modeGitlink && !a.objects.has(e.OID) {
			missing = append(missing, esc(e.Path))
		}
	}
	if len(missing) > 0 {
		if len(missing) > 3 {
			missing = append(missing[:3:3], fmt.Sprintf("%d more", len(missing)-3))
		}
		a.rep.dropped("index: stages objects the host does not have (%s); the host's kept", strings.Join(missing, ", "))
		return
	}
	mode := uint32(0o644)
	if present {
		mode = fi.Mode & 0o7777
	}
	lk, err := lock(a.gitfd, "index", mode)
	if err != nil {
		a.rep.dropped("index: lock: %v", err)
		return
	}
	now, _, err := readFile(a.gitfd, "index", maxIndexFile, false)
	if present != (err == nil) || present && sha256.Sum256(now) != base.Index.Hash {
		lk.release()
		a.rep.conflict("index: changed on the host while being adopted; the host's kept")
		return
	}
	// Without flags that hide a file's change from git status and git
	// diff, and without extensions (see adoptable): what the host's git
	// shows is what the entries stage.
	data, cleared := ix.adoptable(data, hostIx, a.hexLen/2, a.statVerifier(ix))
	if err := lk.commit(data); err != nil {
		a.rep.dropped("index: write: %v", err)
		return
	}
	if split {
		a.rep.applied("index (split: written whole, with the entries of its shared index)")
	} else {
		a.rep.applied("index")
	}
	for _, c := range cleared {
		a.rep.dropped("index: %s", c)
	}
}

// newGitlinks lists (escaped, sorted) the gitlinks ix stages that old does
// not and allowed does not name.
func newGitlinks(ix, old *Index, allowed []string) []string {
	had := old.gitlinks()
	ok := map[string]bool{}
	for _, p := range allowed {
		ok[p] = true
	}
	var bad []string
	for p := range ix.gitlinks() {
		if !had[p] && !ok[p] {
			bad = append(bad, esc(p))
		}
	}
	sort.Strings(bad)
	return bad
}

func orNone(v string) string {
	if v == "" {
		return "none"
	}
	return v
}

// sharedIndex reads a split index's shared index, sharedindex.<hex>: the
// sandbox's (in the upper up, when not nil) or else the host's.
func (a *adopter) sharedIndex(up *upperTree) func(string) ([]byte, error) {
	return func(id string) ([]byte, error) {
		name := "sharedindex." + id
		if up != nil {
			if e := up.get(name); e != nil {
				e.used = true
				if e.kind != kindFile {
					return nil, errors.New("removed or not a file in the sandbox")
				}
				return up.read(name, maxIndexFile)
			}
		}
		data, _, err := readFile(a.gitfd, name, maxIndexFile, false)
		return data, err
	}
}

// protectedStaged lists (escaped) the paths at which ix stages content
// (mode and object id) that old does not and that protected says the
// host's tools run code from. A restaged entry with the host's own
// content (new stat data only) is not one.
func (ix *Index) protectedStaged(old *Index, protected func(path, oid string) bool) []string {
	if protected == nil {
		return nil
	}
	type key struct {
		path  string
		stage int
	}
	had := map[key]IndexEntry{}
	if old != nil {
		for _, e := range old.Entries {
			had[key{e.Path, e.Stage}] = e
		}
	}
	var bad []string
	for _, e := range ix.Entries {
		h, ok := had[key{e.Path, e.Stage}]
		if ok && h.Mode == e.Mode && h.OID == e.OID || e.Mode == modeGitlink {
			continue
		}
		if protected(e.Path, e.OID) {
			bad = append(bad, esc(e.Path))
		}
	}
	return bad
}

// maxVerifiedBytes bounds what one adoption reads of the work tree to
// keep the stat data of the sandbox's index entries (statVerifier); the
// entries past it have theirs cleared.
const maxVerifiedBytes = 256 << 20

// statVerifier returns the check that lets an entry of the sandbox's
// index keep its stat data (nil without Options.WorkTree): the file at
// its path in the work tree, opened beneath it without following a
// symlink now that the sandbox has ended, is a regular file with exactly
// that stat data (ctime, mtime, device, inode, uid, gid, size, as git
// stores them), before and after it is read, and its content hashes to
// the entry's object id. The entry then says what the file holds, and any
// later change moves the file's ctime, which no process can set: the host's
// git looks at it again. Without this, every entry a git status inside
// refreshed would have its stat data cleared, and the host's next git
// status (or the sandbox's next one) would read and hash every such file
// again, and write the index again, on every run.
func (a *adopter) statVerifier(ix *Index) func(i int, stat []byte) bool {
	if a.opt.WorkTree <= 0 {
		return nil
	}
	var budget int64 = maxVerifiedBytes
	return func(i int, stat []byte) bool {
		e := ix.Entries[i]
		if e.Stage != 0 || e.Mode != modeFile && e.Mode != modeExec || e.AssumeValid || e.SkipWorktree {
			return false
		}
		fd, err := openBeneath(a.opt.WorkTree, e.Path, unix.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			return false
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || !statMatches(stat, &st) || st.Size > budget {
			return false
		}
		budget -= st.Size
		sum, err := blobID(fd, st.Size, a.hexLen/2)
		if err != nil || sum != e.OID {
			return false
		}
		return unix.Fstat(fd, &st) == nil && statMatches(stat, &st)
	}
}

// statMatches reports whether the 40 bytes of an index entry's stat data
// (ctime, mtime, dev, ino, mode, uid, gid, size: 32 bits each, big
// endian) are st's, as git writes them (fill_stat_data).
func statMatches(stat []byte, st *unix.Stat_t) bool {
	want := [10]uint32{uint32(st.Ctim.Sec), uint32(st.Ctim.Nsec), uint32(st.Mtim.Sec), uint32(st.Mtim.Nsec),
		uint32(st.Dev), uint32(st.Ino), 0, uint32(st.Uid), uint32(st.Gid), uint32(st.Size)}
	for k, w := range want {
		if k == 6 {
			continue // the mode: the entry's own, compared by git
		}
		if binary.BigEndian.Uint32(stat[4*k:]) != w {
			return false
		}
	}
	return true
}

// blobID is the object id of the blob holding the size bytes read from
// fd, for object ids of hashLen bytes (SHA-1 or SHA-256).
func blobID(fd int, size int64, hashLen int) (string, error) {
	var h hash.Hash
	if hashLen == 32 {
		h = sha256.New()
	} else {
		h = sha1.New()
	}
	fmt.Fprintf(h, "blob %d\x00", size)
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		if k == 0 {
			break
		}
		h.Write(buf[:k])
		if n += int64(k); n > size {
			break
		}
	}
	if n != size {
		return "", errors.New("size changed while read")
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
