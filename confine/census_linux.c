// The census of a running sandbox: its tasks and its memory, read from
// outside (census_linux.h). Where jail has no cgroup (the rlimit fallback),
// the kernel counts neither for the sandbox as a whole: RLIMIT_NPROC holds
// threads at the limit without saying so, and RLIMIT_DATA is per process
// and blind to shared memory. So the supervisor counts, once a check, and
// ends a sandbox over its bound (watch_linux.go, fast_linux.c).
//
// What is counted, each part never less than what it covers:
//
//   - each process's private memory: RssAnon + VmSwap of its status
//     (quick), or Pss_Anon + SwapPss of smaps_rollup (precise: pages
//     shared after a fork divided among the sharers); and its page tables
//     (VmPTE), huge pages (HugetlbPages) and each thread's kernel stack
//     and task at JAIL_CENSUS_TASK_COST;
//   - the shared memory each maps: RssShmem (quick) or Pss_Shmem (precise):
//     MAP_SHARED|MAP_ANONYMOUS, memfd and SysV segments, tmpfs files;
//   - memory files held by a descriptor, once per file, at their allocated
//     size: a memfd written (write, ftruncate, fallocate) and never mapped;
//   - what each tmpfs mount of the sandbox's own holds (statfs): /tmp,
//     /var/tmp, /dev/shm, an empty home: its blocks, and each of its
//     inodes at JAIL_CENSUS_INODE_COST (a million empty files hold a
//     gigabyte of the kernel's memory and no block);
//   - each slot of its descriptor table at JAIL_CENSUS_FD_COST (the
//     kernel's file objects: a descriptor bomb), each pipe and socket at
//     the kernel's default capacity, or, if more, a pipe at its capacity
//     (F_SETPIPE_SZ raises it) and a socket at what it holds (SO_MEMINFO),
//     read from a copy of its descriptor (measure_sockets).
//
// A page can be counted twice (a tmpfs file or a held memfd that is also
// mapped), never not at all, except what no process's descriptors or
// mappings reach: descriptors in flight in a unix socket's queue, a SysV
// segment no process attaches (docs/limits.md). The
// sandbox's own /proc is read through the root of the process outside its
// pid namespace, by descriptor, checked to be a procfs (a sandbox cannot
// mount: seccomp), as sandboxProcesses did.

//go:build linux && cgo

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <linux/magic.h>
#include <unistd.h>

#include "census_linux.h"

#ifndef SECRETMEM_MAGIC
#define SECRETMEM_MAGIC 0x5345434d
#endif

// Descriptors seen in one census: a file, pipe or socket is counted once
// however many descriptors (or processes) hold it. Past the table's size
// each is counted again: more, never less.
#define SEEN_SLOTS 8192

struct seen {
	uint64_t key[SEEN_SLOTS];
	int n;
};

static int seen_add(struct seen *s, uint64_t dev, uint64_t ino) {
	uint64_t k = (ino * 0x9E3779B97F4A7C15ULL) ^ (dev + 1);
	if (k == 0) k = 1;
	if (s->n >= SEEN_SLOTS / 2) return 1;
	for (uint32_t i = (uint32_t)(k >> 40) % SEEN_SLOTS;; i = (i + 1) % SEEN_SLOTS) {
		if (s->key[i] == k) return 0;
		if (s->key[i] == 0) {
			s->key[i] = k;
			s->n++;
			return 1;
		}
	}
}

// open_beneath opens path beneath dir without following any symlink.
static int open_beneath(int dir, const char *path, uint64_t flags) {
	// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
	struct { uint64_t flags, mode, resolve; } how = {flags | O_CLOEXEC, 0, 0x08 | 0x04 | 0x02};
	return (int)syscall(437 /* openat2 */, dir, path, &how, sizeof(how));
}

static int open_root(int outer) {
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/root", outer);
	return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

// read_at reads up to n-1 bytes of dir/name, NUL-terminated; -1 if it cannot.
static ssize_t read_at(int dir, const char *name, char *buf, size_t n) {
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) return -1;
	size_t have = 0;
	for (;;) {
		ssize_t k = read(fd, buf + have, n - 1 - have);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) break;
		have += (size_t)k;
		if (have == n - 1) break;
	}
	close(fd);
	buf[have] = 0;
	return (ssize_t)have;
}

