// The sandbox's init, part one: the plan interpreter. The Go supervisor
// compiles every decision into a plan of opcodes (plan_linux.go); this
// file decodes it and carries out one operation per function, reporting
// the first failure as {stage, errno, msg}. What runs after the plan (the
// command, as pid 1) is pid1_linux.c.
//
// Why C: the child is the jail binary re-executed through /proc/self/exe
// (or forked before the Go runtime starts: early_linux.c, zygote_linux.c).
// A Go child would start a second Go runtime (threads, package
// initialisers, page faults: more than the rest of the launch together).
// Every decision (which paths, in what order, which rights, which filter)
// is made and tested in Go.
//
// Protocol (see doc.go): fd 3 carries the plan (read to EOF), fd 4 takes
// JSON-lines reports, fd 5 takes the listening sockets of OP_SOCKETS.

//go:build linux && cgo

#include <stdarg.h>

#include "child_linux.h"

// ---- reporting ----------------------------------------------------------

// put_json_string appends s as a JSON string (jail_json_string, as Go
// writes one) at *w, never past end.
static void put_json_string(char **w, char *end, const char *s) { *w = jail_json_string(*w, end, s, 0); }

int jail_write_all(int fd, const void *p, size_t n) {
	const char *s = p;
	while (n > 0) {
		ssize_t k = write(fd, s, n);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) return -1;
		s += k;
		n -= k;
	}
	return 0;
}

// put_fmt appends a formatted string at *w, never past end: what does not
// fit is cut.
static void put_fmt(char **w, char *end, const char *fmt, ...) {
	va_list ap;
	va_start(ap, fmt);
	int n = *w < end ? vsnprintf(*w, end - *w, fmt, ap) : 0;
	va_end(ap);
	if (n > 0) *w += (size_t)n < (size_t)(end - *w) ? (size_t)n : (size_t)(end - *w) - 1;
}

// report writes one report line on JAIL_FD_REPORT, the only writer of
// them: {"stage":...} and the fields of its kind, in a fixed order, every
// string escaped, so no line is counted or quoted by hand. What Go reads
// is init_linux.go's report; the plan cache's run reads the same lines.
void report(const struct report *r) {
	char buf[2560], *w = buf, *end = buf + sizeof(buf) - 8;
	static const char *const stages[] = {
		[REPORT_PID1] = JAIL_STAGE_PID1, [REPORT_HELD] = JAIL_STAGE_HELD, [REPORT_STARTED] = JAIL_STAGE_STARTED,
		[REPORT_NOTICE] = JAIL_STAGE_NOTICE, [REPORT_STOPPED] = JAIL_STAGE_STOPPED, [REPORT_EXIT] = JAIL_STAGE_EXIT,
		[REPORT_ERROR] = JAIL_STAGE_ERROR,
	};
	put_fmt(&w, end, "{\"stage\":");
	put_json_string(&w, end, stages[r->kind]);
	switch (r->kind) {
	case REPORT_PID1:
		put_fmt(&w, end, ",\"pid\":%d", r->pid);
		break;
	case REPORT_NOTICE:
		put_fmt(&w, end, ",\"text\":");
		put_json_string(&w, end, r->text);
		break;
	case REPORT_STOPPED:
		put_fmt(&w, end, ",\"signal\":%d", r->signal);
		break;
	case REPORT_EXIT:
		put_fmt(&w, end, ",\"status\":%d,\"signal\":%d,\"max_rss_kb\":%ld", r->status, r->signal, r->max_rss_kb);
		break;
	case REPORT_ERROR:
		put_fmt(&w, end, ",\"err\":{\"layer\":");
		put_json_string(&w, end, r->layer);
		put_fmt(&w, end, ",\"stage\":");
		put_json_string(&w, end, r->stage);
		put_fmt(&w, end, ",\"errno\":%d,\"msg\":", r->err);
		put_json_string(&w, end, r->msg ? r->msg : "");
		put_fmt(&w, end, "}");
		break;
	case REPORT_HELD:
	case REPORT_STARTED:
		break;
	}
	put_fmt(&w, end + 8, "}\n");
	jail_write_all(JAIL_FD_REPORT, buf, w - buf);
}

// fail reports the stage that failed and ends pid 1 (and with it the
// namespace). code 127/126 mark a command that could not be executed.
void __attribute__((noreturn)) fail(struct child *c, int err, const char *msg, int code) {
	report(&(struct report){.kind = REPORT_ERROR, .layer = c->layer, .stage = c->stage, .err = err, .msg = msg});
	_exit(code);
}

// ---- plan decoding --------------------------------------------------------

uint32_t get_u32(struct child *c) {
	uint32_t v;
	if (c->end - c->p < 4) fail(c, EINVAL, "truncated plan", 125);
	memcpy(&v, c->p, 4);
	c->p += 4;
	return v;
}

uint64_t get_u64(struct child *c) {
	uint64_t v;
	if (c->end - c->p < 8) fail(c, EINVAL, "truncated plan", 125);
	memcpy(&v, c->p, 8);
	c->p += 8;
	return v;
}

// get_str returns a NUL-terminated string inside the plan (the encoder
// writes length, bytes, NUL).
const char *get_str(struct child *c) {
	uint32_t n = get_u32(c);
	if ((size_t)(c->end - c->p) < (size_t)n + 1 || c->p[n] != 0 || memchr(c->p, 0, n))
		fail(c, EINVAL, "malformed string in plan", 125);
	const char *s = (const char *)c->p;
	c->p += n + 1;
	return s;
}

static const uint8_t *get_bytes(struct child *c, uint32_t *n) {
	*n = get_u32(c);
	if ((size_t)(c->end - c->p) < *n) fail(c, EINVAL, "truncated plan", 125);
	const uint8_t *b = c->p;
	c->p += *n;
	return b;
}

static int get_src(struct child *c) {
	uint32_t i = get_u32(c);
	if (i >= MAX_SOURCES || c->src[i] < 0) fail(c, EINVAL, "plan names an unopened source", 125);
	return c->src[i];
}

// ---- file-system helpers ---------------------------------------------------

// rel strips the leading slash: paths of the new root are opened beneath
// its descriptor.
static const char *rel(const char *dest) {
	while (*dest == '/') dest++;
	return *dest ? dest : ".";
}

