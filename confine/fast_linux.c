// The plan cache's reader: `jail run` without the Go runtime.
//
// A run whose plan the supervisor cached (fast_linux.go) is repeated here,
// in the binary's constructor, before Go starts: the entry is trusted
// only in the user's private cache directory, every fact about the host
// it was made from is checked again, the run's own placeholders are made,
// and the early child (early_linux.c) gets the cached plan with this
// run's command and environment. This process then does what the Go
// supervisor does for such a run: it forwards signals, follows a stopped
// command, removes the placeholders and exits with the command's status.
//
// Anything unexpected before the command starts falls back to the Go
// path: before the early child is taken, by returning; after, by
// executing this binary again under the name jail-replan, so the Go
// supervisor plans afresh (and reports any real error). Nothing here
// decides what the sandbox is: a plan that ran once is replayed only
// while everything it was made from is unchanged.

//go:build linux && cgo

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/auxv.h>
#include <time.h>
#include <sys/xattr.h>
#include <termios.h>
#include <unistd.h>

#include "early_linux.h"
#include "jail_linux.h"
#include "gitguard_linux.h"
#include "census_linux.h"

#define MAX_PLACEHOLDERS 64
#define MAX_OVERLAYS 24 // maxRepos (gitview)
#define REPLAN_ARG0 "jail-replan" // a fallback's argv[0]: plan afresh
#define MAX_LOCKS 64

// ---- the entry ----------------------------------------------------------

struct cursor {
	const uint8_t *p, *end;
	int bad;
};

static uint32_t cur_u32(struct cursor *c) {
	uint32_t v = 0;
	if (c->end - c->p < 4) { c->bad = 1; return 0; }
	memcpy(&v, c->p, 4);
	c->p += 4;
	return v;
}

static uint64_t cur_u64(struct cursor *c) {
	uint64_t v = 0;
	if (c->end - c->p < 8) { c->bad = 1; return 0; }
	memcpy(&v, c->p, 8);
	c->p += 8;
	return v;
}

// cur_str returns a NUL-terminated string of the entry (its bytes hold no
// NUL of their own), or "" once the entry is found malformed.
static const char *cur_str(struct cursor *c) {
	uint32_t n = cur_u32(c);
	if (c->bad || (size_t)(c->end - c->p) < (size_t)n + 1 || c->p[n] != 0 || memchr(c->p, 0, n)) {
		c->bad = 1;
		return "";
	}
	const char *s = (const char *)c->p;
	c->p += n + 1;
	return s;
}

static const uint8_t *cur_bytes(struct cursor *c, uint32_t *n) {
	*n = cur_u32(c);
	if (c->bad || (size_t)(c->end - c->p) < *n) { c->bad = 1; *n = 0; return NULL; }
	const uint8_t *b = c->p;
	c->p += *n;
	return b;
}

// ---- the entry's authentication -------------------------------------------
//
// Every entry ends with an HMAC-SHA-256 of the rest under a per-user key
// kept in the kernel's user keyring (fast_linux.go: cacheKey). No sandbox
// can read the key (seccomp refuses keyctl, add_key and request_key), so
// no sandbox can make an entry, whatever it can write in the file system.


// cache_key reads the user's plan cache key from the user keyring.
static int cache_key(uint8_t key[32]) {
	long id = syscall(SYS_keyctl, 10 /* KEYCTL_SEARCH */, -4 /* KEY_SPEC_USER_KEYRING */, "user", CACHE_KEY_NAME, 0);
	if (id < 0) return -1;
	long n = syscall(SYS_keyctl, 11 /* KEYCTL_READ */, id, key, 32);
	return n == 32 ? 0 : -1;
}

// authentic reports whether the entry's last 32 bytes are the HMAC of the
// rest under the user's key, compared in constant time.
static int authentic(const uint8_t *b, size_t len) {
	uint8_t key[32], mac[32];
	if (len < 32 || cache_key(key) < 0) return 0;
	jail_hmac_sha256(key, b, len - 32, mac);
	memset(key, 0, sizeof(key));
	uint8_t diff = 0;
	for (int i = 0; i < 32; i++) diff |= mac[i] ^ b[len - 32 + i];
	return diff == 0;
}

// ---- tracing --------------------------------------------------------------

// dirseen is a directory of the plan's walk, as a cached run found it
// before the sandbox started (FACT_DIRS).
#define MAX_DIRS 4096
struct dirseen {
	const char *path;
	int root;
	uint64_t hash;
	uint64_t id[4]; // dev, ino, mtime, ctime
	// The sweep's shortcut (sweep_dir): the identity the plan recorded,
	// whether the plan found it quiet (DirsHashed in fast_linux.go), and
	// the records of its subdirectories (link_dirs).
	uint64_t want[4];
	int quiet;
	const char *name; // the last component of path
	int parent, child, next; // record indexes, -1 for none
};

struct limits;

struct fast {
	int trace;
	const char *why; // why the cache was not used
	char whybuf[512];
	// placeholders made for this run (placeholders_linux.go)
	int nmade;
	struct placeholder {
		int parent, fd;
		char *name, *rel; // rel: workspace-relative, for the line of replaced
		uint64_t dev, ino;
		uint32_t at; // where its identity goes in the plan's setup
	} made[MAX_PLACEHOLDERS];
	int locks[MAX_LOCKS];
	int nlocks;
	// the placeholders and locks the entry asks for, made once the first
	// part of the plan is on its way (make_placeholders)
	int ntodo, nlocktodo;
	struct todo {
		const char *rel;
		uint32_t at;
	} todo[MAX_PLACEHOLDERS];
	const char *locktodo[MAX_LOCKS];
	const char *lockrel[MAX_LOCKS]; // what each of locks is: locktodo's entry
	// the git view's fresh private directory (CacheFresh), -1 when none
	const char *ws;
	const char *fresh_old; // the RUN name the plan was stored with
	char fresh_run[17];    // this run's
	int gkey, grun, ggit, gws;
	// noverlay is the number of repositories shown as overlays (g0 ...),
	// whose upper and work directories this run makes; 0 for a fresh
	// private directory
	uint32_t noverlay;
	// guard is the pipe to the git state's guardian (gitguard_linux.c),
	// -1 when there is none
	int guard;
	const char *grel;
	char **envp;
	int argc;
	char **argv;
	const sigset_t *mask; // the caller's signal mask, for the adopter
	char t0[24];          // when the run began (unix ns), for the adopter's walk
	// the walk's directories as found before the run, checked again
	// after it
	struct dirseen *dirs;
	int ndirs;
	// descriptors of directories this run removed, closed by a process of
	// their own once this one has exited (drop_deferred)
	int defer[MAX_PLACEHOLDERS + 4 + 4 * MAX_OVERLAYS];
	int ndefer;
	// the walks for what only root may read (FACT_TREE) left for
	// check_trees: where each starts in the entry, and its root
	int ntrees;
	struct tree {
		struct cursor at;
		const char *root;
	} trees[4];
	// lim_later: the run's cgroups, removed by drop_deferred
	struct limits *lim_later;
	// pid1 is a descriptor of the sandbox's pid 1 (pidfd_open), -1 when
	// there is none
	int pid1;
};

// defer_close keeps fd, a directory this run has just removed, for
// drop_deferred; one that still has a name is closed now (its lock may
// be what another run waits to be the last holder of).
static void defer_close(struct fast *f, int fd) {
	if (f->ndefer < (int)(sizeof(f->defer) / sizeof(f->defer[0])))
		f->defer[f->ndefer++] = fd;
	else
		close(fd);
}

static void say(const char *s) { jail_write_all(2, s, strlen(s)); }

static int miss(struct fast *f, const char *what, const char *path) {
	snprintf(f->whybuf, sizeof(f->whybuf), "%s%s%s", what, path ? ": " : "", path ? path : "");
	f->why = f->whybuf;
	return -1;
}

// ---- where the entry is ------------------------------------------------

// private_dir reports whether fd is a directory of this user that no one
// else can write or enter.
static int private_dir(int fd) {
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() && (st.st_mode & 077) == 0;
}

// read_entry reads the entry for these arguments into a buffer of its
// own; NULL (and f->why) when there is none or it cannot be trusted.
static uint8_t *read_entry(struct fast *f, const char *cwd, char **args, int nargs, size_t *len, int *dirfd_out) {
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char dir[PATH_MAX];
	if (xdg && xdg[0] == '/')
		snprintf(dir, sizeof(dir), "%s/jail", xdg);
	else if (home && home[0] == '/')
		snprintf(dir, sizeof(dir), "%s/.cache/jail", home);
	else
		return miss(f, "no cache directory (HOME and XDG_CACHE_HOME unset)", NULL), NULL;
	int jd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jd < 0) return miss(f, "no cache directory", dir), NULL;
	int pd = openat(jd, "plans", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int ok = private_dir(jd) && pd >= 0 && private_dir(pd);
	close(jd);
	if (!ok) {
		if (pd >= 0) close(pd);
		return miss(f, "the cache directory is not private to this user (mode 0700, owned by the user)", dir), NULL;
	}
	char name[32];
	jail_cache_name(name, getuid(), cwd, args, nargs);
	int fd = openat(pd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		close(pd);
		return miss(f, "no entry for this directory and these flags", NULL), NULL;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 022) || st.st_size > MAX_ENTRY) {
		close(fd);
		close(pd);
		return miss(f, "the entry is not a private file of this user", name), NULL;
	}
	uint8_t *b = malloc(st.st_size ? st.st_size : 1);
	size_t got = 0;
	while (b && got < (size_t)st.st_size) {
		ssize_t k = read(fd, b + got, st.st_size - got);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) break;
		got += k;
	}
	close(fd);
	if (!b || got != (size_t)st.st_size) {
		free(b);
		close(pd);
		return miss(f, "cannot read the entry", name), NULL;
	}
	*len = got;
	*dirfd_out = pd;
	return b;
}

// ---- the key and the facts ----------------------------------------------

static int absent(int err) { return err == ENOENT || err == ENOTDIR; }

static void identity(const struct stat *st, uint64_t v[5]) {
	v[0] = st->st_dev;
	v[1] = st->st_ino;
	v[2] = st->st_size;
	v[3] = (uint64_t)st->st_mtim.tv_sec * 1000000000ULL + st->st_mtim.tv_nsec;
	v[4] = (uint64_t)st->st_ctim.tv_sec * 1000000000ULL + st->st_ctim.tv_nsec;
}

// check_key compares what the entry was made for with this run: the same
// binary, boot, user, directory, flags and variables.
static int check_key(struct fast *f, struct cursor *c, const char *cwd, char **args, int nargs) {
	struct stat st;
	uint64_t want[5], have[5];
	for (int i = 0; i < 5; i++) want[i] = cur_u64(c);
	if (stat("/proc/self/exe", &st) < 0) return miss(f, "cannot stat /proc/self/exe", NULL);
	identity(&st, have);
	if (memcmp(want, have, sizeof(want))) return miss(f, "made by another jail binary", NULL);
	const char *boot = cur_str(c);
	char bbuf[64] = {0};
	int bfd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t bn = bfd >= 0 ? read(bfd, bbuf, sizeof(bbuf) - 1) : -1;
	if (bfd >= 0) close(bfd);
	while (bn > 0 && (bbuf[bn - 1] == '\n' || bbuf[bn - 1] == ' ')) bbuf[--bn] = 0;
	if (bn <= 0 || strcmp(boot, bbuf)) return miss(f, "made before the last boot", NULL);
	if (cur_u32(c) != getuid() || cur_u32(c) != getgid()) return miss(f, "made for other ids", NULL);
	if (strcmp(cur_str(c), cwd)) return miss(f, "made in another directory", NULL);
	if ((int)cur_u32(c) != nargs) return miss(f, "made for other flags", NULL);
	for (int i = 0; i < nargs; i++)
		if (strcmp(cur_str(c), args[i])) return miss(f, "made for other flags", NULL);
	uint32_t nenv = cur_u32(c);
	for (uint32_t i = 0; i < nenv && !c->bad; i++) {
		const char *k = cur_str(c);
		uint32_t present = cur_u32(c);
		const char *v = cur_str(c);
		const char *now = getenv(k);
		if ((now != NULL) != (present != 0) || (now && strcmp(now, v))) return miss(f, "a variable it was made from changed", k);
	}
	return c->bad ? miss(f, "malformed entry", NULL) : 0;
}

// resolve is realpath(3) in three system calls instead of a readlink per
// component: the kernel resolves path once (O_PATH, following every
// symlink) and names what it reached. NULL when path does not resolve.
static char *resolve(const char *path, char buf[PATH_MAX]) {
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0) return NULL;
	char proc[32];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(proc, buf, PATH_MAX - 1);
	close(fd);
	if (n <= 0 || n >= PATH_MAX - 1 || buf[0] != '/') return NULL;
	buf[n] = 0;
	return buf;
}

static int dir_changed(struct dirseen *d, const uint64_t want[4]);

// tree_fold is treeHash in rootonly_linux.go: FNV-1a over the
// little-endian bytes of an entry's device, inode and mode, and for a
// directory the walk read, its mtime and ctime.
static uint64_t tree_fold(uint64_t h, const struct stat *st, int read) {
	uint64_t v[5] = {st->st_dev, st->st_ino, st->st_mode, 0, 0};
	int n = 3;
	if (read) {
		v[3] = (uint64_t)st->st_mtim.tv_sec * 1000000000ULL + st->st_mtim.tv_nsec;
		v[4] = (uint64_t)st->st_ctim.tv_sec * 1000000000ULL + st->st_ctim.tv_nsec;
		n = 5;
	}
	for (int i = 0; i < n; i++)
		for (int b = 0; b < 8; b++) {
			h ^= (v[i] >> (8 * b)) & 0xff;
			h *= 1099511628211ULL;
		}
	return h;
}

// check_tree checks the walk for what only root may read beneath root
// (factTree): one lstat per entry the walk looked at, instead of listing
// every directory again. A directory's mtime and ctime change with every
// name made, removed or renamed in it; an entry's ctime and mode with a
// chmod; its device and inode with a mount over it. Each entry names the
// index of its directory, which comes before it.
static int check_tree(struct fast *f, struct cursor *c, const char *root) {
	uint32_t n = cur_u32(c);
	if (c->bad || n == 0 || n > MAX_TREE) return miss(f, "malformed entry", NULL);
	char **dirs = calloc(n, sizeof(char *));
	if (!dirs) return miss(f, "out of memory", NULL);
	uint64_t h = 14695981039346656037ULL;
	int r = 0;
	for (uint32_t i = 0; i < n && r == 0; i++) {
		uint32_t parent = cur_u32(c);
		const char *name = cur_str(c);
		uint32_t read = cur_u32(c);
		char buf[PATH_MAX];
		int k;
		if (c->bad) {
			r = miss(f, "malformed entry", NULL);
			break;
		}
		if (i == 0 && parent == UINT32_MAX)
			k = snprintf(buf, sizeof(buf), "%s", root);
		else if (i > 0 && parent < i && dirs[parent])
			k = snprintf(buf, sizeof(buf), "%s/%s", dirs[parent], name);
		else {
			r = miss(f, "malformed entry", NULL);
			break;
		}
		struct stat st;
		if (k < 0 || (size_t)k >= sizeof(buf) || lstat(buf, &st) < 0) {
			r = miss(f, "a file beneath a root-only walk changed", buf);
			break;
		}
		h = tree_fold(h, &st, read != 0);
		if (read && !(dirs[i] = strdup(buf))) r = miss(f, "out of memory", NULL);
	}
	uint64_t want = cur_u64(c);
	for (uint32_t i = 0; i < n; i++) free(dirs[i]);
	free(dirs);
	if (r < 0) return r;
	if (c->bad) return miss(f, "malformed entry", NULL);
	if (h != want) return miss(f, "what only root may read changed beneath", root);
	return 0;
}