// field is the number after "key:" at the start of a line of text (in kB
// for memory), or 0.
static uint64_t field(const char *text, const char *key) {
	size_t kl = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, kl) && p[kl] == ':') return strtoull(p + kl + 1, NULL, 10);
	return 0;
}

// shm_dev is the device of the kernel's internal tmpfs, where memfd files
// and MAP_SHARED|MAP_ANONYMOUS objects live.
static uint64_t shm_dev(void) {
	static uint64_t dev; // dev + 1 once known; the same for every caller
	uint64_t d = __atomic_load_n(&dev, __ATOMIC_RELAXED);
	if (!d) {
		int fd = (int)syscall(SYS_memfd_create, "jail-census", MFD_CLOEXEC);
		struct stat st;
		d = 1;
		if (fd >= 0 && fstat(fd, &st) == 0) d = st.st_dev + 1;
		if (fd >= 0) close(fd);
		__atomic_store_n(&dev, d, __ATOMIC_RELAXED);
	}
	return d - 1;
}

// default_capacity is what one pipe or socket is counted as: the larger of
// a pipe's default capacity (16 pages) and a socket's default send buffer.
static uint64_t default_capacity(void) {
	static uint64_t known; // the same for every caller
	uint64_t cap = __atomic_load_n(&known, __ATOMIC_RELAXED);
	if (!cap) {
		cap = 16 * (uint64_t)sysconf(_SC_PAGESIZE);
		char buf[64];
		int fd = open("/proc/sys/net/core/wmem_default", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			if (n > 0) {
				buf[n] = 0;
				uint64_t w = strtoull(buf, NULL, 10);
				if (w > cap) cap = w;
			}
		}
		__atomic_store_n(&known, cap, __ATOMIC_RELAXED);
	}
	return cap;
}

// host_has_dev reports whether a mount of this (the supervisor's) mount
// namespace is the device: a tmpfs of the host bound into the sandbox is
// not the sandbox's own, and what it holds is not the sandbox's to count.
static int host_has_dev(const char *mountinfo, unsigned maj, unsigned min) {
	char want[32];
	int wl = snprintf(want, sizeof(want), " %u:%u ", maj, min);
	return mountinfo && strstr(mountinfo, want) != NULL;
}

// read_all reads a whole file into a buffer of its own (free it), NULL
// if it cannot.
static char *read_all(const char *path) {
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return NULL;
	size_t cap = 1 << 15, n = 0;
	char *b = malloc(cap);
	while (b) {
		if (n + 1 >= cap) {
			char *nb = cap < (64u << 20) ? realloc(b, cap *= 2) : NULL;
			if (!nb) {
				free(b);
				b = NULL;
				break;
			}
			b = nb;
		}
		ssize_t k = read(fd, b + n, cap - 1 - n);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) break;
		n += (size_t)k;
	}
	close(fd);
	if (b) b[n] = 0;
	return b;
}

