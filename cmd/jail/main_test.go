//go:build linux

package main

import (
	"os"
	"testing"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/launch"
	"github.com/jail-sandbox/jail/tools"
)

// TestMain lets this test binary stand in for the jail binary where tests
// start real tool workers (newToolServer binds os.Executable into each
// worker's sandbox): started as a sandbox's init or as the hidden worker
// command, it does what main does.
func TestMain(m *testing.M) {
	if confine.IsChild() {
		confine.ChildMain()
	}
	if len(os.Args) == 2 && os.Args[1] == launch.WorkerCommand {
		os.Exit(tools.WorkerMain(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}