// skip_tree moves c past a walk check_tree reads (FACT_TREE).
static int skip_tree(struct cursor *c) {
	uint32_t n = cur_u32(c);
	if (c->bad || n == 0 || n > MAX_TREE) return -1;
	for (uint32_t i = 0; i < n && !c->bad; i++) {
		cur_u32(c);
		cur_str(c);
		cur_u32(c);
	}
	cur_u64(c);
	return c->bad ? -1 : 0;
}

// check_trees checks the walks check_facts left (FACT_TREE): every one,
// or with only those beneath which dir lies (the workspace, where this
// run makes directories before it checks the others; NULL: none). What
// only root may read beneath /etc and /opt takes one lstat per entry the
// walk looked at (0.3 ms for 640 entries here, several times that under
// load), and the plan cannot depend on it before the sandbox's command:
// its first part (mounts in the sandbox's own namespace, nothing run)
// goes to pid 1 meanwhile, and the rest, with the command, only once
// these hold (jail_fast_run).
static int check_trees(struct fast *f, const char *dir) {
	int kept = 0;
	for (int i = 0; i < f->ntrees; i++) {
		struct tree *t = &f->trees[i];
		size_t n = strlen(t->root);
		if (dir && !(!strncmp(dir, t->root, n) && (dir[n] == '/' || dir[n] == 0 || !strcmp(t->root, "/")))) {
			f->trees[kept++] = *t;
			continue;
		}
		if (check_tree(f, &t->at, t->root) < 0) return -1;
	}
	f->ntrees = kept;
	return 0;
}

// check_facts checks every fact about the host the plan was made from,
// but for the walks check_trees checks.
static int check_facts(struct fast *f, struct cursor *c) {
	uint32_t n = cur_u32(c);
	for (uint32_t i = 0; i < n && !c->bad; i++) {
		uint32_t kind = cur_u32(c);
		const char *path = cur_str(c);
		struct stat st;
		switch (kind) {
		case FACT_REALPATH: {
			const char *want = cur_str(c);
			char buf[PATH_MAX];
			char *r = resolve(path, buf);
			// "" records a path that did not resolve (missing, or out of
			// the user's reach).
			if (want[0] == 0 ? r != NULL : (r == NULL || strcmp(r, want)))
				return miss(f, "a path resolves differently", path);
			break;
		}
		case FACT_TYPE: {
			uint32_t want = cur_u32(c);
			if (lstat(path, &st) < 0) {
				if (want != 0 || !absent(errno)) return miss(f, "a path the plan relies on changed", path);
			} else if (want != ((unsigned)st.st_mode & S_IFMT) >> 12) {
				return miss(f, "a path the plan relies on changed", path);
			}
			break;
		}
		case FACT_LINK: {
			const char *want = cur_str(c);
			char buf[PATH_MAX];
			ssize_t k = readlink(path, buf, sizeof(buf) - 1);
			if (k < 0 || (buf[k] = 0, strcmp(buf, want))) return miss(f, "a symlink changed", path);
			break;
		}
		case FACT_FILE: {
			uint32_t present = cur_u32(c);
			uint64_t want[5], have[5];
			if (present)
				for (int j = 0; j < 5; j++) want[j] = cur_u64(c);
			if (stat(path, &st) < 0) {
				if (present || !absent(errno)) return miss(f, "a policy file changed", path);
				break;
			}
			identity(&st, have);
			if (!present || memcmp(want, have, sizeof(want))) return miss(f, "a policy file changed", path);
			break;
		}
		case FACT_DIR: {
			// A directory the plan binds by path (the workspace, its
			// persistent home): the same inode, not a symlink, the user's.
			// Birth time too where the file system has one: tmpfs gives
			// a freed inode number to the next directory made.
			uint64_t dev = cur_u64(c), ino = cur_u64(c), birth = cur_u64(c);
			uint32_t uid = cur_u32(c);
			struct statx sx;
			if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || (uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino || st.st_uid != uid)
				return miss(f, "a directory the plan binds changed", path);
			uint64_t have = 0;
			if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) == 0 && (sx.stx_mask & STATX_BTIME))
				have = (uint64_t)sx.stx_btime.tv_sec * 1000000000ull + sx.stx_btime.tv_nsec;
			if (have != birth) return miss(f, "a directory the plan binds changed", path);
			break;
		}
		case FACT_DIRS: {
			// The directory's identity first: only one whose entries
			// changed (mtime, ctime) is listed and hashed again.
			uint32_t root = cur_u32(c);
			struct dirseen d = {.path = path, .root = (root & 1) != 0, .quiet = (root & 3) == 2};
			uint64_t want[4];
			for (int j = 0; j < 4; j++) want[j] = d.want[j] = cur_u64(c);
			d.hash = cur_u64(c);
			if (c->bad) break;
			if (dir_changed(&d, want)) return miss(f, "the directories the plan's git view was made from changed", path);
			if (f->dirs && f->ndirs < MAX_DIRS) f->dirs[f->ndirs++] = d;
			break;
		}
		case FACT_GLOB: {
			// The names matching the pattern in the directory, opened as
			// the planner did: no symlink on the way (none if it cannot be).
			const char *pat = cur_str(c);
			uint32_t nn = cur_u32(c);
			if (c->bad || nn > 4096) return miss(f, "malformed entry", NULL);
			const char *names[4096];
			for (uint32_t j = 0; j < nn; j++) names[j] = cur_str(c);
			if (c->bad) return miss(f, "malformed entry", NULL);
			struct { uint64_t flags, mode, resolve; } how = {O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, 0x04 | 0x02};
			int dfd = syscall(437 /* openat2 */, AT_FDCWD, path, &how, sizeof(how));
			uint32_t seen = 0;
			if (dfd >= 0) {
				DIR *d = fdopendir(dfd);
				if (!d) {
					close(dfd);
					return miss(f, "cannot list a directory the plan relies on", path);
				}
				struct dirent *de;
				int ok = 1;
				while (ok && (de = readdir(d))) {
					if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || fnmatch(pat, de->d_name, 0)) continue;
					int found = 0;
					for (uint32_t j = 0; j < nn && !found; j++) found = !strcmp(names[j], de->d_name);
					ok = found;
					seen++;
				}
				closedir(d);
				if (!ok) return miss(f, "a protected name appeared", path);
			}
			if (seen != nn) return miss(f, "a protected name changed", path);
			break;
		}
		case FACT_TREE:
			// Left for check_trees while there is room: only the
			// entry's bytes are read now.
			if (f->ntrees < (int)(sizeof(f->trees) / sizeof(f->trees[0]))) {
				f->trees[f->ntrees++] = (struct tree){.at = *c, .root = path};
				if (skip_tree(c) < 0) return miss(f, "malformed entry", NULL);
			} else if (check_tree(f, c, path) < 0) {
				return -1;
			}
			break;
		case FACT_STAT: {
			// A file a repository's launch state was read from (full:
			// its content and, for a directory, its entries), or a
			// directory whose identity the view relies on.
			uint32_t full = cur_u32(c), present = cur_u32(c), mode = 0;
			uint64_t want[5] = {0}, have[5];
			if (present) {
				mode = cur_u32(c);
				want[0] = cur_u64(c);
				want[1] = cur_u64(c);
				if (full)
					for (int j = 2; j < 5; j++) want[j] = cur_u64(c);
			}
			if (c->bad) break;
			if (lstat(path, &st) < 0) {
				if (present || !absent(errno)) return miss(f, "a repository's state changed", path);
				break;
			}
			identity(&st, have);
			if (!full) {
				have[2] = have[3] = have[4] = 0;
				st.st_mode &= S_IFMT;
			}
			if (!present || mode != (uint32_t)st.st_mode || memcmp(want, have, sizeof(want))) return miss(f, "a repository's state changed", path);
			break;
		}
		default:
			return miss(f, "unknown fact in the entry", NULL);
		}
	}
	return c->bad ? miss(f, "malformed entry", NULL) : 0;
}

