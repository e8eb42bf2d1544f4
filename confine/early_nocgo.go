//go:build linux && !cgo

package confine

import "os"

// earlyFlags: without cgo there is no constructor and so no early child.
const earlyFlags = 0

type early struct {
	pid                  int
	plan, status, socket *os.File
}

func takeEarly() (early, bool) { return early{}, false }

func zygoteFork([]*os.File) (int, bool, error) { return 0, false, nil }