static int openat2_(int dirfd, const char *path, uint64_t flags, uint64_t resolve) {
	struct j_open_how how = {.flags = flags, .mode = 0, .resolve = resolve};
	return syscall(NR_openat2, dirfd, path, &how, sizeof(how));
}

// open_in opens path beneath dirfd without following any symlink; a
// symlink as the last component is returned as itself.
static int open_in(int dirfd, const char *path) {
	return openat2_(dirfd, path, O_PATH | O_NOFOLLOW | O_CLOEXEC,
			J_RESOLVE_BENEATH | J_RESOLVE_NO_SYMLINKS | J_RESOLVE_NO_MAGICLINKS);
}

// mkdir_all creates path (relative to dirfd) and its parents.
static int mkdir_all(int dirfd, const char *path, mode_t mode) {
	char buf[4096];
	size_t n = strlen(path);
	if (n >= sizeof(buf)) { errno = ENAMETOOLONG; return -1; }
	memcpy(buf, path, n + 1);
	for (char *s = buf;; s++) {
		if (*s == '/' || *s == 0) {
			char saved = *s;
			*s = 0;
			if (buf[0] && mkdirat(dirfd, buf, mode) < 0 && errno != EEXIST) return -1;
			*s = saved;
			if (!saved) break;
		}
	}
	return 0;
}

static int create_mountpoint(int dirfd, const char *path, int dir) {
	if (dir) return mkdir_all(dirfd, path, 0755);
	char parent[4096];
	size_t n = strlen(path);
	if (n >= sizeof(parent)) { errno = ENAMETOOLONG; return -1; }
	memcpy(parent, path, n + 1);
	char *slash = strrchr(parent, '/');
	if (slash) {
		*slash = 0;
		if (mkdir_all(dirfd, parent, 0755) < 0) return -1;
	}
	int fd = openat(dirfd, path, O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0444);
	if (fd < 0) return -1;
	return close(fd);
}

// attach_tree clones the tree at src, sets attr on every mount of the
// clone (AT_RECURSIVE: submounts become read-only too) and attaches it on
// dst; all by descriptor, so no path is looked up twice.
static int attach_tree(int src, int dst, uint64_t attr) {
	int tree = syscall(NR_open_tree, src, "", J_OPEN_TREE_CLONE | J_OPEN_TREE_CLOEXEC | J_AT_RECURSIVE | AT_EMPTY_PATH);
	if (tree < 0) return -1;
	if (attr) {
		struct j_mount_attr a = {.attr_set = attr};
		if (syscall(NR_mount_setattr, tree, "", AT_EMPTY_PATH | J_AT_RECURSIVE, &a, sizeof(a)) < 0) {
			int e = errno;
			close(tree);
			errno = e;
			return -1;
		}
	}
	int r = syscall(NR_move_mount, tree, "", dst, "", J_MOVE_MOUNT_F_EMPTY_PATH | J_MOVE_MOUNT_T_EMPTY_PATH);
	int e = errno;
	close(tree);
	errno = e;
	return r;
}

static int set_readonly(const char *path) {
	struct j_mount_attr a = {.attr_set = J_MOUNT_ATTR_RDONLY};
	return syscall(NR_mount_setattr, AT_FDCWD, path, 0, &a, sizeof(a));
}

// dest_fd returns an O_PATH descriptor of dest in the new root, creating
// the mountpoint first when it lies in jail's own tmpfs.
static int dest_fd(struct child *c, const char *dest, int create, int dir) {
	if (create && create_mountpoint(c->root, rel(dest), dir) < 0) return -1;
	return open_in(c->root, rel(dest));
}

// cover puts an empty read-only object over fd: the empty file over files
// and symlinks, an empty read-only tmpfs over directories.
static int cover(struct child *c, int fd) {
	struct stat st;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) return -1;
	uint64_t ro = J_MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
	if (!S_ISDIR(st.st_mode)) return attach_tree(c->empty, fd, ro);
	int fs = syscall(NR_fsopen, "tmpfs", J_FSOPEN_CLOEXEC);
	if (fs < 0) return -1;
	int r = -1, m = -1;
	if (syscall(NR_fsconfig, fs, J_FSCONFIG_SET_STRING, "mode", "0555", 0) == 0 &&
	    syscall(NR_fsconfig, fs, J_FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0 &&
	    (m = syscall(NR_fsmount, fs, J_FSMOUNT_CLOEXEC, ro)) >= 0)
		r = syscall(NR_move_mount, m, "", fd, "", J_MOVE_MOUNT_F_EMPTY_PATH | J_MOVE_MOUNT_T_EMPTY_PATH);
	int e = errno;
	if (m >= 0) close(m);
	close(fs);
	errno = e;
	return r;
}

// ---- operations -----------------------------------------------------------

static void op_loopback(struct child *c) {
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	CHECK(c, s, "socket");
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	CHECK(c, ioctl(s, SIOCGIFFLAGS, &ifr), "get lo flags");
	ifr.ifr_flags |= IFF_UP;
	CHECK(c, ioctl(s, SIOCSIFFLAGS, &ifr), "set lo up");
	close(s);
}

// op_dns opens the name server socket of a sandbox without network
// (Spec.OffDNS): pid 1 answers on it while the command runs (dns_answer).
// It is bound before the command exists, so the command cannot take the
// port, and moved above the descriptors the command's stdio may take.
static void op_dns(struct child *c) {
	const char *notice = get_str(c);
	if (*notice) {
		c->dns_notice = strdup(notice);
		if (!c->dns_notice) fail(c, ENOMEM, "notice", 125);
	}
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	CHECK(c, s, "socket");
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(53), .sin_addr = {.s_addr = htonl(INADDR_LOOPBACK)}};
	CHECK(c, bind(s, (struct sockaddr *)&sa, sizeof(sa)), "bind 127.0.0.1:53");
	c->dns = fcntl(s, F_DUPFD_CLOEXEC, 10);
	CHECK(c, c->dns, "move the name server socket");
	close(s);
}

