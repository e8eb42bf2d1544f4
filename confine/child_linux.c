// The sandbox's init: pid 1 of the sandbox, executing a plan compiled by
// the Go supervisor (plan_linux.go).
//
// Why C: the child is the jail binary re-executed through /proc/self/exe.
// A Go child would start a second Go runtime (threads, package
// initialisers, page faults: more than the rest of the launch together).
// This constructor runs before the Go runtime, as runc's nsexec does, and
// never returns when it is the child. Every decision (which paths, in what
// order, which rights, which filter) is made and tested in Go; this file
// only carries out the plan, one operation per function, and reports the
// first failure as {stage, errno, msg}.
//
// Protocol (see doc.go): fd 3 carries the plan (read to EOF), fd 4 takes
// JSON-lines reports, fd 5 takes the listening sockets of OP_SOCKETS.

//go:build linux && cgo

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "early_linux.h"

// Syscall numbers of the new mount API, openat2 and Landlock are the same
// on every architecture jail supports (the unified table from Linux 5.1).
#define NR_open_tree 428
#define NR_move_mount 429
#define NR_fsopen 430
#define NR_fsconfig 431
#define NR_fsmount 432
#define NR_openat2 437
#define NR_mount_setattr 442
#define NR_landlock_create_ruleset 444
#define NR_landlock_add_rule 445
#define NR_landlock_restrict_self 446

#define J_OPEN_TREE_CLONE 1
#define J_OPEN_TREE_CLOEXEC O_CLOEXEC
#define J_AT_RECURSIVE 0x8000
#define J_MOVE_MOUNT_F_EMPTY_PATH 0x04
#define J_MOVE_MOUNT_T_EMPTY_PATH 0x40
#define J_MOUNT_ATTR_RDONLY 0x1
#define J_FSOPEN_CLOEXEC 0x1
#define J_FSMOUNT_CLOEXEC 0x1
#define J_FSCONFIG_SET_FLAG 0
#define J_FSCONFIG_SET_STRING 1
#define J_FSCONFIG_SET_FD 5
#define J_FSCONFIG_CMD_CREATE 6
#define J_RESOLVE_NO_MAGICLINKS 0x02
#define J_RESOLVE_NO_SYMLINKS 0x04
#define J_RESOLVE_BENEATH 0x08
#define J_LANDLOCK_RULE_PATH_BENEATH 1
#define J_LANDLOCK_RULE_NET_PORT 2
#define J_SECBITS 0xEF /* NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED, NO_CAP_AMBIENT_RAISE, and their locks */

struct j_open_how { uint64_t flags, mode, resolve; };
struct j_mount_attr { uint64_t attr_set, attr_clr, propagation, userns_fd; };
struct j_ruleset_attr { uint64_t handled_fs, handled_net, scoped; };
struct j_path_beneath { uint64_t allowed; int32_t parent_fd; } __attribute__((packed));
struct j_net_port { uint64_t allowed, port; };

// Operations of the plan, in the order the supervisor writes them.
enum {
	OP_END = 0,
	OP_DUMPABLE = 1,
	OP_HOSTNAME = 2,
	OP_LOOPBACK = 3,
	OP_SOCKETS = 4,
	OP_PRIVATE = 5,
	OP_SOURCE = 6,
	OP_NEWROOT = 7,
	OP_BIND = 8,
	OP_TMPFS = 9,
	OP_HIDE = 10,
	OP_PROTECT = 11,
	OP_SYMLINK = 12,
	OP_PROC = 13,
	OP_DEV = 14,
	OP_PIVOT = 15,
	OP_NNP = 16,
	OP_LANDLOCK = 17,
	OP_CLOEXEC = 18,
	OP_CAPS = 19,
	OP_SECCOMP = 20,
	OP_EXEC = 21,
	OP_UNSHARE = 22,
	OP_LOCK = 23,
	OP_HOLD = 24,
	OP_PIN = 25,
	OP_DNS = 26,
	OP_OVERLAY = 27,
	OP_FILE = 28,
	OP_UNREAD = 29,
};

#define MAX_SOURCES 256
#define CHILD_ARG0 "jail-init" // childArg0 in init_linux.go
#define NEWROOT "/tmp"
#define EMPTY_FILE ".jail-empty"

// The child's whole state; it is one process that runs one plan.
struct child {
	const uint8_t *p, *end; // plan cursor
	int src[MAX_SOURCES];
	int cmd_fds; // how many descriptors from 0 up are the command's
	int root;   // new root's tmpfs, before pivot
	int empty;  // the empty read-only file used to cover paths
	const char *stage;
	const char *layer;
	int dns;           // OP_DNS: the name server socket pid 1 answers on, or -1
	char *dns_notice;  // its notice template; NULL once reported
	int notify;        // seccomp listener of the refused ptrace calls, or -1
	int hinted;        // the ptrace notice was reported
	struct seccomp_notif_sizes sizes;
};

// ---- reporting ----------------------------------------------------------

static void put_json_string(char **w, char *end, const char *s) {
	char *o = *w;
	if (o < end) *o++ = '"';
	for (; *s && o + 7 < end; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') { *o++ = '\\'; *o++ = c; }
		else if (c < 0x20) { o += snprintf(o, end - o, "\\u%04x", c); }
		else *o++ = c;
	}
	if (o < end) *o++ = '"';
	*w = o;
}

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

static void report_line(const char *line, size_t n) { jail_write_all(4, line, n); }

