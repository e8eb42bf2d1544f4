package gitstate

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
)

// A split index (core.splitIndex, git update-index --split-index) keeps
// most entries in a shared file, sharedindex.<hash>, and in the index
// itself only the entries changed since, with a "link" extension naming
// the shared file and two EWAH bitmaps: the shared entries deleted, and
// those replaced (the index's first entries, which have no name, replace
// them in order). Git reads the two together (split-index.c,
// merge_base_index). So does Unsplit, which writes the result as one
// whole index that every reader takes and that git, when core.splitIndex
// is set, splits again on its next write. Nothing of the shared file is
// trusted beyond its entries, which are checked as every index's are.

// IsSplit reports whether the index file data has a link extension.
func IsSplit(data []byte, hashLen int) bool {
	_, _, ext, err := rawIndex(data, hashLen, true)
	return err == nil && ext.link != nil
}

// Unsplit returns the index file data as one whole index (version 2, or 3
// when an entry has extended flags), its entries merged with those of the
// shared index it names, read with shared (given the shared index's
// object id in hex; the file is sharedindex.<hex>). An index that is not
// split is returned as it is. No other extension is kept: the adoption
// drops them anyway, and git rebuilds its caches.
func Unsplit(data []byte, hashLen int, shared func(hex string) ([]byte, error)) ([]byte, error) {
	_, ents, ext, err := rawIndex(data, hashLen, true)
	if err != nil {
		return nil, err
	}
	if ext.link == nil {
		return data, nil
	}
	l := ext.link
	if len(l) < hashLen {
		return nil, errors.New("index: link extension truncated")
	}
	id := hex.EncodeToString(l[:hashLen])
	l = l[hashLen:]
	sdata, err := shared(id)
	if err != nil {
		return nil, fmt.Errorf("index: shared index %s: %w", id, err)
	}
	_, base, sext, err := rawIndex(sdata, hashLen, false)
	if err != nil {
		return nil, fmt.Errorf("index: shared index %s: %w", id, err)
	}
	if sext.link != nil {
		return nil, fmt.Errorf("index: shared index %s is itself split", id)
	}
	var del, repl []uint64
	if len(l) > 0 {
		var n int
		if del, n, err = ewahBits(l, len(base)); err != nil {
			return nil, fmt.Errorf("index: link extension: delete bitmap: %w", err)
		}
		if repl, _, err = ewahBits(l[n:], len(base)); err != nil {
			return nil, fmt.Errorf("index: link extension: replace bitmap: %w", err)
		}
	}
	removed := make([]bool, len(base))
	for _, p := range del {
		if p >= uint64(len(base)) {
			return nil, fmt.Errorf("index: link extension deletes entry %d of %d", p, len(base))
		}
		removed[p] = true
	}
	next := 0
	for _, p := range repl {
		if p >= uint64(len(base)) || removed[p] {
			return nil, fmt.Errorf("index: link extension replaces entry %d of %d, or one it deletes", p, len(base))
		}
		if next >= len(ents) || ents[next].name != "" {
			return nil, errors.New("index: link extension: a replacement without its nameless entry")
		}
		r := ents[next]
		r.name = base[p].name
		base[p] = r
		next++
	}
	var out []rawEntry
	for i, e := range base {
		if !removed[i] {
			out = append(out, e)
		}
	}
	for _, e := range ents[next:] {
		if e.name == "" {
			return nil, errors.New("index: an entry without a path that replaces nothing")
		}
		out = append(out, e)
	}
	// Added entries win over shared ones of the same path and stage
	// (add_index_entry replaces), then git's order.
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].name != out[j].name {
			return out[i].name < out[j].name
		}
		return out[i].stage() < out[j].stage()
	})
	merged := out[:0]
	for i, e := range out {
		if i+1 < len(out) && out[i+1].name == e.name && out[i+1].stage() == e.stage() {
			continue
		}
		merged = append(merged, e)
	}
	return writeRawIndex(merged, hashLen), nil
}

