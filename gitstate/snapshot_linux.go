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