// fail reports the stage that failed and ends pid 1 (and with it the
// namespace). code 127/126 mark a command that could not be executed.
static void __attribute__((noreturn)) fail(struct child *c, int err, const char *msg, int code) {
	char buf[2048], *w = buf, *end = buf + sizeof(buf) - 4;
	w += snprintf(w, end - w, "{\"stage\":\"error\",\"err\":{\"layer\":");
	put_json_string(&w, end, c->layer);
	w += snprintf(w, end - w, ",\"stage\":");
	put_json_string(&w, end, c->stage);
	w += snprintf(w, end - w, ",\"errno\":%d,\"msg\":", err);
	put_json_string(&w, end, msg ? msg : "");
	w += snprintf(w, end - w, "}}\n");
	report_line(buf, w - buf);
	_exit(code);
}

#define CHECK(c, expr, msg) do { if ((expr) < 0) fail((c), errno, (msg), 125); } while (0)

// ---- plan decoding --------------------------------------------------------

static uint32_t get_u32(struct child *c) {
	uint32_t v;
	if (c->end - c->p < 4) fail(c, EINVAL, "truncated plan", 125);
	memcpy(&v, c->p, 4);
	c->p += 4;
	return v;
}

static uint64_t get_u64(struct child *c) {
	uint64_t v;
	if (c->end - c->p < 8) fail(c, EINVAL, "truncated plan", 125);
	memcpy(&v, c->p, 8);
	c->p += 8;
	return v;
}

// get_str returns a NUL-terminated string inside the plan (the encoder
// writes length, bytes, NUL).
static const char *get_str(struct child *c) {
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

// dns_notice reports the notice for name once: the supervisor prints it.
// name holds only [a-z0-9._-] and the template no '"' or '\' (both
// checked), so the line needs no escaping on either side.
static void dns_notice(struct child *c, const char *name) {
	char line[2048];
	size_t n = 0;
	const char *t = c->dns_notice, *pre = "{\"stage\":\"notice\",\"text\":\"";
	c->dns_notice = NULL;
	size_t lname = strlen(name);
	memcpy(line, pre, strlen(pre));
	n = strlen(pre);
	for (const char *p = t; *p && n + lname + 8 < sizeof(line); p++) {
		if (!strncmp(p, "{name}", 6)) {
			memcpy(line + n, name, lname);
			n += lname;
			p += 5;
		} else {
			line[n++] = *p;
		}
	}
	memcpy(line + n, "\"}\n", 3);
	report_line(line, n + 3);
	free((void *)t);
}

// jail_dns_reply (early_linux.h) answers one query: NXDOMAIN for a
// standard query with one question (the question echoed), NOTIMP for other
// opcodes, FORMERR for what does not parse; a datagram that is itself a
// response gets nothing, so two such servers cannot loop. Only the header
// and the question are read, within the datagram.
size_t jail_dns_reply(const uint8_t *q, size_t n, uint8_t r[512], char name[256]) {
	name[0] = 0;
	if (n < 12 || n > 512 || (q[2] & 0x80)) return 0;
	int opcode = (q[2] >> 3) & 0xf;
	int ok = opcode == 0 && q[4] == 0 && q[5] == 1;
	size_t off = 12, len = 0;
	int plain = 1, dots = 0;
	while (ok) {
		if (off >= n) { ok = 0; break; }
		uint8_t l = q[off++];
		if (l == 0) break;
		// A compression pointer (0xc0) or an extended label type is not
		// a question a stub resolver sends.
		if (l > 63 || off + l > n || len + l + 1 > 253) { ok = 0; break; }
		if (len) { name[len++] = '.'; dots++; }
		for (uint8_t i = 0; i < l; i++) {
			char ch = (char)q[off + i];
			if (ch >= 'A' && ch <= 'Z') ch += 'a' - 'A';
			if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_')) plain = 0;
			name[len++] = ch;
		}
		off += l;
	}
	if (ok && off + 4 > n) ok = 0;
	size_t rl = ok ? off + 4 : 12;
	memcpy(r, q, rl);
	r[2] = 0x80 | 0x04 | (q[2] & 0x79); // QR, AA; the opcode and RD as asked
	r[3] = 0x80 | (ok ? 3 : opcode ? 4 : 1); // RA; NXDOMAIN, NOTIMP or FORMERR
	r[4] = 0;
	r[5] = ok ? 1 : 0;
	memset(r + 6, 0, 6); // no answer, authority or additional records
	int qtype = ok ? q[off] << 8 | q[off + 1] : 0;
	// A, AAAA: a program about to connect. Only a name that is safe to
	// print, and not a single label (the sandbox's own host name).
	if (plain && dots && (qtype == 1 || qtype == 28)) name[len] = 0;
	else name[0] = 0;
	return rl;
}

// dns_answer answers one datagram on the name server socket and reports
// the notice for the first name worth one.
static void dns_answer(struct child *c) {
	uint8_t q[512], r[512];
	char name[256];
	struct sockaddr_storage from;
	socklen_t fl = sizeof(from);
	ssize_t n = recvfrom(c->dns, q, sizeof(q), MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *)&from, &fl);
	if (n <= 0 || (size_t)n > sizeof(q)) return; // nothing, or more than a stub resolver sends over UDP
	size_t rl = jail_dns_reply(q, (size_t)n, r, name);
	if (rl) sendto(c->dns, r, rl, MSG_DONTWAIT, (struct sockaddr *)&from, fl);
	if (name[0] && c->dns_notice) dns_notice(c, name);
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

// unread_walk covers every entry beneath dir that others may not read (a
// directory: read and search), and descends into the rest; symlinks are
// left alone (their targets are walked where they are). *left counts the
// entries the walk may still visit.
static int unread_walk(struct child *c, int dir, int depth, long *left) {
	if (depth > 64) return 0;
	int dfd = dup(dir);
	if (dfd < 0) return -1;
	DIR *d = fdopendir(dfd); // dir is an O_RDONLY directory descriptor
	if (!d) {
		close(dfd);
		return -1;
	}
	rewinddir(d);
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
		if (--*left < 0) {
			errno = E2BIG;
			r = -1;
			break;
		}
		struct stat st;
		if (fstatat(dir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT) continue;
			r = -1;
			break;
		}
		if (S_ISLNK(st.st_mode)) continue;
		int open_to_others = S_ISDIR(st.st_mode) ? (st.st_mode & (S_IROTH | S_IXOTH)) == (S_IROTH | S_IXOTH) : (st.st_mode & S_IROTH) != 0;
		if (open_to_others && !S_ISDIR(st.st_mode)) continue; // most entries: nothing to open
		int fd = openat(dir, de->d_name, (open_to_others ? O_RDONLY | O_DIRECTORY : O_PATH) | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT) continue;
			r = -1;
			break;
		}
		if (!open_to_others) r = cover(c, fd);
		else if (S_ISDIR(st.st_mode)) r = unread_walk(c, fd, depth + 1, left);
		close(fd);
	}
	int e = errno;
	closedir(d);
	errno = e;
	return r;
}