// find_tmpfs fills st with the sandbox's own tmpfs mounts: in the mountinfo
// of outer, the tmpfs devices no mount of the host has, each opened at a
// mount point beneath the sandbox's root and checked to be that device (a
// mount point covered by another mount is skipped for the next one).
static void find_tmpfs(int outer, int root, struct jail_census_state *st) {
	st->found = 1;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", outer);
	char *mine = read_all(path), *host = read_all("/proc/self/mountinfo");
	if (!mine) {
		free(host);
		return;
	}
	for (char *line = mine; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl) *nl = 0;
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		unsigned maj, min;
		char mp[4096];
		char *sep = strstr(line, " - ");
		if (sep && !strncmp(sep + 3, "tmpfs ", 6) && sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mp) == 3 && !host_has_dev(host, maj, min)) {
			uint64_t dev = makedev(maj, min);
			int have = 0;
			for (int i = 0; i < st->ntmpfs; i++) have |= st->tmpfs_dev[i] == dev;
			// The mount point with the kernel's escapes (\040) undone.
			char *w = mp;
			for (char *r = mp; *r; r++) {
				if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] && r[3]) {
					*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
					r += 3;
				} else {
					*w++ = *r;
				}
			}
			*w = 0;
			if (!have && st->ntmpfs < JAIL_CENSUS_MAX_TMPFS) {
				const char *rel = mp[1] ? mp + 1 : ".";
				int mfd = open_beneath(root, rel, O_PATH | O_DIRECTORY);
				struct stat s;
				if (mfd >= 0 && fstat(mfd, &s) == 0 && s.st_dev == dev) {
					st->tmpfs[st->ntmpfs] = mfd;
					st->tmpfs_dev[st->ntmpfs++] = dev;
				} else if (mfd >= 0) {
					close(mfd);
				}
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	free(mine);
	free(host);
}

static int is_tmpfs_dev(const struct jail_census_state *st, uint64_t dev) {
	for (int i = 0; i < st->ntmpfs; i++)
		if (st->tmpfs_dev[i] == dev) return 1;
	return 0;
}

// memory_fs reports whether dev is a file system whose files are memory
// (tmpfs, the internal one of memfd included; secretmem; hugetlbfs), with
// a small cache of the devices looked up through the descriptor's path.
struct devkind {
	uint64_t dev[32];
	int mem[32];
	int n;
};

static int memory_fs(struct devkind *k, int fddir, const char *name, uint64_t dev) {
	if (dev == shm_dev()) return 1;
	for (int i = 0; i < k->n; i++)
		if (k->dev[i] == dev) return k->mem[i];
	// statfs follows the descriptor's magic link as fstatat did.
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", fddir, name);
	struct statfs sf;
	int mem = statfs(path, &sf) == 0 && (sf.f_type == TMPFS_MAGIC || sf.f_type == SECRETMEM_MAGIC || sf.f_type == HUGETLBFS_MAGIC || sf.f_type == RAMFS_MAGIC);
	if (k->n < 32) {
		k->dev[k->n] = dev;
		k->mem[k->n++] = mem;
	}
	return mem;
}

// Sockets seen by the descriptors' walk, measured after it
// (measure_sockets): which process holds each, by which descriptor, and
// its identity.
struct sockref {
	int pid, fd; // in the sandbox's pid namespace
	uint64_t dev, ino;
	int pipe; // a pipe (its capacity), not a socket
};

struct socks {
	struct sockref *ref;
	int n, cap;
	int lost; // more than could be kept: each charged at its maximum
};

static void socks_add(struct socks *k, int pid, int fd, const struct stat *s, int pipe) {
	if (k->n == k->cap) {
		int cap = k->cap ? 2 * k->cap : 64;
		struct sockref *nr = cap <= (1 << 20) ? realloc(k->ref, cap * sizeof(*nr)) : NULL;
		if (!nr) {
			k->lost++;
			return;
		}
		k->ref = nr;
		k->cap = cap;
	}
	k->ref[k->n++] = (struct sockref){pid, fd, s->st_dev, s->st_ino, pipe};
}

// count_fds adds what the descriptors of one process hold.
static void count_fds(int proc, const char *pid, const struct jail_census_state *st, struct seen *seen, struct devkind *kinds, struct socks *socks, struct jail_census *c) {
	char path[64];
	snprintf(path, sizeof(path), "%s/fd", pid);
	int dfd = openat(proc, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0) return;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
		c->fds++;
		struct stat s;
		// Follows the magic link to the file: a stat, never an open.
		if (fstatat(dfd, de->d_name, &s, 0) < 0) continue;
		if (S_ISFIFO(s.st_mode) || S_ISSOCK(s.st_mode)) {
			if (seen_add(seen, s.st_dev, s.st_ino)) {
				c->files += default_capacity();
				socks_add(socks, atoi(pid), atoi(de->d_name), &s, S_ISFIFO(s.st_mode));
			}
		} else if (S_ISREG(s.st_mode) && !is_tmpfs_dev(st, s.st_dev) && memory_fs(kinds, dfd, de->d_name, s.st_dev)) {
			if (seen_add(seen, s.st_dev, s.st_ino)) c->fdshm += (uint64_t)s.st_blocks * 512;
		}
	}
	closedir(d);
}

