// Package fence holds the repository's structural tests and nothing else:
// the dependency fences between packages (confine never imports policy,
// netns, tools or gitstate; policy never imports confinement, Docker or
// browser code, and nothing outside TOML and shell parsing; netns stays
// independent of both; tools, gitstate and gitview reach no command,
// Docker or browser code; the integration tests import nothing of the module but
// internal/testutil, which imports nothing of it), the rule that every
// fenced package exists, the rule that every package has exactly one
// doc comment, and that the module vets on the other systems the fences
// look at (darwin: Linux-only packages are their doc comment there). They run with `go test ./...` and shell out to `go list`,
// so they see the build exactly as the go command does, build tags and
// all. ARCHITECTURE.md draws the same map.
package fence
