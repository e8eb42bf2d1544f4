//go:build linux

package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A fork bomb held at the process limit does not end: its processes retry
// their forks forever (bash backs off up to 16 s between tries), each
// process that exits replaced at once, and jail used to wait for a timeout
// (none by default) or a ^C. A build that reaches the limit fails a fork
// and carries on or fails; it does not stay full. So jail ends a sandbox
// that has been full, checked once a second, for pidsBombTicks checks in a
// row: ten seconds with no check in between below the limit.
//
// Full means, with a cgroup: its process count (pids.current, threads
// included) at least the limit less one, and a fork refused (max in
// pids.events grew) since it became full. With rlimits there is neither
// count nor refusal to read: the sandbox's processes, the entries of its
// own /proc, number at least the limit less one. RLIMIT_NPROC counts
// threads too, so there a bomb of threads is held by the limit but not
// ended.
const (
	watchInterval = time.Second // WATCH_INTERVAL_MS in jail_linux.h
	pidsBombTicks = 10          // PIDS_BOMB_TICKS in jail_linux.h
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
// outer is the host pid of the process outside its pid namespace, which
// shares its mount namespace (and so, since pid 1's pivot_root, its root).
func (w *bombWatch) tick(outer int) bool {
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
		full = int64(sandboxProcesses(outer)) >= w.pids-1
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

// sandboxProcesses counts the processes of a sandbox: the numeric entries
// of its own /proc, reached through the root of outer, a process of its
// mount namespace outside its pid namespace (pid 1 itself is not dumpable,
// so an unprivileged supervisor may not look at its root), without
// following a symlink the sandbox could have put there, and checked to be
// a procfs. -1 when it cannot be read.
func sandboxProcesses(outer int) int {
	root, err := unix.Open("/proc/"+strconv.Itoa(outer)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	defer unix.Close(root)
	fd, err := unix.Openat2(root, "proc", &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return -1
	}
	var st unix.Statfs_t
	if unix.Fstatfs(fd, &st) != nil || st.Type != unix.PROC_SUPER_MAGIC {
		unix.Close(fd)
		return -1
	}
	f := os.NewFile(uintptr(fd), "proc")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return -1
	}
	n := 0
	for _, name := range names {
		if name[0] >= '0' && name[0] <= '9' {
			n++
		}
	}
	return n
}

// startWatch arms the watch once the command runs; each check re-arms the
// next until the sandbox has ended (Wait stops it).
func (c *Cmd) startWatch() {
	if c.Limits.Pids <= 0 {
		return
	}
	w := &bombWatch{cg: c.cg, pids: c.Limits.Pids}
	outer := c.proc.pid
	if c.cg.method == LimitCgroup1 || c.cg.method == LimitCgroup2 {
		w.lastMax = c.cg.pidsRefused()
	}
	var check func()
	check = func() {
		c.mu.Lock()
		exited := c.exited
		c.mu.Unlock()
		if exited {
			return
		}
		end := w.tick(outer)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.exited {
			return
		}
		if end {
			c.pidsEnded = true
			c.killLocked()
			return
		}
		c.watch = time.AfterFunc(watchInterval, check)
	}
	c.mu.Lock()
	c.watch = time.AfterFunc(watchInterval, check)
	c.mu.Unlock()
}

// stopWatch ends the checks; called once the sandbox has ended.
func (c *Cmd) stopWatch() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watch != nil {
		c.watch.Stop()
	}
}

// PidsEndedMessage is the line jail prints for a sandbox it ended at its
// process limit (the cached run prints the same: fast_linux.c).
func PidsEndedMessage(pids int64) string {
	return fmt.Sprintf("jail: the sandbox stayed at its process limit (%d) for %ds, its forks failing all along (a fork bomb): jail ended it (--pids, [limits] pids)", pids, pidsBombTicks*int(watchInterval/time.Second))
}