// sysctl_u64 reads a number of /proc/sys, 0 if it cannot.
static uint64_t sysctl_u64(const char *path) {
	char buf[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) return 0;
	buf[n] = 0;
	return strtoull(buf, NULL, 10);
}

// socket_max is the most one socket's buffers can hold: SO_SNDBUF and
// SO_RCVBUF raise them to twice wmem_max and rmem_max. A socket that
// cannot be measured is charged that much.
static uint64_t socket_max(void) {
	static uint64_t known;
	uint64_t m = __atomic_load_n(&known, __ATOMIC_RELAXED);
	if (!m) {
		m = 2 * (sysctl_u64("/proc/sys/net/core/wmem_max") + sysctl_u64("/proc/sys/net/core/rmem_max"));
		if (m < default_capacity()) m = default_capacity();
		__atomic_store_n(&known, m, __ATOMIC_RELAXED);
	}
	return m;
}

// pipe_max is the most one pipe can hold: fs.pipe-max-size.
static uint64_t pipe_max(void) {
	static uint64_t known;
	uint64_t m = __atomic_load_n(&known, __ATOMIC_RELAXED);
	if (!m) {
		m = sysctl_u64("/proc/sys/fs/pipe-max-size");
		if (m < default_capacity()) m = default_capacity();
		__atomic_store_n(&known, m, __ATOMIC_RELAXED);
	}
	return m;
}

// ns_ino is the inode of the pid namespace (which: "pid", or
// "pid_for_children") of the host's process pid, 0 if it cannot be read.
static uint64_t ns_ino(int pid, const char *which) {
	char path[64];
	struct stat s;
	snprintf(path, sizeof(path), "/proc/%d/ns/%s", pid, which);
	return stat(path, &s) == 0 ? (uint64_t)s.st_ino : 0;
}

// inner_pid is the host's process pid's pid in the innermost namespace
// it is in (the last of NSpid), -1 if it cannot be read.
static int inner_pid(int pid) {
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) return -1;
	buf[n] = 0;
	char *p = strstr(buf, "\nNSpid:");
	if (!p) return -1;
	p += 8;
	char *nl = strchr(p, '\n');
	if (nl) *nl = 0;
	char *last = NULL, *save = NULL;
	for (char *t = strtok_r(p, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) last = t;
	return last ? atoi(last) : -1;
}