// op_unread hides what only root (or a file's owner or group) may read
// beneath dest, for a caller that is root: its sandbox would otherwise
// read /etc/kubernetes/admin.conf or /etc/wireguard/*. It runs on every
// launch, cached or not, so the walk sees the tree as it is now.
static void op_unread(struct child *c) {
	const char *dest = get_str(c);
	long left = get_u32(c);
	int fd = open_in(c->root, rel(dest));
	if (fd < 0 && errno == ENOENT) return;
	CHECK(c, fd, dest);
	struct stat st;
	CHECK(c, fstat(fd, &st), dest);
	if (S_ISDIR(st.st_mode)) {
		int dir = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		CHECK(c, dir, dest);
		if (unread_walk(c, dir, 0, &left) < 0) {
			if (errno == E2BIG)
				fail(c, E2BIG, "too many entries to find what only root may read (set [sandbox] root_only = \"show\" to skip the walk)", 125);
			CHECK(c, -1, dest);
		}
		close(dir);
	}
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

// op_cloexec marks every descriptor but 0, 1, 2 and the report pipe
// close-on-exec (CVE-2024-21626 was a leaked host directory descriptor).
// close_from closes every descriptor from low up or, with cloexec, marks
// it close-on-exec. close_range does it in one call since Linux 5.9 (5.11
// for the flag); before, /proc/self/fd lists them, whatever their numbers.
static int close_from(unsigned low, int cloexec) {
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

// answer_notify refuses the call the listener holds with EPERM, as a
// plain errno rule would, and reports the hint the first time. The
// caller is blocked until this answer, so pid 1 answers at once.
static void answer_notify(struct child *c) {
	struct seccomp_notif *req = calloc(1, c->sizes.seccomp_notif > sizeof(*req) ? c->sizes.seccomp_notif : sizeof(*req));
	struct seccomp_notif_resp *resp = calloc(1, c->sizes.seccomp_notif_resp > sizeof(*resp) ? c->sizes.seccomp_notif_resp : sizeof(*resp));
	if (req && resp && ioctl(c->notify, SECCOMP_IOCTL_NOTIF_RECV, req) == 0) {
		resp->id = req->id;
		resp->error = -EPERM;
		// ENOENT: the caller was interrupted or died meanwhile.
		(void)ioctl(c->notify, SECCOMP_IOCTL_NOTIF_SEND, resp);
		if (!c->hinted) {
			c->hinted = 1;
			static const char notice[] = "{\"stage\":\"notice\",\"text\":\"" JAIL_HINT_PTRACE "\"}\n";
			report_line(notice, sizeof(notice) - 1);
		}
	}
	free(req);
	free(resp);
}

// lookup finds argv0 as a shell would, in PATH of the command's own
// environment, inside the new root. pid 1 is already in the command's
// working directory, so a name with a slash (./gradlew, .venv/bin/pytest)
// and a relative PATH entry (bin, or an empty one meaning ".") are found
// where a shell started there would find them.
static int lookup(const char *argv0, char *const envp[], char *out, size_t outn) {
	if (strchr(argv0, '/')) {
		snprintf(out, outn, "%s", argv0);
		return access(out, X_OK) == 0 ? 0 : -errno;
	}
	const char *path = "/usr/local/bin:/usr/bin:/bin";
	for (char *const *e = envp; *e; e++)
		if (!strncmp(*e, "PATH=", 5)) path = *e + 5;
	int err = ENOENT;
	while (1) {
		const char *colon = strchr(path, ':');
		size_t len = colon ? (size_t)(colon - path) : strlen(path);
		snprintf(out, outn, "%.*s/%s", len ? (int)len : 1, len ? path : ".", argv0);
		struct stat st;
		if (stat(out, &st) == 0 && !S_ISDIR(st.st_mode)) {
			if (access(out, X_OK) == 0) return 0;
			err = errno;
		}
		if (!colon) break;
		path = colon + 1;
	}
	return -err;
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGUSR1, SIGUSR2, SIGCONT};

// op_exec starts the command and serves as pid 1 until it exits: it
// forwards signals to the command, reaps every zombie, and exits with the
// command's status. Exiting ends the namespace and every process in it.
static void __attribute__((noreturn)) op_exec(struct child *c) {
	uint32_t argc = get_u32(c);
	if (argc == 0 || argc > 65536) fail(c, EINVAL, "argv", 125);
	char **argv = calloc(argc + 1, sizeof(char *));
	for (uint32_t i = 0; i < argc; i++) argv[i] = (char *)get_str(c);
	uint32_t envc = get_u32(c);
	if (envc > 65536) fail(c, EINVAL, "env", 125);
	char **envp = calloc(envc + 1, sizeof(char *));
	for (uint32_t i = 0; i < envc; i++) envp[i] = (char *)get_str(c);
	const char *dir = get_str(c);
	uint32_t foreground = get_u32(c);
	uint32_t nrl = get_u32(c);
	if (nrl > 16) fail(c, EINVAL, "rlimits", 125);
	uint32_t rlres[16];
	struct rlimit rl[16];
	for (uint32_t i = 0; i < nrl; i++) {
		rlres[i] = get_u32(c);
		rl[i].rlim_cur = get_u64(c);
		rl[i].rlim_max = get_u64(c);
	}

	c->layer = "exec";
	c->stage = "exec";
	// The lookup runs where the command will: relative names are the
	// working directory's, as in a shell (the command's own chdir below
	// then changes nothing).
	if (chdir(dir) < 0) fail(c, errno, dir, 126);
	char path[4096];
	int lerr = lookup(argv[0], envp, path, sizeof(path));
	if (lerr < 0) fail(c, -lerr, argv[0], lerr == -ENOENT ? 127 : 126);

	sigset_t set, none;
	sigemptyset(&set);
	sigemptyset(&none);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++) sigaddset(&set, forwarded[i]);
	sigaddset(&set, SIGCHLD);
	sigset_t ttou;
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, NULL);
	// Blocked before the fork, so no signal sent in between is lost; pid 1
	// of a namespace only receives signals it blocks or handles.
	sigprocmask(SIG_BLOCK, &set, NULL);

	int errpipe[2];
	CHECK(c, pipe2(errpipe, O_CLOEXEC), "pipe");
	// vfork: pid 1 waits while the child execs, and no page table is
	// copied. The child only makes system calls and leaves by execve or
	// _exit; its own variables are declared in its block.
	pid_t pid = vfork();
	CHECK(c, pid, "fork");
	if (pid == 0) {
		close(errpipe[0]);
		// A command that is not interactive gets a session of its own:
		// no controlling terminal, so /dev/tty is ENXIO and it can take
		// no terminal over (TIOCSPGRP, TIOCSCTTY on an inherited one);
		// the supervisor gives it no terminal as stdin either
		// (docs/terminal.md). An interactive one is a job in the
		// caller's session, with the terminal, as under a shell.
		if (foreground) setpgid(0, 0);
		else setsid();
		if (foreground) {
			// Make the command the terminal's foreground group, as a
			// shell does for a job; SIGTTOU would stop us otherwise.
			sigset_t tt;
			sigemptyset(&tt);
			sigaddset(&tt, SIGTTOU);
			sigprocmask(SIG_BLOCK, &tt, NULL);
			tcsetpgrp(0, getpid());
		}
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		int err = 0;
		for (uint32_t i = 0; i < nrl && !err; i++)
			if (setrlimit(rlres[i], &rl[i]) < 0) err = errno;
		if (!err && chdir(dir) < 0) err = errno;
		if (!err) {
			sigprocmask(SIG_SETMASK, &none, NULL);
			execve(path, argv, envp);
			err = errno;
		}
		(void)!write(errpipe[1], &err, sizeof(err));
		_exit(127);
	}
	close(errpipe[1]);
	// The command's descriptors are its own: with pid 1 holding no copy,
	// a reader of its stdout sees the end as soon as the command's tree
	// closes it, not only when pid 1 exits. A foreground pid 1 keeps the
	// terminal on fd 0 to hand it back after ^Z.
	for (int i = foreground ? 1 : 0; i < c->cmd_fds; i++) close(i);
	int err = 0;
	ssize_t got;
	do got = read(errpipe[0], &err, sizeof(err)); while (got < 0 && errno == EINTR);
	close(errpipe[0]);
	if (got == sizeof(err)) {
		waitpid(pid, NULL, 0);
		fail(c, err, path, err == ENOENT ? 127 : 126);
	}
	report_line("{\"stage\":\"started\"}\n", 20);

	// With a name server socket or a seccomp listener, signals are read
	// from a signalfd so that one poll waits for all; without either (or
	// if signalfd is refused, when lookups then meet a closed port and
	// fail at once all the same), sigwaitinfo as ever.
	int sfd = -1;
	if (c->dns >= 0 || c->notify >= 0) {
		// Above the descriptors closed just now: fd 0 is the terminal
		// a foreground pid 1 hands back, and must not be reused.
		int fd = signalfd(-1, &set, SFD_CLOEXEC);
		if (fd >= 0) {
			sfd = fcntl(fd, F_DUPFD_CLOEXEC, 10);
			close(fd);
		}
		if (sfd < 0) {
			// A refused ptrace then fails with ENOSYS (no listener), a
			// lookup at a closed port.
			if (c->dns >= 0) close(c->dns);
			if (c->notify >= 0) close(c->notify);
			c->dns = c->notify = -1;
		}
	}
	for (;;) {
		int status;
		struct rusage ru;
		pid_t w;
		while ((w = wait4(-1, &status, WNOHANG | WUNTRACED, &ru)) > 0) {
			if (w != pid) continue;
			if (WIFSTOPPED(status)) {
				// ^Z or SIGSTOP stopped the command: the supervisor
				// stops itself too, so the caller's shell gets its
				// terminal back, and sends SIGCONT when resumed.
				char sb[80];
				int sn = snprintf(sb, sizeof(sb), "{\"stage\":\"stopped\",\"signal\":%d}\n", WSTOPSIG(status));
				report_line(sb, sn);
				continue;
			}
			char buf[160];
			int code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
			int n = snprintf(buf, sizeof(buf), "{\"stage\":\"exit\",\"status\":%d,\"signal\":%d,\"max_rss_kb\":%ld}\n",
					 code, WIFSIGNALED(status) ? WTERMSIG(status) : 0, ru.ru_maxrss);
			// Everything else in the sandbox ends before the supervisor
			// hears the result, so a caller that acts on the exit status
			// never races a leftover process. kill(-1) from pid 1 reaches
			// every process of the namespace; a fork in flight fails on
			// the pending SIGKILL. ECHILD comes only once the last
			// descendant (re-parented to pid 1 as its parents die) is gone.
			kill(-1, SIGKILL);
			while (wait4(-1, NULL, 0, NULL) > 0 || errno == EINTR)
				;
			report_line(buf, n);
			_exit(code);
		}
		int sig;
		if (sfd >= 0) {
			// pid 1 also answers the sandbox's name lookups (OP_DNS) and
			// the ptrace calls seccomp hands it (a negative fd is
			// ignored by poll).
			struct pollfd pf[3] = {{.fd = sfd, .events = POLLIN}, {.fd = c->dns, .events = POLLIN}, {.fd = c->notify, .events = POLLIN}};
			if (poll(pf, 3, -1) < 0) continue;
			if (pf[1].revents & POLLIN) dns_answer(c);
			if (pf[2].revents & POLLIN) answer_notify(c);
			else if (pf[2].revents & (POLLHUP | POLLERR | POLLNVAL)) c->notify = -1;
			struct signalfd_siginfo ssi;
			if (!(pf[0].revents & POLLIN) || read(sfd, &ssi, sizeof(ssi)) != sizeof(ssi)) continue;
			sig = (int)ssi.ssi_signo;
		} else {
			siginfo_t si;
			sig = sigwaitinfo(&set, &si);
		}
		if (sig == SIGCONT) {
			// Resumed: give the terminal back to the command's group and
			// wake the whole group, as a shell's fg does. SIGTTOU is
			// blocked here, so taking the terminal from the background
			// cannot stop pid 1.
			if (foreground) tcsetpgrp(0, pid);
			kill(-pid, SIGCONT);
		} else if (sig > 0 && sig != SIGCHLD) {
			kill(pid, sig);
		}
	}
}

