package gitstate

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The sandbox's objects reach the host the way a fetch from an untrusted
// remote would: what it wrote under objects/ (in its upper, the host's
// objects being the read-only lower) is streamed as one pack into the
// host's git, run by jail with a fixed environment and a git directory of
// jail's own, as `git index-pack --strict` (or, for a few loose objects,
// `git unpack-objects --strict`). Git names every object by the hash of
// the content it received, checks each against an object of the same name
// it already has (index-pack dies on a collision; unpack-objects keeps the
// existing one), checks every object with fsck's rules, and refuses the
// stream when an object links to one that is neither in it nor on the
// host. Nothing existing is overwritten or deleted: git adds files under
// new names only. Refs are adopted afterwards, and only when the object
// they name is then on the host.

// unpackLimit mirrors git's fetch.unpackLimit: fewer objects than this,
// with no pack among them, are written loose (as git inside wrote them);
// more, or any pack, are kept as one pack.
const unpackLimit = 100

// maxStreams bounds the packs of an upper streamed into one adoption.
const maxStreams = 256

// gitBins are where the verifying git is taken from: system directories
// only, never $PATH, which may name a directory the sandbox wrote.
var gitBins = []string{"/usr/bin/git", "/bin/git", "/usr/local/bin/git"}

// looseObject is a loose object of the upper, checked: its content hashes
// to its name.
type looseObject struct {
	path string // beneath the upper
	typ  int    // pack type: 1 commit, 2 tree, 3 blob, 4 tag
	size int64
}

var objectTypes = map[string]int{"commit": 1, "tree": 2, "blob": 3, "tag": 4}

// adoptObjects brings the objects the sandbox added into the host's
// objects directory, verified (see above), and reports whether all of
// them came in. shallow lists the commits whose parents the stream
// may lack (a shallow clone's boundary).
func (a *adopter) adoptObjects(up *upperTree, shallow []byte) bool {
	var loose []string
	var packs []string
	deletions := 0
	for _, p := range up.under("objects") {
		e := up.get(p)
		rel := strings.TrimPrefix(p, "objects/")
		dir, base := splitName(rel)
		switch {
		case e.kind == kindDir:
			e.used = true
		case e.kind == kindWhiteout:
			e.used = true
			deletions++
		case e.kind != kindFile:
		case len(dir) == 2 && isHex(dir, 2) && isHex(base, a.hexLen-2):
			e.used = true
			loose = append(loose, p)
		case dir == "pack" && strings.HasSuffix(base, ".pack") && validPackBase(strings.TrimSuffix(base, ".pack"), a.hexLen):
			e.used = true
			if _, err := lstatBeneath(a.objects.fd, rel); err == nil {
				// A copy-up of the host's own pack (chmod, or
				// rewritten): the host's stays as it is.
				continue
			}
			packs = append(packs, p)
		case dir == "pack" && validPackFile(base, a.hexLen):
			// .idx, .rev, .bitmap, .keep, ...: git makes the index of
			// the stream itself, from its content; the rest is caches
			// and markers.
			e.used = true
		}
	}
	if deletions > 0 {
		a.rep.dropped("objects: %d deletions not adopted (the host's objects are never removed from inside)", deletions)
	}
	if len(packs) > maxStreams {
		a.rep.dropped("objects: %d packs, more than %d; none adopted", len(packs), maxStreams)
		return false
	}
	// Upper packs' own indexes, only to leave out loose objects they
	// hold too (git repack without -d): a duplicate makes the strict
	// stream fail. An index that lies only fails the stream.
	var idx []*packIndex
	for _, p := range packs {
		fd, err := openBeneath(up.fd, strings.TrimSuffix(p, ".pack")+".idx", unix.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			continue
		}
		f := os.NewFile(uintptr(fd), "idx")
		pi, err := loadPackIndex(f, a.hexLen/2)
		if err != nil {
			f.Close()
			continue
		}
		idx = append(idx, pi)
	}
	defer func() {
		for _, p := range idx {
			p.f.Close()
		}
	}()
	var objs []looseObject
	bad := 0
	for _, p := range loose {
		oid := strings.ReplaceAll(strings.TrimPrefix(p, "objects/"), "/", "")
		if a.objects.has(oid) {
			continue // the host's own (a copy-up, or written twice): never replaced
		}
		raw, _ := hex.DecodeString(oid)
		inPack := false
		for _, pi := range idx {
			inPack = inPack || pi.has(raw)
		}
		if inPack {
			continue
		}
		o, err := checkLoose(up, p, oid, a.hexLen)
		if err != nil {
			bad++
			if bad <= 3 {
				a.rep.dropped("%s: %v", esc(p), err)
			}
			continue
		}
		objs = append(objs, o)
	}
	if bad > 3 {
		a.rep.dropped("objects: %d more loose objects not valid", bad-3)
	}
	if len(objs) == 0 && len(packs) == 0 {
		return bad == 0
	}
	n, err := a.streamObjects(up, objs, packs, shallow)
	if err != nil {
		a.rep.dropped("objects: the sandbox's new objects were not adopted: %v", err)
		return false
	}
	a.objects.scan()
	a.rep.applied("objects (%d new, verified)", n)
	return bad == 0
}