// measure_sockets adds what each socket the walk saw holds beyond the
// default capacity it was counted at: its receive queue, what it has
// sent and not yet freed, its queued and forward-allocated bytes, options
// and backlog (getsockopt SO_MEMINFO), read from a copy of the descriptor
// (pidfd_getfd) of the process that holds it. SO_SNDBUF raised to
// wmem_max lets one socket pair hold 8 MiB here, which the default did
// not see: 131 pairs held a gigabyte under --memory 256M. The processes
// are found in the host's pid namespace from the outer process down
// (task/*/children), each checked to be in the sandbox's pid namespace
// after its pidfd is open (a pid freed and reused meanwhile is not
// measured); a socket that cannot be measured, or whose descriptor now
// names another file, is charged at its maximum (socket_max).
static void measure_sockets(int outer, struct socks *k, int nprocs, struct jail_census *c) {
	uint64_t dflt = default_capacity(), most = socket_max();
	c->files += (uint64_t)k->lost * (most > pipe_max() ? most - dflt : pipe_max() - dflt);
	if (!k->n) return;
	// The sandbox's processes by their pid there: the tree below outer,
	// at most a few more than the census counted (new ones meanwhile).
	int cap = nprocs + 64, n = 0, *host = malloc(cap * sizeof(int)), *inner = malloc(cap * sizeof(int));
	uint64_t ns = 0;
	if (host && inner) {
		host[n] = outer;
		inner[n++] = -1;
		for (int i = 0; i < n; i++) {
			char path[64];
			snprintf(path, sizeof(path), "/proc/%d/task", host[i]);
			DIR *d = opendir(path);
			if (!d) continue;
			struct dirent *de;
			while ((de = readdir(d))) {
				if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
				char buf[4096], cpath[96];
				snprintf(cpath, sizeof(cpath), "/proc/%d/task/%s/children", host[i], de->d_name);
				int fd = open(cpath, O_RDONLY | O_CLOEXEC);
				if (fd < 0) continue;
				ssize_t m = read(fd, buf, sizeof(buf) - 1);
				close(fd);
				buf[m > 0 ? m : 0] = 0;
				char *save = NULL;
				for (char *t = strtok_r(buf, " \n", &save); t && n < cap; t = strtok_r(NULL, " \n", &save)) {
					host[n] = atoi(t);
					inner[n++] = inner_pid(atoi(t));
				}
			}
			closedir(d);
		}
		// The sandbox's: outer made it for its child, pid 1.
		ns = ns_ino(outer, "pid_for_children");
	}
	int lastpid = -1, pidfd = -1;
	for (int i = 0; i < k->n; i++) {
		struct sockref *r = &k->ref[i];
		// A pipe that cannot be measured: its capacity is at most what
		// the user's pipes may hold (fs.pipe-max-size for one).
		uint64_t held = r->pipe ? pipe_max() : most;
		if (r->pid != lastpid) {
			if (pidfd >= 0) close(pidfd);
			pidfd = -1;
			lastpid = r->pid;
			for (int j = 1; ns && j < n; j++) {
				if (inner[j] != r->pid) continue;
				pidfd = (int)syscall(434 /* pidfd_open */, host[j], 0);
				if (pidfd >= 0 && ns_ino(host[j], "pid") != ns) {
					close(pidfd);
					pidfd = -1;
				}
				break;
			}
		}
		int sfd = pidfd >= 0 ? (int)syscall(438 /* pidfd_getfd */, pidfd, r->fd, 0) : -1;
		if (sfd >= 0) {
			struct stat s;
			uint32_t mi[9] = {0}; // SK_MEMINFO_VARS
			socklen_t len = sizeof(mi);
			int same = fstat(sfd, &s) == 0 && s.st_dev == r->dev && s.st_ino == r->ino;
			if (same && r->pipe) {
				// A pipe holds at most its capacity, which F_SETPIPE_SZ
				// raises (a page a slot, written or not: one byte a page
				// with O_DIRECT's packets).
				int size = fcntl(sfd, 1032 /* F_GETPIPE_SZ */);
				if (size > 0) held = (uint64_t)size;
			} else if (same && getsockopt(sfd, SOL_SOCKET, 55 /* SO_MEMINFO */, mi, &len) == 0) {
				// RMEM_ALLOC, WMEM_ALLOC, FWD_ALLOC, WMEM_QUEUED, OPTMEM, BACKLOG
				held = (uint64_t)mi[0] + mi[2] + mi[4] + mi[5] + mi[6] + mi[7];
			}
			close(sfd);
		}
		if (held > dflt) c->files += held - dflt;
	}
	if (pidfd >= 0) close(pidfd);
	free(host);
	free(inner);
}

