package browser

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// saveArtifact writes data to a new file under dir (relative to the workspace, e.g.
// ".jail/desktop/screenshots"), named with the time, a counter and ext, and returns where
// and its hash. Sandboxes can write the workspace, so every step is by descriptor beneath
// the workspace's: each directory is made with mkdirat and opened with openat2
// (RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), and the file is created O_EXCL, so a symlink or a
// file planted anywhere on the way, or swapped in while this runs, makes it fail or pick
// another name, never write elsewhere.
func saveArtifact(workspace, dir, ext string, data []byte) (Artifact, error) {
	ws, err := unix.Open(workspace, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Artifact{}, fmt.Errorf("save %s: open the workspace %s: %w", ext, workspace, err)
	}
	defer unix.Close(ws)
	cur := ws
	defer func() {
		if cur != ws {
			unix.Close(cur)
		}
	}()
	clean := filepath.Clean(dir)
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return Artifact{}, fmt.Errorf("save %s: %q is not a directory inside the workspace", ext, dir)
	}
	how := func(flags uint64, mode uint64) *unix.OpenHow {
		return &unix.OpenHow{Flags: flags | unix.O_CLOEXEC | unix.O_NOFOLLOW, Mode: mode,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	}
	for _, name := range strings.Split(clean, "/") {
		if err := unix.Mkdirat(cur, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return Artifact{}, fmt.Errorf("save %s: make %s: %w", ext, name, err)
		}
		next, err := unix.Openat2(cur, name, how(unix.O_DIRECTORY|unix.O_RDONLY, 0))
		if err != nil {
			return Artifact{}, fmt.Errorf("save %s: open %s beneath the workspace (a symlink there is refused): %w", ext, name, err)
		}
		if cur != ws {
			unix.Close(cur)
		}
		cur = next
	}
	stamp := time.Now().UTC().Format("20060102-150405.000")
	for i := 0; i < 100; i++ {
		name := fmt.Sprintf("%s-%s%s", strings.ReplaceAll(stamp, ".", "-"), randomSuffix(), ext)
		fd, err := unix.Openat2(cur, name, how(unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o644))
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return Artifact{}, fmt.Errorf("save %s: create %s: %w", ext, name, err)
		}
		werr := writeAll(fd, data)
		if cerr := unix.Close(fd); werr == nil {
			werr = cerr
		}
		if werr != nil {
			unix.Unlinkat(cur, name, 0)
			return Artifact{}, fmt.Errorf("save %s: write %s: %w", ext, name, werr)
		}
		sum := sha256.Sum256(data)
		return Artifact{Path: filepath.Join(clean, name), SHA256: hex.EncodeToString(sum[:]), Size: len(data)}, nil
	}
	return Artifact{}, fmt.Errorf("save %s: no free name in %s", ext, clean)
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return err
		}
		b = b[n:]
	}
	return nil
}

func randomSuffix() string {
	b := make([]byte, 3)
	rand.Read(b)
	return hex.EncodeToString(b)
}
