package gitstate

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Index is what the reader takes from a git index file (versions 2, 3
// and 4): its entries and the signatures of its extensions.
type Index struct {
	Version    uint32
	Entries    []IndexEntry
	Extensions []string

	exts       [][2]int // byte ranges of the extensions, as Extensions
	starts     []int    // where each entry starts, as Entries
	raw        []byte   // the file parsed
	entriesEnd int
}

// IndexEntry is one staged path.
type IndexEntry struct {
	Path  string
	Mode  uint32 // 0100644, 0100755, 0120000 (symlink) or 0160000 (gitlink)
	OID   string
	Stage int
	// AssumeValid (assume-unchanged) and SkipWorktree make git status
	// and git diff take the entry as matching the work tree without
	// looking at the file.
	AssumeValid, SkipWorktree bool
}

// Entry flags (read-cache.c): assume-valid in the flags word, and
// skip-worktree in the extended flags of a version 3 or 4 entry.
const (
	ceValid        = 0x8000
	ceSkipWorktree = 0x4000
)

// Modes an index entry may have. A sparse index's directory entries
// (040000) are refused with the "sdir" extension that announces them.
const (
	modeFile    = 0o100644
	modeExec    = 0o100755
	modeSymlink = 0o120000
	modeGitlink = 0o160000
)

// Index extensions the reader skips by signature: the cache tree, resolve
// undo, the untracked cache, fsmonitor's token (removed before an index is
// adopted: git hands it to the host's own core.fsmonitor hook, and the
// sample watchman hook pastes it into a query unquoted), and the offset
// tables. "link" (split index: entries live in another file,
// sharedindex.<hash>; Unsplit makes it whole first) and "sdir" (sparse
// index) are refused, as is any
// other required (lower-case) extension; optional upper-case ones are
// skipped, as git does.
var indexExtSkip = map[string]bool{"TREE": true, "REUC": true, "UNTR": true, "FSMN": true, "EOIE": true, "IEOT": true}

// ParseIndex reads an index file strictly: header, entries in git's
// order, every path valid for git (no "..", ".git" or empty components in
// any spelling git's own verify_path refuses), extensions, and the
// trailing checksum, which must match. hashLen is 20 (SHA-1) or 32
// (SHA-256).
func ParseIndex(data []byte, hashLen int) (*Index, error) {
	if len(data) < 12+hashLen {
		return nil, errors.New("index: too short")
	}
	body, sum := data[:len(data)-hashLen], data[len(data)-hashLen:]
	var got []byte
	if hashLen == 32 {
		s := sha256.Sum256(body)
		got = s[:]
	} else {
		s := sha1.Sum(body)
		got = s[:]
	}
	if !bytes.Equal(got, sum) {
		return nil, errors.New("index: checksum mismatch")
	}
	if string(body[:4]) != "DIRC" {
		return nil, errors.New("index: bad signature")
	}
	ix := &Index{Version: binary.BigEndian.Uint32(body[4:8]), raw: data}
	if ix.Version < 2 || ix.Version > 4 {
		return nil, fmt.Errorf("index: version %d", ix.Version)
	}
	n := binary.BigEndian.Uint32(body[8:12])
	if int64(n) > int64(len(body))/int64(40+hashLen+2+1) {
		return nil, fmt.Errorf("index: %d entries cannot fit in %d bytes", n, len(body))
	}
	ix.Entries = make([]IndexEntry, 0, n)
	pos := 12
	prev := ""
	for i := uint32(0); i < n; i++ {
		start := pos
		fixed := 40 + hashLen + 2
		if pos+fixed > len(body) {
			return nil, fmt.Errorf("index: entry %d truncated", i)
		}
		mode := binary.BigEndian.Uint32(body[pos+24:])
		oid := hex.EncodeToString(body[pos+40 : pos+40+hashLen])
		flags := binary.BigEndian.Uint16(body[pos+40+hashLen:])
		var ext uint16
		pos += fixed
		if flags&0x4000 != 0 { // extended
			if ix.Version < 3 {
				return nil, fmt.Errorf("index: entry %d has extended flags in a version 2 index", i)
			}
			if pos+2 > len(body) {
				return nil, fmt.Errorf("index: entry %d truncated", i)
			}
			ext = binary.BigEndian.Uint16(body[pos:])
			if ext&^uint16(0x6000) != 0 { // skip-worktree, intent-to-add
				return nil, fmt.Errorf("index: entry %d has unknown extended flags %#x", i, ext)
			}
			pos += 2
		}
		nameLen := int(flags & 0xfff)
		var path string
		if ix.Version == 4 {
			strip, k := indexVarint(body[pos:])
			if k == 0 || strip > uint64(len(prev)) {
				return nil, fmt.Errorf("index: entry %d: bad path prefix", i)
			}
			pos += k
			end := bytes.IndexByte(body[pos:], 0)
			if end < 0 {
				return nil, fmt.Errorf("index: entry %d: path not terminated", i)
			}
			path = prev[:len(prev)-int(strip)] + string(body[pos:pos+end])
			pos += end + 1
		} else {
			end := bytes.IndexByte(body[pos:], 0)
			if end < 0 {
				return nil, fmt.Errorf("index: entry %d: path not terminated", i)
			}
			path = string(body[pos : pos+end])
			size := (pos - start + end + 8) &^ 7
			if start+size > len(body) {
				return nil, fmt.Errorf("index: entry %d truncated", i)
			}
			for _, b := range body[pos+end : start+size] {
				if b != 0 {
					return nil, fmt.Errorf("index: entry %d: padding not zero", i)
				}
			}
			pos = start + size
		}
		if nameLen != 0xfff && nameLen != len(path) {
			return nil, fmt.Errorf("index: entry %d: name length %d for a %d-byte path", i, nameLen, len(path))
		}
		if path == "" {
			// A split index's entries that replace shared ones have no
			// name; the link extension would say so after the entries.
			return nil, errors.New("index: an entry without a path (a split index not made whole)")
		}
		switch mode {
		case modeFile, modeExec, modeSymlink, modeGitlink:
		default:
			return nil, fmt.Errorf("index: %s: mode %o", esc(path), mode)
		}
		if err := verifyIndexPath(path, mode); err != nil {
			return nil, fmt.Errorf("index: %w", err)
		}
		stage := int(flags>>12) & 3
		if len(ix.Entries) > 0 {
			last := ix.Entries[len(ix.Entries)-1]
			if c := strings.Compare(last.Path, path); c > 0 || c == 0 && last.Stage >= stage {
				return nil, fmt.Errorf("index: entries out of order at %s", esc(path))
			}
		}
		ix.Entries = append(ix.Entries, IndexEntry{Path: path, Mode: mode, OID: oid, Stage: stage,
			AssumeValid: flags&ceValid != 0, SkipWorktree: ext&ceSkipWorktree != 0})
		ix.starts = append(ix.starts, start)
		prev = path
	}
	ix.entriesEnd = pos
	for pos < len(body) {
		if pos+8 > len(body) {
			return nil, errors.New("index: extension header truncated")
		}
		sig := string(body[pos : pos+4])
		size := binary.BigEndian.Uint32(body[pos+4:])
		if uint64(size) > uint64(len(body)-pos-8) {
			return nil, fmt.Errorf("index: extension %s truncated", esc(sig))
		}
		switch {
		case sig == "link":
			return nil, errors.New("index: split index (link extension) not made whole")
		case sig == "sdir":
			return nil, errors.New("index: sparse index (sdir extension), not adopted")
		case indexExtSkip[sig] || sig[0] >= 'A' && sig[0] <= 'Z':
		default:
			return nil, fmt.Errorf("index: unknown required extension %s", esc(sig))
		}
		ix.Extensions = append(ix.Extensions, sig)
		ix.exts = append(ix.exts, [2]int{pos, pos + 8 + int(size)})
		pos += 8 + int(size)
	}
	return ix, nil
}

// indexVarint is git's offset varint (varint.c): each continuation adds
// one before shifting, so every value has one encoding.
func indexVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v := uint64(c & 127)
	i := 1
	for c&128 != 0 {
		if i >= len(b) || v >= 1<<50 {
			return 0, 0
		}
		c = b[i]
		i++
		v = ((v + 1) << 7) | uint64(c&127)
	}
	return v, i
}