int jail_census(int outer, int what, uint64_t limit, struct jail_census_state *st, struct jail_census *c) {
	memset(c, 0, sizeof(*c));
	c->processes = -1;
	int root = open_root(outer);
	if (root < 0) return -1;
	int proc = open_beneath(root, "proc", O_RDONLY | O_DIRECTORY);
	struct statfs sf;
	if (proc < 0 || fstatfs(proc, &sf) < 0 || sf.f_type != PROC_SUPER_MAGIC) {
		if (proc >= 0) close(proc);
		close(root);
		return -1;
	}
	if ((what & JAIL_CENSUS_MEMORY) && !st->found) find_tmpfs(outer, root, st);
	close(root);
	int dup = fcntl(proc, F_DUPFD_CLOEXEC, 0);
	DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
	if (!d) {
		if (dup >= 0) close(dup);
		close(proc);
		return -1;
	}
	c->processes = 0;
	c->precise = (what & JAIL_CENSUS_PRECISE) != 0;
	// The processes whose descriptors are walked after the quick figures.
	int *pids = NULL, npids = 0, cap = 0;
	struct dirent *de;
	char buf[4096];
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
		c->processes++;
		char path[64];
		snprintf(path, sizeof(path), "%s/status", de->d_name);
		if (read_at(proc, path, buf, sizeof(buf)) < 0) {
			// Gone between the listing and now; a task still counts.
			c->tasks++;
			continue;
		}
		uint64_t threads = field(buf, "Threads");
		c->tasks += threads ? (int64_t)threads : 1;
		if (!(what & JAIL_CENSUS_MEMORY)) continue;
		uint64_t anon = field(buf, "RssAnon") + field(buf, "VmSwap"), shmem = field(buf, "RssShmem");
		// Page tables, huge pages (not in RssAnon), and each thread's
		// kernel stack and task (a thread bomb's).
		uint64_t pte = field(buf, "VmPTE") + field(buf, "HugetlbPages") + (threads ? threads : 1) * (JAIL_CENSUS_TASK_COST >> 10);
		// The kernel's objects behind its descriptors (an open file is
		// about 200 bytes; pipes and sockets get their buffers below),
		// by the slots of its descriptor table: no walk needed.
		c->files += field(buf, "FDSize") * JAIL_CENSUS_FD_COST;
		if (what & JAIL_CENSUS_PRECISE) {
			// Proportional shares, where this process may be read (the
			// sandbox's pid 1 may not be, by an unprivileged supervisor:
			// its quick figures stand).
			snprintf(path, sizeof(path), "%s/smaps_rollup", de->d_name);
			if (read_at(proc, path, buf, sizeof(buf)) > 0 && strstr(buf, "Pss_Anon:")) {
				anon = field(buf, "Pss_Anon") + field(buf, "SwapPss");
				shmem = field(buf, "Pss_Shmem");
			}
		}
		c->anon += (anon + pte) << 10;
		c->shmem += shmem << 10;
		if (npids == cap) {
			int *np = realloc(pids, (cap = cap ? 2 * cap : 64) * sizeof(int));
			if (!np) continue; // its descriptors uncounted: rather than none at all
			pids = np;
		}
		pids[npids++] = atoi(de->d_name);
	}
	closedir(d);
	if (what & JAIL_CENSUS_MEMORY)
		for (int i = 0; i < st->ntmpfs; i++) {
			struct statfs t;
			if (fstatfs(st->tmpfs[i], &t) == 0)
				c->tmpfs += (uint64_t)(t.f_blocks - t.f_bfree) * (uint64_t)t.f_bsize + (uint64_t)(t.f_files - t.f_ffree) * JAIL_CENSUS_INODE_COST;
		}
	// The walk of every descriptor costs the most (a descriptor bomb holds
	// a million): not needed once the sandbox is above its bound without.
	if (npids > 0 && (!limit || jail_census_total(c) <= limit)) {
		// Per call: the Go supervisor may count several sandboxes at once.
		struct seen *seen = calloc(1, sizeof(*seen));
		struct devkind kinds = {0};
		struct socks socks = {0};
		for (int i = 0; seen && i < npids; i++) {
			char name[16];
			snprintf(name, sizeof(name), "%d", pids[i]);
			count_fds(proc, name, st, seen, &kinds, &socks, c);
		}
		free(seen);
		if (socks.n || socks.lost) measure_sockets(outer, &socks, npids, c);
		free(socks.ref);
	}
	free(pids);
	close(proc);
	return 0;
}

uint64_t jail_census_total(const struct jail_census *c) {
	return c->anon + c->shmem + c->fdshm + c->tmpfs + c->files;
}

void jail_census_end(struct jail_census_state *st) {
	for (int i = 0; i < st->ntmpfs; i++) close(st->tmpfs[i]);
	st->ntmpfs = 0;
	st->found = 0;
}
