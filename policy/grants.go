package policy

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
)

// SaveGrant adds g to the persistent grants file at path (approval.grants_file), so a human's
// "always" answer holds for later sessions. The file is changed through a descriptor of its
// directory, never by a path walked twice: the directory is opened once (os.Root, which
// refuses a name that leads out of it), the file is read without following a symlink, and the
// new content is written to a fresh temporary file in the same directory and renamed over
// the old one, so a reader sees the old list or the new one and never half of either. The
// file keeps its mode (0600 when it is new). An exclusive lock on the directory serialises
// two jail processes remembering at once, so neither loses the other's grant.
func SaveGrant(path string, g Grant) error {
	if path == "" {
		return errors.New("grants: no approval.grants_file to save to")
	}
	dir, name := filepath.Split(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("grants: create %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("grants: open %s: %w", dir, err)
	}
	defer root.Close()
	d, err := root.Open(".")
	if err != nil {
		return fmt.Errorf("grants: open %s: %w", dir, err)
	}
	defer d.Close()
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("grants: lock %s: %w", dir, err)
	}
	defer syscall.Flock(int(d.Fd()), syscall.LOCK_UN)

	var grants []Grant
	mode := fs.FileMode(0o600)
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("grants: open %s (a symlink is not followed): %w", path, err)
	default:
		st, err := f.Stat()
		if err == nil && !st.Mode().IsRegular() {
			err = fmt.Errorf("not a regular file (%s)", st.Mode().Type())
		}
		var b []byte
		if err == nil {
			mode = st.Mode().Perm()
			b, err = io.ReadAll(f)
		}
		f.Close()
		if err == nil && len(b) > 0 {
			err = json.Unmarshal(b, &grants)
		}
		if err != nil {
			return fmt.Errorf("grants: read %s: %w", path, err)
		}
	}
	if slices.Contains(grants, g) {
		return nil
	}
	b, err := json.MarshalIndent(append(grants, g), "", "  ")
	if err != nil {
		return fmt.Errorf("grants: encode: %w", err)
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := "." + name + ".tmp-" + hex.EncodeToString(rnd[:])
	t, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return fmt.Errorf("grants: create a temporary file in %s: %w", dir, err)
	}
	_, err = t.Write(append(b, '\n'))
	if err == nil {
		err = t.Chmod(mode) // the umask narrowed the creation mode
	}
	if err == nil {
		err = t.Sync()
	}
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
		return fmt.Errorf("grants: write %s: %w", path, err)
	}
	if err := d.Sync(); err != nil {
		return fmt.Errorf("grants: sync %s: %w", dir, err)
	}
	return nil
}

// remembered are the grants a human gave with "always" during this process. They are shared
// by every copy of a [Gate] (front ends copy the gate per call), so the answer holds for the
// next call of the session whether or not it also reached the grants file.
type remembered struct {
	mu     sync.Mutex
	grants []Grant
}

func (r *remembered) add(g Grant) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.grants = append(r.grants, g)
}

func (r *remembered) list() []Grant {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.grants)
}
