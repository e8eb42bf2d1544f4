//go:build linux

package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A fork bomb held at the process limit does not end: its processes retry
// their forks forever (bash backs off up to 16 s between tries), each
// process that exits replaced at once, and jail used to wait for a timeout
// (none by default) or a ^C. A build that reaches the limit fails a fork
// and carries on or fails; it does not stay full. So jail ends a sandbox
// that has been full, checked once a second, for pidsBombTicks checks in a
// row: ten seconds with no check in between below the limit.
//
// Full means, with a cgroup: its task count (pids.current, threads
// included) at least the limit less one, and a fork refused (max in
// pids.events grew) since it became full. With rlimits there is neither
// count nor refusal to read: the sandbox's tasks (threads of every process
// of its own /proc, the census) number at least the limit less one.
// RLIMIT_NPROC counts threads, so a bomb of threads is held there and
// ended like one of processes.
//
// Memory, with rlimits: RLIMIT_DATA is per process and blind to shared
// memory, tmpfs and memfd files, and the default bound sets no rlimit at
// all (it would break what reserves address space it never touches). So
// every memWatchInterval the census sums what the sandbox holds
// (census_linux.c), and a sandbox above its bound is ended at once: the
// kernel's OOM killer would have killed in its cgroup; there is none.
const (
	watchInterval    = time.Second            // WATCH_INTERVAL_MS in jail_linux.h
	pidsBombTicks    = 10                     // PIDS_BOMB_TICKS in jail_linux.h
	memWatchInterval = 250 * time.Millisecond // MEM_WATCH_INTERVAL_MS in jail_linux.h
)

// bombWatch follows one sandbox's process limit, one check a second.
type bombWatch struct {
	cg      *cgroup
	pids    int64
	lastMax int64 // pids.events max at the last check (cgroup)
	held    int   // checks in a row the sandbox was full
	refused bool  // a fork was refused while it was (cgroup)
}

// tick reports whether the sandbox has been full long enough to be ended.
// tasks is the census's count of the sandbox's tasks (rlimits), -1 when
// it could not be read.
func (w *bombWatch) tick(tasks int64) bool {
	if w.pids <= 0 {
		return false
	}
	full := false
	switch w.cg.method {
	case LimitCgroup1, LimitCgroup2:
		n := w.cg.pidsRefused()
		full = w.cg.pidsCurrent() >= w.pids-1
		w.refused = full && (w.refused || n > w.lastMax)
		w.lastMax = n
	case LimitRLimit:
		full = tasks >= 0 && tasks >= w.pids-1
		w.refused = full
	}
	if !full {
		w.held = 0
		return false
	}
	w.held++
	return w.held >= pidsBombTicks && w.refused
}

// pidsCurrent is the cgroup's process count (pids.current, v1 and v2).
func (cg *cgroup) pidsCurrent() int64 {
	for _, d := range cg.dirs {
		if cg.method == LimitCgroup2 || strings.HasPrefix(d, "/sys/fs/cgroup/pids/") {
			b, err := os.ReadFile(filepath.Join(d, "pids.current"))
			if err != nil {
				return 0
			}
			n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			return n
		}
	}
	return 0
}

// pidsRefused is the count of forks the process limit refused so far
// (max in pids.events, v1 and v2).
func (cg *cgroup) pidsRefused() int64 {
	for _, d := range cg.dirs {
		if cg.method == LimitCgroup2 || strings.HasPrefix(d, "/sys/fs/cgroup/pids/") {
			return eventCount(filepath.Join(d, "pids.events"), "max")
		}
	}
	return 0
}

// memOver reports whether a census found the sandbox above its memory
// bound, taking the precise census (shared pages divided among their
// processes) before it says so: the quick one counts a page once per
// process that maps it.
func memOver(st *censusState, outer int, limit int64, quick census) (census, bool) {
	if limit <= 0 || quick.Processes < 0 || quick.Total <= uint64(limit) {
		return quick, false
	}
	precise, ok := st.take(outer, censusMemory|censusPrecise, limit)
	if !ok {
		return quick, true
	}
	return precise, precise.Total > uint64(limit)
}

