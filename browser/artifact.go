package browser

// Artifact is a file a Docker-backed tool saved in the workspace (a screenshot).
type Artifact struct {
	Path   string // relative to the workspace
	SHA256 string // of the bytes written
	Size   int
}
