//go:build linux && cgo

package confine

// The sandbox's init is the constructor in child_linux.c. This file's
// import of C (with an empty preamble) is what makes the go command
// compile and link that file.

import "C"
