//go:build !linux

package container

import (
	"fmt"
	"os"
)

// InitCommand is argv[1] of jail's init inside a container.
const InitCommand = "__container-init"

// InitMain runs only inside a Linux container.
func InitMain(args []string) int {
	fmt.Fprintln(os.Stderr, "jail init: runs only inside a Linux container")
	return 1
}
