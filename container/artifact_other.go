//go:build !linux

package container

import "errors"

// Artifact is a file a Docker-backed tool saved in the workspace (a screenshot).
type Artifact struct {
	Path   string
	SHA256 string
	Size   int
}

// SaveArtifact writes by descriptor with openat2, which only Linux has.
func SaveArtifact(workspace, dir, ext string, data []byte) (Artifact, error) {
	return Artifact{}, errors.New("save: the Docker-backed tools run on Linux only")
}
