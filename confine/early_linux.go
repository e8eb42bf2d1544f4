//go:build linux && cgo

package confine

/*
#define _GNU_SOURCE
#include "early_linux.h"
*/
import "C"

import "os"

// earlyFlags are the namespaces an early child has (JAIL_EARLY_FLAGS).
const earlyFlags = uint64(C.JAIL_EARLY_FLAGS)

// early is the sandbox init that child_linux.c forked for `jail run` before
// the Go runtime started, with the supervisor's ends of its pipes.
type early struct {
	pid                  int
	plan, status, socket *os.File
}

// takeEarly hands over the early child, once per process; ok is false when
// there is none.
func takeEarly() (e early, ok bool) {
	var c C.struct_jail_early
	if C.jail_take_early(&c) == 0 {
		return early{}, false
	}
	return early{
		pid:    int(c.pid),
		plan:   os.NewFile(uintptr(c.plan), "plan"),
		status: os.NewFile(uintptr(c.status), "status"),
		socket: os.NewFile(uintptr(c.sock), "sockets"),
	}, true
}
