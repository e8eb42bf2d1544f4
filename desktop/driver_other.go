//go:build !linux

package desktop

import (
	"fmt"
	"os"
)

// DriverMain runs only inside the Linux desktop container.
func DriverMain(args []string) int {
	fmt.Fprintln(os.Stderr, "desktop driver: runs only inside a Linux container")
	return 1
}
