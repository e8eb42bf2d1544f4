// Package fence holds the repository's structural tests and nothing else:
// the dependency fences between packages (confine never imports policy,
// netns or the tool packages; policy never imports confinement, Docker or
// browser code; netns stays independent of both) and the rule that every
// package has exactly one doc comment. They run with `go test ./...` and
// shell out to `go list`, so they see the build exactly as the go command
// does, build tags and all.
package fence
