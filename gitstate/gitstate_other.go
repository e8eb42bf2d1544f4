//go:build !linux

package gitstate

import "errors"

// ErrUnsupported is returned on systems without openat2: adoption reads
// and writes only through descriptors resolved by the kernel beneath a
// held directory, which needs Linux 5.6 or later.
var ErrUnsupported = errors.New("gitstate: needs Linux (openat2)")

// Take is unsupported off Linux.
func Take(gitdirFD int) (*Snapshot, error) { return nil, ErrUnsupported }

// Adopt is unsupported off Linux.
func Adopt(gitdirFD, upperFD int, base *Snapshot, opt Options) (*Report, error) {
	return nil, ErrUnsupported
}

// ReadConfig is unsupported off Linux.
func ReadConfig(fd int) (*Config, error) { return nil, ErrUnsupported }

// AdoptNew is unsupported off Linux.
func AdoptNew(gitdirFD, srcFD int, opt Options) (*Report, error) { return nil, ErrUnsupported }