// write_file writes s to path in one write (the kernel requires it for
// the id maps).
static int write_file(const char *path, const char *s) {
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) return -1;
	ssize_t n = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

// op_unshare creates the namespaces and maps the caller's own ids into the
// new user namespace, then forks: the child is pid 1 of the new pid
// namespace and goes on with the plan; this process stays outside it,
// tells the supervisor pid 1's host pid, and exits with pid 1's status.
// Creating the namespaces here rather than at clone lets the supervisor
// start us with vfork (Go copies its whole address space for a clone with
// CLONE_NEWUSER), and an unprivileged process may write its own maps.
// write_id_maps maps one uid and one gid into the new user namespace; the
// process writing them is in it, with every capability there.
static void write_id_maps(struct child *c, uint32_t in_uid, uint32_t out_uid, uint32_t in_gid, uint32_t out_gid) {
	char map[64];
	snprintf(map, sizeof(map), "%u %u 1\n", in_uid, out_uid);
	CHECK(c, write_file("/proc/self/uid_map", map), "write uid_map");
	// setgroups must be refused before an unprivileged process may write
	// gid_map; it also keeps supplementary groups from being dropped
	// to gain access (a group that denies by ACL).
	CHECK(c, write_file("/proc/self/setgroups", "deny"), "deny setgroups");
	snprintf(map, sizeof(map), "%u %u 1\n", in_gid, out_gid);
	CHECK(c, write_file("/proc/self/gid_map", map), "write gid_map");
}

