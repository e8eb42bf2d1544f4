package gitstate

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// objectStore answers one question about a repository's objects/
// directory: does an object exist, as a loose file or in a pack's index?
// A ref is never made to point at an object the host does not have.
// Alternates (objects/info/alternates) are not followed: an object only
// there is reported missing.
type objectStore struct {
	fd      int // objects/, owned
	hexLen  int
	packs   []*packIndex
	scanned bool
}

func openObjects(gitdirFD, hexLen int) (*objectStore, error) {
	fd, err := openDir(gitdirFD, "objects")
	if err != nil {
		return nil, err
	}
	return &objectStore{fd: fd, hexLen: hexLen}, nil
}

func (o *objectStore) close() {
	for _, p := range o.packs {
		p.f.Close()
	}
	unix.Close(o.fd)
}

// has reports whether oid is in the store. A miss rescans the packs once,
// since git may have repacked while the adoption ran.
func (o *objectStore) has(oid string) bool {
	if !isHex(oid, o.hexLen) {
		return false
	}
	st, err := lstatBeneath(o.fd, oid[:2]+"/"+oid[2:])
	if err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
		return true
	}
	raw, _ := hex.DecodeString(oid)
	fresh := false
	if !o.scanned {
		o.scan()
		fresh = true
	}
	for {
		for _, p := range o.packs {
			if p.has(raw) {
				return true
			}
		}
		if fresh {
			return false
		}
		o.scan()
		fresh = true
	}
}

// scan (re)opens every pack/pack-<hex>.idx that has its .pack beside it.
func (o *objectStore) scan() {
	for _, p := range o.packs {
		p.f.Close()
	}
	o.packs = nil
	o.scanned = true
	pfd, err := openDir(o.fd, "pack")
	if err != nil {
		return
	}
	defer unix.Close(pfd)
	ents, err := readDir(pfd, maxHostDirNames)
	if err != nil {
		return
	}
	for _, e := range ents {
		base, ok := strings.CutSuffix(e.Name, ".idx")
		if !ok || e.Type != unix.S_IFREG || !validPackBase(base, o.hexLen) {
			continue
		}
		if st, err := lstatBeneath(pfd, base+".pack"); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		fd, err := openBeneath(pfd, e.Name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		f := os.NewFile(uintptr(fd), e.Name)
		p, err := loadPackIndex(f, o.hexLen/2)
		if err != nil {
			f.Close()
			continue
		}
		o.packs = append(o.packs, p)
	}
}

// validPackBase is "pack-" and a hex digest of the repository's length.
func validPackBase(base string, hexLen int) bool {
	h, ok := strings.CutPrefix(base, "pack-")
	return ok && isHex(h, hexLen)
}

// packIndex is an open pack .idx file (version 1 or 2), searched in place.
type packIndex struct {
	f       *os.File
	hashLen int
	v2      bool
	fanout  [256]uint32
}

var idxMagic = []byte{0xff, 't', 'O', 'c'}

func loadPackIndex(f *os.File, hashLen int) (*packIndex, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, errNotRegular
	}
	p := &packIndex{f: f, hashLen: hashLen}
	head := make([]byte, 8+256*4)
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, err
	}
	fan := head
	if bytes.Equal(head[:4], idxMagic) {
		if binary.BigEndian.Uint32(head[4:8]) != 2 {
			return nil, errors.New("unknown pack index version")
		}
		p.v2 = true
		fan = head[8:]
	}
	for i := range p.fanout {
		p.fanout[i] = binary.BigEndian.Uint32(fan[i*4:])
		if i > 0 && p.fanout[i] < p.fanout[i-1] {
			return nil, errors.New("pack index fanout not sorted")
		}
	}
	// The table must fit in the file, or the search would read past it.
	n := int64(p.fanout[255])
	var need int64
	if p.v2 {
		need = 8 + 1024 + n*int64(hashLen)
	} else {
		need = 1024 + n*int64(hashLen+4)
	}
	if need > st.Size {
		return nil, errors.New("pack index truncated")
	}
	return p, nil
}

func (p *packIndex) at(i uint32) ([]byte, error) {
	b := make([]byte, p.hashLen)
	var off int64
	if p.v2 {
		off = 8 + 1024 + int64(i)*int64(p.hashLen)
	} else {
		off = 1024 + int64(i)*int64(p.hashLen+4) + 4
	}
	_, err := p.f.ReadAt(b, off)
	return b, err
}

// has binary-searches the sorted hash table between the fanout bounds.
func (p *packIndex) has(raw []byte) bool {
	if len(raw) != p.hashLen {
		return false
	}
	var lo uint32
	if raw[0] > 0 {
		lo = p.fanout[raw[0]-1]
	}
	hi := p.fanout[raw[0]]
	for lo < hi {
		mid := lo + (hi-lo)/2
		h, err := p.at(mid)
		if err != nil {
			return false
		}
		switch c := bytes.Compare(h, raw); {
		case c == 0:
			return true
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return false
}
