//go:build !linux

package tools

// The tools run in workers, which are Linux sandboxes. Elsewhere the tool
// contract (Tool, Result, Registry) builds, for the packages that declare
// tools (browser, desktop), and nothing runs them; these stand for the
// Linux types the contract names.

// execCtx is a worker's context for one call (files_linux.go).
type execCtx struct{}

// background are a server's background processes (background_linux.go).
type background struct{}