// fork_pid1 forks the sandbox's pid 1 and returns in it; the process
// outside the new pid namespace reports pid 1's host pid, waits for it
// and exits with its status.
static void fork_pid1(struct child *c) {
	pid_t pid = fork();
	CHECK(c, pid, "fork pid 1");
	if (pid == 0) {
		// pid 1 dies with this process, which dies with the supervisor.
		// (getppid() is 0 here: the parent is outside the new pid
		// namespace. Had it died before this prctl, pid 1's next report
		// would meet a closed pipe and SIGPIPE would end it.)
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		return;
	}
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "{\"stage\":\"pid1\",\"pid\":%d}\n", (int)pid);
	report_line(buf, n);
	close(3);
	close(4);
	close(5);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) _exit(125);
	_exit(WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status));
}

static void op_unshare(struct child *c) {
	uint64_t flags = get_u64(c);
	uint32_t in_uid = get_u32(c), out_uid = get_u32(c), in_gid = get_u32(c), out_gid = get_u32(c);
	c->layer = "userns";
	c->stage = "create namespaces";
	CHECK(c, unshare((int)flags), "unshare");
	write_id_maps(c, in_uid, out_uid, in_gid, out_gid);
	fork_pid1(c);
}

// op_lock moves pid 1 into a user namespace nested in the sandbox's own,
// with a copy of the finished mount namespace. A mount namespace copied
// into a less privileged user namespace has every mount locked: it cannot
// be unmounted to uncover what is beneath, and its read-only, nosuid, nodev
// and noexec flags can no longer be cleared (MNT_LOCK_READONLY and
// friends), even by a process holding CAP_SYS_ADMIN in the sandbox's own
// user namespace. The ids map to themselves.
static void op_lock(struct child *c) {
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
}