// op_sockets opens listening sockets in this (the sandbox's) network
// namespace and passes them to the supervisor on fd 5, in messages of at
// most SOCK_BATCH descriptors (the kernel's limit per message is 253).
#define SOCK_BATCH 128
static void send_batch(struct child *c, int *fds, uint32_t n) {
	char one = 1;
	struct iovec iov = {.iov_base = &one, .iov_len = 1};
	char ctl[CMSG_SPACE(SOCK_BATCH * sizeof(int))];
	memset(ctl, 0, sizeof(ctl));
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = CMSG_SPACE(n * sizeof(int))};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
	CHECK(c, sendmsg(5, &msg, 0), "send sockets to the supervisor");
	for (uint32_t i = 0; i < n; i++) close(fds[i]);
}

static void op_sockets(struct child *c) {
	uint32_t n = get_u32(c);
	if (n == 0 || n > 4096) fail(c, EINVAL, "socket count", 125);
	int fds[SOCK_BATCH];
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t udp = get_u32(c), addr = get_u32(c), port = get_u32(c);
		int s = socket(AF_INET, (udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
		CHECK(c, s, "socket");
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = {.s_addr = addr}};
		CHECK(c, bind(s, (struct sockaddr *)&sa, sizeof(sa)), "bind a proxy socket");
		if (!udp) CHECK(c, listen(s, 128), "listen");
		fds[k++] = s;
		if (k == SOCK_BATCH) {
			send_batch(c, fds, k);
			k = 0;
		}
	}
	if (k) send_batch(c, fds, k);
}

// check_identity fails the start unless fd is the object the supervisor
// resolved (dev and ino from the plan; ino 0 is not checked). A mismatch
// means a name on the way was swapped after the supervisor looked (a
// concurrent sandbox renaming in a shared tree): mounting what is there
// now could bind a secret or cover a decoy.
static void check_identity(struct child *c, int fd, uint64_t dev, uint64_t ino, const char *what) {
	if (ino == 0) return;
	struct stat st;
	CHECK(c, fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW), what);
	if ((uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino) {
		char msg[4200];
		snprintf(msg, sizeof(msg), "%s changed between the supervisor's resolution and the mount (renamed by a concurrent process?); refusing to mount another object", what);
		fail(c, ESTALE, msg, 125);
	}
}

// op_source opens a bind source the supervisor resolved. Any symlink in any
// component means the tree changed since the supervisor checked it; any
// other object than the one it resolved, likewise.
static void op_source(struct child *c) {
	uint32_t i = get_u32(c);
	const char *path = get_str(c);
	uint64_t dev = get_u64(c), ino = get_u64(c);
	if (i >= MAX_SOURCES) fail(c, EINVAL, "source index", 125);
	int fd = openat2_(AT_FDCWD, path, O_PATH | O_NOFOLLOW | O_CLOEXEC, J_RESOLVE_NO_SYMLINKS | J_RESOLVE_NO_MAGICLINKS);
	if (fd < 0) fail(c, errno, path, 125);
	struct stat st;
	if (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode)) fail(c, ELOOP, path, 125);
	check_identity(c, fd, dev, ino, path);
	c->src[i] = fd;
}

static void op_newroot(struct child *c) {
	CHECK(c, mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"), "mount the new root's tmpfs");
	c->root = open(NEWROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
	CHECK(c, c->root, "open the new root");
	CHECK(c, create_mountpoint(c->root, EMPTY_FILE, 0), "create the empty file");
	c->empty = open_in(c->root, EMPTY_FILE);
	CHECK(c, c->empty, "open the empty file");
}

static void op_bind(struct child *c) {
	int src = get_src(c);
	const char *dest = get_str(c);
	uint64_t attr = get_u64(c);
	uint32_t create = get_u32(c);
	uint32_t onto_itself = get_u32(c);
	struct stat st;
	CHECK(c, fstat(src, &st), dest);
	int dst = dest_fd(c, dest, create, S_ISDIR(st.st_mode));
	CHECK(c, dst, dest);
	// A bind of a path onto itself inside a bound tree: the place it
	// covers must be the object bound, or a swapped name would leave the
	// real one uncovered (writable) beside it.
	if (onto_itself) check_identity(c, dst, st.st_dev, st.st_ino, dest);
	CHECK(c, attach_tree(src, dst, attr), dest);
	close(dst);
	// The root of a writable tree, for the process outside (op_lock).
	if (!(attr & J_MOUNT_ATTR_RDONLY) && c->outside >= 0 && c->nwritable < MAX_WRITABLE) {
		int fd = open_in(c->root, rel(dest));
		if (fd >= 0) c->writable[c->nwritable++] = fd;
	}
}

// tmpfs_opts is the mount data of a private tmpfs: its mode, and its
// size when the plan bounds it (else the kernel's half of the memory).
static void tmpfs_opts(char *out, size_t n, const char *mode, uint64_t size) {
	if (size) snprintf(out, n, "mode=%s,size=%llu", mode, (unsigned long long)size);
	else snprintf(out, n, "mode=%s", mode);
}

static void op_tmpfs(struct child *c) {
	const char *dest = get_str(c);
	uint32_t writable = get_u32(c);
	uint64_t size = get_u64(c);
	char path[4096], opts[64];
	CHECK(c, mkdir_all(c->root, rel(dest), 0755), dest);
	snprintf(path, sizeof(path), NEWROOT "/%s", rel(dest));
	tmpfs_opts(opts, sizeof(opts), "0755", size);
	CHECK(c, mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts), dest);
	if (!writable) CHECK(c, set_readonly(path), dest);
}

// op_hide covers dest. One the supervisor resolved (an identity in the
// plan) must still be there: a hide target that vanished was moved, and
// "nothing to hide" would show it under its new name.
static void op_hide(struct child *c) {
	const char *dest = get_str(c);
	uint64_t dev = get_u64(c), ino = get_u64(c);
	int fd = open_in(c->root, rel(dest));
	if (fd < 0 && errno == ENOENT && ino == 0) return; // nothing to hide
	if (fd < 0 && errno == ENOENT) {
		char msg[4200];
		snprintf(msg, sizeof(msg), "%s vanished before it could be hidden (renamed by a concurrent process?)", dest);
		fail(c, ENOENT, msg, 125);
	}
	CHECK(c, fd, dest);
	check_identity(c, fd, dev, ino, dest);
	CHECK(c, cover(c, fd), dest);
	close(fd);
}

// op_protect makes dest read-only in place; a planted symlink is covered,
// not followed, so it can be neither used nor replaced.
static void op_protect(struct child *c) {
	const char *dest = get_str(c);
	uint64_t dev = get_u64(c), ino = get_u64(c);
	int fd = open_in(c->root, rel(dest));
	CHECK(c, fd, dest);
	check_identity(c, fd, dev, ino, dest);
	struct stat st;
	CHECK(c, fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW), dest);
	if (S_ISLNK(st.st_mode))
		CHECK(c, cover(c, fd), dest);
	else
		CHECK(c, attach_tree(fd, fd, J_MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV), dest);
	close(fd);
}