// checkLoose reads the loose object p of the upper and checks that it
// inflates to "<type> <size>\0<content>" whose hash is oid.
func checkLoose(up *upperTree, p, oid string, hexLen int) (looseObject, error) {
	o := looseObject{path: p}
	r, closeFn, err := openLoose(up, p, true)
	if err != nil {
		return o, err
	}
	defer closeFn()
	typ, size, err := looseHeader(r)
	if err != nil {
		return o, err
	}
	h := newHash(hexLen)
	fmt.Fprintf(h, "%s %d\x00", typ, size)
	n, err := io.Copy(h, io.LimitReader(r, size+1))
	if err != nil {
		return o, fmt.Errorf("does not inflate: %w", err)
	}
	if n != size {
		return o, fmt.Errorf("holds %d bytes, its header says %d", n, size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != oid {
		return o, errors.New("its content does not hash to its name")
	}
	o.typ, o.size = objectTypes[typ], size
	return o, nil
}

// openLoose opens the loose object p of the upper for inflating, charging
// its size to the upper's read budget when charge is set (the first of
// the two reads).
func openLoose(up *upperTree, p string, charge bool) (io.Reader, func(), error) {
	fd, err := openBeneath(up.fd, p, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	f := os.NewFile(uintptr(fd), p)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		f.Close()
		return nil, nil, errNotRegular
	}
	if charge {
		if up.bytesRead+st.Size > up.limits.Bytes {
			f.Close()
			return nil, nil, fmt.Errorf("the total read limit of %d bytes is used up", up.limits.Bytes)
		}
		up.bytesRead += st.Size
	}
	z, err := zlib.NewReader(bufio.NewReader(io.LimitReader(f, st.Size)))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("not zlib data: %w", err)
	}
	return bufio.NewReader(z), func() { z.Close(); f.Close() }, nil
}

// looseHeader reads "<type> <size>\0".
func looseHeader(r io.Reader) (string, int64, error) {
	br := r.(*bufio.Reader)
	head, err := br.ReadSlice(0)
	if err != nil || len(head) > 32 {
		return "", 0, errors.New("no object header")
	}
	t, s, ok := strings.Cut(string(head[:len(head)-1]), " ")
	size, err := strconv.ParseInt(s, 10, 64)
	if !ok || objectTypes[t] == 0 || err != nil || size < 0 || s != strconv.FormatInt(size, 10) {
		return "", 0, fmt.Errorf("bad object header %s", esc(string(head[:len(head)-1])))
	}
	return t, size, nil
}

func newHash(hexLen int) hash.Hash {
	if hexLen == 64 {
		return sha256.New()
	}
	return sha1.New()
}

// streamObjects writes the loose objects objs and the packs of the upper
// into one pack stream and has git take it into the host's objects. It
// returns the number of objects in the stream.
func (a *adopter) streamObjects(up *upperTree, objs []looseObject, packs []string, shallow []byte) (int, error) {
	type body struct {
		f      *os.File
		off, n int64
	}
	var bodies []body
	defer func() {
		for _, b := range bodies {
			b.f.Close()
		}
	}()
	count := uint64(len(objs))
	for _, p := range packs {
		fd, err := openBeneath(up.fd, p, unix.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", esc(p), err)
		}
		f := os.NewFile(uintptr(fd), p)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
			f.Close()
			return 0, fmt.Errorf("%s: %w", esc(p), errNotRegular)
		}
		head := make([]byte, 12)
		if _, err := f.ReadAt(head, 0); err != nil || string(head[:4]) != "PACK" ||
			(binary.BigEndian.Uint32(head[4:]) != 2 && binary.BigEndian.Uint32(head[4:]) != 3) ||
			st.Size < int64(12+a.hexLen/2) {
			f.Close()
			return 0, fmt.Errorf("%s: not a pack", esc(p))
		}
		if up.bytesRead+st.Size > up.limits.Bytes {
			f.Close()
			return 0, fmt.Errorf("the total read limit of %d bytes is used up", up.limits.Bytes)
		}
		up.bytesRead += st.Size
		count += uint64(binary.BigEndian.Uint32(head[8:]))
		// The entries only: a pack's offsets are relative (an ofs-delta
		// names its base by distance back), so bodies concatenate.
		bodies = append(bodies, body{f, 12, st.Size - 12 - int64(a.hexLen/2)})
	}
	if count > 1<<32-1 {
		return 0, errors.New("too many objects")
	}
	q, cleanup, err := a.quarantine(shallow)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	args := []string{"index-pack", "--strict", "--stdin", "--fix-thin"}
	if len(packs) == 0 && count < unpackLimit {
		args = []string{"unpack-objects", "-q", "--strict"}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	werr := make(chan error, 1)
	go func() {
		err := func() error {
			bw := bufio.NewWriterSize(pw, 256<<10)
			h := newHash(a.hexLen)
			w := io.MultiWriter(bw, h)
			var head [12]byte
			copy(head[:], "PACK")
			binary.BigEndian.PutUint32(head[4:], 2)
			binary.BigEndian.PutUint32(head[8:], uint32(count))
			w.Write(head[:])
			for _, o := range objs {
				if err := writeEntry(w, up, o); err != nil {
					return err
				}
			}
			for _, b := range bodies {
				if _, err := io.Copy(w, io.NewSectionReader(b.f, b.off, b.n)); err != nil {
					return err
				}
			}
			if _, err := bw.Write(h.Sum(nil)); err != nil {
				return err
			}
			return bw.Flush()
		}()
		pw.Close()
		werr <- err
	}()
	err = runGit(args, pr, q, a.objects.fd)
	pr.Close()
	if e := <-werr; err == nil && e != nil {
		err = e
	}
	if err == nil {
		err = migrate(q, a.objects.fd)
	}
	return int(count), err
}

// migrate moves what the verifying git wrote in its own objects directory
// (beneath q) into the host's objects directory objfd, by descriptor:
// each file renamed (copied when the two are on different file systems)
// under its name with RENAME_NOREPLACE, so an object or pack the host has
// is never replaced; a pack's .idx goes last, as git only uses a pack
// once its index is there.
func migrate(q, objfd int) error {
	src, err := openDir(q, "objects")
	if err != nil {
		return err
	}
	defer unix.Close(src)
	ents, err := readDir(src, 1<<16)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Type != unix.S_IFDIR || (e.Name != "pack" && !(len(e.Name) == 2 && isHex(e.Name, 2))) {
			continue
		}
		sd, err := openDir(src, e.Name)
		if err != nil {
			return err
		}
		files, err := readDir(sd, 1<<20)
		if err != nil {
			unix.Close(sd)
			return err
		}
		sort.Slice(files, func(i, j int) bool {
			ri, rj := strings.HasSuffix(files[i].Name, ".idx"), strings.HasSuffix(files[j].Name, ".idx")
			if ri != rj {
				return rj
			}
			return files[i].Name < files[j].Name
		})
		dd, err := mkdirAll(objfd, e.Name, 0o755)
		if err != nil {
			unix.Close(sd)
			return err
		}
		for _, f := range files {
			if f.Type != unix.S_IFREG || strings.HasPrefix(f.Name, "tmp_") {
				continue
			}
			if err = moveFile(sd, dd, f.Name); err != nil {
				break
			}
		}
		unix.Close(sd)
		unix.Close(dd)
		if err != nil {
			return err
		}
	}
	return nil
}

