package gitstate

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Size bounds of the files read from a host git directory.
const (
	maxRefFile      = 4 << 10
	maxPackedRefs   = 256 << 20
	maxHostRefs     = 1 << 20
	maxConfigFile   = 4 << 20
	maxIndexFile    = 1 << 30
	maxReflogFile   = 64 << 20
	maxMessageFile  = 1 << 20
	maxHostDirNames = 1 << 20
)

// errRaced says a ref's value changed between reading and locking it.
var errRaced = errors.New("changed by another process while being adopted")

// refStore reads and writes the refs of one git directory through its
// held descriptor.
type refStore struct {
	fd     int
	hexLen int

	cache     []packedRef // the last packed-refs parsed, and its identity
	cacheData []byte
	cacheID   [4]int64
}

// readLoose reads the loose ref or pseudo-ref file name: its value, or ""
// when there is none (absent, or a directory at that name).
func (r *refStore) readLoose(name string) (string, error) {
	data, _, err := readFile(r.fd, name, maxRefFile, false)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, errNotRegular) || errors.Is(err, unix.ENOTDIR) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return parseRefValue(name, data, r.hexLen)
}

// packed reads the packed-refs file; an absent file is an empty one. The
// parse is kept while the file's inode, size and time stay the same (git
// replaces the file by rename, so a change is a new inode), which keeps
// adopting many refs from re-reading a large file for each.
func (r *refStore) packed() ([]packedRef, []byte, error) {
	st, err := lstatBeneath(r.fd, "packed-refs")
	if errors.Is(err, unix.ENOENT) {
		return nil, nil, nil
	}
	if err == nil && r.cache != nil && r.cacheID == [4]int64{int64(st.Ino), st.Size, st.Mtim.Nano(), st.Ctim.Nano()} {
		return r.cache, r.cacheData, nil
	}
	data, fi, err := readFile(r.fd, "packed-refs", maxPackedRefs, false)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read packed-refs: %w", err)
	}
	refs, err := parsePackedRefs(data, r.hexLen)
	if err != nil {
		return nil, nil, fmt.Errorf("parse packed-refs: %w", err)
	}
	var fst unix.Stat_t
	if lst, err := lstatBeneath(r.fd, "packed-refs"); err == nil && lst.Ino == fi.Ino {
		fst = lst
		r.cache, r.cacheData = refs, data
		r.cacheID = [4]int64{int64(fst.Ino), fst.Size, fst.Mtim.Nano(), fst.Ctim.Nano()}
	}
	return refs, data, nil
}

// read returns the effective value of one ref: loose first, then packed.
func (r *refStore) read(name string) (string, error) {
	v, err := r.readLoose(name)
	if err != nil || v != "" || isPseudoRef(name) {
		return v, err
	}
	p, _, err := r.packed()
	if err != nil {
		return "", err
	}
	for _, e := range p {
		if e.Name == name {
			return e.OID, nil
		}
	}
	return "", nil
}

// all reads the effective value of every ref of the directory.
func (r *refStore) all() (map[string]string, error) {
	loose, packed, err := r.layers()
	if err != nil {
		return nil, err
	}
	return mergeRefs(packed, loose), nil
}

// layers reads the directory's refs as two layers: pseudo-refs and loose
// refs under refs/, and packed-refs. Files git would not read as refs
// (locks, bad names, symlinks, bad contents) are skipped: they are not refs
// to git either.
func (r *refStore) layers() (loose, packed map[string]string, err error) {
	loose, packed = map[string]string{}, map[string]string{}
	p, _, err := r.packed()
	if err != nil {
		return nil, nil, err
	}
	for _, e := range p {
		packed[e.Name] = e.OID
	}
	for _, n := range pseudoRefs {
		if v, err := r.readLoose(n); err == nil && v != "" {
			loose[n] = v
		}
	}
	count := 0
	var walk func(dirfd int, prefix string) error
	walk = func(dirfd int, prefix string) error {
		ents, err := readDir(dirfd, maxHostDirNames)
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix, err)
		}
		for _, e := range ents {
			name := prefix + "/" + e.Name
			if count++; count > maxHostRefs {
				return fmt.Errorf("more than %d loose refs", maxHostRefs)
			}
			switch e.Type {
			case unix.S_IFDIR:
				sub, err := openDir(dirfd, e.Name)
				if err != nil {
					continue
				}
				err = walk(sub, name)
				unix.Close(sub)
				if err != nil {
					return err
				}
			case unix.S_IFREG:
				if !validRefName(name) {
					continue
				}
				data, _, err := readFile(dirfd, e.Name, maxRefFile, false)
				if err != nil {
					continue
				}
				if v, err := parseRefValue(name, data, r.hexLen); err == nil {
					loose[name] = v
				}
			}
		}
		return nil
	}
	rfd, err := openDir(r.fd, "refs")
	if errors.Is(err, unix.ENOENT) {
		return loose, packed, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open refs: %w", err)
	}
	defer unix.Close(rfd)
	if err := walk(rfd, "refs"); err != nil {
		return nil, nil, err
	}
	return loose, packed, nil
}

// update sets ref name to value, or deletes it when value is "", provided
// its value is still old ("" for absent) once its lock is held: the same
// compare-and-swap git's update-ref does, so a git running at the same
// time and a second adoption both interoperate.
func (r *refStore) update(name, old, value string) error {
	lk, err := lock(r.fd, name, 0o644)
	if err != nil {
		return fmt.Errorf("lock %s: %w", name, err)
	}
	cur, err := r.read(name)
	if err != nil {
		lk.release()
		return fmt.Errorf("read %s: %w", name, err)
	}
	if cur != old {
		lk.release()
		return errRaced
	}
	if value != "" {
		// An empty directory left at the name (git leaves them after
		// deleting refs beneath) would make the rename fail.
		unix.Unlinkat(lk.dirfd, lk.base, unix.AT_REMOVEDIR)
		if err := lk.commit([]byte(value + "\n")); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		return nil
	}
	defer lk.release()
	if !isPseudoRef(name) {
		if err := r.dropFromPacked(name); err != nil {
			return err
		}
	}
	if err := unix.Unlinkat(lk.dirfd, lk.base, 0); err != nil && err != unix.ENOENT {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
}

// dropFromPacked rewrites packed-refs without name, under packed-refs.lock.
func (r *refStore) dropFromPacked(name string) error {
	data, fi, err := readFile(r.fd, "packed-refs", maxPackedRefs, false)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read packed-refs: %w", err)
	}
	if _, found := dropPacked(data, name); !found {
		return nil
	}
	lk, err := lock(r.fd, "packed-refs", fi.Mode&0o7777)
	if err != nil {
		return fmt.Errorf("lock packed-refs: %w", err)
	}
	// Re-read under the lock: the file may have been rewritten meanwhile.
	data, _, err = readFile(r.fd, "packed-refs", maxPackedRefs, false)
	if err != nil {
		lk.release()
		return fmt.Errorf("read packed-refs: %w", err)
	}
	out, _ := dropPacked(data, name)
	if err := lk.commit(out); err != nil {
		return fmt.Errorf("write packed-refs: %w", err)
	}
	return nil
}
