package gitstate

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Take records the state of the git directory gitdirFD (a held
// descriptor of the host's .git, which Take does not close).
func Take(gitdirFD int) (*Snapshot, error) {
	s := &Snapshot{}
	data, _, err := readFile(gitdirFD, "config", maxConfigFile, false)
	switch {
	case errors.Is(err, unix.ENOENT):
	case err != nil:
		return nil, fmt.Errorf("gitstate: take: read config: %w", err)
	default:
		s.Config, s.HasConfig, s.ConfigHash = data, true, sha256.Sum256(data)
	}
	var cfg *Config
	if s.HasConfig {
		if cfg, err = ParseConfig(data); err != nil {
			return nil, fmt.Errorf("gitstate: take: config: %w", err)
		}
	}
	format, hexLen, err := objectFormat(cfg)
	if err != nil {
		return nil, fmt.Errorf("gitstate: take: %w", err)
	}
	s.ObjectFormat = format
	rs := &refStore{fd: gitdirFD, hexLen: hexLen}
	if s.Loose, s.Packed, err = rs.layers(); err != nil {
		return nil, fmt.Errorf("gitstate: take: refs: %w", err)
	}
	if s.Index, err = fileID(gitdirFD, "index"); err != nil {
		return nil, fmt.Errorf("gitstate: take: index: %w", err)
	}
	return s, nil
}

// fileID reads name beneath dirfd and identifies it; an absent file gives
// a zero FileID.
func fileID(dirfd int, name string) (FileID, error) {
	data, fi, err := readFile(dirfd, name, maxIndexFile, false)
	if errors.Is(err, unix.ENOENT) {
		return FileID{}, nil
	}
	if err != nil {
		return FileID{}, err
	}
	return FileID{Present: true, Dev: fi.Dev, Ino: fi.Ino, Size: fi.Size, Mtime: fi.Mtime, Hash: sha256.Sum256(data)}, nil
}

// ReadConfig parses the config file open as fd (read from its current
// offset; fd is not closed). Includes are listed, not followed.
func ReadConfig(fd int) (*Config, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("gitstate: read config: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("gitstate: read config: %w", errNotRegular)
	}
	if st.Size > maxConfigFile {
		return nil, fmt.Errorf("gitstate: read config: %d bytes, %w of %d", st.Size, errTooLarge, maxConfigFile)
	}
	buf := make([]byte, 0, st.Size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("gitstate: read config: %w", err)
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
		if len(buf) > maxConfigFile {
			return nil, fmt.Errorf("gitstate: read config: %w of %d bytes", errTooLarge, maxConfigFile)
		}
	}
	c, err := ParseConfig(buf)
	if err != nil {
		return nil, fmt.Errorf("gitstate: read config: %w", err)
	}
	return c, nil
}

// TakeInputs lists, relative to the git directory gitdirFD, every file
// Take reads there: config, packed-refs, index, the pseudo-refs (present
// or not), refs/ and every entry beneath it. A snapshot taken again can
// differ only where one of them changed (its inode, size, mode or times;
// a directory's times move when an entry is added, removed or renamed).
// ok is false past max entries, or when refs/ cannot be listed. The plan
// cache keeps a repository's launch state as long as they are unchanged
// (package gitview).
func TakeInputs(gitdirFD int, max int) (paths []string, ok bool) {
	paths = append([]string{"config", "packed-refs", "index"}, pseudoRefs...)
	paths = append(paths, "refs")
	var walk func(dirfd int, prefix string) bool
	walk = func(dirfd int, prefix string) bool {
		ents, err := readDir(dirfd, max)
		if err != nil {
			return false
		}
		for _, e := range ents {
			name := prefix + "/" + e.Name
			if paths = append(paths, name); len(paths) > max {
				return false
			}
			if e.Type == unix.S_IFDIR {
				sub, err := openDir(dirfd, e.Name)
				if err != nil {
					return false
				}
				ok := walk(sub, name)
				unix.Close(sub)
				if !ok {
					return false
				}
			}
		}
		return true
	}
	rfd, err := openDir(gitdirFD, "refs")
	if errors.Is(err, unix.ENOENT) {
		return paths, true
	}
	if err != nil {
		return nil, false
	}
	defer unix.Close(rfd)
	if !walk(rfd, "refs") {
		return nil, false
	}
	return paths, true
}
