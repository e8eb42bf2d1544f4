package policy

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// ErrUntrusted is a file that decides what jail allows (the user's or
// --policy file, the grants file, the approver) but that someone other
// than the caller could have written.
var ErrUntrusted = errors.New("not trusted")

// CheckTrusted refuses a file jail would trust that the caller does not
// control: it must be owned by the caller or by root, writable by neither
// group nor others, and so must every directory above it (a directory
// others may write lets them replace the file; one with the sticky bit,
// such as /tmp, does not, for a file they do not own). A symlink is
// followed and both the link's directories and the target's are checked.
// The case it exists for: under `sudo` with HOME kept, root would load
// the invoking user's ~/.config/jail/policy.toml, which that user (or
// anything running as them) may edit. A missing file is reported as
// os.ErrNotExist, unwrapped by errors.Is.
func CheckTrusted(what, path string) error {
	uid := os.Geteuid()
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(real, &st); err != nil {
		return err
	}
	if err := trustedMode(what, path, real, &st, uid, false); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, p := range []string{path, real} {
		abs, err := filepath.Abs(p)
		if err != nil {
			return err
		}
		for d := filepath.Dir(abs); !seen[d]; d = filepath.Dir(d) {
			seen[d] = true
			var ds syscall.Stat_t
			if err := syscall.Stat(d, &ds); err != nil {
				return err
			}
			if err := trustedMode(what, path, d, &ds, uid, true); err != nil {
				return err
			}
			if d == "/" {
				break
			}
		}
	}
	return nil
}

// trustedMode checks one file or directory of CheckTrusted.
func trustedMode(what, path, obj string, st *syscall.Stat_t, uid int, dir bool) error {
	kind := "it"
	if obj != path {
		kind = obj
		if dir {
			kind = "its directory " + obj
		}
	}
	if int(st.Uid) != uid && st.Uid != 0 {
		return fmt.Errorf("%s %s: %w: %s is owned by %s, not by you (%s) or root, so that user could change what jail allows; "+
			"fix: chown %d %s, or run jail with your own HOME (sudo -H) or an explicit --policy file you own",
			what, path, ErrUntrusted, kind, userName(int(st.Uid)), userName(uid), uid, obj)
	}
	writable := st.Mode&0o022 != 0
	if dir && st.Mode&syscall.S_ISVTX != 0 {
		writable = false // others may add entries, but not replace one they do not own
	}
	if writable {
		return fmt.Errorf("%s %s: %w: %s is writable by its group or others (mode %04o), so they could change what jail allows; "+
			"fix: chmod go-w %s", what, path, ErrUntrusted, kind, st.Mode&0o7777, obj)
	}
	return nil
}

// userName is "uid N (name)" for messages.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return fmt.Sprintf("uid %d (%s)", uid, u.Username)
	}
	return fmt.Sprintf("uid %d", uid)
}
