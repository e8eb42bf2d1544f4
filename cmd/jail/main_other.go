//go:build !linux

// Command jail runs commands and AI agents' tool calls inside a sandbox
// made of Linux namespaces, Landlock and seccomp. On other systems it
// only says so: every layer it is made of is a Linux kernel feature.
package main

import (
	"fmt"
	"os"
	"runtime"
)

func main() {
	fmt.Fprintf(os.Stderr, "jail: the sandbox is made of Linux namespaces, Landlock and seccomp; this build is for %s, where none of them exist\n", runtime.GOOS)
	os.Exit(125)
}