// verifyIndexPath is git's verify_path for the spellings any platform's
// git refuses: no absolute or empty path, no empty, "." or ".."
// components, no ".git" component in any case nor with the trailing dots
// and spaces Windows drops nor as its 8.3 short name "git~1", and no
// .gitmodules (or .gitattributes, .gitignore, .mailmap) as a symlink.
func verifyIndexPath(p string, mode uint32) error {
	if p == "" || p[0] == '/' || p[len(p)-1] == '/' {
		return fmt.Errorf("path %s is not a relative file path", esc(p))
	}
	last := ""
	for rest := p; ; {
		c := rest
		i := strings.IndexByte(rest, '/')
		if i >= 0 {
			c, rest = rest[:i], rest[i+1:]
		}
		if c == "" || c == "." || c == ".." || strings.IndexByte(c, '\\') >= 0 {
			return fmt.Errorf("path %s has a %s component", esc(p), esc(c))
		}
		// Only components that start like ".git" or "git~1", or hold
		// non-ASCII bytes (HFS+ ignorables), can spell .git.
		if (c[0] == '.' || c[0] == 'g' || c[0] == 'G' || hasHighByte(c)) && isDotGit(c) {
			return fmt.Errorf("path %s has a .git component", esc(p))
		}
		last = c
		if i < 0 {
			break
		}
	}
	if mode == modeSymlink {
		switch strings.ToLower(strings.TrimRight(last, ". ")) {
		case ".gitmodules", ".gitattributes", ".gitignore", ".mailmap":
			return fmt.Errorf("path %s is a symlink git refuses", esc(p))
		}
	}
	return nil
}