// op_pin mounts dest onto itself, a symlink included (the open does not
// follow it): a mountpoint can be neither renamed nor removed, and a
// pinned symlink still resolves.
static void op_pin(struct child *c) {
	const char *dest = get_str(c);
	uint64_t dev = get_u64(c), ino = get_u64(c);
	int fd = open_in(c->root, rel(dest));
	CHECK(c, fd, dest);
	check_identity(c, fd, dev, ino, dest);
	CHECK(c, attach_tree(fd, fd, 0), dest);
	close(fd);
}

// overlay_layer hands one layer to the overlay being configured: by
// descriptor (Linux 6.13 and later), or else through the descriptor's
// /proc entry, so the directory op_source opened and checked is the one
// used either way.
static int overlay_layer(int fs, const char *key, const char *legacy, int fd) {
	int dir = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0) return -1;
	int r = syscall(NR_fsconfig, fs, J_FSCONFIG_SET_FD, key, NULL, dir);
	if (r < 0 && errno == EINVAL) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/fd/%d", dir);
		r = syscall(NR_fsconfig, fs, J_FSCONFIG_SET_STRING, legacy, path, 0);
	}
	int e = errno;
	close(dir);
	errno = e;
	return r;
}

// op_overlay mounts an overlay at dest: the lower layer read-only, the
// sandbox's changes in the upper, a directory of jail's own that no
// sandbox sees. userxattr: in a user namespace overlayfs keeps its
// whiteouts and opaque marks in user.overlay.* xattrs.
static void op_overlay(struct child *c) {
	int lower = get_src(c), upper = get_src(c), work = get_src(c);
	const char *dest = get_str(c);
	int fs = syscall(NR_fsopen, "overlay", J_FSOPEN_CLOEXEC);
	CHECK(c, fs, "overlayfs (needs Linux 5.11 or later for a mount in a user namespace)");
	CHECK(c, syscall(NR_fsconfig, fs, J_FSCONFIG_SET_FLAG, "userxattr", NULL, 0), "overlay userxattr");
	CHECK(c, overlay_layer(fs, "lowerdir+", "lowerdir", lower), "overlay lower layer");
	CHECK(c, overlay_layer(fs, "upperdir", "upperdir", upper), "overlay upper layer");
	CHECK(c, overlay_layer(fs, "workdir", "workdir", work), "overlay work directory");
	CHECK(c, syscall(NR_fsconfig, fs, J_FSCONFIG_CMD_CREATE, NULL, NULL, 0), dest);
	int m = syscall(NR_fsmount, fs, J_FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	CHECK(c, m, dest);
	close(fs);
	int dst = open_in(c->root, rel(dest));
	CHECK(c, dst, dest);
	CHECK(c, syscall(NR_move_mount, m, "", dst, "", J_MOVE_MOUNT_F_EMPTY_PATH | J_MOVE_MOUNT_T_EMPTY_PATH), dest);
	close(m);
	close(dst);
}

static void op_symlink(struct child *c) {
	const char *target = get_str(c);
	const char *dest = get_str(c);
	char parent[4096];
	snprintf(parent, sizeof(parent), "%s", rel(dest));
	char *slash = strrchr(parent, '/');
	if (slash) {
		*slash = 0;
		CHECK(c, mkdir_all(c->root, parent, 0755), dest);
	}
	CHECK(c, symlinkat(target, c->root, rel(dest)), dest);
}

// op_file creates a file of jail's own (a sandbox-side git config) with
// the given content in the new root's tmpfs: never in a bound host tree
// (the supervisor refuses that), and never over something already there.
static void op_file(struct child *c) {
	const char *dest = get_str(c);
	uint32_t n;
	const uint8_t *content = get_bytes(c, &n);
	char parent[4096];
	snprintf(parent, sizeof(parent), "%s", rel(dest));
	char *slash = strrchr(parent, '/');
	if (slash) {
		*slash = 0;
		CHECK(c, mkdir_all(c->root, parent, 0755), dest);
	}
	int fd = openat(c->root, rel(dest), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	CHECK(c, fd, dest);
	if (jail_write_all(fd, content, n) < 0) fail(c, errno, dest, 125);
	close(fd);
}

static void op_proc(struct child *c) {
	const char *dest = get_str(c);
	char path[4096];
	CHECK(c, mkdir_all(c->root, rel(dest), 0555), dest);
	snprintf(path, sizeof(path), NEWROOT "/%s", rel(dest));
	CHECK(c, mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL), "mount proc");
	// Host-wide knobs stay read-only in place, as bubblewrap does: the
	// caller may be root, whose uid 0 maps to the host's.
	static const char *subs[] = {"sys", "sysrq-trigger", "irq", "bus"};
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		char sub[4096];
		snprintf(sub, sizeof(sub), "%s/%s", rel(dest), subs[i]);
		int fd = open_in(c->root, sub);
		if (fd < 0 && errno == ENOENT) continue;
		CHECK(c, fd, sub);
		CHECK(c, attach_tree(fd, fd, J_MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC), sub);
		close(fd);
	}
}

// bind_terminal shows the caller's terminal, when the command's stdin is
// one, as DEV/console, so ttyname() finds it (tty, ssh's and gpg's
// prompts): the private devpts has none of the host's ptys, and the name
// the host gives it (/dev/pts/N) lies in a mount the sandbox does not
// have. The host's node is opened in the copy of the host's mounts this
// namespace still has, and used only if it is the very device, inode and
// file system of stdin (a terminal of another devpts instance, say in a
// container, is left out). It shows nothing the command does not hold
// already: the terminal is its stdin. Nothing else of the host's devpts
// appears. A failure leaves the terminal unnamed, as before.
#define PTY_SLAVE_MAJOR 136 // UNIX98_PTY_SLAVE_MAJOR; indexes go on into majors 137-143