// moveFile moves name from the directory from to the directory to,
// never replacing what is there.
func moveFile(from, to int, name string) error {
	err := unix.Renameat2(from, name, to, name, unix.RENAME_NOREPLACE)
	switch {
	case err == nil, errors.Is(err, unix.EEXIST):
		return nil // the host's own copy stays
	case !errors.Is(err, unix.EXDEV):
		return fmt.Errorf("move %s: %w", name, err)
	}
	in, err := openBeneath(from, name, unix.O_RDONLY, 0)
	if err != nil {
		return err
	}
	inf := os.NewFile(uintptr(in), name)
	defer inf.Close()
	tmp := ".jail-tmp-" + name
	out, err := openBeneath(to, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("copy %s: %w", name, err)
	}
	outf := os.NewFile(uintptr(out), tmp)
	_, err = io.Copy(outf, inf)
	if cerr := outf.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// linkat fails on an existing name: never a replacement.
		err = unix.Linkat(to, tmp, to, name, 0)
		if errors.Is(err, unix.EEXIST) {
			err = nil
		}
	}
	unix.Unlinkat(to, tmp, 0)
	if err != nil {
		return fmt.Errorf("copy %s: %w", name, err)
	}
	return nil
}

// writeEntry writes the loose object o as an undeltified pack entry.
func writeEntry(w io.Writer, up *upperTree, o looseObject) error {
	r, closeFn, err := openLoose(up, o.path, false)
	if err != nil {
		return err
	}
	defer closeFn()
	if _, _, err := looseHeader(r); err != nil {
		return err
	}
	var hdr [16]byte
	size := uint64(o.size)
	c := byte(o.typ<<4) | byte(size&15)
	size >>= 4
	n := 0
	for size > 0 {
		hdr[n] = c | 0x80
		n++
		c = byte(size & 0x7f)
		size >>= 7
	}
	hdr[n] = c
	n++
	if _, err := w.Write(hdr[:n]); err != nil {
		return err
	}
	z, _ := zlib.NewWriterLevel(w, zlib.BestSpeed)
	if _, err := io.Copy(z, io.LimitReader(r, o.size)); err != nil {
		return err
	}
	return z.Close()
}

