//go:build linux && cgo

package confine

/*
#include <stdlib.h>
#include "census_linux.h"
*/
import "C"

import (
	"sync"
	"unsafe"
)

// census is one look at a running sandbox (census_linux.c, shared with
// the plan cache's run): its tasks, and the memory it holds by kind.
type census struct {
	Processes, Tasks, Fds                   int64
	Anon, Shmem, FdShm, Tmpfs, Files, Total uint64
	Precise                                 bool
}

// What a census looks at (JAIL_CENSUS_* in census_linux.h).
const (
	censusTasks   = C.JAIL_CENSUS_TASKS
	censusMemory  = C.JAIL_CENSUS_MEMORY
	censusPrecise = C.JAIL_CENSUS_PRECISE
)

// censusState is what the census of one sandbox keeps between checks (its
// tmpfs mounts, held open); close releases it, also while a check runs.
type censusState struct {
	mu sync.Mutex
	p  *C.struct_jail_census_state
}

func newCensusState() *censusState {
	return &censusState{p: (*C.struct_jail_census_state)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_jail_census_state{}))))}
}

// take counts the sandbox whose outer process is outer, skipping what
// could only add past limit (0: none); ok is false when its /proc could
// not be read.
func (s *censusState) take(outer int, what int, limit int64) (c census, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r C.struct_jail_census
	if s.p == nil || C.jail_census(C.int(outer), C.int(what), C.uint64_t(max(limit, 0)), s.p, &r) != 0 {
		return census{Processes: -1}, false
	}
	return census{
		Processes: int64(r.processes), Tasks: int64(r.tasks), Fds: int64(r.fds),
		Anon: uint64(r.anon), Shmem: uint64(r.shmem), FdShm: uint64(r.fdshm), Tmpfs: uint64(r.tmpfs), Files: uint64(r.files),
		Total: uint64(C.jail_census_total(&r)), Precise: r.precise != 0,
	}, true
}

func (s *censusState) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p != nil {
		C.jail_census_end(s.p)
		C.free(unsafe.Pointer(s.p))
		s.p = nil
	}
}