// bind_pts_name shows the terminal (host, an O_PATH descriptor of its node)
// also at DEV/pts/N, N its index: the name the kernel gives the command's
// descriptor (readlink /proc/self/fd/0 says /dev/pts/N), so ttyname() and
// tty find it there, consistently with ls -l /proc/self/fd/0, rather than
// at /dev/console. The private devpts has a node N only while its own pty N
// exists, so the init opens its ptmx until it gets pty N, binds the
// terminal over that node, and keeps that one master open in pid 1 for the
// run (close-on-exec, so the command never holds it; the node, and the bind
// on it, go with it); the ptys below N are closed again, for the sandbox's
// own. Past PTS_NAME_MAX the terminal keeps only /dev/console. A failure
// leaves the name out, as before.
#define PTS_NAME_MAX 1024
static void bind_pts_name(struct child *c, const char *dev, int host, unsigned idx) {
	if (idx >= PTS_NAME_MAX) return;
	char ptmx[4096], node[4096];
	snprintf(ptmx, sizeof(ptmx), "%s/pts/ptmx", dev);
	snprintf(node, sizeof(node), "%s/pts/%u", dev, idx);
	int *fds = calloc(idx + 1, sizeof(int));
	if (!fds) return;
	unsigned n = 0;
	int kept = -1;
	while (n <= idx) {
		int m = openat(c->root, ptmx, O_RDWR | O_NOCTTY | O_CLOEXEC);
		unsigned got;
		if (m < 0) break;
		if (ioctl(m, TIOCGPTN, &got) < 0 || got > idx) {
			close(m);
			break;
		}
		fds[n++] = m;
		if (got == idx) {
			kept = m;
			break;
		}
	}
	if (kept >= 0) {
		int dst = openat2_(c->root, node, O_PATH | O_NOFOLLOW | O_CLOEXEC, J_RESOLVE_BENEATH | J_RESOLVE_NO_SYMLINKS);
		int high = -1;
		if (dst >= 0 && attach_tree(host, dst, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC) == 0)
			high = fcntl(kept, F_DUPFD_CLOEXEC, 10);
		if (dst >= 0) close(dst);
		// Only the master of the node the terminal is bound on stays: in
		// pid 1, above the descriptors a held sandbox's command gets.
		(void)high;
	}
	for (unsigned i = 0; i < n; i++) close(fds[i]);
	free(fds);
}

