//go:build !linux

package browser

import (
	"errors"
	"runtime"
)

// errNotLinux is what the browser's files are elsewhere: they are made by
// descriptor with Linux's openat2 (profile_linux.go, artifact_linux.go).
var errNotLinux = errors.New("browser: the profile and artifact files are made by descriptor with openat2, a Linux call; not on " + runtime.GOOS)

func makeProfile(state, name string) error { return errNotLinux }

func saveArtifact(workspace, dir, ext string, data []byte) (Artifact, error) {
	return Artifact{}, errNotLinux
}