// rawEntry is one index entry as bytes: the fixed part (stat data, mode,
// object id), the flags, the extended flags and the name.
type rawEntry struct {
	fixed    []byte
	flags    uint16
	ext      uint16
	extended bool
	name     string
}

func (e rawEntry) stage() int { return int(e.flags>>12) & 3 }

// rawExts is what rawIndex keeps of the extensions.
type rawExts struct{ link []byte }

// rawIndex reads the header, entries and extensions of an index file,
// its checksum verified; names may be empty only when split allows it (a
// split index's replacements). The entries are checked for what Unsplit
// needs; the index it writes is parsed again by ParseIndex.
func rawIndex(data []byte, hashLen int, split bool) (uint32, []rawEntry, rawExts, error) {
	var ext rawExts
	if len(data) < 12+hashLen {
		return 0, nil, ext, errors.New("index: too short")
	}
	body, sum := data[:len(data)-hashLen], data[len(data)-hashLen:]
	if !bytes.Equal(indexSum(body, hashLen), sum) {
		return 0, nil, ext, errors.New("index: checksum mismatch")
	}
	if string(body[:4]) != "DIRC" {
		return 0, nil, ext, errors.New("index: bad signature")
	}
	ver := binary.BigEndian.Uint32(body[4:8])
	if ver < 2 || ver > 4 {
		return 0, nil, ext, fmt.Errorf("index: version %d", ver)
	}
	n := binary.BigEndian.Uint32(body[8:12])
	if int64(n) > int64(len(body))/int64(40+hashLen+2+1) {
		return 0, nil, ext, fmt.Errorf("index: %d entries cannot fit in %d bytes", n, len(body))
	}
	ents := make([]rawEntry, 0, n)
	pos, prev := 12, ""
	for i := uint32(0); i < n; i++ {
		start := pos
		fixed := 40 + hashLen + 2
		if pos+fixed > len(body) {
			return 0, nil, ext, fmt.Errorf("index: entry %d truncated", i)
		}
		e := rawEntry{fixed: body[pos : pos+40+hashLen], flags: binary.BigEndian.Uint16(body[pos+40+hashLen:])}
		pos += fixed
		if e.flags&0x4000 != 0 {
			if ver < 3 || pos+2 > len(body) {
				return 0, nil, ext, fmt.Errorf("index: entry %d: bad extended flags", i)
			}
			e.extended, e.ext = true, binary.BigEndian.Uint16(body[pos:])
			pos += 2
		}
		end := -1
		if ver == 4 {
			strip, k := indexVarint(body[pos:])
			if k == 0 || strip > uint64(len(prev)) {
				return 0, nil, ext, fmt.Errorf("index: entry %d: bad path prefix", i)
			}
			pos += k
			if end = bytes.IndexByte(body[pos:], 0); end < 0 {
				return 0, nil, ext, fmt.Errorf("index: entry %d: path not terminated", i)
			}
			e.name = prev[:len(prev)-int(strip)] + string(body[pos:pos+end])
			pos += end + 1
		} else {
			if end = bytes.IndexByte(body[pos:], 0); end < 0 {
				return 0, nil, ext, fmt.Errorf("index: entry %d: path not terminated", i)
			}
			e.name = string(body[pos : pos+end])
			size := (pos - start + end + 8) &^ 7
			if start+size > len(body) {
				return 0, nil, ext, fmt.Errorf("index: entry %d truncated", i)
			}
			pos = start + size
		}
		if e.name == "" && !split {
			return 0, nil, ext, fmt.Errorf("index: entry %d has no path", i)
		}
		ents = append(ents, e)
		prev = e.name
	}
	for pos < len(body) {
		if pos+8 > len(body) {
			return 0, nil, ext, errors.New("index: extension header truncated")
		}
		sig := string(body[pos : pos+4])
		size := binary.BigEndian.Uint32(body[pos+4:])
		if uint64(size) > uint64(len(body)-pos-8) {
			return 0, nil, ext, fmt.Errorf("index: extension %s truncated", esc(sig))
		}
		if sig == "link" {
			ext.link = body[pos+8 : pos+8+int(size)]
		}
		pos += 8 + int(size)
	}
	return ver, ents, ext, nil
}