static void bind_terminal(struct child *c, const char *dev) {
	struct stat in, host;
	if (!isatty(0) || fstat(0, &in) < 0 || !S_ISCHR(in.st_mode)) return;
	unsigned maj = major(in.st_rdev), min = minor(in.st_rdev);
	if (maj < PTY_SLAVE_MAJOR || maj > PTY_SLAVE_MAJOR + 7) return;
	char path[64], sub[4096];
	snprintf(path, sizeof(path), "/dev/pts/%u", (maj - PTY_SLAVE_MAJOR) * 256 + min);
	int fd = openat2_(AT_FDCWD, path, O_PATH | O_NOFOLLOW | O_CLOEXEC, J_RESOLVE_NO_SYMLINKS | J_RESOLVE_NO_MAGICLINKS);
	if (fd < 0) return;
	if (fstat(fd, &host) == 0 && host.st_rdev == in.st_rdev && host.st_ino == in.st_ino && host.st_dev == in.st_dev) {
		snprintf(sub, sizeof(sub), "%s/console", dev);
		int dst = dest_fd(c, sub, 1, 0);
		if (dst >= 0) {
			attach_tree(fd, dst, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
			close(dst);
		}
		bind_pts_name(c, dev, fd, (maj - PTY_SLAVE_MAJOR) * 256 + min);
	}
	close(fd);
}

static void op_dev(struct child *c) {
	const char *dest = get_str(c);
	static const char *nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
	int srcs[6];
	for (int i = 0; i < 6; i++) srcs[i] = get_src(c);
	uint64_t shm_size = get_u64(c);
	char path[4096], sub[4096], opts[64];
	CHECK(c, mkdir_all(c->root, rel(dest), 0755), dest);
	snprintf(path, sizeof(path), NEWROOT "/%s", rel(dest));
	CHECK(c, mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755"), "mount /dev");
	for (int i = 0; i < 6; i++) {
		snprintf(sub, sizeof(sub), "%s/%s", rel(dest), nodes[i]);
		int dst = dest_fd(c, sub, 1, 0);
		CHECK(c, dst, sub);
		CHECK(c, attach_tree(srcs[i], dst, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC), sub);
		close(dst);
	}
	// A private devpts: the sandbox's ptys are its own; other users'
	// terminals are not there.
	snprintf(sub, sizeof(sub), "%s/pts", rel(dest));
	CHECK(c, mkdir_all(c->root, sub, 0755), sub);
	snprintf(sub, sizeof(sub), "%s/pts", path);
	CHECK(c, mount("devpts", sub, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"), "mount devpts");
	snprintf(sub, sizeof(sub), "%s/shm", rel(dest));
	CHECK(c, mkdir_all(c->root, sub, 01777), sub);
	snprintf(sub, sizeof(sub), "%s/shm", path);
	tmpfs_opts(opts, sizeof(opts), "1777", shm_size);
	CHECK(c, mount("tmpfs", sub, "tmpfs", MS_NOSUID | MS_NODEV, opts), "mount /dev/shm");
	bind_terminal(c, rel(dest));
	static const char *links[][2] = {{"ptmx", "pts/ptmx"}, {"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"},
					 {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}};
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(sub, sizeof(sub), "%s/%s", rel(dest), links[i][0]);
		CHECK(c, symlinkat(links[i][1], c->root, sub), sub);
	}
	CHECK(c, set_readonly(path), "/dev read-only");
}

// op_pivot makes the tmpfs the root. pivot_root(".", ".") stacks the old
// root on top of the new one; detaching it leaves no path to the host.
static void op_pivot(struct child *c) {
	for (int i = 0; i < MAX_SOURCES; i++)
		if (c->src[i] >= 0) { close(c->src[i]); c->src[i] = -1; }
	CHECK(c, fchdir(c->root), "chdir to the new root");
	CHECK(c, syscall(SYS_pivot_root, ".", "."), "pivot_root");
	CHECK(c, umount2(".", MNT_DETACH), "detach the old root");
	CHECK(c, chdir("/"), "chdir /");
	// The root holds only mountpoints; nothing may be created there.
	CHECK(c, set_readonly("/"), "make / read-only");
	close(c->root);
	close(c->empty);
	c->root = c->empty = -1;
}

static void op_landlock(struct child *c) {
	struct j_ruleset_attr attr;
	attr.handled_fs = get_u64(c);
	attr.handled_net = get_u64(c);
	attr.scoped = get_u64(c);
	uint32_t nrules = get_u32(c);
	size_t size = attr.scoped ? sizeof(attr) : attr.handled_net ? 16 : 8;
	int rs = syscall(NR_landlock_create_ruleset, &attr, size, 0);
	CHECK(c, rs, "create ruleset");
	for (uint32_t i = 0; i < nrules; i++) {
		uint64_t access = get_u64(c);
		const char *path = get_str(c);
		int fd = open(path, O_PATH | O_CLOEXEC);
		CHECK(c, fd, path);
		struct stat st;
		CHECK(c, fstat(fd, &st), path);
		if (!S_ISDIR(st.st_mode))
			access &= 1 /* EXECUTE */ | 2 /* WRITE_FILE */ | 4 /* READ_FILE */ | (1 << 14) /* TRUNCATE */ | (1 << 15) /* IOCTL_DEV */;
		struct j_path_beneath pb = {.allowed = access & attr.handled_fs, .parent_fd = fd};
		CHECK(c, syscall(NR_landlock_add_rule, rs, J_LANDLOCK_RULE_PATH_BENEATH, &pb, 0), path);
		close(fd);
	}
	uint32_t nports = get_u32(c);
	for (uint32_t i = 0; i < nports; i++) {
		struct j_net_port np = {.allowed = attr.handled_net, .port = get_u64(c)};
		CHECK(c, syscall(NR_landlock_add_rule, rs, J_LANDLOCK_RULE_NET_PORT, &np, 0), "port rule");
	}
	CHECK(c, syscall(NR_landlock_restrict_self, rs, 0), "restrict self");
	close(rs);
}

// close_from closes every descriptor from low up or, with cloexec, marks
// it close-on-exec. close_range does it in one call since Linux 5.9 (5.11
// for the flag); before, /proc/self/fd lists them, whatever their numbers.
int close_from(unsigned low, int cloexec) {
	if (syscall(SYS_close_range, low, ~0U, cloexec ? 4 /* CLOSE_RANGE_CLOEXEC */ : 0) == 0) return 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d) return -1;
	int self = dirfd(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end || fd < (long)low || fd == self) continue;
		if (cloexec) fcntl((int)fd, F_SETFD, FD_CLOEXEC);
		else close((int)fd);
	}
	closedir(d);
	return 0;
}

// op_cloexec marks every descriptor but 0, 1, 2 and the report pipe
// close-on-exec (CVE-2024-21626 was a leaked host directory descriptor).
static void op_cloexec(struct child *c) {
	CHECK(c, close_from(3, 1), "mark descriptors close-on-exec");
}

// op_caps empties every capability set and locks it: nothing the command
// executes, setuid or not, gives a capability back.
static void op_caps(struct child *c) {
	char buf[16] = {0};
	int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	CHECK(c, fd, "open cap_last_cap");
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	int last = n > 0 ? atoi(buf) : -1;
	if (last < 0 || last > 63) fail(c, EINVAL, "read cap_last_cap", 125);
	CHECK(c, prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "set no_new_privs");
	CHECK(c, prctl(PR_SET_SECUREBITS, J_SECBITS, 0, 0, 0), "set securebits");
	for (int cap = 0; cap <= last; cap++) CHECK(c, prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "drop the bounding set");
	CHECK(c, prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient capabilities");
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof(data));
	CHECK(c, syscall(SYS_capset, &hdr, data), "capset");
}

// op_seccomp loads one program. A program that hands a call to user space
// (SECCOMP_RET_USER_NOTIF: ptrace, so that jail can say how to allow it)
// is loaded with a listener, which pid 1 answers (answer_notify); only one
// program may have one.
static void op_seccomp(struct child *c) {
	uint32_t n;
	const uint8_t *b = get_bytes(c, &n);
	if (n == 0 || n % sizeof(struct sock_filter) || n / sizeof(struct sock_filter) > 4096) fail(c, EINVAL, "filter size", 125);
	struct sock_filter *insns = malloc(n);
	if (!insns) fail(c, ENOMEM, "filter", 125);
	memcpy(insns, b, n);
	struct sock_fprog prog = {.len = n / sizeof(struct sock_filter), .filter = insns};
	int notify = 0;
	for (size_t i = 0; i < prog.len; i++)
		notify |= insns[i].code == (BPF_RET | BPF_K) && (insns[i].k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_USER_NOTIF;
	if (!notify) {
		CHECK(c, syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog), "load filter");
		free(insns);
		return;
	}
	if (c->notify >= 0) fail(c, EINVAL, "two filters with a listener", 125);
	CHECK(c, syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &c->sizes), "seccomp notification sizes");
	int fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			 SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_TSYNC_ESRCH | SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	CHECK(c, fd, "load filter");
	// Above the descriptors a held sandbox's command gets (0-3).
	c->notify = fcntl(fd, F_DUPFD_CLOEXEC, 10);
	CHECK(c, c->notify, "move the seccomp listener");
	close(fd);
	free(insns);
}

