// The census of a running sandbox (census_linux.c): how many tasks it has
// and how much memory it holds, read by the supervisor from outside. The
// plan cache's run (fast_linux.c) and the Go supervisor (watch_linux.go,
// through cgo) call the same code, so the two launch paths end a bomb on
// the same figures.

#ifndef JAIL_CENSUS_LINUX_H
#define JAIL_CENSUS_LINUX_H

#include <stdint.h>

#define JAIL_CENSUS_MAX_TMPFS 16
#define JAIL_CENSUS_FD_COST 256 // bytes a descriptor slot is counted as
#define JAIL_CENSUS_TASK_COST 20480 // bytes a thread is counted as (its kernel stack, 16 KiB, and task)
#define JAIL_CENSUS_INODE_COST 1024 // bytes a tmpfs inode is counted as (inode and dentry: about 1 KiB)

// jail_census_state is what a census keeps between checks of one sandbox:
// its own tmpfs mounts, found once (a sandbox cannot mount), held by
// O_PATH descriptors. Zero it before the first census; jail_census_end
// closes it.
struct jail_census_state {
	int found;                            // the mounts were looked for
	int ntmpfs;
	int tmpfs[JAIL_CENSUS_MAX_TMPFS];     // O_PATH descriptors of their roots
	uint64_t tmpfs_dev[JAIL_CENSUS_MAX_TMPFS];
};

// jail_census is one look at a sandbox. Every byte figure is what the
// sandbox holds of the machine's memory, counted so that it is never less
// than the truth for what it covers (census_linux.c says what that is).
struct jail_census {
	int64_t processes;  // -1: the sandbox's /proc could not be read
	int64_t tasks;      // threads of all its processes
	uint64_t anon;      // private memory of its processes (resident and swapped), page tables, threads' kernel stacks
	uint64_t shmem;     // shared memory its processes map (MAP_SHARED, memfd, SysV, tmpfs files)
	uint64_t fdshm;     // memory files held by a descriptor and counted once (memfd written, never mapped)
	uint64_t tmpfs;     // what its own tmpfs mounts hold (/tmp, /var/tmp, /dev/shm, an empty home)
	uint64_t files;     // its descriptors' kernel objects, pipes' and sockets' buffers at their capacity
	int64_t fds;        // its descriptors
	int precise;        // shared pages were divided among their processes (smaps_rollup)
};

// What a census looks at.
#define JAIL_CENSUS_TASKS 1
#define JAIL_CENSUS_MEMORY 2
#define JAIL_CENSUS_PRECISE 4 // proportional shares (smaps_rollup): slower, never more than the quick figure

// jail_census looks at the sandbox whose outer process (the one outside its
// pid namespace, in its mount namespace) is outer. Past limit (0: none) it
// skips what could only add (its descriptors' walk). It returns 0, or -1
// when the sandbox's /proc could not be read (c->processes is -1 then).
int jail_census(int outer, int what, uint64_t limit, struct jail_census_state *st, struct jail_census *c);

// jail_census_total is the sum the memory bound is held to.
uint64_t jail_census_total(const struct jail_census *c);

// jail_census_end closes what the state holds.
void jail_census_end(struct jail_census_state *st);

#endif