// writeRawIndex writes entries as an index file without extensions.
func writeRawIndex(ents []rawEntry, hashLen int) []byte {
	ver := uint32(2)
	for _, e := range ents {
		if e.extended {
			ver = 3
		}
	}
	out := append([]byte("DIRC"), 0, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(out[4:], ver)
	binary.BigEndian.PutUint32(out[8:], uint32(len(ents)))
	for _, e := range ents {
		start := len(out)
		out = append(out, e.fixed...)
		flags := e.flags&^0xfff | uint16(min(len(e.name), 0xfff))
		out = binary.BigEndian.AppendUint16(out, flags)
		if e.extended {
			out = binary.BigEndian.AppendUint16(out, e.ext)
		}
		out = append(out, e.name...)
		size := (len(out) - start + 8) &^ 7
		for len(out) < start+size {
			out = append(out, 0)
		}
	}
	return append(out, indexSum(out, hashLen)...)
}

func indexSum(b []byte, hashLen int) []byte {
	if hashLen == 32 {
		s := sha256.Sum256(b)
		return s[:]
	}
	s := sha1.Sum(b)
	return s[:]
}

// ewahBits decodes one of git's EWAH bitmaps as serialised in an index
// (ewah/ewah_io.c: bit count, word count, the 64-bit words big-endian,
// the position of the last run-length word) into the positions of its
// set bits (ewah_each_bit), and returns the bytes it took. A set bit at
// limit or past it (the shared index's entry count) is an error.
func ewahBits(b []byte, limit int) ([]uint64, int, error) {
	if len(b) < 8 {
		return nil, 0, errors.New("truncated")
	}
	bitSize := uint64(binary.BigEndian.Uint32(b))
	words := int(binary.BigEndian.Uint32(b[4:]))
	if words > (len(b)-12)/8 || len(b) < 12+8*words {
		return nil, 0, errors.New("truncated")
	}
	buf := b[8 : 8+8*words]
	var out []uint64
	pos := uint64(0)
	for p := 0; p < words; {
		w := binary.BigEndian.Uint64(buf[8*p:])
		run := (w >> 1) & 0xffffffff
		lits := int(w >> 33)
		if w&1 != 0 && run > 0 && pos+run*64 > uint64(limit)+63 {
			return nil, 0, errors.New("a run of set bits past the shared index's entries")
		}
		if run > 1<<26 || pos > 1<<32 {
			return nil, 0, errors.New("a run past any index's size")
		}
		if w&1 != 0 {
			for k := uint64(0); k < run*64; k++ {
				out = append(out, pos+k)
			}
		}
		pos += run * 64
		p++
		if lits > words-p {
			return nil, 0, errors.New("literal words past the end")
		}
		for k := 0; k < lits; k, p = k+1, p+1 {
			lw := binary.BigEndian.Uint64(buf[8*p:])
			for c := uint64(0); c < 64; c++ {
				if lw&(1<<c) != 0 {
					out = append(out, pos+c)
				}
			}
			pos += 64
		}
	}
	// Bits past bit_size are not the bitmap's (git never sets them).
	for len(out) > 0 && out[len(out)-1] >= bitSize {
		out = out[:len(out)-1]
	}
	if len(out) > 0 && out[len(out)-1] >= uint64(limit) {
		return nil, 0, fmt.Errorf("bit %d past the shared index's %d entries", out[len(out)-1], limit)
	}
	return out, 12 + 8*words, nil
}
