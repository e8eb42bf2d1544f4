//go:build !linux

package browser

import (
	"errors"
	"runtime"
)

// errNotLinux is what the agents' profile directories are elsewhere: they are
// made by descriptor with Linux's openat2 (profile_linux.go).
var errNotLinux = errors.New("browser: the profile directory is made by descriptor with openat2, a Linux call; not on " + runtime.GOOS)

func makeProfile(state, name string) error { return errNotLinux }