// ---- entry ----------------------------------------------------------------

#define PLAN_HEADER_SIZE (8 + 4 + 8 + 4 * 4) // planHeaderSize in plan_linux.go

// read_full reads exactly n bytes of the plan.
static void read_full(struct child *c, uint8_t *b, size_t n) {
	while (n > 0) {
		ssize_t k = read(3, b, n);
		if (k < 0 && errno == EINTR) continue;
		if (k <= 0) fail(c, k < 0 ? errno : EINVAL, "read the plan header", 125);
		b += k;
		n -= k;
	}
}

static int is_child(int argc, char **argv) {
	struct stat st;
	return argc == 1 && argv && argv[0] && !strcmp(argv[0], CHILD_ARG0) && fstat(3, &st) == 0 && S_ISFIFO(st.st_mode);
}

// recv_fds receives up to len bytes and the descriptors sent with them on
// the socket sock: every descriptor installed is returned in fds (at most
// max; *nfd of them) and is close-on-exec, even when the message carried
// more than fit (*truncated), so the caller can close what it refuses.
// It returns recvmsg's result.
static ssize_t recv_fds(int sock, void *buf, size_t len, int *fds, int max, int *nfd, int *truncated) {
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

// op_hold ends the plan of a sandbox made ahead of its command: pid 1 is
// confined and reports "held", then takes the rest of the plan (OP_EXEC
// and its arguments) and the command's descriptors from fd 5 and goes on.
// The message is a u32 length and that many plan bytes; the descriptors
// (stdin, stdout, stderr and at most one more, which the command gets as
// fd 3) travel with its first byte.
static void op_hold(struct child *c) {
	c->layer = "exec";
	c->stage = "hold";
	report_line("{\"stage\":\"held\"}\n", 17);
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
		case OP_UNREAD: op_unread(c); break;
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
		case OP_EXEC: op_exec(c);
		default: fail(c, EINVAL, "unknown plan operation", 125);
		}
	}
}

// jail_child_main runs before the Go runtime. It returns (to let Go start)
// only when this process is not a sandbox's init.
// run_body reads the rest of the plan to EOF and carries it out as pid 1.
static void __attribute__((noreturn)) run_body(struct child *c) {
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

static void init_child(struct child *c) {
	*c = (struct child){.cmd_fds = 3, .root = -1, .empty = -1, .stage = "read plan", .layer = "mount", .dns = -1, .notify = -1};
	for (int i = 0; i < MAX_SOURCES; i++) c->src[i] = -1;
}

// read_header reads the plan's fixed-size header and returns its cursor
// positioned after the OP_UNSHARE opcode.
static void read_header(struct child *c, uint8_t header[PLAN_HEADER_SIZE]) {
	read_full(c, header, PLAN_HEADER_SIZE);
	if (memcmp(header, "JAILPLN1", 8)) fail(c, EINVAL, "not a jail plan (binary and child differ?)", 125);
	c->p = header + 8;
	c->end = header + PLAN_HEADER_SIZE;
	if (get_u32(c) != OP_UNSHARE) fail(c, EINVAL, "plan does not start with the namespaces", 125);
}

// ---- early start ------------------------------------------------------------
//
// `jail run` forks its sandbox's init here, before the Go runtime starts:
// the namespaces are then created on another CPU while the supervisor
// starts and compiles the plan, and the init needs no exec of its own.
// The supervisor takes the child with jail_take_early (Cmd.Prestart); when
// the run needs something else (the host's network, a cgroup), it closes
// the plan pipe and the child exits.

static struct jail_early early = {.pid = -1, .plan = -1, .status = -1, .sock = -1};

int jail_take_early(struct jail_early *out) {
	if (early.pid < 0) return 0;
	*out = early;
	early.pid = -1;
	return 1;
}

// recv_stdio replaces fds 0, 1 and 2 by the three the supervisor sends on
// fd 5: the command's stdin, stdout and stderr, which the early child
// could not be given when it was forked.
static void recv_stdio(struct child *c) {
	char byte;
	int fds[3], nfd, truncated;
	c->stage = "receive stdio";
	ssize_t n = recv_fds(5, &byte, 1, fds, 3, &nfd, &truncated);
	CHECK(c, n, "recvmsg");
	if (n != 1 || nfd != 3 || truncated) fail(c, EINVAL, "the supervisor sent no stdio", 125);
	for (int i = 0; i < 3; i++) {
		CHECK(c, dup2(fds[i], i), "dup2 stdio");
		close(fds[i]);
	}
}

// early_pid1 is pid 1 of an early child: it takes the header the
// supervisor sends once it has decided, maps the caller's ids, takes the
// command's stdio and goes on with the plan like any pid 1.
static void __attribute__((noreturn)) early_pid1(struct child *c) {
	uint8_t header[PLAN_HEADER_SIZE];
	read_header(c, header);
	uint64_t flags = get_u64(c);
	uint32_t in_uid = get_u32(c), out_uid = get_u32(c), in_gid = get_u32(c), out_gid = get_u32(c);
	c->layer = "userns";
	c->stage = "create namespaces";
	if (flags != JAIL_EARLY_FLAGS) fail(c, EINVAL, "the plan asks for other namespaces than the early child has", 125);
	write_id_maps(c, in_uid, out_uid, in_gid, out_gid);
	recv_stdio(c);
	c->layer = "mount";
	c->stage = "read plan";
	run_body(c);
}

// reset_signals gives a process forked before the Go runtime the signal
// state an exec'd init gets from os.StartProcess: every signal at its
// default, except SIGHUP and SIGINT when the caller ignored them (as the
// Go runtime keeps them), and nothing blocked. Whatever the caller set (an
// ignored SIGCHLD would make pid 1 wait for ever) stops here.
static void reset_signals(void) {
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP) continue;
		struct sigaction old;
		if (sigaction(sig, NULL, &old) < 0) continue;
		if ((sig == SIGHUP || sig == SIGINT) && old.sa_handler == SIG_IGN) continue;
		signal(sig, SIG_DFL);
	}
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