// dir_changed reports whether the directory d->path no longer holds the
// subdirectories and .git and HEAD entries it held (hash d->hash) when its
// identity was want (dev, ino, mtime, ctime); d->id takes what it has now.
static int dir_changed(struct dirseen *d, const uint64_t want[4]) {
	struct stat st;
	if (lstat(d->path, &st) < 0 || !S_ISDIR(st.st_mode)) return 1;
	d->id[0] = st.st_dev;
	d->id[1] = st.st_ino;
	d->id[2] = (uint64_t)st.st_mtim.tv_sec * 1000000000ULL + st.st_mtim.tv_nsec;
	d->id[3] = (uint64_t)st.st_ctim.tv_sec * 1000000000ULL + st.st_ctim.tv_nsec;
	if (!memcmp(d->id, want, sizeof(d->id))) return 0;
	if (d->id[0] != want[0] || d->id[1] != want[1]) return 1;
	int fd = open(d->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	uint64_t have = fd >= 0 ? jail_dir_hash(fd, d->root) : 0;
	if (fd >= 0) close(fd);
	return fd < 0 || have != d->hash;
}

// ---- placeholders (placeholders_linux.go) ---------------------------------

static int open_beneath(int dirfd, const char *path) {
	struct { uint64_t flags, mode, resolve; } how = {O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, 0x08 | 0x04 | 0x02};
	return syscall(437 /* openat2 */, dirfd, path, &how, sizeof(how));
}

struct buf {
	uint8_t *b;
	size_t n, cap;
	int oom;
};

static void put(struct buf *b, const void *p, size_t n);

// ---- the git view's fresh directory (gitview, docs/git.md) ---------------


static int is_run_name(const char *n) {
	if (strlen(n) != 16) return 0;
	for (const char *p = n; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return 0;
	return 1;
}

// dir_empty reports whether the directory fd has no entries.
static int dir_empty(int fd) {
	int d = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0) return 0;
	DIR *dir = fdopendir(d);
	if (!dir) {
		close(d);
		return 0;
	}
	int empty = 1;
	struct dirent *e;
	while (empty && (e = readdir(dir)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = 0;
	closedir(dir);
	return empty;
}

static int same_file(int fd, int dirfd, const char *name) {
	struct stat a, b;
	return fstat(fd, &a) == 0 && fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// put_json is a JSON string of s.
static void put_json(struct buf *b, const char *s);

// overlays_written reports whether the sandbox changed anything in the
// repositories shown as overlays (an upper that is not empty).
static int overlays_written(struct fast *f) {
	for (uint32_t i = 0; i < f->noverlay; i++) {
		char up[32];
		snprintf(up, sizeof(up), "g%u/upper", i);
		int fd = openat(f->grun, up, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int empty = fd >= 0 && dir_empty(fd);
		if (fd >= 0) close(fd);
		if (!empty) return 1;
	}
	return 0;
}

// remove_dir removes the empty directory name beneath dirfd, keeping a
// descriptor of it for drop_deferred (its last close can wait for the
// device). O_PATH: the work directory overlayfs makes in work has mode 0.
static int remove_dir(struct fast *f, int dirfd, const char *name) {
	int fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) return errno == ENOENT ? 0 : -1;
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0) {
		close(fd);
		return -1;
	}
	defer_close(f, fd);
	return 0;
}

// overlays_release removes the RUN directory of a run whose sandbox
// changed nothing in its overlays: each gN's upper, work (and the work
// directory overlayfs made in it) and gN, the meta record, the RUN
// directory. Anything else in it, or a removal that fails, leaves it for
// the next run's adoption (Go), which finds nothing to adopt and removes
// it.
static void overlays_release(struct fast *f) {
	int ok = !overlays_written(f);
	for (uint32_t i = 0; ok && i < f->noverlay; i++) {
		char g[16];
		snprintf(g, sizeof(g), "g%u", i);
		int gfd = openat(f->grun, g, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int wfd = gfd >= 0 ? openat(gfd, "work", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
		ok = gfd >= 0 && wfd >= 0 && remove_dir(f, wfd, "work") == 0 && remove_dir(f, gfd, "work") == 0 && remove_dir(f, gfd, "upper") == 0 &&
		     remove_dir(f, f->grun, g) == 0;
		if (wfd >= 0) close(wfd);
		if (gfd >= 0) close(gfd);
	}
	if (ok && unlinkat(f->grun, "meta", 0) == 0 && unlinkat(f->gkey, f->fresh_run, AT_REMOVEDIR) == 0) {
		defer_close(f, f->grun);
		f->grun = -1;
	}
}

// fresh_needs_adoption reports whether the sandbox left a repository in
// its private git directory, or changed a repository shown as an overlay.
static int fresh_needs_adoption(struct fast *f) {
	if (f->grun < 0) return 0;
	if (f->noverlay) return overlays_written(f);
	int g = openat(f->grun, "g0", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (g < 0) return 0;
	int empty = dir_empty(g);
	close(g);
	return !empty;
}

// fresh_release removes the RUN directory when its private git directory
// is empty (a non-empty one stays for the next run to adopt), and the
// host's .git when it is still empty, marked as jail's and no other run
// holds it (removeFresh in gitview).
static void fresh_release(struct fast *f) {
	if (f->grun >= 0 && f->noverlay) overlays_release(f);
	if (f->grun >= 0 && !f->noverlay) {
		int g = openat(f->grun, "g0", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int empty = g < 0 || dir_empty(g);
		if (empty && g >= 0 && unlinkat(f->grun, "g0", AT_REMOVEDIR) == 0) defer_close(f, g);
		else if (g >= 0) close(g);
		if (empty) {
			unlinkat(f->grun, "meta", 0);
			if (unlinkat(f->gkey, f->fresh_run, AT_REMOVEDIR) == 0) {
				defer_close(f, f->grun);
				f->grun = -1;
			}
		}
		if (f->grun >= 0) close(f->grun);
		f->grun = -1;
	}
	if (f->ggit >= 0) {
		char mark[8] = {0};
		if (flock(f->ggit, LOCK_EX | LOCK_NB) == 0 && fgetxattr(f->ggit, "user.jail", mark, sizeof(mark) - 1) == 3 &&
		    !strcmp(mark, "git") && dir_empty(f->ggit) && same_file(f->ggit, f->gws, f->grel) &&
		    unlinkat(f->gws, f->grel, AT_REMOVEDIR) == 0) // removes only an empty directory
			defer_close(f, f->ggit);
		else
			close(f->ggit);
		f->ggit = -1;
	}
	if (f->gkey >= 0) close(f->gkey);
	if (f->gws >= 0) close(f->gws);
	f->gkey = f->gws = -1;
}

// git_after runs the Go adopter (gitview.AdoptMain) and waits for it:
// with adopt, for the repository the sandbox made in its private git
// directory (the RUN directory stays locked meanwhile: the adopter
// inherits its descriptor); in any case to reduce the repositories the
// sandbox made in subdirectories. If it cannot run, a RUN directory
// stays for the next run in the workspace to adopt.
static void git_after(struct fast *f, int adopt, const char *mode) {
	if (f->ggit >= 0) {
		close(f->ggit); // the adopter fills it; nothing else may remove it now
		f->ggit = -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		char key[16] = "-", run[16] = "-";
		if (adopt) {
			snprintf(key, sizeof(key), "%d", f->gkey);
			snprintf(run, sizeof(run), "%d", f->grun);
			fcntl(f->gkey, F_SETFD, 0);
			fcntl(f->grun, F_SETFD, 0);
		}
		// Overlays: the adopter reduces against the launch walk the RUN
		// directory's meta records ("meta"), as the guardian of a Go
		// supervisor's run does; a fresh directory's plan was made where
		// no repository lay below the root ("cached").
		char *argv[] = {"jail", JAIL_ADOPT_COMMAND, (char *)f->ws, key, run, adopt ? f->fresh_run : "-", f->t0, !strcmp(mode, "pending") ? "pending" : f->noverlay ? "meta" : "cached", NULL};
		if (f->mask) sigprocmask(SIG_SETMASK, f->mask, NULL);
		execve("/proc/self/exe", argv, f->envp);
		say("jail: git: cannot execute /proc/self/exe to adopt the sandbox's git changes; the next run in this workspace adopts them\n");
		_exit(127);
	}
	int st;
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

// recent_at reports whether name beneath dirfd changed (its ctime, which
// no process can set and a rename sets) at or after t0 (unix ns, of the
// coarse clock file times come from); true when it cannot be told.
static int recent_at(int dirfd, const char *name, long long t0) {
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return errno != ENOENT;
	return (long long)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec >= t0;
}

// git_touched reports whether the .git directory beneath dirfd has a
// config, hooks directory or hook changed since t0 (gitDirTouched).
static int git_touched(int parent, long long t0) {
	int g = openat(parent, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (g < 0) return 0;
	static const char *names[] = {"config", "hooks", "commondir", "config.worktree", "info"};
	int hit = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !hit; i++) {
		struct stat st;
		hit = fstatat(g, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		      (long long)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec >= t0;
	}
	int h = hit ? -1 : openat(g, "hooks", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = h >= 0 ? fdopendir(h) : NULL;
	if (!d && h >= 0) close(h);
	for (struct dirent *e; d && !hit && (e = readdir(d));)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) hit = recent_at(dirfd(d), e->d_name, t0);
	if (d) closedir(d);
	close(g);
	return hit;
}

// link_leaves reports whether the symlink name beneath dirfd may lead out
// of the directory it is in: an absolute target, or one with a ".."
// component. Whether it leads into jail's own directories the Go sweep
// judges, resolving it.
static int link_leaves(int dirfd, const char *name) {
	char t[PATH_MAX];
	ssize_t n = readlinkat(dirfd, name, t, sizeof(t) - 1);
	if (n < 0) return 1;
	t[n] = 0;
	if (t[0] == '/' || !strcmp(t, "..") || !strncmp(t, "../", 3) || strstr(t, "/../") || (n >= 3 && !strcmp(t + n - 3, "/.."))) return 1;
	return 0;
}

// maybe_protected reports whether an entry below the walk's depth may be
// a protected name (an editor's, agent CLI's or hooks manager's: every
// one of the default list starts with a dot, lefthook or opencode., or
// ends .code-workspace): the Go sweep matches the run's own list.
static int maybe_protected(const char *n) {
	size_t len = strlen(n), suf = strlen(".code-workspace");
	return n[0] == '.' || !strncmp(n, "lefthook", 8) || !strncmp(n, "opencode.", 9) ||
	       (len >= suf && !strcmp(n + len - suf, ".code-workspace"));
}

// A directory the plan's walk recorded, as the sweep finds it (sweep_dir):
// its records are linked to their parent's, and looked up by parent and
// name in a table of DIR_SLOTS.
#define DIR_SLOTS (2 * MAX_DIRS)

static uint32_t dir_slot(int parent, const char *name) {
	uint32_t h = 2166136261u ^ (uint32_t)parent;
	for (const char *p = name; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
	return h % DIR_SLOTS;
}

// link_dirs links each record to its parent's: the walk records a
// directory before those beneath it (depth first), so the ancestors of
// each are on a stack. A record whose parent is not found is left
// unlinked, and the sweep lists it as it lists any directory. slots maps
// (parent, name) to a record, or -1.
static void link_dirs(struct fast *f, int *slots) {
	int stack[130], top = 0;
	for (int i = 0; i < DIR_SLOTS; i++) slots[i] = -1;
	for (int i = 0; i < f->ndirs; i++) {
		struct dirseen *d = &f->dirs[i];
		d->parent = d->child = d->next = -1;
		const char *slash = strrchr(d->path, '/');
		d->name = slash ? slash + 1 : d->path;
		size_t plen = slash ? (size_t)(slash - d->path) : 0;
		while (top > 0) {
			const char *pp = f->dirs[stack[top - 1]].path;
			if (strlen(pp) == plen && !strncmp(pp, d->path, plen)) break;
			top--;
		}
		if (top > 0 && !d->root && d->name[0]) {
			int par = stack[top - 1];
			uint32_t k = dir_slot(par, d->name);
			for (int n = 0; n < DIR_SLOTS && slots[k] >= 0; n++) k = (k + 1) % DIR_SLOTS;
			if (slots[k] < 0) {
				slots[k] = i;
				d->parent = par;
				d->next = f->dirs[par].child;
				f->dirs[par].child = i;
			}
		}
		if (top < (int)(sizeof(stack) / sizeof(stack[0]))) stack[top++] = i;
		else top = 0; // deeper than any walk: no more links below
	}
}

// dir_child is the record of the subdirectory name of record parent, or -1.
static int dir_child(const struct fast *f, const int *slots, int parent, const char *name) {
	if (parent < 0 || !slots) return -1;
	for (uint32_t k = dir_slot(parent, name), n = 0; n < DIR_SLOTS && slots[k] >= 0; n++, k = (k + 1) % DIR_SLOTS) {
		const struct dirseen *d = &f->dirs[slots[k]];
		if (d->parent == parent && !strcmp(d->name, name)) return slots[k];
	}
	return -1;
}

struct sweep {
	struct fast *f;
	const int *slots; // dir_child's table; NULL: no records
	int dirs;
	long long t0;
};

// sweep_dir is the C twin of the sweep's test (gitview/sweep_linux.go):
// whether the directory fd (closed here), or one below it, holds a .git,
// a HEAD or a symlink that changed since t0, a symlink that may lead out
// of its directory (link_leaves), or a .git directory with a
// changed config or hook, a protected name below the walk's depth (or
// anything in one, prot) that changed since t0, or the tree is past the
// sweep's bounds (not into node_modules, as the Go sweep does not). Then
// the Go adopter runs, which sweeps again and reduces what it finds.
//
// rec is the plan's record of the directory, or -1. A directory the plan
// found quiet (DirsHashed in fast_linux.go: no symlink, .git or HEAD, and
// a record for each subdirectory) that has the very identity the plan
// recorded (device, inode, mtime, ctime: a name made, removed or renamed
// in it moves its ctime, which no process can set) holds the same
// entries as then, so nothing in it can be a hit but what lies in its
// subdirectories: they are opened by their recorded names, and it is
// not listed. For a tree of 10000 files in 100 directories, listing them
// cost 3 to 5 ms of each cached run (ext4 hashes every name of a
// directory it lists).
static int sweep_dir(struct sweep *sw, int fd, int root, int depth, int prot, int rec) {
	if (++sw->dirs > (1 << 18) || depth > 128) {
		close(fd);
		return 1;
	}
	long long t0 = sw->t0;
	struct stat st;
	if (rec >= 0) {
		const struct dirseen *d = &sw->f->dirs[rec];
		if (fstat(fd, &st) < 0 || (uint64_t)st.st_dev != d->want[0] || (uint64_t)st.st_ino != d->want[1]) rec = -1;
		else if (d->quiet && !prot && (uint64_t)st.st_mtim.tv_sec * 1000000000ULL + st.st_mtim.tv_nsec == d->want[2] &&
		         (uint64_t)st.st_ctim.tv_sec * 1000000000ULL + st.st_ctim.tv_nsec == d->want[3]) {
			int hit = 0;
			for (int k = d->child; !hit && k >= 0; k = sw->f->dirs[k].next) {
				int c = openat(fd, sw->f->dirs[k].name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				// Gone or replaced, it cannot be: the directory is as it
				// was. The adopter looks if it is.
				hit = c < 0 || sweep_dir(sw, c, 0, depth + 1, 0, k);
			}
			close(fd);
			return hit;
		}
	}
	// A buffer per level, kept for the next directory at that depth:
	// getdents64 straight, without readdir's fstat and fcntl per directory.
	static char *bufs[130];
	if (!bufs[depth] && !(bufs[depth] = malloc(16384))) {
		close(fd);
		return 1;
	}
	char *buf = bufs[depth];
	int hit = 0;
	long n;
	while (!hit && (n = syscall(SYS_getdents64, fd, buf, 16384)) > 0) {
		for (long off = 0; !hit && off < n;) {
			struct dirent64 *e = (struct dirent64 *)(buf + off);
			off += e->d_reclen;
			const char *nm = e->d_name;
			if (!strcmp(nm, ".") || !strcmp(nm, "..")) continue;
			unsigned char typ = e->d_type;
			if (typ == DT_UNKNOWN) {
				struct stat est;
				if (fstatat(fd, nm, &est, AT_SYMLINK_NOFOLLOW) == 0) typ = S_ISDIR(est.st_mode) ? DT_DIR : S_ISLNK(est.st_mode) ? DT_LNK : DT_REG;
			}
			if (!strcmp(nm, ".git")) {
				// The root's is the git view's own. One below the walk's
				// depth: what its config names in its work tree (a
				// relative core.hooksPath) only the Go sweep reads.
				if (!root) hit = recent_at(fd, nm, t0) || (typ == DT_DIR && (depth > 4 || git_touched(fd, t0))) || (typ == DT_LNK && link_leaves(fd, nm));
				continue;
			}
			if (!strcmp(nm, "HEAD") && !root) hit = recent_at(fd, nm, t0);
			if (typ == DT_LNK) hit = hit || recent_at(fd, nm, t0) || link_leaves(fd, nm);
			// Below the walk's depth (gitview's walkDepth, 4) no walk
			// held or moved aside a protected name.
			int p = prot || (depth > 4 && maybe_protected(nm));
			if (p) hit = hit || recent_at(fd, nm, t0);
			if (hit || typ != DT_DIR || !strcmp(nm, "node_modules")) continue;
			int c = openat(fd, nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (c >= 0) hit = sweep_dir(sw, c, 0, depth + 1, p, dir_child(sw->f, sw->slots, rec, nm));
		}
	}
	close(fd);
	return hit || n < 0;
}

// swept_changed reports whether the sweep after the run has work: the Go
// adopter then runs even when no fact the walk recorded changed.
static int swept_changed(struct fast *f) {
	if (!f->ws) return 0;
	int fd = open(f->ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) return 0;
	struct sweep sw = {.f = f, .t0 = strtoll(f->t0, NULL, 10)};
	int *slots = f->ndirs > 0 ? malloc(DIR_SLOTS * sizeof(int)) : NULL;
	int rec = -1;
	if (slots) {
		link_dirs(f, slots);
		sw.slots = slots;
		// sweep_dir checks that it is the directory opened.
		for (int i = 0; i < f->ndirs && rec < 0; i++)
			if (f->dirs[i].root) rec = i;
	}
	int hit = sweep_dir(&sw, fd, 1, 0, 0, rec);
	free(slots);
	return hit;
}

// pending_waits reports whether reductions that earlier runs' ends left
// to the last run out wait in the git state directory's pending/
// (gitview/pending_linux.go): one open and one listing, of a directory
// that is usually missing or empty.
static int pending_waits(struct fast *f) {
	if (f->gkey < 0) return 0;
	int d = openat(f->gkey, "../pending", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0) return 0;
	int empty = dir_empty(d);
	close(d);
	return !empty;
}

// facts_changed reports whether a directory the plan's walk recorded
// gained or lost a subdirectory or a .git while the sandbox ran (its
// placeholders and .git removed by then), where the sandbox may have
// made a repository.
static int facts_changed(struct fast *f) {
	for (int i = 0; i < f->ndirs; i++) {
		uint64_t before[4];
		memcpy(before, f->dirs[i].id, sizeof(before));
		if (dir_changed(&f->dirs[i], before)) return 1;
	}
	return 0;
}

// make_fresh redoes the git view's fresh directory for this run: its own
// locked RUN directory (after checking that no earlier run's changes wait
// to be adopted, which only the Go path does), an empty marked .git on
// the host held with a shared lock, and the RUN directory's meta.
static int make_fresh(struct fast *f, struct cursor *c) {
	uint32_t n = cur_u32(c);
	if (c->bad || n > 1) return miss(f, "malformed entry", NULL);
	if (n == 0) return 0;
	const char *keydir = cur_str(c), *old = cur_str(c), *rel = cur_str(c);
	uint32_t nover = cur_u32(c), mn = 0;
	const uint8_t *meta = cur_bytes(c, &mn);
	if (c->bad || !is_run_name(old) || !f->ws || (rel[0] ? nover != 0 || strchr(rel, '/') : nover == 0 || nover > MAX_OVERLAYS || mn == 0))
		return miss(f, "malformed entry", NULL);
	f->fresh_old = old;
	f->grel = rel;
	if (check_trees(f, keydir) < 0) return -1; // before a directory is made there
	f->gkey = open(keydir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (f->gkey < 0 || !private_dir(f->gkey)) return miss(f, "the git state directory is missing or not private", keydir);
	int d = openat(f->gkey, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = d >= 0 ? fdopendir(d) : NULL;
	if (!dir) {
		if (d >= 0) close(d);
		return miss(f, "cannot list the git state directory", keydir);
	}
	struct dirent *e;
	int pending = 0;
	while (!pending && (e = readdir(dir))) {
		if (!is_run_name(e->d_name)) continue;
		int r = openat(f->gkey, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (r >= 0 && flock(r, LOCK_EX | LOCK_NB) == 0) pending = 1;
		if (r >= 0) close(r);
	}
	closedir(dir);
	if (pending) return miss(f, "an earlier run's git changes wait to be adopted", NULL);
	uint8_t rnd[8];
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) return miss(f, "no random bytes", NULL);
	for (int i = 0; i < 8; i++) snprintf(f->fresh_run + 2 * i, 3, "%02x", rnd[i]);
	// Made under a name no run has and locked before it is renamed to
	// its run name: a Go run starting meanwhile adopts and removes run
	// directories nobody holds (gitview's openRun does the same).
	char tmp[32];
	snprintf(tmp, sizeof(tmp), ".new-%s", f->fresh_run);
	if (mkdirat(f->gkey, tmp, 0700) < 0) return miss(f, "cannot make the run's git state directory", keydir);
	f->grun = openat(f->gkey, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (f->grun < 0 || flock(f->grun, LOCK_EX | LOCK_NB) < 0 || renameat(f->gkey, tmp, f->gkey, f->fresh_run) < 0)
		return miss(f, "cannot make the run's git state directory", keydir);
	if (nover) {
		// Repositories shown as overlays (addOverlay in gitview): each
		// one's upper and work, and the record the Go supervisor made,
		// which the entry's facts keep true (the repositories' identities
		// and launch states, the launch walk).
		f->noverlay = nover;
		for (uint32_t i = 0; i < nover; i++) {
			char g[16];
			snprintf(g, sizeof(g), "g%u", i);
			if (mkdirat(f->grun, g, 0700) < 0) return miss(f, "cannot make the run's git state directory", keydir);
			int gfd = openat(f->grun, g, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int bad = gfd < 0 || mkdirat(gfd, "upper", 0700) < 0 || mkdirat(gfd, "work", 0700) < 0;
			if (gfd >= 0) close(gfd);
			if (bad) return miss(f, "cannot make the run's git state directory", keydir);
		}
		int mfd = openat(f->grun, "meta", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		int bad = mfd < 0 || jail_write_all(mfd, meta, mn) < 0;
		if (mfd >= 0) close(mfd);
		return bad ? miss(f, "cannot write the run's git state", NULL) : 0;
	}
	if (mkdirat(f->grun, "g0", 0700) < 0) return miss(f, "cannot make the run's git state directory", keydir);
	f->gws = open(f->ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (f->gws < 0) return miss(f, "cannot open the workspace", f->ws);
	if (mkdirat(f->gws, rel, 0755) < 0) return miss(f, "a .git appeared in the workspace", NULL);
	struct { uint64_t flags, mode, resolve; } how = {O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, 0x08 | 0x04 | 0x02};
	f->ggit = syscall(437 /* openat2 */, f->gws, rel, &how, sizeof(how));
	if (f->ggit < 0) return miss(f, "cannot open the .git it made", NULL);
	fsetxattr(f->ggit, "user.jail", "git", 3, 0); // without user xattrs, removed by this run only
	if (flock(f->ggit, LOCK_SH) < 0 || !same_file(f->ggit, f->gws, rel)) return miss(f, ".git changed while it was made", NULL);
	struct stat st;
	if (fstat(f->ggit, &st) < 0) return miss(f, "cannot stat the .git it made", NULL);
	struct buf m = {0};
	char num[64];
	put(&m, "{\"workspace\":", 13);
	put_json(&m, f->ws);
	put(&m, ",\"repos\":[{\"rel\":", 17);
	put_json(&m, rel);
	snprintf(num, sizeof(num), ",\"dev\":%llu,\"ino\":%llu,\"fresh\":true}]}", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	put(&m, num, strlen(num));
	int mfd = openat(f->grun, "meta", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int bad = m.oom || mfd < 0 || jail_write_all(mfd, m.b, m.n) < 0;
	if (mfd >= 0) close(mfd);
	free(m.b);
	return bad ? miss(f, "cannot write the run's git state", NULL) : 0;
}

static void release_placeholders(struct fast *f);

// drop_locks lets go of the objects this run held (holds_linux.go): the
// sandbox has ended, and this run's own locks would keep it from
// removing its .git and placeholders.
static void drop_locks(struct fast *f) {
	for (int i = 0; i < f->nlocks; i++) close(f->locks[i]);
	f->nlocks = 0;
}

static void release(struct fast *f) {
	drop_locks(f);
	fresh_release(f);
	release_placeholders(f);
}

// release_placeholders removes the placeholders of this run that no
// other run holds and whose names still hold them, by descriptor, as
// placeholder.release does: the shared lock is converted (the last holder gets it), the name
// is checked on the held parent, and only an empty directory can go; one
// the host's tools wrote into loses its mark and stays.
static void aside_if_replaced(struct fast *f, int parent, const char *name, const char *rel, uint64_t dev, uint64_t ino);

// replaced is placeholder.replaced (placeholders_linux.go): what stands
// at p's name when it is not p's directory, and not an empty directory,
// is moved aside (NAME.jail-RANDOM), or left to the last run out when a
// live run holds it, and the line names it.
static void replaced(struct fast *f, struct placeholder *p) {
	if (p->parent >= 0) aside_if_replaced(f, p->parent, p->name, p->rel ? p->rel : p->name, p->dev, p->ino);
}

// pend_aside records the entry rel of the workspace (st) in the git state
// directory's pending/ as a protected name to move aside, as gitview's
// pending.write does (pendingItem, kind "aside"): a live run holds it,
// and the last run out moves it aside (gitview.ReducePending). 0 when
// the record is written.
static int pend_aside(struct fast *f, const char *rel, const struct stat *st) {
	if (f->gkey < 0 || !f->ws || strlen(f->fresh_run) != 16) return -1;
	int sd = openat(f->gkey, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sd < 0) return -1;
	(void)mkdirat(sd, "pending", 0700);
	int pd = openat(sd, "pending", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(sd);
	struct stat ps;
	if (pd < 0 || fstat(pd, &ps) != 0 || ps.st_uid != getuid() || (ps.st_mode & 077)) {
		if (pd >= 0) close(pd);
		return -1;
	}
	size_t cap = 6 * (strlen(f->ws) + strlen(rel)) + 256;
	char *rec = malloc(cap), *w = rec, *end = rec + cap;
	unsigned char r[8];
	char name[64], tmp[80];
	int ok = rec && getrandom(r, sizeof r, 0) == (ssize_t)sizeof r;
	if (ok) {
		w += snprintf(w, end - w, "{\"workspace\":");
		w = jail_json_string(w, end, f->ws, 0);
		w += snprintf(w, end - w, ",\"kind\":\"aside\",\"rel\":");
		w = jail_json_string(w, end, rel, 0);
		w += snprintf(w, end - w, ",\"dev\":%llu,\"ino\":%llu,\"run\":\"%s\"}", (unsigned long long)st->st_dev, (unsigned long long)st->st_ino, f->fresh_run);
		ok = w < end;
		snprintf(name, sizeof name, "%s-%02x%02x%02x%02x%02x%02x%02x%02x", f->fresh_run, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
		snprintf(tmp, sizeof tmp, ".tmp-%s", name);
	}
	int fd = ok ? openat(pd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
	// Whole or not at all: a processor never reads half a record.
	ok = fd >= 0 && jail_write_all(fd, rec, w - rec) == 0;
	if (fd >= 0 && close(fd) != 0) ok = 0;
	if (fd >= 0 && (!ok || renameat(pd, tmp, pd, name) != 0)) {
		unlinkat(pd, tmp, 0);
		ok = 0;
	}
	free(rec);
	close(pd);
	return ok ? 0 : -1;
}

// aside_if_replaced moves aside what stands at name beneath parent (rel
// in the workspace) when it is not the object dev/ino and not an empty
// directory or file, unless a live run holds it, and names it on stderr.
static void aside_if_replaced(struct fast *f, int parent, const char *name, const char *rel, uint64_t dev, uint64_t ino) {
	struct stat st;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || ((uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino) ||
	    (S_ISREG(st.st_mode) && st.st_size == 0))
		return;
	int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	if (S_ISDIR(st.st_mode)) {
		int d = openat(parent, name, flags | O_DIRECTORY);
		if (d < 0) return;
		DIR *dir = fdopendir(d);
		if (!dir) {
			close(d);
			return;
		}
		int empty = 1;
		for (struct dirent *e; empty && (e = readdir(dir));)
			empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
		closedir(dir);
		if (empty) return;
	}
	// Claim (holds_linux.go): the object's own lock, or its directory's
	// for one that cannot be locked itself.
	int lk = S_ISDIR(st.st_mode) || S_ISREG(st.st_mode) ? openat(parent, name, flags | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0)) : -1;
	struct stat now;
	if (lk >= 0 && (fstat(lk, &now) != 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino)) {
		close(lk);
		return;
	}
	if (lk < 0) lk = openat(parent, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lk < 0) return;
	if (flock(lk, LOCK_EX | LOCK_NB) != 0) {
		close(lk);
		// Another live run holds it (a run in this workspace started
		// since, which takes it for the user's): the last run out
		// moves it aside, as gitview's movedAside leaves it.
		char line[2 * PATH_MAX];
		int n = pend_aside(f, rel, &st) == 0
			    ? snprintf(line, sizeof line, "jail: these were made while the sandbox ran, and another live run's sandbox has a mount on them (moving them now would take it away): jail reduces them when the last such run ends: %s\n", rel)
			    : snprintf(line, sizeof line, "jail: WARNING: these were made while the sandbox ran, and another live run's sandbox has a mount on them, so jail left them as they are and cannot finish them later (no git state directory); look at them before any tool opens this workspace: %s\n", rel);
		if (n > 0 && (size_t)n < sizeof line) {
			for (int i = 0; i < n - 1; i++)
				if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] >= 0x7f) line[i] = '?';
			jail_write_all(2, line, n);
		}
		return;
	}
	unsigned char r[8];
	char aside[NAME_MAX + 1];
	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r ||
	    snprintf(aside, sizeof aside, "%s.jail-%02x%02x%02x%02x%02x%02x%02x%02x", name, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]) >= (int)sizeof aside ||
	    syscall(SYS_renameat2, parent, name, parent, aside, 1 /* RENAME_NOREPLACE */) != 0) {
		close(lk);
		return;
	}
	close(lk);
	char line[2 * PATH_MAX];
	int n = snprintf(line, sizeof line,
			 "jail: files that editors, agent CLIs and hooks managers run code from were put in place of what this run protected while it lasted (by a sandbox whose workspace holds this one, or a swap), and were moved aside; look at them before you rename them back: %s (now %s)\n",
			 rel, aside);
	if (n > 0 && (size_t)n < sizeof line) {
		// The names are jail's own (the protected list's); still only
		// printable bytes reach the terminal.
		for (int i = 0; i < n - 1; i++)
			if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] >= 0x7f) line[i] = '?';
		jail_write_all(2, line, n);
	}
}

static void release_placeholders(struct fast *f) {
	// This run's own locks first: a name replaced by a symlink (or
	// anything else that cannot be locked itself) is claimed through its
	// directory's lock, which this run holds shared for the root.
	drop_locks(f);
	for (int i = 0; i < f->nmade; i++) {
		struct placeholder *p = &f->made[i];
		struct stat st;
		int removed = 0;
		replaced(f, p);
		if (flock(p->fd, LOCK_EX | LOCK_NB) == 0 && fstatat(p->parent, p->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (uint64_t)st.st_dev == p->dev && (uint64_t)st.st_ino == p->ino) {
			removed = unlinkat(p->parent, p->name, AT_REMOVEDIR) == 0;
			if (!removed && (errno == ENOTEMPTY || errno == EEXIST)) fremovexattr(p->fd, "user.jail");
		}
		if (removed) defer_close(f, p->fd);
		else close(p->fd);
		if (p->parent >= 0) close(p->parent);
		free(p->name);
		free(p->rel);
	}
	f->nmade = 0;
}

// make_one makes the placeholder directory rel beneath wsfd, marked and
// locked shared, and keeps it. A name that exists now means the
// workspace changed (or another run is using it): the cache is not used.
static int make_one(struct fast *f, int wsfd, const char *rel, uint32_t at) {
	char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s", rel);
	char *slash = strrchr(buf, '/');
	const char *name = buf;
	int pfd;
	if (slash) {
		*slash = 0;
		name = slash + 1;
		pfd = open_beneath(wsfd, buf);
	} else {
		pfd = fcntl(wsfd, F_DUPFD_CLOEXEC, 3);
	}
	if (pfd < 0) return miss(f, "cannot open the parent of a placeholder", rel);
	if (mkdirat(pfd, name, 0777) < 0) {
		close(pfd);
		return miss(f, "a protected path appeared", rel);
	}
	int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st, now;
	if (fd >= 0) fsetxattr(fd, "user.jail", "placeholder", 11, 0);
	if (fd < 0 || flock(fd, LOCK_SH) < 0 || fstat(fd, &st) < 0 || fstatat(pfd, name, &now, AT_SYMLINK_NOFOLLOW) < 0 ||
	    st.st_dev != now.st_dev || st.st_ino != now.st_ino) {
		if (fd >= 0) close(fd);
		unlinkat(pfd, name, AT_REMOVEDIR);
		close(pfd);
		return miss(f, "cannot create a placeholder", rel);
	}
	struct placeholder *p = &f->made[f->nmade++];
	*p = (struct placeholder){.parent = pfd, .fd = fd, .name = strdup(name), .rel = strdup(rel), .dev = st.st_dev, .ino = st.st_ino, .at = at};
	if (!p->name) return miss(f, "out of memory", NULL);
	return 0;
}

// read_placeholders reads what the entry says of the placeholders: the
// workspace, each protected name to make with where its identity goes in
// the plan, and the protected directories to lock.
static int read_placeholders(struct fast *f, struct cursor *c) {
	f->ws = cur_str(c);
	uint32_t n = cur_u32(c);
	if (c->bad || n > MAX_PLACEHOLDERS) return miss(f, "malformed entry", NULL);
	for (uint32_t i = 0; i < n; i++) {
		const char *rel = cur_str(c);
		uint32_t at = cur_u32(c);
		if (c->bad || rel[0] == '/' || rel[0] == 0) return miss(f, "malformed entry", NULL);
		f->todo[f->ntodo++] = (struct todo){.rel = rel, .at = at};
	}
	uint32_t nl = cur_u32(c);
	for (uint32_t i = 0; i < nl && !c->bad; i++) {
		const char *rel = cur_str(c);
		if (f->nlocktodo >= MAX_LOCKS) return miss(f, "more objects to hold than a cached run holds", NULL);
		f->locktodo[f->nlocktodo++] = rel;
	}
	return c->bad ? miss(f, "malformed entry", NULL) : 0;
}

// make_placeholders makes every placeholder the plan expects.
static int make_placeholders(struct fast *f) {
	if (f->ntodo == 0) return 0;
	int wsfd = open(f->ws, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (wsfd < 0) return miss(f, "cannot open the workspace", f->ws);
	for (int i = 0; i < f->ntodo; i++)
		if (make_one(f, wsfd, f->todo[i].rel, f->todo[i].at) < 0) {
			close(wsfd);
			return -1;
		}
	close(wsfd);
	return 0;
}

// open_lockable opens path beneath dirfd (resolve: openat2's) to be
// locked, as openLockable in holds_linux.go: a directory or a regular
// file, read-only, following no symlink, never blocking; -1 for anything
// else (its directory is held in its place).
static int open_lockable(int dirfd, const char *path, uint64_t resolve) {
	struct { uint64_t flags, mode, resolve; } how = {O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, resolve};
	int p = syscall(437 /* openat2 */, dirfd, path, &how, sizeof(how));
	if (p < 0) return -1;
	struct stat st, now;
	int ok = fstat(p, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode));
	close(p);
	if (!ok) return -1;
	how.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0);
	int fd = syscall(437 /* openat2 */, dirfd, path, &how, sizeof(how));
	if (fd >= 0 && (fstat(fd, &now) < 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

// take_locks takes the shared locks of the objects the sandbox will have
// mounts on (Placeholders.hold in holds_linux.go), before any part of
// the plan is sent: a run ending meanwhile must find them held. Each is
// workspace-relative, or absolute outside the workspace (a --rw tree, the
// persistent home). One that cannot be opened is left to the init, which
// checks every mount's identity.
static int take_locks(struct fast *f) {
	int wsfd = open(f->ws, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (wsfd < 0) return miss(f, "cannot open the workspace", f->ws);
	for (int i = 0; i < f->nlocktodo && f->nlocks < MAX_LOCKS; i++) {
		const char *p = f->locktodo[i];
		int fd = p[0] == '/' ? open_lockable(AT_FDCWD, p, 0x04 /* RESOLVE_NO_SYMLINKS */)
		                     : open_lockable(wsfd, p, 0x08 | 0x04 | 0x02 /* BENEATH, NO_SYMLINKS, NO_MAGICLINKS */);
		if (fd < 0) continue;
		// Bounded as lockShared's (holds_linux.go): a process holding
		// the object exclusively sends the run to the Go path, which
		// waits as long and then names it.
		int r = -1;
		for (int tries = 0; tries < 300 && (r = flock(fd, LOCK_SH | LOCK_NB)) < 0 && (errno == EWOULDBLOCK || errno == EINTR); tries++) {
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		}
		if (r < 0) {
			close(fd);
			return miss(f, "an object the sandbox sits on is locked by another process", p);
		}
		f->lockrel[f->nlocks] = p;
		f->locks[f->nlocks++] = fd;
	}
	close(wsfd);
	return 0;
}

// locks_moved reports whether a name in the workspace this run held no
// longer holds the object it locked (another hand renamed or exchanged
// it while the run lasted: a run in a parent directory): the adopter then
// runs (a protected name replaced at the root is gitview's movedAside's
// against a launch walk), and a protected name at the root that another
// hand replaced is moved aside here (aside_if_replaced: no launch walk of
// a workspace that is no repository is kept). It drops this run's locks
// (the sandbox has ended): what replaced a name may be a symlink, claimed
// through the root's lock, which this run holds shared until then.
static int locks_moved(struct fast *f) {
	// The workspace as it was locked at launch, by its descriptor: its
	// path may name another directory by now (a run in a parent renamed
	// it away and put one of its own there). Opened again, not dup'd:
	// the lock is the open file's, and must go with drop_locks.
	int wsfd = -1;
	for (int i = 0; i < f->nlocks && wsfd < 0; i++)
		if (f->lockrel[i] && !strcmp(f->lockrel[i], ".")) wsfd = openat(f->locks[i], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (wsfd < 0 && f->ws) wsfd = open(f->ws, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (wsfd < 0) {
		drop_locks(f);
		return 0;
	}
	int moved = 0, naside = 0;
	struct moved_name { const char *name; uint64_t dev, ino; } aside[MAX_LOCKS];
	for (int i = 0; i < f->nlocks; i++) {
		const char *p = f->lockrel[i];
		struct stat a, b;
		if (!p || p[0] == '/' || !strcmp(p, ".") || fstat(f->locks[i], &a) != 0) continue;
		if (fstatat(wsfd, p, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) continue;
		moved = 1;
		if (!strchr(p, '/') && strcmp(p, ".git") && maybe_protected(p))
			aside[naside++] = (struct moved_name){p, a.st_dev, a.st_ino};
	}
	// The identities are taken; lockrel's names stay (the entry's).
	drop_locks(f);
	for (int i = 0; i < naside; i++) aside_if_replaced(f, wsfd, aside[i].name, aside[i].name, aside[i].dev, aside[i].ino);
	close(wsfd);
	return moved;
}

// MORE_WAIT_MS is how long pid 1 waits at OP_MORE for the rest of the
// plan: making the placeholders takes milliseconds; a supervisor that
// takes longer has stopped or is stuck, and pid 1 reports so instead of
// waiting unseen (this process then plans the run afresh).
#define MORE_WAIT_MS 10000

// plan_split is where the plan is cut in two (OP_MORE): the start of the
// first operation that protects a placeholder, which only it and what
// follows depend on. Each one's operation is checked to be the protect of
// that path (op, path, then the identity at at); 0 (one part) when there
// is none or one is not where it should be.
static uint32_t plan_split(struct fast *f, const uint8_t *setup, uint32_t sn) {
	uint32_t split = 0;
	for (int i = 0; i < f->ntodo; i++) {
		char dest[PATH_MAX];
		int k = snprintf(dest, sizeof(dest), "%s/%s", f->ws, f->todo[i].rel);
		uint32_t at = f->todo[i].at, len = (uint32_t)k;
		if (k < 0 || (size_t)k >= sizeof(dest) || at > sn || at < 9 + len) return 0;
		uint32_t start = at - 9 - len, op, n;
		memcpy(&op, setup + start, 4);
		memcpy(&n, setup + start + 4, 4);
		if (op != 11 /* OP_PROTECT */ || n != len || memcmp(setup + start + 8, dest, len) || setup[at - 1] != 0) return 0;
		if (split == 0 || start < split) split = start;
	}
	return split;
}

// patch_identities writes each placeholder's identity into the plan's
// setup, where the Go path wrote its own placeholder's: the init refuses
// to protect any other object at that name.
// b holds the setup from its offset off on (the plan's second part).
static int patch_identities(struct fast *f, uint8_t *b, uint32_t off, uint32_t sn) {
	for (int i = 0; i < f->nmade; i++) {
		struct placeholder *p = &f->made[i];
		if (p->at < off || (uint64_t)p->at + 16 > sn) return miss(f, "malformed entry", NULL);
		memcpy(b + (p->at - off), &p->dev, 8);
		memcpy(b + (p->at - off) + 8, &p->ino, 8);
	}
	return 0;
}

// ---- the command ---------------------------------------------------------

static void put(struct buf *b, const void *p, size_t n) {
	if (b->oom) return;
	if (b->n + n > b->cap) {
		size_t cap = (b->cap ? b->cap * 2 : 4096);
		while (cap < b->n + n) cap *= 2;
		uint8_t *nb = realloc(b->b, cap);
		if (!nb) { b->oom = 1; return; }
		b->b = nb;
		b->cap = cap;
	}
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put_u32(struct buf *b, uint32_t v) { put(b, &v, 4); }

static void put_str(struct buf *b, const char *s) {
	uint32_t n = strlen(s);
	put_u32(b, n);
	put(b, s, n + 1);
}

// put_json appends s as json.Marshal writes a Go string (jail_json_string).
static void put_json(struct buf *b, const char *s) {
	size_t cap = 6 * strlen(s) + 3;
	char *q = malloc(cap);
	if (!q) {
		b->oom = 1;
		return;
	}
	put(b, q, jail_json_string(q, q + cap, s, 0) - q);
	free(q);
}

// ---- the interactive run's pty (terminal_linux.go) --------------------
//
// An interactive run's command never holds the caller's terminal: its
// stdio that was the terminal is the slave of a new pty, which pid 1
// makes the command's controlling terminal (TERM_PTY), and this process
// relays between the caller's terminal, in raw mode, and the master
// (Terminal in terminal_linux.go; the cached run asks no questions, so it
// never pauses). Keys not yet taken by the pty and output not yet shown
// wait in a buffer, so a command that stops reading, or a slow terminal,
// never blocks this loop (and the signals and the timeout it serves).

static uint64_t now_ns(void);

struct relay {
	int on;
	int out_only; // a run that is not interactive: output only, no keys, never raw
	int tty, master, slave; // tty: a duplicate of stdin
	struct termios saved;
	char in[4096];
	size_t nin;
	char out[32768];
	size_t nout, oout;
	int started;  // the command has its side; the terminal is raw
	int eof;      // the command's side is closed
	int tty_gone; // the terminal hung up
};
static struct relay rly = {.tty = -1, .master = -1, .slave = -1};

// relay_open is OpenTerminal: the terminal (a duplicate of fd: stdin for
// an interactive run, read only once poll says so, written blocking), a
// pty with its modes and size.
static int relay_open(int fd) {
	rly.tty = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (rly.tty < 0 || tcgetattr(rly.tty, &rly.saved) < 0) goto fail;
	rly.master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	int unlock = 0;
	if (rly.master < 0 || ioctl(rly.master, TIOCSPTLCK, &unlock) < 0) goto fail;
	rly.slave = ioctl(rly.master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (rly.slave < 0) goto fail;
	tcsetattr(rly.slave, TCSANOW, &rly.saved);
	struct winsize ws;
	if (ioctl(rly.tty, TIOCGWINSZ, &ws) == 0) ioctl(rly.master, TIOCSWINSZ, &ws);
	rly.on = 1;
	return 0;
fail:
	if (rly.tty >= 0) close(rly.tty);
	if (rly.master >= 0) close(rly.master);
	rly.tty = rly.master = rly.slave = -1;
	return -1;
}

// relay_raw sets the caller's terminal raw (1: every key, ^C and ^Z too,
// goes to the command's terminal) or back to its own modes (0).
static void relay_raw(int raw) {
	if (!rly.on || rly.out_only || rly.tty_gone) return;
	struct termios t = rly.saved;
	if (raw) {
		t.c_iflag &= ~(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON);
		t.c_oflag &= ~OPOST;
		t.c_lflag &= ~(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
		t.c_cflag &= ~(CSIZE | PARENB);
		t.c_cflag |= CS8;
		t.c_cc[VMIN] = 1;
		t.c_cc[VTIME] = 0;
	}
	tcsetattr(rly.tty, TCSADRAIN, &t);
}

static void relay_resize(void) {
	struct winsize ws;
	if (rly.on && ioctl(rly.tty, TIOCGWINSZ, &ws) == 0) ioctl(rly.master, TIOCSWINSZ, &ws);
}

// relay_events are the poll events of the terminal and the master.
static void relay_events(struct pollfd *t, struct pollfd *m) {
	t->fd = rly.on && !rly.out_only && !rly.tty_gone ? rly.tty : -1;
	t->events = rly.nin == 0 ? POLLIN : 0;
	m->fd = rly.on && !rly.eof ? rly.master : -1;
	m->events = (rly.nout == rly.oout ? POLLIN : 0) | (rly.nin > 0 ? POLLOUT : 0);
}

// relay_io moves what poll said can move.
static void relay_io(short trev, short mrev) {
	if (!rly.on) return;
	if ((trev & POLLIN) && rly.nin == 0) {
		ssize_t n = read(rly.tty, rly.in, sizeof(rly.in));
		if (n > 0) rly.nin = n;
		else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			// The terminal hung up: so does the command's (the last
			// master closed sends SIGHUP to its session).
			rly.tty_gone = 1;
			close(rly.master);
			rly.master = -1;
			rly.eof = 1;
		}
	} else if (trev & (POLLHUP | POLLERR)) {
		rly.tty_gone = 1;
	}
	if ((mrev & POLLOUT) && rly.nin > 0 && rly.master >= 0) {
		ssize_t n = write(rly.master, rly.in, rly.nin);
		if (n > 0) {
			memmove(rly.in, rly.in + n, rly.nin - n);
			rly.nin -= n;
		}
	}
	if ((mrev & (POLLIN | POLLHUP | POLLERR)) && rly.nout == rly.oout && rly.master >= 0) {
		ssize_t n = read(rly.master, rly.out, sizeof(rly.out));
		if (n > 0) {
			rly.nout = n;
			rly.oout = 0;
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			rly.eof = 1; // EIO: every descriptor of the slave is closed
		}
	}
	if (rly.nout > rly.oout && !rly.tty_gone) {
		// Blocking, as the command's own writes to the terminal were.
		if (jail_write_all(rly.tty, rly.out + rly.oout, rly.nout - rly.oout) < 0) rly.tty_gone = 1;
		rly.nout = rly.oout = 0;
	}
}

// relay_close shows what the command wrote last (until its side is
// closed, at most a second), then gives the terminal its modes back.
static void relay_close(void) {
	if (!rly.on) return;
	uint64_t until = now_ns() + 1000000000ULL;
	while (rly.started && !rly.tty_gone && (!rly.eof || rly.nout > rly.oout) && now_ns() < until) {
		struct pollfd p[2];
		relay_events(&p[0], &p[1]);
		p[0].fd = -1; // no more keys
		if (poll(p, 2, 100) <= 0) continue;
		relay_io(p[0].revents, p[1].revents);
	}
	relay_raw(0);
	if (rly.master >= 0) close(rly.master);
	if (rly.slave >= 0) close(rly.slave);
	close(rly.tty);
	rly.on = rly.started = rly.out_only = 0;
	rly.master = rly.slave = rly.tty = -1;
}

// ---- running it ----------------------------------------------------------

// send_stdio hands the command its stdio: the caller's, except that a
// command that is not interactive never gets the terminal as its stdin
// (ttyStdin in run.go): it would read what the person types.
// The tasks files of the run's cgroups v1 (lim_joiners) travel with them.

// on_pty reports whether jail's descriptor fd is the terminal the pty relays.
static int on_pty(int fd) {
	struct stat t, x;
	return rly.on && fstat(rly.tty, &t) == 0 && fstat(fd, &x) == 0 && S_ISCHR(x.st_mode) && x.st_rdev == t.st_rdev;
}

// output_pty gives a command that is not interactive, whose stdout or
// stderr is the caller's terminal, the slave of a pty of its own in its
// place, whose output the relay copies to the terminal (NewTerminalOutput
// in terminal_linux.go): any descriptor of the caller's terminal, even
// one opened write-only, would let it change the terminal's modes and
// size (stty), lock it against the user's own opens (TIOCEXCL) or flush
// what the person typed. It returns -1 for a stdout and a stderr that are
// two different terminals (or not the interactive run's), which the Go
// path relays each on its own.
static int output_pty(void) {
	if (rly.on) return (isatty(1) && !on_pty(1)) || (isatty(2) && !on_pty(2)) ? -1 : 0;
	int fd = isatty(1) ? 1 : isatty(2) ? 2 : -1;
	if (fd < 0) return 0;
	if (relay_open(fd) < 0) return -1;
	rly.out_only = 1;
	return fd == 1 && isatty(2) && !on_pty(2) ? -1 : 0;
}

static int send_stdio(int sock, int foreground, const int *join, int njoin) {
	int fds[5] = {0, 1, 2}, null = -1;
	// Where jail's stdio is the terminal, the command's is the pty (its
	// stdin only when it is interactive).
	for (int i = rly.out_only ? 1 : 0; i < 3; i++)
		if (on_pty(i)) fds[i] = rly.slave;
	if (!foreground && isatty(0)) {
		null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null < 0) return -1;
		fds[0] = null;
	}
	// Never the caller's terminal itself (output_pty).
	for (int i = 1; i <= 2; i++)
		if (fds[i] == i && isatty(i)) {
			if (null >= 0) close(null);
			return -1;
		}
	for (int i = 0; i < njoin && i < 2; i++) fds[3 + i] = join[i];
	int r = jail_send_fds(sock, fds, 3 + (njoin < 2 ? njoin : 2));
	if (null >= 0) close(null);
	return r;
}

// reclaim_terminal makes this process group the terminal's foreground
// again, as a shell does after a job (reclaimTerminal in cmd_linux.go).
static void reclaim_terminal(void) {
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;
	sigaction(SIGTTOU, &ign, &old);
	tcsetpgrp(0, getpgrp());
	sigaction(SIGTTOU, &old, NULL);
}

// json_int finds "key":N in a report line.
static int json_int(const char *line, const char *key, int *v) {
	char pat[32];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(line, pat);
	if (!p) return 0;
	*v = atoi(p + strlen(pat));
	return 1;
}

// print_notice puts a notice of the sandbox's init (Spec.OffDNS, the
// EBUSY hint) on stderr, as Cmd.Notice does on the Go path. pid 1 builds
// its text from a checked template and a name it escaped to printable
// ASCII (shown_path in pid1_linux.c), so the JSON string holds no '"' and
// no escape but "\\" (a backslash of that form); anything else is not
// printed.
static void print_notice(const char *line) {
	const char *k = "\"text\":\"", *p = strstr(line, k);
	if (!p) return;
	p += strlen(k);
	const char *q = strchr(p, '"');
	if (!q) return;
	char out[8192];
	size_t n = 0;
	for (const char *x = p; x < q; x++) {
		if (*x < ' ' || *x > '~') return;
		if (*x == '\\' && (++x == q || *x != '\\')) return;
		if (n + 2 > sizeof(out)) return;
		out[n++] = *x;
	}
	out[n++] = '\n';
	jail_write_all(2, out, n);
}

static const int forwarded_sigs[] = {JAIL_FORWARDED_SIGNALS};

// The saved state a fallback restores before it executes the binary again.
struct saved {
	int foreground;
	sigset_t mask;
	struct sigaction pipe;
	int entryfd;
	const char *entry;
};

static void guard_done(struct fast *f);

// fall_back hands the run to the Go supervisor: this binary again, named
// REPLAN_ARG0 so that its constructor does not look at the cache, which
// plans afresh and stores a new entry. A stale entry is removed first; one
// whose command could not be executed is not stale.
static void __attribute__((noreturn)) fall_back(struct fast *f, char **argv, char **envp, struct saved *sv, int stale) {
	// The command's child may have taken the terminal before its exec
	// failed; the Go supervisor starts from a terminal of its own.
	relay_close();
	if (sv->foreground) reclaim_terminal();
	release(f);
	guard_done(f);
	if (stale && sv->entryfd >= 0) unlinkat(sv->entryfd, sv->entry, 0);
	sigaction(SIGPIPE, &sv->pipe, NULL);
	sigprocmask(SIG_SETMASK, &sv->mask, NULL);
	if (f->trace) say("jail: plan cache: the cached plan failed; planning afresh\n");
	argv[0] = REPLAN_ARG0;
	execve("/proc/self/exe", argv, envp);
	say("jail: plan cache: cannot execute /proc/self/exe again\n");
	_exit(125);
}

// ---- limits (cgroup_linux.go) ---------------------------------------------
//
// A cached run enforces the limits its plan was made with, by the method
// the Go supervisor used then: a child cgroup v2 of the one it made it in,
// cgroup v1 memory and pids hierarchies, or rlimits on the command. The
// early child is moved into the cgroup before it gets the plan, so pid 1
// and the command start there. If the cgroup cannot be made now, the Go
// supervisor plans afresh.

static uint64_t now_ns(void);


struct limits {
	uint32_t method;
	uint64_t memory, pids; // RLIMIT_DATA (0: not set) and the task bound
	uint64_t census;       // rlimits: the memory bound the census holds the sandbox to
	const char *parent; // cgroup v2: where the sandbox's cgroup is made
	const char *note;   // limits_note, a JSON string
	const char *memtext;
	// Where this run's cgroups go, decided now (lim_decide): the v2
	// parent, and jail's own cgroups of the v1 memory and pids
	// hierarchies.
	char v2[PATH_MAX], v1mem[PATH_MAX], v1pids[PATH_MAX];
	int ndirs;
	char dirs[2][PATH_MAX];
};

static const char *limit_name(uint32_t m) {
	static const char *names[] = {"none", "cgroup2", "cgroup1", "rlimit"};
	return m < 4 ? names[m] : "none";
}

// cg_write writes a number (or "0" for v == 0 when forced) into dir/file.
static int cg_write(const char *dir, const char *file, unsigned long long v) {
	char path[PATH_MAX + 64], num[32];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) return -1;
	int n = snprintf(num, sizeof(num), "%llu", v);
	int r = write(fd, num, n) == n ? 0 : -1;
	close(fd);
	return r;
}

static void lim_remove(struct limits *l) {
	for (int i = l->ndirs - 1; i >= 0; i--) rmdir(l->dirs[i]);
	l->ndirs = 0;
}

// lim_sweep removes the empty cgroups that earlier cached runs left in
// dir (jail-PID-...: PID, the run's, is gone): a cached run does not wait
// for its sandbox's namespaces to be taken down before it exits.
static void lim_sweep(const char *dir) {
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) return;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "jail-", 5)) continue;
		long pid = strtol(de->d_name + 5, NULL, 10);
		if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH) unlinkat(fd, de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

// lim_decide makes newCgroup's choice (cgroup_linux.go) again without
// making anything: a cgroup v2 beneath this process's own when its
// cgroup.subtree_control delegates the controllers the limits need and
// the directory is writable; else writable cgroup v1 hierarchies; else
// rlimits. The plan names the method of the run that stored it, and the
// host may have changed since: a subtree delegated or taken back, jail
// moved into another cgroup (whose limits a sandbox made under the old
// one would escape), v1 hierarchies mounted or gone. A run whose method
// would differ plans afresh. parent gets the cgroup v2 directory.
static uint32_t lim_decide(struct limits *l, int mem, int pids) {
	char *parent = l->v2;
	size_t n = sizeof(l->v2);
	parent[0] = 0;
	snprintf(l->v1mem, sizeof(l->v1mem), "/sys/fs/cgroup/memory");
	snprintf(l->v1pids, sizeof(l->v1pids), "/sys/fs/cgroup/pids");
	char mnt[PATH_MAX] = "", own[PATH_MAX] = "";
	FILE *mi = fopen("/proc/self/mountinfo", "re");
	if (mi) {
		char *line = NULL;
		size_t cap = 0;
		while (!mnt[0] && getline(&line, &cap, mi) > 0) {
			// ID PARENT MAJ:MIN ROOT MOUNTPOINT ... - FSTYPE SOURCE OPTIONS
			char *sep = strstr(line, " - cgroup2 ");
			if (!sep) continue;
			char *f = line;
			for (int i = 0; i < 4 && f; i++) f = strchr(f, ' ') ? strchr(f, ' ') + 1 : NULL;
			char *end = f ? strchr(f, ' ') : NULL;
			if (end && end < sep && (size_t)(end - f) < sizeof(mnt)) {
				memcpy(mnt, f, end - f);
				mnt[end - f] = 0;
			}
		}
		free(line);
		fclose(mi);
	}
	int cfd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
	if (cfd >= 0) {
		char buf[4096];
		ssize_t k = read(cfd, buf, sizeof(buf) - 1);
		close(cfd);
		buf[k > 0 ? k : 0] = 0;
		// ID:CONTROLLERS:PATH; ownCgroupV2 and ownCgroupV1 in cgroup_linux.go.
		for (char *ln = buf; ln && *ln; ln = strchr(ln, '\n') ? strchr(ln, '\n') + 1 : NULL) {
			size_t e = strcspn(ln, "\n");
			char *c1 = memchr(ln, ':', e), *c2 = c1 ? memchr(c1 + 1, ':', e - (c1 + 1 - ln)) : NULL;
			if (!c2 || c2[1] != '/') continue;
			size_t plen = e - (c2 + 1 - ln);
			char ctrls[256];
			size_t clen = c2 - c1 - 1;
			if (clen >= sizeof(ctrls) - 2) continue;
			ctrls[0] = ',';
			memcpy(ctrls + 1, c1 + 1, clen);
			ctrls[clen + 1] = ',';
			ctrls[clen + 2] = 0;
			if (c1 - ln == 1 && ln[0] == '0' && clen == 0 && plen < sizeof(own)) {
				memcpy(own, c2 + 1, plen);
				own[plen] = 0;
			} else if (strstr(ctrls, ",memory,") && plen < PATH_MAX - 32) {
				snprintf(l->v1mem, sizeof(l->v1mem), "/sys/fs/cgroup/memory%.*s", (int)(plen == 1 ? 0 : plen), c2 + 1);
			} else if (strstr(ctrls, ",pids,") && plen < PATH_MAX - 32) {
				snprintf(l->v1pids, sizeof(l->v1pids), "/sys/fs/cgroup/pids%.*s", (int)(plen == 1 ? 0 : plen), c2 + 1);
			}
		}
	}
	if (mnt[0] && own[0]) {
		// filepath.Join(mnt, own): own starts with '/', "/" alone adds nothing.
		int w = snprintf(parent, n, "%s%s", mnt, strcmp(own, "/") ? own : "");
		char ctl[PATH_MAX + 32], have[512];
		snprintf(ctl, sizeof(ctl), "%s/cgroup.subtree_control", parent);
		int fd = w > 0 && (size_t)w < n ? open(ctl, O_RDONLY | O_CLOEXEC) : -1;
		ssize_t k = fd >= 0 ? read(fd, have + 1, sizeof(have) - 3) : -1;
		if (fd >= 0) close(fd);
		if (k >= 0) {
			// " memory pids " and a controller with a space either side.
			have[0] = ' ';
			have[k + 1] = 0;
			for (char *c = have; *c; c++)
				if (*c == '\n') *c = ' ';
			strcat(have, " ");
			if ((!mem || strstr(have, " memory ")) && (!pids || strstr(have, " pids ")) && access(parent, W_OK | X_OK) == 0)
				return LIMIT_CGROUP2;
		}
		parent[0] = 0;
	}
	const char *v1[2] = {mem ? l->v1mem : NULL, pids ? l->v1pids : NULL};
	for (int i = 0; i < 2; i++) {
		struct statfs st;
		if (v1[i] && (statfs(v1[i], &st) < 0 || st.f_type != CGROUP_SUPER_MAGIC || access(v1[i], W_OK | X_OK) < 0)) return LIMIT_RLIMIT;
	}
	return LIMIT_CGROUP1;
}

// lim_create makes the cgroups of the run and writes their limits.
static int lim_create(struct limits *l) {
	if (l->method == LIMIT_CGROUP2) lim_sweep(l->v2);
	if (l->method == LIMIT_CGROUP1) {
		if (l->memory) lim_sweep(l->v1mem);
		if (l->pids) lim_sweep(l->v1pids);
	}
	char name[64];
	snprintf(name, sizeof(name), "jail-%d-%llx", getpid(), (unsigned long long)now_ns());
	if (l->method == LIMIT_CGROUP2) {
		snprintf(l->dirs[0], PATH_MAX, "%s/%s", l->v2, name);
		if (mkdir(l->dirs[0], 0755) < 0) return -1;
		l->ndirs = 1;
		if ((l->memory && cg_write(l->dirs[0], "memory.max", l->memory) < 0) ||
		    (l->pids && cg_write(l->dirs[0], "pids.max", l->pids) < 0)) {
			lim_remove(l);
			return -1;
		}
		if (l->memory && cg_write(l->dirs[0], "memory.swap.max", 0) < 0 && errno != ENOENT) {
			lim_remove(l);
			return -1;
		}
		return 0;
	}
	if (l->method != LIMIT_CGROUP1) return 0;
	if (l->memory) {
		snprintf(l->dirs[l->ndirs], PATH_MAX, "%s/%s", l->v1mem, name);
		if (mkdir(l->dirs[l->ndirs], 0755) < 0) return -1;
		l->ndirs++;
		if (cg_write(l->dirs[l->ndirs - 1], "memory.limit_in_bytes", l->memory) < 0) {
			lim_remove(l);
			return -1;
		}
		// Without this the limit only pushes pages to swap.
		cg_write(l->dirs[l->ndirs - 1], "memory.memsw.limit_in_bytes", l->memory);
	}
	if (l->pids) {
		snprintf(l->dirs[l->ndirs], PATH_MAX, "%s/%s", l->v1pids, name);
		if (mkdir(l->dirs[l->ndirs], 0755) < 0) {
			lim_remove(l);
			return -1;
		}
		l->ndirs++;
		if (cg_write(l->dirs[l->ndirs - 1], "pids.max", l->pids) < 0) {
			lim_remove(l);
			return -1;
		}
	}
	return 0;
}

// lim_joiners opens the tasks file of each cgroup v1 of the run, which
// the sandbox's pid 1 writes "0" to, moving itself, before it does
// anything else (recv_stdio in early_linux.c): everything the sandbox
// runs is its descendant. A move of another process (cgroup.procs, or a
// pid in tasks) takes the kernel's cgroup_threadgroup_rwsem for writing
// and waits an RCU grace period for it, 0.7 ms of each run on the
// development VM and more under load; a thread moving itself does not.
// The process outside the pid namespace, which only waits, stays out.
static int lim_joiners(struct limits *l, int fds[2]) {
	int n = 0;
	for (int i = 0; i < l->ndirs; i++) {
		char path[PATH_MAX + 16];
		snprintf(path, sizeof(path), "%s/tasks", l->dirs[i]);
		if ((fds[n] = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
			while (n > 0) close(fds[--n]);
			return -1;
		}
		n++;
	}
	return n;
}

// lim_attach moves the early child into every cgroup v2 of the run, and
// its pid 1, which it forked already and which is not moved with it
// (cgroup.attach in cgroup_linux.go). The children are read after the
// move: one forked meanwhile is listed or born in the cgroup.
static int lim_attach(struct limits *l, pid_t pid) {
	for (int i = 0; i < l->ndirs; i++)
		if (cg_write(l->dirs[i], "cgroup.procs", (unsigned long long)pid) < 0) return -1;
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid, pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0) return -1;
	buf[n] = 0;
	for (char *p = buf; *p;) {
		char *end;
		unsigned long long child = strtoull(p, &end, 10);
		if (end == p) break;
		for (int i = 0; i < l->ndirs; i++)
			if (cg_write(l->dirs[i], "cgroup.procs", child) < 0) return -1;
		p = end;
		while (*p == ' ' || *p == '\n') p++;
	}
	return 0;
}

// cg_count reads the number after key in dir/file ("oom_kill 1").
static long long cg_count(const char *dir, const char *file, const char *key) {
	char path[PATH_MAX + 64], buf[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) return 0;
	buf[n] = 0;
	size_t kl = strlen(key);
	for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, key, kl) && line[kl] == ' ') return strtoll(line + kl + 1, NULL, 10);
	return 0;
}

// lim_events is cgroup.events in cgroup_linux.go.
static void lim_events(struct limits *l, int *oom, int *pids) {
	for (int i = 0; i < l->ndirs; i++) {
		if (l->method == LIMIT_CGROUP2) {
			*oom |= cg_count(l->dirs[i], "memory.events", "oom_kill") > 0;
			*pids |= cg_count(l->dirs[i], "pids.events", "max") > 0;
		} else if (!strncmp(l->dirs[i], "/sys/fs/cgroup/memory/", 22)) {
			*oom |= cg_count(l->dirs[i], "memory.oom_control", "oom_kill") > 0;
		} else {
			*pids |= cg_count(l->dirs[i], "pids.events", "max") > 0;
		}
	}
}

// The fork bomb watch (watch_linux.go): a sandbox full, checked once a
// second, for PIDS_BOMB_TICKS checks in a row (and, with a cgroup, a fork
// refused meanwhile) is ended, the way a timeout ends it.

struct watch {
	uint64_t next_ns;     // the next check of the tasks; 0 before the command started
	uint64_t mem_next_ns; // the next census of the memory (rlimits); 0: none
	long long last_max;
	int held, refused;
	struct jail_census_state st;
};

// mem_over is memOver in watch_linux.go: whether the census finds the
// sandbox above its memory bound, by the precise count before it says so.
static int mem_over(struct watch *w, const struct limits *l, pid_t outer, struct jail_census *c) {
	if (!l->census || c->processes < 0 || jail_census_total(c) <= l->census) return 0;
	struct jail_census p;
	if (jail_census(outer, JAIL_CENSUS_MEMORY | JAIL_CENSUS_PRECISE, l->census, &w->st, &p) < 0) return 1;
	*c = p;
	return jail_census_total(c) > l->census;
}

// lim_pids_dir is the cgroup directory that holds the process limit.
static const char *lim_pids_dir(const struct limits *l) {
	for (int i = 0; i < l->ndirs; i++)
		if (l->method == LIMIT_CGROUP2 || !strncmp(l->dirs[i], "/sys/fs/cgroup/pids/", 20)) return l->dirs[i];
	return NULL;
}

// cg_value reads a cgroup file holding one number (pids.current).
static long long cg_value(const char *dir, const char *file) {
	char path[PATH_MAX + 64], buf[64];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) return 0;
	buf[n] = 0;
	return strtoll(buf, NULL, 10);
}

// watch_tick is bombWatch.tick: whether the sandbox has been full long
// enough to be ended; tasks is the census's count (rlimits), -1 unknown.
static int watch_tick(struct watch *w, const struct limits *l, long long tasks) {
	if (!l->pids) return 0;
	int full = 0;
	const char *dir = lim_pids_dir(l);
	if ((l->method == LIMIT_CGROUP1 || l->method == LIMIT_CGROUP2) && dir) {
		long long n = cg_count(dir, "pids.events", "max");
		full = (unsigned long long)cg_value(dir, "pids.current") + 1 >= l->pids;
		w->refused = full && (w->refused || n > w->last_max);
		w->last_max = n;
	} else if (l->method == LIMIT_RLIMIT) {
		full = tasks >= 0 && (unsigned long long)tasks + 1 >= l->pids;
		w->refused = full;
	}
	if (!full) {
		w->held = 0;
		return 0;
	}
	w->held++;
	return w->held >= PIDS_BOMB_TICKS && w->refused;
}

// result is what a cached run reports at the end, as launch in run.go
// does: with --json, the object of the Go path (confine.Result and the
// policy's hash) on stderr; with a timeout, the note before it.
struct result {
	int json;
	const char *policy;       // policy_sha256
	uint64_t timeout_ns;      // 0: none
	const char *timeout_note; // the line printed when it fired
	uint64_t start_ns;        // CLOCK_MONOTONIC when the plan was sent
	int timed_out;
	int signal;               // the signal that ended the command, or 0
	long max_rss_kb;
	struct limits *lim;
	int oom, pids_hit;
	int pids_ended; // the watch ended the sandbox at its process limit
	int mem_ended;  // the census found it above its memory bound (rlimits)
	struct jail_census held; // what it found then
};

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void report_error(const struct result *r, int code, const char *error);

// report writes the note and the result object (jsonResult in run.go,
// field for field and in its order: jail_result_json) for a run that
// ended with code.
static void report(const struct result *r, int code) {
	report_error(r, code, NULL);
}

// report_error is report for a run that ended before the command did, as
// runOptions.fail prints it: with "error" (jail's message, printable
// ASCII) and the stage "sandbox" when error is set.
static void report_error(const struct result *r, int code, const char *error) {
	if (r->timed_out && r->timeout_note[0]) say(r->timeout_note);
	char buf[4096];
	int n;
	// limitsHit in run.go.
	if (r->mem_ended) {
		// MemoryEndedMessage in watch_linux.go, in MiB rounded up.
		const struct jail_census *h = &r->held;
#define MIB(b) (((unsigned long long)(b) + (1ULL << 20) - 1) >> 20)
		n = snprintf(buf, sizeof(buf), "jail: the sandbox held %lluM of memory, above its limit (%s): jail ended it (--memory, [limits] memory); processes %lluM, shared memory %lluM, memory files %lluM, tmpfs %lluM, descriptors, pipes and sockets %lluM\n",
			     MIB(jail_census_total(h)), r->lim->memtext, MIB(h->anon), MIB(h->shmem), MIB(h->fdshm), MIB(h->tmpfs), MIB(h->files));
#undef MIB
		if (n > 0 && (size_t)n < sizeof(buf)) jail_write_all(2, buf, n);
	} else if (r->oom) {
		n = snprintf(buf, sizeof(buf), "jail: the sandbox hit its memory limit (%s): the kernel killed a process of it (--memory, [limits] memory)\n", r->lim->memtext);
		if (n > 0 && (size_t)n < sizeof(buf)) jail_write_all(2, buf, n);
	}
	if (r->pids_ended) {
		// PidsEndedMessage in watch_linux.go.
		n = snprintf(buf, sizeof(buf), "jail: the sandbox stayed at its process limit (%llu) for %ds, its forks failing all along (a fork or thread bomb): jail ended it (--pids, [limits] pids)\n",
			     (unsigned long long)r->lim->pids, PIDS_BOMB_TICKS * WATCH_INTERVAL_MS / 1000);
		if (n > 0 && (size_t)n < sizeof(buf)) jail_write_all(2, buf, n);
	} else if (r->pids_hit) {
		n = snprintf(buf, sizeof(buf), "jail: the sandbox hit its process limit (%llu): a fork failed (--pids, [limits] pids)\n", (unsigned long long)r->lim->pids);
		if (n > 0 && (size_t)n < sizeof(buf)) jail_write_all(2, buf, n);
	}
	if (!r->json) return;
	struct jail_result j = {
		.exit_code = code,
		.signal = jail_signal_name(r->signal),
		.timed_out = r->timed_out,
		.duration_ms = (long long)((now_ns() - r->start_ns) / 1000000ULL),
		.max_rss_kb = r->max_rss_kb,
		.limits = limit_name(r->lim->method),
		.limits_note = r->lim->note,
		.oom_killed = r->oom || r->mem_ended,
		.pids_limited = r->pids_hit || r->pids_ended,
		.pids_ended = r->pids_ended,
		.memory_ended = r->mem_ended,
		.policy_sha256 = r->policy,
		.error = error,
		.stage = error ? "sandbox" : NULL,
	};
	// After a newline: the command shared this stderr and may have left
	// a line unfinished, which the object must not complete (writeJSON in
	// run.go).
	char line[16384];
	line[0] = '\n';
	n = jail_result_json(line + 1, sizeof(line) - 1, &j);
	if (n > 0) jail_write_all(2, line, n + 1);
}

// guard_done tells the git state's guardian this run finished with it:
// the guardian exits (and lets go of the RUN directory's lock) rather
// than adopting and reducing.
static void guard_done(struct fast *f) {
	if (f->guard < 0) return;
	jail_write_all(f->guard, "done\n", 5);
	close(f->guard);
	f->guard = -1;
}

// release is what the process of drop_deferred works from: its own copy,
// on its own stack's mapping, since it shares this process's memory.
struct release {
	int pipe, n, argc;
	int fds[MAX_PLACEHOLDERS + 4 + 4 * MAX_OVERLAYS];
	struct limits *lim;
	char **envp, **argv;
};

#define RELEASE_STACK (64 << 10)

static int release_main(void *arg) {
	struct release *r = arg;
	setsid();
	// Not the caller's command line (a search for the command's
	// processes must not find this one) nor its environment.
	for (char **e = r->envp; e && *e; e++) memset(*e, 0, strlen(*e));
	char *a0 = r->argv[0], *aend = r->argv[r->argc - 1] + strlen(r->argv[r->argc - 1]);
	memset(a0, 0, aend - a0);
	if (aend - a0 >= (ptrdiff_t)sizeof("jail-release")) memcpy(a0, "jail-release", sizeof("jail-release"));
	prctl(PR_SET_NAME, "jail-release", 0, 0, 0);
	int keep[sizeof(r->fds) / sizeof(r->fds[0]) + 1], n = 0;
	keep[n++] = r->pipe;
	for (int i = 0; i < r->n; i++) keep[n++] = r->fds[i];
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	unsigned low = 0;
	for (int i = 0; i <= n; i++) {
		unsigned high = i < n ? (unsigned)keep[i] : ~0U;
		if (high > low && syscall(SYS_close_range, low, high - 1, 0) < 0)
			for (unsigned fd = low; fd < high && fd < 4096; fd++) close((int)fd);
		low = high + 1;
	}
	// The supervisor has dropped its copies when its end closes.
	char b;
	while (read(r->pipe, &b, 1) < 0 && errno == EINTR)
		;
	for (int i = 0; i < r->n; i++) close(r->fds[i]);
	if (r->lim) lim_remove(r->lim);
	_exit(0);
}

// drop_deferred hands the descriptors of the directories this run removed
// to a process of their own, which closes them once this one has exited.
// A directory's last close frees its inode and block, and where the file
// system discards freed blocks at once (ext4 mounted with discard and no
// journal, as on the development VM) that waits for the device: 0.1 ms
// per directory idle, 1 to 2.5 ms under load, for a placeholder of each
// protected name the workspace lacks. Their names are gone already; only
// the freeing happens after jail has exited. The process has no other
// descriptor (none of the caller's stdio: a reader waiting for the end of
// jail's output does not wait for it) and a session of its own. It also
// removes the run's cgroups (lim_later), which no name of the caller's
// shows. It shares this process's memory (CLONE_VM, on a stack of its
// own): no page table is copied for it, and this process's exit, the last
// thing it does, leaves the address space to it to take down.
static void drop_deferred(struct fast *f) {
	if (f->ndefer == 0) {
		if (f->lim_later) lim_remove(f->lim_later);
		return;
	}
	int p[2];
	uint8_t *mem = pipe2(p, O_CLOEXEC) == 0 ? mmap(NULL, RELEASE_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
	pid_t pid = -1;
	if (mem != MAP_FAILED) {
		struct release *r = (struct release *)mem;
		*r = (struct release){.pipe = p[0], .n = f->ndefer, .argc = f->argc, .lim = f->lim_later, .envp = f->envp, .argv = f->argv};
		memcpy(r->fds, f->defer, sizeof(int) * f->ndefer);
		pid = clone(release_main, mem + RELEASE_STACK, CLONE_VM | SIGCHLD, r);
	}
	if (pid < 0 && f->lim_later) lim_remove(f->lim_later);
	for (int i = 0; i < f->ndefer; i++) close(f->defer[i]);
	f->ndefer = 0;
	if (pid > 0) close(p[0]); // p[1] closes as this process exits
}

// finish ends the run with code, as launch in run.go does.
static void __attribute__((noreturn)) finish(struct fast *f, int foreground, int code) {
	relay_close();
	if (foreground) reclaim_terminal();
	release(f);
	guard_done(f);
	drop_deferred(f);
	_exit(code);
}

// pid1_gone waits (a second at most) for the sandbox's pid 1 to have
// exited after its last report. Its mount namespace, the copy OP_LOCK
// made, goes with it, and with it the last mounts on the placeholders and
// the git view's .git (the process outside detached its own, op_lock in
// plan_linux.c): a directory removed while a mount sits on it waits for
// an RCU grace period, once for each, which pid 1's exit waits once for
// all. Its cgroup is empty then too.
static void pid1_gone(struct fast *f) {
	if (f->pid1 < 0) return;
	struct pollfd p = {.fd = f->pid1, .events = POLLIN};
	while (poll(&p, 1, 1000) < 0 && errno == EINTR)
		;
	close(f->pid1);
	f->pid1 = -1;
}

// supervise follows the sandbox as Cmd.Wait does and exits with the
// command's status. The forwarded signals are blocked since before the
// placeholders were made; one that arrives before the command started is
// held and sent once it has (the Go supervisor's channel does the same),
// so a ^C during the start neither kills this process with placeholders
// left behind nor is lost on a pid 1 without handlers yet. A timeout
// counts from the start of the command, as Cmd.startTimer's does, and
// ends the whole sandbox: pid 1 first (its pid namespace goes with it),
// then the process outside that waits for it.
static void __attribute__((noreturn)) supervise(struct fast *f, struct jail_early *e, int foreground, char **argv, char **envp, struct saved *sv, const sigset_t *set, struct result *res) {
	int sfd = signalfd(-1, set, SFD_CLOEXEC);
	int pid1 = 0, started = 0, code = -1;
	int held[16], nheld = 0;
	uint64_t deadline = 0;
	struct watch w = {0};
	char line[4096];
	size_t have = 0;
	for (;;) {
		struct pollfd p[4] = {{.fd = e->status, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		relay_events(&p[2], &p[3]);
		int wait_ms = -1;
		if ((w.next_ns || w.mem_next_ns) && !res->timed_out && !res->pids_ended && !res->mem_ended) {
			// startWatch in watch_linux.go: the tasks once a second, the
			// memory (rlimits) every MEM_WATCH_INTERVAL_MS, one census.
			uint64_t now = now_ns();
			int tasks = w.next_ns && now >= w.next_ns, mem = w.mem_next_ns && now >= w.mem_next_ns;
			if (tasks || mem) {
				int what = (tasks && res->lim->method == LIMIT_RLIMIT ? JAIL_CENSUS_TASKS : 0) | (mem ? JAIL_CENSUS_MEMORY : 0);
				struct jail_census c = {.processes = -1, .tasks = -1};
				if (what) jail_census(e->pid, what, res->lim->census, &w.st, &c);
				if (tasks) w.next_ns = now + WATCH_INTERVAL_MS * 1000000ULL;
				int over = mem && mem_over(&w, res->lim, e->pid, &c);
				if (mem) {
					// Every MEM_WATCH_INTERVAL_MS, or four times as long as
					// the census took (a million descriptors must not keep
					// this loop from the signals and the terminal).
					uint64_t after = now_ns(), gap = MEM_WATCH_INTERVAL_MS * 1000000ULL;
					if (4 * (after - now) > gap) gap = 4 * (after - now);
					w.mem_next_ns = after + gap;
				}
				if (over) {
					res->mem_ended = 1;
					res->held = c;
				} else if (tasks && watch_tick(&w, res->lim, c.processes < 0 ? -1 : c.tasks)) {
					res->pids_ended = 1;
				}
				if (res->mem_ended || res->pids_ended) {
					// As the timeout below: pid 1 takes the tree with it.
					if (pid1 > 0) kill(pid1, SIGKILL);
					else kill(e->pid, SIGKILL);
					continue;
				}
			}
			uint64_t next = w.next_ns && (!w.mem_next_ns || w.next_ns < w.mem_next_ns) ? w.next_ns : w.mem_next_ns;
			wait_ms = (int)((next - now + 999999ULL) / 1000000ULL);
		}
		if (deadline && !res->timed_out) {
			uint64_t now = now_ns();
			if (now >= deadline) {
				res->timed_out = 1;
				// pid 1 only, when known: the process outside waits for
				// it, and pid 1's exit waits for every process of its
				// namespace, so once the outside one is reaped nothing
				// of the sandbox is left. Killing the outside one too
				// could end this run while the tree still dies.
				if (pid1 > 0) kill(pid1, SIGKILL);
				else kill(e->pid, SIGKILL);
				continue;
			}
			uint64_t left = (deadline - now + 999999ULL) / 1000000ULL;
			int dl = left > INT_MAX ? INT_MAX : (int)left;
			if (wait_ms < 0 || dl < wait_ms) wait_ms = dl;
		}
		int r = poll(p, 4, wait_ms); // a negative fd is skipped
		if (r < 0) {
			if (errno == EINTR) continue;
			break;
		}
		if (r == 0) continue; // the deadline or the watch, checked above
		relay_io(p[2].revents, p[3].revents);
		if (sfd >= 0 && (p[1].revents & POLLIN)) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				// With the pty, the new size goes to the command's
				// terminal, which signals its foreground group.
				if (rly.on && si.ssi_signo == SIGWINCH) relay_resize();
				else if (started && pid1 > 0) kill(pid1, si.ssi_signo);
				else if (nheld < 16) held[nheld++] = si.ssi_signo;
			}
		}
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
		ssize_t k = read(e->status, line + have, sizeof(line) - 1 - have);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) break;
		have += k;
		line[have] = 0;
		char *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = 0;
			int v;
			// The outer process reports pid 1 as pid 1 starts; the two
			// reports may come in either order.
			if (strstr(line, "\"stage\":\"" JAIL_STAGE_PID1 "\"") && json_int(line, "pid", &v) && v > 0) {
				pid1 = v;
				if (f->pid1 < 0) f->pid1 = (int)syscall(SYS_pidfd_open, pid1, 0);
				// From now on a kill -9 of this process would leave what
				// the sandbox does to git unfinished: a guardian in its own
				// session finishes it then (docs/git.md).
				if (f->grun >= 0 && f->guard < 0) f->guard = jail_git_guard_fork(f->gkey, f->grun, f->ws, f->fresh_run, f->t0, f->noverlay ? "meta" : "cached", pid1, f->argc, f->argv, f->envp);
			} else if (strstr(line, "\"stage\":\"" JAIL_STAGE_STARTED "\"")) {
				started = 1;
				if (res->timeout_ns) deadline = now_ns() + res->timeout_ns;
				if (res->lim->pids) w.next_ns = now_ns() + WATCH_INTERVAL_MS * 1000000ULL;
				if (res->lim->method == LIMIT_RLIMIT && res->lim->census) w.mem_next_ns = now_ns() + MEM_WATCH_INTERVAL_MS * 1000000ULL;
			}
			if (started && pid1 > 0 && nheld > 0) {
				for (int i = 0; i < nheld; i++) kill(pid1, held[i]);
				nheld = 0;
			}
			if (strstr(line, "\"stage\":\"" JAIL_STAGE_ERROR "\"") && !started) {
				// The command did not run: the Go supervisor plans
				// afresh and reports the error, if it is one. Unless the
				// caller asked to stop meanwhile.
				close(e->status);
				int st;
				waitpid(e->pid, &st, 0);
				if (nheld > 0) {
					report_error(res, 128 + held[0], "interrupted while the sandbox started");
					finish(f, foreground, 128 + held[0]);
				}
				if (f->trace) {
					// What failed (a wait at OP_MORE that ran out, a
					// host change): the planned run says it again, if
					// it still fails.
					say("jail: plan cache: the init reported: ");
					say(line);
					say("\n");
				}
				fall_back(f, argv, envp, sv, !strstr(line, "\"layer\":\"exec\""));
			} else if (strstr(line, "\"stage\":\"" JAIL_STAGE_NOTICE "\"")) {
				print_notice(line);
			} else if (strstr(line, "\"stage\":\"" JAIL_STAGE_STOPPED "\"") && rly.on && !rly.out_only) {
				// The leader of the pty's session stopped itself (a
				// SIGSTOP: the kernel drops ^Z's SIGTSTP for it, its group
				// being orphaned). Nothing inside can continue it and jail
				// does not stop for it (Cmd.suspend): it continues.
				if (pid1 > 0) kill(pid1, SIGCONT);
			} else if (strstr(line, "\"stage\":\"" JAIL_STAGE_STOPPED "\"") && foreground) {
				reclaim_terminal();
				kill(0, SIGSTOP);
				if (pid1 > 0) kill(pid1, SIGCONT);
			} else if (strstr(line, "\"stage\":\"" JAIL_STAGE_EXIT "\"") && json_int(line, "status", &v)) {
				code = v;
				int sig = 0, rss = 0;
				if (json_int(line, "signal", &sig)) res->signal = sig;
				if (json_int(line, "max_rss_kb", &rss)) res->max_rss_kb = rss;
			}
			size_t used = nl + 1 - line;
			memmove(line, nl + 1, have - used + 1);
			have -= used;
		}
		if (code >= 0) break;
		if (have == sizeof(line) - 1) have = 0; // an overlong line: not a report
	}
	if (code >= 0 && res->timed_out) {
		// The command ended as the timeout fired: as in Cmd.wait, the
		// timeout wins once it has killed the sandbox.
		code = 124;
		res->signal = SIGKILL;
	} else if (code >= 0 && (res->pids_ended || res->mem_ended)) {
		code = 128 + SIGKILL;
		res->signal = SIGKILL;
	} else if (code < 0) {
		// No exit report: pid 1 was killed. Its parent's status says how.
		// Not a fallback even before "started": the command may have run.
		int st = 0;
		while (waitpid(e->pid, &st, 0) < 0 && errno == EINTR)
			;
		if (!started) {
			if (nheld > 0) {
				report_error(res, 128 + held[0], "interrupted while the sandbox started");
				finish(f, foreground, 128 + held[0]);
			}
			say("jail: the sandbox's init ended before the command started\n");
			report_error(res, 125, "the sandbox's init ended before the command started");
			finish(f, foreground, 125);
		}
		if (res->timed_out) {
			code = 124;
			res->signal = SIGKILL;
		} else if (res->pids_ended || res->mem_ended) {
			code = 128 + SIGKILL;
			res->signal = SIGKILL;
		} else {
			code = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
			res->signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
		}
	}
	jail_census_end(&w.st);
	relay_close();
	if (foreground) reclaim_terminal();
	// The events are final once pid 1 reported (every other process of
	// the sandbox is gone by then).
	if (res->lim->ndirs > 0) lim_events(res->lim, &res->oom, &res->pids_hit);
	pid1_gone(f);
	// The cgroup can be removed once pid 1 has exited (v1: the process
	// outside was never in it; v2: it is, and the next run's lim_sweep
	// removes it). The process that closes the removed directories after
	// this one has exited removes it (drop_deferred): a memory cgroup's
	// removal takes 0.1 ms here, more under load, on no one's way then.
	if (res->lim->ndirs > 0) f->lim_later = res->lim;
	// A repository the sandbox made is adopted, and those it made in
	// subdirectories reduced, before the result, which is the last line
	// jail prints.
	int pend = pending_waits(f);
	int moved = locks_moved(f);
	// A run with overlays hands its RUN directory to the adopter when a
	// directory the walk recorded changed, even with nothing to adopt:
	// the reduction is against the launch walk its meta records.
	int adopt = fresh_needs_adoption(f), changed = -1;
	if (!adopt && f->noverlay) {
		release_placeholders(f);
		adopt = changed = moved || facts_changed(f) || swept_changed(f);
	}
	if (adopt) {
		release_placeholders(f);
		git_after(f, 1, "cached");
	} else {
		release(f);
		// With overlays both were asked above: the sweep lists every
		// directory of the workspace, once.
		if (changed < 0 ? moved || facts_changed(f) || swept_changed(f) : changed) git_after(f, 0, "cached");
		else if (pend) git_after(f, 0, "pending"); // this run may be the last one out
	}
	report(res, code);
	finish(f, 0, code);
}

// jail_fast_run repeats a cached plan and never returns when it does;
// it returns when the Go supervisor must run.
void jail_fast_run(int argc, char **argv, char **envp) {
	const char *mode = getenv("JAIL_PLAN_CACHE");
	if (mode && !strcmp(mode, "off")) return;
	if (argv[0] && !strcmp(argv[0], REPLAN_ARG0)) return;
	struct fast f = {.trace = mode && !strcmp(mode, "trace"), .gkey = -1, .grun = -1, .ggit = -1, .gws = -1, .guard = -1, .pid1 = -1, .envp = envp, .argc = argc, .argv = argv};
	// Before anything is made: a directory born since is the sandbox's
	// (the adopter walks those below the walk's depth).
	struct timespec now;
	// The file systems' clock (coarse): whatever the sandbox changes has a
	// change time at or after it (the sweep after the run).
	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	snprintf(f.t0, sizeof(f.t0), "%lld", (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
	int dd = -1;
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			dd = i;
			break;
		}
	char cwd[PATH_MAX];
	size_t len = 0;
	int entryfd = -1;
	uint8_t *entry = NULL;
	char name[32];
	sigset_t set;
	sigemptyset(&set);
	struct saved sv = {.entryfd = -1};
	int blocked = 0;
	if (dd < 0 || dd + 1 >= argc) {
		miss(&f, "no -- before the command", NULL);
		goto out;
	}
	if (getauxval(AT_SECURE) || getuid() != geteuid() || getgid() != getegid()) {
		miss(&f, "set-id execution", NULL);
		goto out;
	}
	if (!getcwd(cwd, sizeof(cwd))) {
		miss(&f, "no working directory", NULL);
		goto out;
	}
	entry = read_entry(&f, cwd, argv + 2, dd - 1, &len, &entryfd);
	if (!entry) goto out;
	jail_cache_name(name, getuid(), cwd, argv + 2, dd - 1);
	if (!authentic(entry, len)) {
		miss(&f, "the entry is not signed with this user's key (keyring key " CACHE_KEY_NAME ")", name);
		goto out;
	}
	struct cursor c = {.p = entry, .end = entry + len - 32};
	if (len < 8 + 32 || memcmp(entry, CACHE_MAGIC, 8)) {
		miss(&f, "not an entry of this version", NULL);
		goto out;
	}
	c.p += 8;
	f.dirs = calloc(MAX_DIRS, sizeof(struct dirseen));
	if (check_key(&f, &c, cwd, argv + 2, dd - 1) < 0 || check_facts(&f, &c) < 0) goto out;
	// From here to the end of the run, the signals that are forwarded to
	// the command are blocked (supervise reads them): one arriving now
	// must not end this process with placeholders in the workspace.
	for (size_t i = 0; i < sizeof(forwarded_sigs) / sizeof(forwarded_sigs[0]); i++) sigaddset(&set, forwarded_sigs[i]);
	sigprocmask(SIG_BLOCK, &set, &sv.mask);
	blocked = 1;
	f.mask = &sv.mask;
	// A walk beneath which the workspace lies is checked before this run
	// makes anything there (make_fresh's .git; the placeholders come
	// after check_trees).
	if (read_placeholders(&f, &c) < 0 || check_trees(&f, f.ws) < 0 || make_fresh(&f, &c) < 0 || take_locks(&f) < 0) goto out;
	char **lists[2] = {NULL, NULL};
	uint32_t counts[2];
	for (int l = 0; l < 2; l++) {
		counts[l] = cur_u32(&c);
		if (c.bad || counts[l] > 4096) break;
		lists[l] = calloc(counts[l] + 1, sizeof(char *));
		for (uint32_t i = 0; lists[l] && i < counts[l]; i++) lists[l][i] = (char *)cur_str(&c);
	}
	const char *dir = cur_str(&c);
	struct result res = {.json = cur_u32(&c) != 0};
	res.policy = cur_str(&c);
	res.timeout_ns = cur_u64(&c);
	res.timeout_note = cur_str(&c);
	static struct limits lim;
	lim.method = cur_u32(&c);
	lim.memory = cur_u64(&c);
	lim.pids = cur_u64(&c);
	lim.census = cur_u64(&c);
	lim.parent = cur_str(&c);
	lim.note = cur_str(&c);
	lim.memtext = cur_str(&c);
	res.lim = &lim;
	if (lim.method != LIMIT_NONE) {
		// The memory bound counts for the choice even where it is not
		// applied (the default one, with rlimits: lim.memory is 0 then).
		uint32_t now = lim_decide(&lim, lim.memtext && strcmp(lim.memtext, "0"), lim.pids != 0);
		if (now != lim.method || (now == LIMIT_CGROUP2 && (!lim.parent || strcmp(lim.v2, lim.parent)))) {
			miss(&f, "the limits would be enforced another way now (the cgroups changed)", limit_name(now));
			goto out;
		}
	}
	uint32_t hn, sn;
	const uint8_t *header = cur_bytes(&c, &hn), *setup = cur_bytes(&c, &sn);
	if (c.bad || !lists[0] || !lists[1] || c.p != c.end || hn == 0 || sn == 0) {
		miss(&f, "malformed entry", NULL);
		goto out;
	}
	// The plan goes in two parts when there are placeholders to make
	// (plan_split): pid 1 builds the view up to their protects while this
	// process makes them, each a directory made (and later removed) on the
	// host's file system, the costliest step of a cached run.
	uint32_t split = plan_split(&f, setup, sn);
	// With no placeholder to make, the walks check_facts left are still
	// checked while pid 1 builds the view: the cut is before the command.
	if (!split && f.ntodo == 0 && f.ntrees > 0) split = sn;
	uint32_t envc;
	char **env = jail_build_env(envp, lists[0], counts[0], lists[1], counts[1], &envc);
	if (!env) {
		miss(&f, "out of memory", NULL);
		goto out;
	}
	pid_t pg;
	int foreground = ioctl(0, TIOCGPGRP, &pg) == 0 && pg == getpgrp();
	if (foreground && relay_open(0) < 0) {
		// As the Go path: without a pty, not interactive.
		say("jail: terminal: cannot make a pseudo-terminal: the command runs without the terminal\n");
		foreground = 0;
	}
	if (output_pty() < 0) {
		miss(&f, "stdout and stderr are two terminals: the Go path relays each", NULL);
		goto out;
	}
	struct buf plan = {0}, rest = {0}, *tail = split ? &rest : &plan;
	put(&plan, header, hn);
	put(&plan, setup, split ? split : sn);
	if (split) {
		put_u32(&plan, OP_MORE);
		put_u32(&plan, MORE_WAIT_MS);
		put_u32(&rest, 0); // its length, below
		put(&rest, setup + split, sn - split);
	}
	if (f.fresh_old) {
		// The plan names the RUN directory of the run that stored it:
		// this run's own instead, wherever it appears (inside operations,
		// so never across the cut).
		struct buf *parts[2] = {&plan, &rest};
		for (int k = 0; k < 2; k++)
			for (uint8_t *p = parts[k]->b + (k ? 4 : hn); !parts[k]->oom && parts[k]->b && p + 16 <= parts[k]->b + parts[k]->n; p++)
				if (!memcmp(p, f.fresh_old, 16)) memcpy(p, f.fresh_run, 16);
	}
	put_u32(tail, OP_EXEC);
	put_u32(tail, argc - dd - 1);
	for (int i = dd + 1; i < argc; i++) put_str(tail, argv[i]);
	put_u32(tail, envc);
	for (uint32_t i = 0; i < envc; i++) put_str(tail, env[i]);
	put_str(tail, dir);
	put_u32(tail, rly.on && !rly.out_only ? 2 : 0); // TERM_PTY or TERM_NONE in pid1_linux.c
	if (lim.method == LIMIT_RLIMIT) {
		// rlimitsFor in cgroup_linux.go: RLIMIT_DATA per process,
		// RLIMIT_NPROC per uid (in the sandbox's user namespace).
		uint32_t k = (lim.memory != 0) + (lim.pids != 0);
		put_u32(tail, k);
		if (lim.memory) {
			put_u32(tail, RLIMIT_DATA);
			put(tail, &lim.memory, 8);
			put(tail, &lim.memory, 8);
		}
		if (lim.pids) {
			put_u32(tail, RLIMIT_NPROC);
			put(tail, &lim.pids, 8);
			put(tail, &lim.pids, 8);
		}
	} else {
		put_u32(tail, 0);
	}
	if (plan.oom || rest.oom) {
		miss(&f, "out of memory", NULL);
		goto out;
	}
	if (!split && (check_trees(&f, NULL) < 0 || make_placeholders(&f) < 0 || patch_identities(&f, plan.b + hn, 0, sn) < 0)) goto out;
	if ((lim.method == LIMIT_CGROUP1 || lim.method == LIMIT_CGROUP2) && lim_create(&lim) < 0) {
		miss(&f, "cannot make the limits' cgroup", NULL);
		goto out;
	}
	struct jail_early e;
	if (!jail_take_early(&e)) {
		lim_remove(&lim);
		miss(&f, "no early child", NULL);
		goto out;
	}
	int join[2], njoin = 0;
	if (lim.method == LIMIT_CGROUP1 && lim.ndirs > 0) njoin = lim_joiners(&lim, join);
	if (njoin < 0 || (lim.method == LIMIT_CGROUP2 && lim.ndirs > 0 && lim_attach(&lim, e.pid) < 0)) {
		// Before the plan: nothing ran. The Go supervisor plans afresh.
		lim_remove(&lim);
		kill(e.pid, SIGKILL);
		int st;
		waitpid(e.pid, &st, 0);
		close(e.plan);
		close(e.status);
		fall_back(&f, argv, envp, &sv, 0);
	}
	if (f.trace && !split) say("jail: plan cache: used\n");
	// A reader that goes away must not end this process before it
	// removes the placeholders (runMain catches SIGPIPE likewise).
	struct sigaction ign = {.sa_handler = SIG_IGN};
	sigaction(SIGPIPE, &ign, &sv.pipe);
	sv.entryfd = entryfd;
	sv.entry = name;
	sv.foreground = foreground;
	res.start_ns = now_ns();
	int sent = jail_write_all(e.plan, plan.b, plan.n) == 0 && send_stdio(e.sock, foreground, join, njoin) == 0;
	close(e.plan);
	while (njoin > 0) close(join[--njoin]);
	if (sent && split) {
		// pid 1 waits at OP_MORE for the rest, which carries the
		// placeholders' identities and the command: nothing of the
		// sandbox has run yet if a walk check_facts left changed or a
		// placeholder cannot be made (the Go path then plans afresh).
		uint32_t rn = (uint32_t)(rest.n - 4);
		memcpy(rest.b, &rn, 4);
		if (check_trees(&f, NULL) < 0 || make_placeholders(&f) < 0 || patch_identities(&f, rest.b + 4, split, sn) < 0) {
			if (f.trace && f.why) {
				say("jail: plan cache: not used: ");
				say(f.why);
				say("\n");
			}
			sent = 0;
		} else {
			if (f.trace) say("jail: plan cache: used\n");
			sent = jail_write_all(e.sock, rest.b, rest.n) == 0;
		}
	}
	if (!sent) {
		// The init never got its command.
		close(e.status);
		kill(e.pid, SIGKILL);
		int st;
		waitpid(e.pid, &st, 0);
		lim_remove(&lim);
		fall_back(&f, argv, envp, &sv, 0);
	}
	if (rly.on) {
		// The command has its side; the relay starts.
		close(rly.slave);
		rly.slave = -1;
		relay_raw(1);
		rly.started = 1;
	}
	supervise(&f, &e, foreground, argv, envp, &sv, &set, &res);
out:
	relay_close();
	if (f.trace && f.why) {
		say("jail: plan cache: not used: ");
		say(f.why);
		say("\n");
	}
	release(&f);
	while (f.ndefer > 0) close(f.defer[--f.ndefer]); // the Go path runs in this process
	if (blocked) sigprocmask(SIG_SETMASK, &sv.mask, NULL);
	if (entryfd >= 0) close(entryfd);
	free(entry);
}