// quarantine makes the verifying git's own git directory (HEAD, refs/,
// objects/ unused, a config jail writes, shallow) in a private directory
// no sandbox sees: the scratch directory the caller gave, or a new one in
// the temporary directory.
func (a *adopter) quarantine(shallow []byte) (int, func(), error) {
	parent := a.opt.Scratch
	var tmp string
	if parent <= 0 {
		var err error
		if tmp, err = os.MkdirTemp("", "jail-git-verify-"); err != nil {
			return -1, nil, err
		}
		if parent, err = unix.Open(tmp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
			os.Remove(tmp)
			return -1, nil, err
		}
	}
	var b [8]byte
	rand.Read(b[:])
	name := "verify-" + hex.EncodeToString(b[:])
	done := func() {
		removeTree(parent, name)
		if tmp != "" {
			unix.Close(parent)
			os.Remove(tmp)
		}
	}
	fail := func(err error) (int, func(), error) {
		done()
		return -1, nil, fmt.Errorf("make the verifying git's directory: %w", err)
	}
	if err := unix.Mkdirat(parent, name, 0o700); err != nil {
		return fail(err)
	}
	q, err := openDir(parent, name)
	if err != nil {
		return fail(err)
	}
	cfg := "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"
	if a.hexLen == 64 {
		cfg = "[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tobjectformat = sha256\n"
	}
	for _, d := range []string{"refs", "objects"} {
		if err := unix.Mkdirat(q, d, 0o700); err != nil {
			unix.Close(q)
			return fail(err)
		}
	}
	files := [][2]string{{"HEAD", "ref: refs/heads/main\n"}, {"config", cfg}}
	if len(shallow) > 0 {
		files = append(files, [2]string{"shallow", string(shallow)})
	}
	for _, f := range files {
		fd, err := openBeneath(q, f[0], unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
		if err == nil {
			_, err = unix.Write(fd, []byte(f[1]))
			unix.Close(fd)
		}
		if err != nil {
			unix.Close(q)
			return fail(err)
		}
	}
	return q, func() { unix.Close(q); done() }, nil
}

// runGit runs the system's git with args, stdin as its input, the git
// directory q (whose objects/ receives what git writes) and the host's
// object directory objfd as an alternate it only reads (both passed as
// descriptors and named by /proc/self/fd), and nothing else of the
// caller's environment: no system or global config, no $PATH lookup.
func runGit(args []string, stdin io.Reader, q, objfd int) error {
	bin := ""
	for _, b := range gitBins {
		var st unix.Stat_t
		if unix.Stat(b, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&0o111 != 0 && st.Mode&0o022 == 0 {
			bin = b
			break
		}
	}
	if bin == "" {
		return fmt.Errorf("no git in %s to verify them with", strings.Join(gitBins, ", "))
	}
	// Duplicates, closed here: the callers keep their descriptors.
	qd, err := unix.Dup(q)
	if err != nil {
		return err
	}
	qf := os.NewFile(uintptr(qd), "git-dir")
	defer qf.Close()
	od, err := unix.Dup(objfd)
	if err != nil {
		return err
	}
	of := os.NewFile(uintptr(od), "objects")
	defer of.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = stdin
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{qf, of}
	cmd.Env = []string{
		"PATH=/usr/bin:/bin", "HOME=/proc/self/fd/3", "LC_ALL=C",
		"GIT_DIR=/proc/self/fd/3", "GIT_ALTERNATE_OBJECT_DIRECTORIES=/proc/self/fd/4",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_NO_REPLACE_OBJECTS=1", "GIT_TERMINAL_PROMPT=0", "GIT_NO_LAZY_FETCH=1",
	}
	var out bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = &limitedBuffer{b: &out, max: 4 << 10}
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("git %s refused them: %s", args[0], esc(msg))
	}
	return nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		if len(p) > room {
			l.b.Write(p[:room])
		} else {
			l.b.Write(p)
		}
	}
	return len(p), nil
}

// removeTree removes name beneath dirfd and what is in it, by
// descriptor, following no symlink.
func removeTree(dirfd int, name string) {
	if unix.Unlinkat(dirfd, name, 0) == nil {
		return
	}
	fd, err := openDir(dirfd, name)
	if err != nil {
		return
	}
	ents, _ := readDir(fd, 1<<16)
	for _, e := range ents {
		if e.Type == unix.S_IFDIR {
			removeTree(fd, e.Name)
		} else {
			unix.Unlinkat(fd, e.Name, 0)
		}
	}
	unix.Close(fd)
	unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// shallowList keeps the lines of a shallow file that are object ids.
func shallowList(data []byte, hexLen int) []byte {
	var out []byte
	for _, l := range strings.Split(string(data), "\n") {
		if isHex(l, hexLen) {
			out = append(out, l+"\n"...)
		}
	}
	return out
}