func hasHighByte(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return true
		}
	}
	return false
}

// isDotGit: ".git" in any case, with the trailing dots and spaces Windows
// drops, as the 8.3 short name "git~1", or with HFS+ ignorables inside.
func isDotGit(c string) bool {
	t := strings.TrimRight(c, ". ")
	return strings.EqualFold(t, ".git") || strings.EqualFold(c, "git~1") || hasHighByte(c) && isHFSDotGit(c)
}

// isHFSDotGit: HFS+ ignores some zero-width code points in names, so
// ".g\u200cit" names .git there; git refuses such names everywhere.
func isHFSDotGit(c string) bool {
	var b strings.Builder
	for _, r := range c {
		switch r {
		case 0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
			0x206a, 0x206b, 0x206c, 0x206d, 0x206e, 0x206f, 0xfeff:
			continue
		}
		b.WriteRune(r)
	}
	return b.Len() != len(c) && strings.EqualFold(b.String(), ".git")
}

// gitlinks lists the paths an index stages as gitlinks.
func (ix *Index) gitlinks() map[string]bool {
	out := map[string]bool{}
	if ix == nil {
		return out
	}
	for _, e := range ix.Entries {
		if e.Mode == modeGitlink {
			out[e.Path] = true
		}
	}
	return out
}

// notHosts lists the entries of ix (by index) that are not byte for byte
// (stat data, mode, object id) the entry host has for their path and
// stage: what the sandbox staged or restaged.
func (ix *Index) notHosts(host *Index, hashLen int) []int {
	had := map[[2]string][]byte{}
	if host != nil {
		for i, e := range host.Entries {
			had[[2]string{e.Path, strconv.Itoa(e.Stage)}] = host.raw[host.starts[i] : host.starts[i]+40+hashLen]
		}
	}
	var out []int
	for i, e := range ix.Entries {
		h, ok := had[[2]string{e.Path, strconv.Itoa(e.Stage)}]
		if at := ix.starts[i]; !ok || !bytes.Equal(ix.raw[at:at+40+hashLen], h) {
			out = append(out, i)
		}
	}
	return out
}

