//go:build !linux || !cgo

package confine

// SeccompOptions adjusts the default filter (see the cgo build).
type SeccompOptions struct {
	Deny   []string
	Allow  []string
	Ptrace bool
}

// CompileSeccomp needs libseccomp through cgo; without it jail cannot build
// a filter and says so rather than running unfiltered.
func CompileSeccomp(opts SeccompOptions) ([]Program, error) {
	return nil, ErrUnsupported
}