// startWatch arms the watch once the command runs; each check re-arms the
// next until the sandbox has ended (Wait stops it).
func (c *Cmd) startWatch() {
	memLimit := int64(0)
	if c.cg.method == LimitRLimit {
		memLimit = c.Limits.MemoryBytes
	}
	if c.Limits.Pids <= 0 && memLimit <= 0 {
		return
	}
	w := &bombWatch{cg: c.cg, pids: c.Limits.Pids}
	outer := c.proc.pid
	if c.cg.method == LimitCgroup1 || c.cg.method == LimitCgroup2 {
		w.lastMax = c.cg.pidsRefused()
	}
	st := newCensusState()
	c.census = st
	// The tasks once a second (watchInterval); the memory, with rlimits,
	// every memWatchInterval, or four times as long as a census took, so a
	// sandbox of a million descriptors cannot keep its supervisor counting.
	start := time.Now()
	nextPids, nextMem := start.Add(watchInterval), start.Add(memWatchInterval)
	wake := func() time.Duration {
		next := nextPids
		if memLimit > 0 && (w.pids <= 0 || nextMem.Before(next)) {
			next = nextMem
		}
		return max(time.Until(next), 0)
	}
	var check func()
	check = func() {
		c.mu.Lock()
		exited := c.exited
		c.mu.Unlock()
		if exited {
			return
		}
		now := time.Now()
		pidsTick := w.pids > 0 && !now.Before(nextPids)
		memTick := memLimit > 0 && !now.Before(nextMem)
		what := 0
		if pidsTick && c.cg.method == LimitRLimit {
			what |= censusTasks
		}
		if memTick {
			what |= censusMemory
		}
		var cs census
		if what != 0 {
			cs, _ = st.take(outer, what, memLimit)
		}
		memEnd := false
		if memTick {
			cs, memEnd = memOver(st, outer, memLimit, cs)
			nextMem = time.Now().Add(max(memWatchInterval, 4*time.Since(now)))
		}
		end := false
		if pidsTick {
			tasks := cs.Tasks
			if cs.Processes < 0 {
				tasks = -1
			}
			end = w.tick(tasks)
			nextPids = now.Add(watchInterval)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.exited {
			return
		}
		if memEnd {
			c.memEnded, c.memSeen = true, cs
			c.killLocked()
			return
		}
		if end {
			c.pidsEnded = true
			c.killLocked()
			return
		}
		c.watch = time.AfterFunc(wake(), check)
	}
	c.mu.Lock()
	c.watch = time.AfterFunc(wake(), check)
	c.mu.Unlock()
}

// stopWatch ends the checks; called once the sandbox has ended.
func (c *Cmd) stopWatch() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watch != nil {
		c.watch.Stop()
	}
	if c.census != nil {
		c.census.close()
		c.census = nil
	}
}

// PidsEndedMessage is the line jail prints for a sandbox it ended at its
// process limit (the cached run prints the same: fast_linux.c).
func PidsEndedMessage(pids int64) string {
	return fmt.Sprintf("jail: the sandbox stayed at its process limit (%d) for %ds, its forks failing all along (a fork or thread bomb): jail ended it (--pids, [limits] pids)", pids, pidsBombTicks*int(watchInterval/time.Second))
}

// MemoryEndedMessage is the line jail prints for a sandbox it ended above
// its memory bound (the rlimit fallback's census; the cached run prints
// the same: fast_linux.c), with what the census found, in MiB rounded up.
func MemoryEndedMessage(limit int64, m MemoryUse) string {
	mib := func(b uint64) uint64 { return (b + 1<<20 - 1) >> 20 }
	return fmt.Sprintf("jail: the sandbox held %dM of memory, above its limit (%s): jail ended it (--memory, [limits] memory); processes %dM, shared memory %dM, memory files %dM, tmpfs %dM, descriptors, pipes and sockets %dM",
		mib(m.Total), FormatSize(limit), mib(m.Anon), mib(m.Shmem), mib(m.FdShm), mib(m.Tmpfs), mib(m.Files))
}

// MemoryUse is what the census found a sandbox held when jail ended it
// above its memory bound, in bytes (census_linux.c says what each counts).
type MemoryUse struct {
	Total, Anon, Shmem, FdShm, Tmpfs, Files uint64
}