// cacheExts are the extensions that are pure caches git rebuilds: left
// out of an adopted index without a word.
var cacheExts = map[string]bool{"TREE": true, "EOIE": true, "IEOT": true}

// adoptable returns data (the file ix was parsed from) as the host may
// take it, and what it cleared: without any extension (the cache tree
// would let git commit write a tree other than the entries, the
// untracked cache and the fsmonitor token hide files from git status,
// the resolve-undo list brings back content the entries do not show),
// with the assume-valid and skip-worktree flags cleared on every entry
// whose path host (the host's index, nil for none) did not have them
// on, and with the stat data cleared on every entry that is not, byte
// for byte, the host's entry for its path, unless verified says the file
// has that stat data now and the entry's content: git then looks at those
// files again rather than trusting stat data the sandbox chose to match a
// file whose content is not the entry's. (verified may be nil.)
func (ix *Index) adoptable(data []byte, host *Index, hashLen int, verified func(i int, stat []byte) bool) (out []byte, cleared []string) {
	type hostEntry struct {
		fixed       []byte
		valid, skip bool
	}
	had := map[[2]string]hostEntry{}
	if host != nil {
		for i, e := range host.Entries {
			had[[2]string{e.Path, strconv.Itoa(e.Stage)}] = hostEntry{host.raw[host.starts[i] : host.starts[i]+40+hashLen], e.AssumeValid, e.SkipWorktree}
		}
	}
	out = append([]byte{}, data[:ix.entriesEnd]...)
	var valid, skip []string
	for i, e := range ix.Entries {
		at := ix.starts[i]
		h, ok := had[[2]string{e.Path, strconv.Itoa(e.Stage)}]
		flags := binary.BigEndian.Uint16(out[at+40+hashLen:])
		if e.AssumeValid && !h.valid {
			flags &^= ceValid
			binary.BigEndian.PutUint16(out[at+40+hashLen:], flags)
			valid = append(valid, esc(e.Path))
		}
		if e.SkipWorktree && !h.skip {
			x := binary.BigEndian.Uint16(out[at+42+hashLen:])
			binary.BigEndian.PutUint16(out[at+42+hashLen:], x&^ceSkipWorktree)
			skip = append(skip, esc(e.Path))
		}
		if (!ok || !bytes.Equal(out[at:at+40+hashLen], h.fixed)) && (verified == nil || !verified(i, out[at:at+40])) {
			// ctime, mtime, dev, ino (0-23), uid, gid, size (28-39);
			// the mode (24-27) stays.
			clear(out[at : at+24])
			clear(out[at+28 : at+40])
		}
	}
	list := func(what string, paths []string) {
		if len(paths) == 0 {
			return
		}
		if len(paths) > 3 {
			paths = append(paths[:3:3], fmt.Sprintf("%d more", len(paths)-3))
		}
		cleared = append(cleared, fmt.Sprintf("%s cleared on %s", what, strings.Join(paths, ", ")))
	}
	list("skip-worktree", skip)
	list("assume-unchanged", valid)
	var gone []string
	for _, sig := range ix.Extensions {
		if !cacheExts[sig] {
			gone = append(gone, esc(sig))
		}
	}
	if len(gone) > 0 {
		cleared = append(cleared, "extensions "+strings.Join(gone, ", ")+" left out")
	}
	if hashLen == 32 {
		s := sha256.Sum256(out)
		return append(out, s[:]...), cleared
	}
	sum := sha1.Sum(out)
	return append(out, sum[:]...), cleared
}