// forget_caller wipes the caller's environment and command line from a
// copy of the supervisor's memory made before the Go runtime started: pid
// 1 has no use for them, and the command could read /proc/1/cmdline; an
// exec'd init has neither. The strings are contiguous, so the init's name
// takes the place of the arguments.
static void forget_caller(int argc, char **argv, char **envp) {
	for (char **e = envp; e && *e; e++) memset(*e, 0, strlen(*e));
	char *a0 = argv[0], *aend = argv[argc - 1] + strlen(argv[argc - 1]);
	memset(a0, 0, aend - a0);
	if (aend - a0 >= (ptrdiff_t)sizeof(CHILD_ARG0)) memcpy(a0, CHILD_ARG0, sizeof(CHILD_ARG0));
	prctl(PR_SET_NAME, CHILD_ARG0, 0, 0, 0);
}

// lift_fd copies fd above 5, so that placing descriptors on 0-5 cannot
// overwrite one of them (fds the caller left open sit anywhere, these
// included).
static int lift_fd(int fd) { return fcntl(fd, F_DUPFD, 6); }

static void __attribute__((noreturn)) early_child(pid_t parent, int plan, int status, int sock, int argc, char **argv, char **envp) {
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent) _exit(125);
	setpgid(0, 0);
	forget_caller(argc, argv, envp);
	reset_signals();
	int p = lift_fd(plan), s = lift_fd(status), k = lift_fd(sock);
	if (p < 0 || s < 0 || k < 0 || dup2(p, 3) < 0 || dup2(s, 4) < 0 || dup2(k, 5) < 0) _exit(125);
	// Only 0-5 stay open, as in an exec'd init; 0-2 are replaced by
	// recv_stdio.
	if (close_from(6, 0) < 0) _exit(125);
	struct child c;
	init_child(&c);
	c.layer = "userns";
	c.stage = "create namespaces";
	int err = unshare(JAIL_EARLY_FLAGS) < 0 ? errno : 0;
	if (err) {
		// Reported once the supervisor has sent its header, which is
		// when it reads reports.
		uint8_t header[PLAN_HEADER_SIZE];
		read_full(&c, header, sizeof(header));
		c.layer = "userns";
		c.stage = "create namespaces";
		fail(&c, err, "unshare", 125);
	}
	fork_pid1(&c); // returns in pid 1 only
	early_pid1(&c);
}

static void early_start(int argc, char **argv, char **envp) {
	int plan[2], status[2], sock[2];
	if (pipe2(plan, O_CLOEXEC) < 0) return;
	if (pipe2(status, O_CLOEXEC) < 0) goto close_plan;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock) < 0) goto close_status;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) early_child(parent, plan[0], status[1], sock[1], argc, argv, envp);
	if (pid < 0) goto close_sock;
	close(plan[0]);
	close(status[1]);
	close(sock[1]);
	early = (struct jail_early){.pid = pid, .plan = plan[1], .status = status[0], .sock = sock[0]};
	return;
close_sock:
	close(sock[0]);
	close(sock[1]);
close_status:
	close(status[0]);
	close(status[1]);
close_plan:
	close(plan[0]);
	close(plan[1]);
}

// child_main is a sandbox's init with its descriptors in place (0-2 the
// command's stdio, 3 the plan, 4 the reports, 5 the sockets), whether it
// was exec'd or forked by the zygote.
static void __attribute__((noreturn)) child_main(void) {
	struct child c;
	init_child(&c);
	// The header comes first and alone: the namespaces are created while
	// the supervisor still prepares the rest (Cmd.Prestart).
	uint8_t header[PLAN_HEADER_SIZE];
	read_header(&c, header);
	op_unshare(&c); // returns in pid 1 only
	c.layer = "mount";
	c.stage = "read plan";
	run_body(&c);
}

// ---- zygote -----------------------------------------------------------------
//
// A process that starts many sandboxes (jail serve, jail mcp) has its
// constructor fork a zygote before the Go runtime starts: a small copy of
// the binary's pristine image that forks each sandbox's init on request,
// where an exec of the 11 MB static binary cost a millisecond or more per
// sandbox. The init is forked with CLONE_PARENT, so it is the supervisor's
// own child (waited for, and dying with it, as an exec'd one) and takes
// the same path as an exec'd init from then on.
//
// A request is one message on the zygote's socket: one byte, with the six
// descriptors of an exec'd init (stdin, stdout, stderr, plan, reports,
// sockets). The answer is the init's pid, or a negative errno.

