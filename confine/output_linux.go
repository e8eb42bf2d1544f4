package confine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Output is a file jail writes for the user after a sandbox ran (the
// `--json-out` result). Its directory is opened before the sandbox
// starts, and the file is written there by descriptor: a temporary file
// created with O_EXCL, then renamed over the name, so whatever the name
// holds by then (a symlink a sandbox planted to ~/.bashrc, a hard link) is
// replaced, never followed or written through. A directory that a
// writable bind of the sandbox shows is refused outright by Layout.Build
// (Layout.Outputs): the sandbox could otherwise swap the directory's
// entries while jail writes.
type Output struct {
	// What names the file in messages ("--json-out").
	What string
	// Path is where the file goes, as the user gave it.
	Path string
	dir  *os.File
	real string // the resolved directory
	base string
}

// OpenOutput opens the directory of path, for a file written later with
// Write.
func OpenOutput(what, path string) (*Output, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	base := filepath.Base(abs)
	if base == "/" || base == "." || base == ".." || path == "" || path[len(path)-1] == '/' {
		return nil, fmt.Errorf("%s %q: want a file name", what, path)
	}
	real, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return nil, fmt.Errorf("%s %s: its directory: %w", what, path, err)
	}
	fd, err := unix.Open(real, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("%s %s: open its directory: %w", what, path, err)
	}
	return &Output{What: what, Path: path, dir: os.NewFile(uintptr(fd), real), real: real, base: base}, nil
}

// Close releases the held directory.
func (o *Output) Close() error {
	if o == nil || o.dir == nil {
		return nil
	}
	return o.dir.Close()
}

// Write replaces the file with data (mode 0600), beneath the directory
// held since OpenOutput: nothing on the way is resolved again.
func (o *Output) Write(data []byte) error {
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := "." + o.base + ".jail-" + hex.EncodeToString(rnd[:]) + ".tmp"
	dfd := int(o.dir.Fd())
	how := unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_CLOEXEC | unix.O_NOFOLLOW, Mode: 0o600,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(dfd, tmp, &how)
	if err != nil {
		return fmt.Errorf("%s %s: create: %w", o.What, o.Path, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dfd, tmp, dfd, o.base)
	}
	if err != nil {
		unix.Unlinkat(dfd, tmp, 0)
		if errors.Is(err, unix.EISDIR) {
			return fmt.Errorf("%s %s: is a directory", o.What, o.Path)
		}
		return fmt.Errorf("%s %s: %w", o.What, o.Path, err)
	}
	return nil
}

// checkOutputs refuses an output whose directory a writable bind of ms
// shows: the sandbox could plant or swap names there while jail writes.
func (l *Layout) checkOutputs(ms []Mount) error {
	if len(l.Outputs) == 0 {
		return nil
	}
	mounts := readMounts()
	srcs := writableSources(ms, mounts)
	for _, o := range l.Outputs {
		if o == nil {
			continue
		}
		if vs := showing(ms, mounts, srcs, o.real); len(vs) > 0 {
			v := vs[0]
			return fmt.Errorf("%s %s lies inside the sandbox's writable bind %s (%s inside): the sandbox could replace it, or plant a symlink there, before jail writes it; write it outside every writable bind (for example under %s)",
				o.What, o.Path, v.m.Source, filepath.Join(v.m.Dest, v.rel), outputHint())
		}
	}
	return nil
}

// outputHint is a directory no sandbox writes, for the refusal's fix.
func outputHint() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return d
	}
	return os.TempDir()
}