// op_lock moves pid 1 into a user namespace nested in the sandbox's own,
// with a copy of the finished mount namespace. A mount namespace copied
// into a less privileged user namespace has every mount locked: it cannot
// be unmounted to uncover what is beneath, and its read-only, nosuid, nodev
// and noexec flags can no longer be cleared (MNT_LOCK_READONLY and
// friends), even by a process holding CAP_SYS_ADMIN in the sandbox's own
// user namespace. The ids map to themselves.
// hand_outside gives the process outside the pid namespace the roots of
// the writable trees, which it detaches from the mount namespace it
// shares with pid 1 until now (fork_pid1). The sandbox lives in the copy
// op_lock made; in the first one the placeholders (and the git view's
// .git) are mountpoints until the process outside exits, after pid 1,
// and a directory removed while a mount sits on it waits for an RCU
// grace period (namespace_unlock), once for each: the supervisor's
// removals at the end then cost one such wait per placeholder. Detached
// now, while the command runs, they wait once, outside, on no one's way.
// By descriptor: the sandbox can rename a name on the way, never a mount.
static void hand_outside(struct child *c) {
	for (int i = 0; i < c->nwritable; i += 8) {
		int n = c->nwritable - i < 8 ? c->nwritable - i : 8;
		if (c->outside >= 0 && jail_send_fds(c->outside, c->writable + i, n) < 0) break;
	}
	for (int i = 0; i < c->nwritable; i++) close(c->writable[i]);
	c->nwritable = 0;
	if (c->outside >= 0) close(c->outside);
	c->outside = -1;
}

void op_lock(struct child *c) {
	uid_t uid = geteuid();
	gid_t gid = getegid();
	c->layer = "mount";
	c->stage = "lock the mounts";
	CHECK(c, unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare");
	char map[64];
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	CHECK(c, write_file("/proc/self/uid_map", map), "write uid_map");
	CHECK(c, write_file("/proc/self/setgroups", "deny"), "deny setgroups");
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	CHECK(c, write_file("/proc/self/gid_map", map), "write gid_map");
	hand_outside(c);
}

// read_full reads exactly n bytes of the plan.
void read_full(struct child *c, uint8_t *b, size_t n) {
	while (n > 0) {
		ssize_t k = read(3, b, n);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) fail(c, k < 0 ? errno : EINVAL, "read the plan header", 125);
		b += k;
		n -= k;
	}
}

// recv_fds receives up to len bytes and the descriptors sent with them on
// the socket sock: every descriptor installed is returned in fds (at most
// max; *nfd of them) and is close-on-exec, even when the message carried
// more than fit (*truncated), so the caller can close what it refuses.
// It returns recvmsg's result.
ssize_t recv_fds(int sock, void *buf, size_t len, int *fds, int max, int *nfd, int *truncated) {
	char oob[CMSG_SPACE(8 * sizeof(int))];
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = oob, .msg_controllen = CMSG_SPACE(max * sizeof(int))};
	ssize_t n;
	*nfd = 0;
	*truncated = 0;
	if (max > 8) {
		errno = EINVAL;
		return -1;
	}
	do n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC); while (n < 0 && errno == EINTR);
	if (n < 0) return n;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
		int k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (int i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
			if (*nfd < max) fds[(*nfd)++] = fd;
			else {
				close(fd);
				*truncated = 1;
			}
		}
	}
	if (m.msg_flags & MSG_CTRUNC) *truncated = 1;
	return n;
}

// MORE_WAIT_MAX_MS bounds the wait an OP_MORE may ask for.
#define MORE_WAIT_MAX_MS 600000

// read_more reads n bytes of the rest of the plan from fd 5 before the
// deadline, ms after OP_MORE, or fails naming the wait.
static void read_more(struct child *c, void *p, size_t n, const struct timespec *deadline, uint32_t ms) {
	uint8_t *b = p;
	while (n > 0) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long long left = (deadline->tv_sec - now.tv_sec) * 1000LL + (deadline->tv_nsec - now.tv_nsec) / 1000000;
		struct pollfd pf = {.fd = 5, .events = POLLIN};
		int r = left > 0 ? poll(&pf, 1, (int)left) : 0;
		if (r < 0 && errno == EINTR) continue;
		if (r < 0) fail(c, errno, "poll", 125);
		if (r == 0) {
			static char msg[200];
			snprintf(msg, sizeof(msg),
				 "the supervisor sent no rest of the plan within %u ms: it stopped, or is stuck making the workspace's placeholders (JAIL_PLAN_CACHE=off plans every run instead)",
				 ms);
			fail(c, ETIMEDOUT, msg, 125);
		}
		ssize_t k = read(5, b, n);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) fail(c, k < 0 ? errno : EPIPE, "the supervisor sent no rest of the plan", 125);
		b += k;
		n -= k;
	}
}

// op_more ends the first part of a plan the plan cache's run sends in two
// (plan_split in fast_linux.c): pid 1 builds the view up to here while the
// supervisor makes the workspace's placeholders, whose identities the rest
// carries. Its operand is how long, in ms, the supervisor may take. The
// rest comes on fd 5, after the command's stdio: a u32 length and that many
// plan bytes, carried out from here on. A supervisor that ends sends EOF;
// one that stops or is stuck sends nothing, and pid 1 gives up at the
// deadline with a report naming the wait rather than wait unseen (the
// supervisor then meets a closed socket and plans the run afresh).
static void op_more(struct child *c) {
	uint32_t n, ms = get_u32(c);
	c->stage = "wait for the rest of the plan";
	if (ms == 0 || ms > MORE_WAIT_MAX_MS) fail(c, EINVAL, "the wait for the rest of the plan is out of range", 125);
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += ms / 1000;
	deadline.tv_nsec += (long)(ms % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	read_more(c, &n, 4, &deadline, ms);
	c->stage = "read plan";
	if (n == 0 || n > (64u << 20)) fail(c, E2BIG, "plan too large", 125);
	uint8_t *b = malloc(n);
	if (!b) fail(c, ENOMEM, "plan", 125);
	read_more(c, b, n, &deadline, ms);
	c->p = b;
	c->end = b + n;
}

// op_hold ends the plan of a sandbox made ahead of its command: pid 1 is
// confined and reports "held", then takes the rest of the plan (OP_EXEC
// and its arguments) and the command's descriptors from fd 5 and goes on.
// The message is a u32 length and that many plan bytes; the descriptors
// (stdin, stdout, stderr and at most one more, which the command gets as
// fd 3) travel with its first byte.
static void op_hold(struct child *c) {
	c->layer = "exec";
	c->stage = "hold";
	report(&(struct report){.kind = REPORT_HELD});
	uint32_t len;
	int fds[4], nfd, truncated;
	ssize_t n = recv_fds(5, &len, sizeof(len), fds, 4, &nfd, &truncated);
	CHECK(c, n, "recvmsg");
	if (n == 0) _exit(0); // the supervisor let the sandbox go unused
	if (nfd < 3 || truncated) fail(c, EINVAL, "the command needs 3 or 4 descriptors", 125);
	for (size_t got = n; got < sizeof(len);) {
		ssize_t k = read(5, (char *)&len + got, sizeof(len) - got);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) fail(c, k < 0 ? errno : EINVAL, "truncated command", 125);
		got += k;
	}
	if (len > (64u << 20)) fail(c, E2BIG, "command too large", 125);
	uint8_t *buf = malloc(len);
	if (!buf) fail(c, ENOMEM, "command", 125);
	for (uint32_t got = 0; got < len;) {
		ssize_t k = read(5, buf + got, len - got);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) fail(c, k < 0 ? errno : EINVAL, "truncated command", 125);
		got += k;
	}
	// Without close-on-exec: these are the command's. pid 1's own
	// descriptors (4, 5) were marked close-on-exec by OP_CLOEXEC.
	for (int i = 0; i < nfd; i++) {
		if (fds[i] != i) {
			CHECK(c, dup2(fds[i], i), "dup2");
			close(fds[i]);
		} else {
			fcntl(i, F_SETFD, 0);
		}
	}
	c->cmd_fds = nfd;
	c->p = buf;
	c->end = buf + len;
}