static int zygote = -1;
static pthread_mutex_t zygote_mu = PTHREAD_MUTEX_INITIALIZER;

// The zygote answers at once; one that does not within this long (stopped,
// say) is given up, and every later init is exec'd.
#define ZYGOTE_ANSWER_MS 5000

int jail_send_fds(int sock, const int *fds, int n) {
	char byte = 0;
	char oob[CMSG_SPACE(8 * sizeof(int))];
	if (n < 1 || n > 8) {
		errno = EINVAL;
		return -1;
	}
	memset(oob, 0, sizeof(oob));
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = oob, .msg_controllen = CMSG_SPACE(n * sizeof(int))};
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(h), fds, n * sizeof(int));
	ssize_t k;
	do k = sendmsg(sock, &m, MSG_NOSIGNAL); while (k < 0 && errno == EINTR);
	return k == 1 ? 0 : -1;
}

int jail_zygote_fork(const int fds[6]) {
	int answer = 0;
	pthread_mutex_lock(&zygote_mu);
	if (zygote < 0) {
		pthread_mutex_unlock(&zygote_mu);
		return -ENOSYS;
	}
	ssize_t n;
	if (jail_send_fds(zygote, fds, 6) < 0) {
		// Nothing was forked: the caller execs the init instead.
		close(zygote);
		zygote = -1;
		pthread_mutex_unlock(&zygote_mu);
		return -ENOSYS;
	}
	struct pollfd pfd = {.fd = zygote, .events = POLLIN};
	int ready;
	do ready = poll(&pfd, 1, ZYGOTE_ANSWER_MS); while (ready < 0 && errno == EINTR);
	n = 0;
	if (ready == 1) {
		do n = recv(zygote, &answer, sizeof(answer), 0); while (n < 0 && errno == EINTR);
	}
	if (n != sizeof(answer)) {
		// The request was taken and an init may exist, holding these
		// descriptors: this start fails (its pipes are closed, so such an
		// init ends), and the zygote is not asked again.
		close(zygote);
		zygote = -1;
		answer = -EIO;
	}
	pthread_mutex_unlock(&zygote_mu);
	return answer;
}

// zygote_child runs in a child made by a raw clone, which skips glibc's
// fork bookkeeping: the thread descriptor keeps the zygote's tid. Nothing
// on the init's path reads it with glibc (getpid and raise ask the kernel,
// vfork is a plain system call, fork_pid1's fork rewrites it, and the
// process has one thread, so no lock is contended); a C library that
// caches the tid (musl's raise) would need a fork here.
static void __attribute__((noreturn)) zygote_child(int fds[6]) {
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	prctl(PR_SET_NAME, CHILD_ARG0, 0, 0, 0);
	setpgid(0, 0);
	int lifted[6];
	for (int i = 0; i < 6; i++)
		if ((lifted[i] = lift_fd(fds[i])) < 0) _exit(125);
	for (int i = 0; i < 6; i++)
		if (dup2(lifted[i], i) < 0) _exit(125);
	if (close_from(6, 0) < 0) _exit(125);
	child_main();
}

static void __attribute__((noreturn)) zygote_main(pid_t parent, int sock, int argc, char **argv, char **envp) {
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent) _exit(0);
	forget_caller(argc, argv, envp);
	reset_signals();
	prctl(PR_SET_NAME, "jail-zygote", 0, 0, 0);
	// Its own process group: the terminal's ^C and ^Z are the
	// supervisor's to act on, not the zygote's to die or stop of.
	setpgid(0, 0);
	// Nothing of the caller's stays open here: not its terminal, not its
	// descriptors. The socket moves to 3.
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	int s = lift_fd(sock);
	if (null < 0 || s < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0 || dup2(s, 3) < 0) _exit(125);
	if (close_from(4, 0) < 0) _exit(125);
	for (;;) {
		char byte;
		int fds[6], nfd, truncated;
		ssize_t n = recv_fds(3, &byte, 1, fds, 6, &nfd, &truncated);
		if (n <= 0) _exit(0); // the supervisor is gone
		int answer = -EINVAL;
		if (nfd == 6 && !truncated) {
			pid_t pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
			if (pid == 0) {
				close(3);
				zygote_child(fds);
			}
			answer = pid < 0 ? -errno : pid;
		}
		for (int i = 0; i < nfd; i++) close(fds[i]);
		while (send(3, &answer, sizeof(answer), MSG_NOSIGNAL) < 0 && errno == EINTR)
			;
	}
}

static void zygote_start(int argc, char **argv, char **envp) {
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) return;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) zygote_main(parent, sv[1], argc, argv, envp);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return;
	}
	zygote = sv[0];
}

// stdio_open makes sure descriptors 0-2 are open (on /dev/null if the
// caller closed them), as the Go runtime does: the pipes made here must not
// take their numbers, or the supervisor would later treat a pipe to the
// sandbox's init as its own stdout.
static int stdio_open(void) {
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
		int n = open("/dev/null", O_RDWR);
		if (n != fd) {
			if (n >= 0) close(n);
			return -1;
		}
	}
	return 0;
}

__attribute__((constructor)) static void jail_child_main(int argc, char **argv, char **envp) {
	if (is_child(argc, argv)) child_main();
	if (argc < 2 || stdio_open() < 0) return;
	if (argc >= 2 && !strcmp(argv[1], "run")) {
		early_start(argc, argv, envp);
		jail_fast_run(argc, argv, envp);
	}
	if (argc >= 2 && (!strcmp(argv[1], "serve") || !strcmp(argv[1], "mcp"))) zygote_start(argc, argv, envp);
}