static void run_plan(struct child *c) {
	for (;;) {
		uint32_t op = get_u32(c);
		c->stage = "plan";
		switch (op) {
		case OP_END: fail(c, EINVAL, "plan ended before exec", 125);
		case OP_DUMPABLE:
			// Not dumpable: /proc/1 is unreadable to the command and pid 1
			// cannot be traced; /proc/1/exe is the jail binary on the host
			// (CVE-2019-5736: a container overwrote its runtime that way).
			c->layer = "privileges"; c->stage = "set not dumpable";
			CHECK(c, prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl");
			break;
		case OP_HOSTNAME: {
			c->layer = "userns"; c->stage = "set host name";
			const char *h = get_str(c);
			CHECK(c, sethostname(h, strlen(h)), h);
			break;
		}
		case OP_LOOPBACK: c->layer = "network"; c->stage = "bring loopback up"; op_loopback(c); break;
		case OP_SOCKETS: c->layer = "network"; c->stage = "open proxy sockets"; op_sockets(c); break;
		case OP_DNS: c->layer = "network"; c->stage = "open the name server socket"; op_dns(c); break;
		case OP_PRIVATE:
			c->layer = "mount"; c->stage = "build the file-system view";
			CHECK(c, mount("", "/", NULL, MS_REC | MS_PRIVATE, NULL), "make / private");
			break;
		case OP_SOURCE: c->stage = "open bind source"; op_source(c); break;
		case OP_NEWROOT: op_newroot(c); break;
		case OP_BIND: op_bind(c); break;
		case OP_TMPFS: op_tmpfs(c); break;
		case OP_HIDE: op_hide(c); break;
		case OP_PROTECT: op_protect(c); break;
		case OP_PIN: op_pin(c); break;
		case OP_OVERLAY: op_overlay(c); break;
		case OP_SYMLINK: op_symlink(c); break;
		case OP_FILE: op_file(c); break;
		case OP_PROC: op_proc(c); break;
		case OP_DEV: op_dev(c); break;
		case OP_PIVOT: op_pivot(c); break;
		case OP_LOCK: op_lock(c); break;
		case OP_NNP:
			c->layer = "privileges"; c->stage = "set no_new_privs";
			CHECK(c, prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl");
			break;
		case OP_LANDLOCK: c->layer = "landlock"; c->stage = "landlock"; op_landlock(c); break;
		case OP_CLOEXEC: op_cloexec(c); break;
		case OP_CAPS: c->layer = "privileges"; c->stage = "drop privileges"; op_caps(c); break;
		case OP_SECCOMP: c->layer = "seccomp"; c->stage = "seccomp"; op_seccomp(c); break;
		case OP_HOLD: op_hold(c); break;
		case OP_MORE: op_more(c); break;
		case OP_EXEC: op_exec(c);
		default: fail(c, EINVAL, "unknown plan operation", 125);
		}
	}
}

// run_body reads the rest of the plan to EOF and carries it out as pid 1.
void __attribute__((noreturn)) run_body(struct child *c) {
	size_t cap = 1 << 16, len = 0;
	uint8_t *buf = malloc(cap);
	for (;;) {
		if (!buf) fail(c, ENOMEM, "plan", 125);
		if (len == cap) {
			if (cap >= (64u << 20)) fail(c, E2BIG, "plan too large", 125);
			cap *= 2;
			buf = realloc(buf, cap);
			continue;
		}
		ssize_t n = read(3, buf + len, cap - len);
		if (n < 0 && errno == EINTR) continue;
		if (n < 0) fail(c, errno, "read plan", 125);
		if (n == 0) break;
		len += n;
	}
	close(3);
	c->p = buf;
	c->end = buf + len;
	run_plan(c);
	_exit(125);
}

void init_child(struct child *c) {
	*c = (struct child){.cmd_fds = 3, .root = -1, .empty = -1, .stage = "read plan", .layer = "mount", .dns = -1, .notify = -1, .mem_fd = -1, .outside = -1};
	for (int i = 0; i < MAX_SOURCES; i++) c->src[i] = -1;
}

// read_header reads the plan's fixed-size header and returns its cursor
// positioned after the OP_UNSHARE opcode.
void read_header(struct child *c, uint8_t header[PLAN_HEADER_SIZE]) {
	read_full(c, header, PLAN_HEADER_SIZE);
	if (memcmp(header, JAIL_PLAN_MAGIC, 8)) fail(c, EINVAL, "not a jail plan (binary and child differ?)", 125);
	c->p = header + 8;
	c->end = header + PLAN_HEADER_SIZE;
	if (get_u32(c) != OP_UNSHARE) fail(c, EINVAL, "plan does not start with the namespaces", 125);
}
