// The sandbox's init, part two: pid 1. It creates the namespaces the plan
// starts with (op_unshare), then, at the plan's end, starts the command and
// serves as the namespace's init until it exits (op_exec): forwarding
// signals, reaping, answering the name lookups of a sandbox without network
// and the ptrace calls seccomp hands it, and killing what is left before it
// reports the exit.

//go:build linux && cgo

#include "child_linux.h"

#include <limits.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>

// dns_notice reports the notice for name once: the supervisor prints it.
// name holds only [a-z0-9._-] and the template no '"' or '\' (both
// checked), so the text reads the same on either side.
static void dns_notice(struct child *c, const char *name) {
	char text[2048];
	size_t n = 0, lname = strlen(name);
	const char *t = c->dns_notice;
	c->dns_notice = NULL;
	for (const char *p = t; *p && n + lname + 1 < sizeof(text); p++) {
		if (!strncmp(p, "{name}", 6)) {
			memcpy(text + n, name, lname);
			n += lname;
			p += 5;
		} else {
			text[n++] = *p;
		}
	}
	text[n] = 0;
	report(&(struct report){.kind = REPORT_NOTICE, .text = text});
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

// name_bit is the bit of mounted for the last name of path (trailing
// slashes ignored), len bytes long.
static unsigned name_bit(const char *name, size_t len) {
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)name[i]) * 16777619u;
	return h % (16 * 64);
}

// last_name finds the last name of path: its start, and its length.
static const char *last_name(const char *path, size_t *len) {
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/') n--;
	size_t start = n;
	while (start > 0 && path[start - 1] != '/') start--;
	*len = n - start;
	return path + start;
}

static int name_mounted(struct child *c, const char *name, size_t len);

// maybe_mounted says whether path's last name is the last name of a
// mountpoint of the sandbox: most renames name none, and need no more
// look. The mount table is read once, at the first call: nothing inside
// can mount (seccomp refuses it). Unreadable, every name may be one.
static int maybe_mounted(struct child *c, const char *path) {
	if (!c->mounted_read) {
		c->mounted_read = 1;
		FILE *f = fopen("/proc/self/mountinfo", "re");
		if (!f) {
			memset(c->mounted, 0xff, sizeof(c->mounted));
		} else {
			char line[PATH_MAX * 2 + 256];
			while (fgets(line, sizeof(line), f)) {
				// Fields: id parent major:minor root mountpoint ...;
				// the mountpoint's spaces, tabs and newlines are octal
				// escapes (\040), so a field ends at a space.
				char *p = line;
				for (int field = 0; field < 4 && p; field++) p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
				if (!p) continue;
				char *end = strchr(p, ' ');
				if (!end) continue;
				*end = 0;
				char mp[PATH_MAX];
				size_t m = 0;
				for (char *q = p; *q && m + 1 < sizeof(mp); q++) {
					if (q[0] == '\\' && q[1] >= '0' && q[1] <= '3' && q[2] >= '0' && q[2] <= '7' && q[3] >= '0' && q[3] <= '7') {
						mp[m++] = (char)((q[1] - '0') << 6 | (q[2] - '0') << 3 | (q[3] - '0'));
						q += 3;
					} else {
						mp[m++] = *q;
					}
				}
				mp[m] = 0;
				size_t len;
				const char *name = last_name(mp, &len);
				unsigned b = name_bit(name, len);
				c->mounted[b / 64] |= 1ull << (b % 64);
			}
			fclose(f);
		}
	}
	size_t len;
	const char *name = last_name(path, &len);
	return name_mounted(c, name, len);
}

// name_mounted says whether the name (len bytes) may be a mountpoint's last
// name; maybe_mounted has read the mount table.
static int name_mounted(struct child *c, const char *name, size_t len) {
	if (len == 0 || (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.')) return 1;
	unsigned b = name_bit(name, len);
	return (c->mounted[b / 64] >> (b % 64)) & 1;
}

// any_mounted says whether any name of path may be a mountpoint's.
static int any_mounted(struct child *c, const char *path) {
	if (!maybe_mounted(c, path)) {
		for (const char *p = path; *p;) {
			while (*p == '/') p++;
			const char *e = p;
			while (*e && *e != '/') e++;
			if (e > p && name_mounted(c, p, (size_t)(e - p))) return 1;
			p = e;
		}
		return 0;
	}
	return 1;
}

// notify_path reads the path argument at addr of the caller req names and
// makes it absolute against dirfd (AT_FDCWD: the caller's working
// directory), as the caller sees it: pid 1 shares its root and mounts.
// Returns 0 when it cannot (the caller went away, a path too long), or
// when the path's last name (any of its names, with any) is no
// mountpoint's (maybe_mounted).
static int notify_path(struct child *c, struct seccomp_notif *req, int dirfd, uint64_t addr, char *out, size_t outn, int any) {
	char path[PATH_MAX];
	// Through /proc/PID/mem, not process_vm_readv, which pid 1's own
	// filter refuses; kept open for the next call of the same process. A
	// read that runs into an unmapped page stops there.
	if (c->mem_fd < 0 || c->mem_pid != req->pid) {
		char mem[64];
		if (c->mem_fd >= 0) close(c->mem_fd);
		snprintf(mem, sizeof(mem), "/proc/%u/mem", req->pid);
		c->mem_fd = open(mem, O_RDONLY | O_CLOEXEC);
		c->mem_pid = req->pid;
		if (c->mem_fd < 0) return 0;
	}
	ssize_t n = pread(c->mem_fd, path, sizeof(path) - 1, (off_t)addr);
	if (n <= 0 && (addr & 4095)) n = pread(c->mem_fd, path, 4096 - (addr & 4095), (off_t)addr);
	if (n <= 0) {
		// The process is gone (its descriptor reads nothing now): the
		// next call opens again.
		close(c->mem_fd);
		c->mem_fd = -1;
		return 0;
	}
	path[n] = 0;
	path[sizeof(path) - 1] = 0;
	if (!path[0] || !(any ? any_mounted(c, path) : maybe_mounted(c, path))) return 0;
	if (path[0] == '/') {
		snprintf(out, outn, "%s", path);
		return 1;
	}
	char link[64], base[PATH_MAX];
	if (dirfd == AT_FDCWD) snprintf(link, sizeof(link), "/proc/%u/cwd", req->pid);
	else snprintf(link, sizeof(link), "/proc/%u/fd/%d", req->pid, dirfd);
	ssize_t bl = readlink(link, base, sizeof(base) - 1);
	if (bl <= 0 || base[0] != '/') return 0;
	base[bl] = 0;
	return snprintf(out, outn, "%s/%s", strcmp(base, "/") ? base : "", path) < (int)outn;
}

// shown_path writes path to out (outn bytes) as printable ASCII: every byte
// outside 0x20-0x7e and a double quote as \xNN, a backslash as \\ (the form
// termtext.Escape gives a control byte). The path is the sandbox's choice, and the notice is
// printed on the caller's terminal (by Go's Cmd.Notice or print_notice in
// fast_linux.c, both of which print only such lines as they are).
static void shown_path(const char *path, char *out, size_t outn) {
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)path; *p && o + 5 < outn; p++) {
		if (*p == '\\') {
			out[o++] = '\\';
			out[o++] = '\\';
		} else if (*p < 0x20 || *p > 0x7e || *p == '"') {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		} else {
			out[o++] = (char)*p;
		}
	}
	out[o] = 0;
}

// busy_hint looks at a rename, rmdir or directory unlink the filter handed
// pid 1 before the kernel runs it: when a name it would move or remove is a
// mountpoint jail made (a protected path, a bound file or directory), the
// kernel will refuse it with EBUSY, and the program's own message ("Device
// or resource busy") does not say why. pid 1 reports one line naming the
// path, how jail holds it and what changes that, once per path. Names
// inside a .git directory are left to git's own hints (gitview). Only a
// hint: the call itself always goes on unchanged.
static void busy_hint(struct child *c, struct seccomp_notif *req) {
	struct { int dirfd; uint64_t addr; } names[2];
	int n = 0;
	const char *op = "rmdir";
	switch (req->data.nr) {
#ifdef __NR_rename
	case __NR_rename:
		names[n++] = (typeof(names[0])){AT_FDCWD, req->data.args[0]};
		names[n++] = (typeof(names[0])){AT_FDCWD, req->data.args[1]};
		break;
#endif
	case __NR_renameat:
	case __NR_renameat2:
		names[n++] = (typeof(names[0])){(int)req->data.args[0], req->data.args[1]};
		names[n++] = (typeof(names[0])){(int)req->data.args[2], req->data.args[3]};
		break;
#ifdef __NR_rmdir
	case __NR_rmdir:
		names[n++] = (typeof(names[0])){AT_FDCWD, req->data.args[0]};
		break;
#endif
	case __NR_unlinkat:
		names[n++] = (typeof(names[0])){(int)req->data.args[0], req->data.args[1]};
		break;
	default:
		return;
	}
	for (int i = 0; i < n && c->nbusy < (int)(sizeof(c->busy) / sizeof(c->busy[0])); i++) {
		char path[PATH_MAX + 64];
		if (!notify_path(c, req, names[i].dirfd, names[i].addr, path, sizeof(path), 0)) continue;
		if (strstr(path, "/.git/") || (strlen(path) >= 5 && !strcmp(path + strlen(path) - 5, "/.git"))) continue;
		struct statx sx;
		if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &sx) < 0 || !(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
		    !(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) || !strcmp(path, "/"))
			continue;
		uint32_t h = 2166136261u;
		for (const char *p = path; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
		int seen = 0;
		for (int j = 0; j < c->nbusy; j++) seen |= c->busy[j] == h;
		if (seen) continue;
		c->busy[c->nbusy++] = h;
		struct statvfs vs;
		int ro = statvfs(path, &vs) == 0 && (vs.f_flag & ST_RDONLY);
		int dir = (sx.stx_mode & S_IFMT) == S_IFDIR;
		char shown[4 * PATH_MAX + 1];
		shown_path(path, shown, sizeof(shown));
		char line[4 * PATH_MAX + 1024];
		const char *why = ro ? (dir ? "mounted read-only (a protected path of the workspace, a bound read-only directory: --ro, [sandbox] ro, an agent profile's files), so it cannot be renamed or removed inside; the protected list cannot be lifted (docs/workspace.md), a bind is changed where it was asked for (docs/agents.md)"
					     : "mounted read-only (a protected path of the workspace such as .envrc or .vscode/settings.json, or a file bound read-only: --ro, [sandbox] ro, an agent profile's settings), so nothing can be renamed over it or remove it inside; the protected list cannot be lifted (docs/workspace.md), a bind is changed where it was asked for (docs/agents.md)")
			     : (dir ? "bound from the host (--rw, [sandbox] rw, an agent profile's state), so it cannot be renamed or removed inside, only what is in it changed (docs/agents.md)"
				    : "bound from the host (--rw, [sandbox] rw, an agent profile's login or history), so it cannot be renamed over or removed inside: write it in place instead (docs/agents.md)");
		snprintf(line, sizeof(line), "jail: %s %s: Device or resource busy: jail holds it in place, %s", n == 2 ? (i ? "rename onto" : "rename of") : op, shown, why);
		report(&(struct report){.kind = REPORT_NOTICE, .text = line});
	}
}

// first_notice says whether a notice about path (of kind) is the first:
// each is reported once per run, and at most 32 of them.
static int first_notice(struct child *c, const char *kind, const char *path) {
	uint32_t h = 2166136261u;
	for (const char *p = kind; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
	for (const char *p = path; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
	if (c->nbusy >= (int)(sizeof(c->busy) / sizeof(c->busy[0]))) return 0;
	for (int j = 0; j < c->nbusy; j++)
		if (c->busy[j] == h) return 0;
	c->busy[c->nbusy++] = h;
	return 1;
}

static int mount_root(const struct statx *sx) {
	return (sx->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (sx->stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

// create_hint looks at a call that creates a name or opens one for writing
// (open and openat with O_CREAT, creat, mkdir, mkdirat) before the kernel
// runs it. Where the name is, or lies beneath, a read-only mountpoint whose
// parent is writable (a protected path of the workspace held in place, a
// --ro bind inside a writable tree), the kernel will refuse it, and the
// program's own message says only "Is a directory" (echo x > .envrc, whose
// stand-in is an empty directory), "File exists" (mkdir .vscode) or
// "Read-only file system" (cat > .claude/settings.json). pid 1 reports one
// line naming the path, how jail holds it and the policy key, once per
// path. A read-only mountpoint in a read-only tree (/usr, a covered file
// under /etc) is no surprise and gets none: programs probe those. Names
// inside a .git directory are left to git's messages. Only a hint: the
// call itself always goes on unchanged.
static void create_hint(struct child *c, struct seccomp_notif *req) {
	int dirfd = AT_FDCWD, mk = 0;
	uint64_t addr, flags = O_CREAT | O_WRONLY;
	switch (req->data.nr) {
#ifdef __NR_open
	case __NR_open: addr = req->data.args[0]; flags = req->data.args[1]; break;
#endif
#ifdef __NR_creat
	case __NR_creat: addr = req->data.args[0]; break;
#endif
	case __NR_openat: dirfd = (int)req->data.args[0]; addr = req->data.args[1]; flags = req->data.args[2]; break;
#ifdef __NR_mkdir
	case __NR_mkdir: addr = req->data.args[0]; mk = 1; break;
#endif
	case __NR_mkdirat: dirfd = (int)req->data.args[0]; addr = req->data.args[1]; mk = 1; break;
	default: return;
	}
	char path[PATH_MAX + 64], held[PATH_MAX + 64];
	if (!notify_path(c, req, dirfd, addr, path, sizeof(path), 1)) return;
	size_t pl = strlen(path);
	while (pl > 1 && path[pl - 1] == '/') path[--pl] = 0;
	if (strstr(path, "/.git/") || (pl >= 5 && !strcmp(path + pl - 5, "/.git"))) return;
	struct statx sx;
	int exists = statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &sx) == 0;
	int self = exists && mount_root(&sx), dir = exists && S_ISDIR(sx.stx_mode);
	snprintf(held, sizeof(held), "%s", path);
	if (!self) {
		// An existing name opened only for reading, or made again by
		// mkdir, fails or succeeds as anywhere else.
		if (exists && (mk || ((flags & O_ACCMODE) == O_RDONLY && !dir))) return;
		// The deepest mountpoint above it: only a name the mount table
		// has can be one.
		for (;;) {
			char *slash = strrchr(held, '/');
			if (!slash || slash == held) return;
			*slash = 0;
			size_t len;
			const char *name = last_name(held, &len);
			if (!name_mounted(c, name, len)) continue;
			struct statx up;
			if (statx(AT_FDCWD, held, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &up) < 0) continue;
			if (mount_root(&up)) break;
		}
	}
	if (!strcmp(held, "/")) return;
	struct statvfs vs, pvs;
	char parent[PATH_MAX + 64];
	snprintf(parent, sizeof(parent), "%s", held);
	char *slash = strrchr(parent, '/');
	if (!slash) return;
	if (slash == parent) slash[1] = 0;
	else *slash = 0;
	if (statvfs(held, &vs) < 0 || !(vs.f_flag & ST_RDONLY) || statvfs(parent, &pvs) < 0 || (pvs.f_flag & ST_RDONLY)) return;
	if (!first_notice(c, mk ? "mkdir" : "write", held)) return;
	const char *err = !self ? "Read-only file system" : mk ? "File exists" : dir ? "Is a directory" : "Read-only file system";
	char shown[4 * PATH_MAX + 1], shown_held[4 * PATH_MAX + 1], line[8 * PATH_MAX + 1024];
	shown_path(path, shown, sizeof(shown));
	shown_path(held, shown_held, sizeof(shown_held));
	snprintf(line, sizeof(line),
		 "jail: %s %s: %s: jail holds %s read-only in place: a protected path of the workspace (.envrc, .vscode, .claude/settings.json, ...), which no sandbox may create or change while the host's own tools still can, so make or edit it outside jail (the built-in list cannot be lifted; [sandbox] protected adds to it: docs/workspace.md), or a path bound read-only (--ro, [sandbox] ro)",
		 mk ? "mkdir" : "open for writing", shown, err, self ? "it" : shown_held);
	report(&(struct report){.kind = REPORT_NOTICE, .text = line});
}

// kept_dir says whether the rmdir (or unlinkat with AT_REMOVEDIR) that req
// holds names an empty placeholder jail holds read-only in place in a
// writable tree (user.jail=placeholder): the stand-in of a protected name
// that does not exist
// (.vscode, .envrc, .claude while the run lasts). The kernel would refuse
// it with EBUSY, and git clean -fdx, which removes every empty untracked
// directory, then failed with a warning and a hint for each of them; pid 1
// answers such a call with success instead, without running it (the name
// stays, as held), and says so once per run. Answering without running
// the call is safe whatever the caller changed since it was looked at:
// nothing happens. Names inside a .git directory are left to git.
static int kept_dir(struct child *c, struct seccomp_notif *req) {
	int dirfd = AT_FDCWD;
	uint64_t addr;
	switch (req->data.nr) {
#ifdef __NR_rmdir
	case __NR_rmdir: addr = req->data.args[0]; break;
#endif
	case __NR_unlinkat:
		if (!(req->data.args[2] & AT_REMOVEDIR)) return 0;
		dirfd = (int)req->data.args[0];
		addr = req->data.args[1];
		break;
	default: return 0;
	}
	char path[PATH_MAX + 64];
	if (!notify_path(c, req, dirfd, addr, path, sizeof(path), 0)) return 0;
	size_t pl = strlen(path);
	while (pl > 1 && path[pl - 1] == '/') path[--pl] = 0;
	if (strstr(path, "/.git/") || (pl >= 5 && !strcmp(path + pl - 5, "/.git"))) return 0;
	struct statx sx;
	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &sx) < 0 || !mount_root(&sx) || !S_ISDIR(sx.stx_mode) || !strcmp(path, "/")) return 0;
	char parent[PATH_MAX + 64];
	snprintf(parent, sizeof(parent), "%s", path);
	char *slash = strrchr(parent, '/');
	if (!slash) return 0;
	if (slash == parent) slash[1] = 0;
	else *slash = 0;
	struct statvfs vs, pvs;
	if (statvfs(path, &vs) < 0 || !(vs.f_flag & ST_RDONLY) || statvfs(parent, &pvs) < 0 || (pvs.f_flag & ST_RDONLY)) return 0;
	int d = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0) return 0;
	// Only a placeholder (the mark confine/placeholders_linux.go and
	// fast_linux.c give it): an empty directory bound read-only on purpose
	// (--ro, an agent profile's) keeps the kernel's answer.
	char mark[16] = {0};
	if (fgetxattr(d, "user.jail", mark, sizeof(mark) - 1) != 11 || memcmp(mark, "placeholder", 11)) {
		close(d);
		return 0;
	}
	char buf[512];
	int empty = 1;
	long n;
	while (empty && (n = syscall(SYS_getdents64, d, buf, sizeof(buf))) > 0)
		for (long off = 0; off < n;) {
			struct { uint64_t ino; int64_t off; unsigned short reclen; unsigned char type; char name[]; } *e = (void *)(buf + off);
			if (strcmp(e->name, ".") && strcmp(e->name, "..")) empty = 0;
			off += e->reclen;
		}
	close(d);
	if (n < 0 || !empty) return 0;
	if (!c->kept_hinted) {
		c->kept_hinted = 1;
		char shown[4 * PATH_MAX + 1], line[4 * PATH_MAX + 1024];
		shown_path(path, shown, sizeof(shown));
		snprintf(line, sizeof(line),
			 "jail: rmdir %s: kept: jail holds it, an empty read-only directory standing in for a protected path of the workspace while the run lasts (docs/workspace.md); removing it, or another such directory in this run, reports success and leaves it there, so that git clean -fdx and rm -r work as on the host",
			 shown);
		report(&(struct report){.kind = REPORT_NOTICE, .text = line});
	}
	return 1;
}

// answer_notify answers the call the listener holds: a ptrace is refused
// with EPERM, as a plain errno rule would, with the hint reported the
// first time; a rename, rmdir or directory unlink goes on as the kernel
// would run it, after busy_hint looked at its names. The caller is blocked
// until this answer, so pid 1 answers at once.
static void answer_notify(struct child *c) {
	struct seccomp_notif *req = calloc(1, c->sizes.seccomp_notif > sizeof(*req) ? c->sizes.seccomp_notif : sizeof(*req));
	struct seccomp_notif_resp *resp = calloc(1, c->sizes.seccomp_notif_resp > sizeof(*resp) ? c->sizes.seccomp_notif_resp : sizeof(*resp));
	if (req && resp && ioctl(c->notify, SECCOMP_IOCTL_NOTIF_RECV, req) == 0) {
		resp->id = req->id;
		if (req->data.nr == __NR_ptrace) {
			resp->error = -EPERM;
			// ENOENT: the caller was interrupted or died meanwhile.
			(void)ioctl(c->notify, SECCOMP_IOCTL_NOTIF_SEND, resp);
			if (!c->hinted) {
				c->hinted = 1;
				report(&(struct report){.kind = REPORT_NOTICE, .text = JAIL_HINT_PTRACE});
			}
		} else {
			// Looked at before the answer: the caller's memory and
			// descriptors are as the call sees them while it waits.
			if (kept_dir(c, req)) {
				resp->error = 0;
				resp->val = 0;
				(void)ioctl(c->notify, SECCOMP_IOCTL_NOTIF_SEND, resp);
				free(req);
				free(resp);
				return;
			}
			if (c->nbusy < (int)(sizeof(c->busy) / sizeof(c->busy[0]))) {
				busy_hint(c, req);
				create_hint(c, req);
			}
			resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
			(void)ioctl(c->notify, SECCOMP_IOCTL_NOTIF_SEND, resp);
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

// SIGCONT too: pid 1 gives the terminal back to a resumed command.
static const int forwarded[] = {JAIL_FORWARDED_SIGNALS, SIGCONT};

// op_exec starts the command and serves as pid 1 until it exits: it
// forwards signals to the command, reaps every zombie, and exits with the
// command's status. Exiting ends the namespace and every process in it.
#define SANDBOX_OOM_SCORE_ADJ 500 // docs/supervisor.md, "Default bounds"

// raise_oom_score sets this process's oom_score_adj to at least v.
static void raise_oom_score(int v) {
	char buf[16] = "";
	int fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
	if (fd < 0) return;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n > 0 && atoi(buf) < v) {
		int k = snprintf(buf, sizeof(buf), "%d", v);
		(void)!pwrite(fd, buf, k, 0);
	}
	close(fd);
}

void __attribute__((noreturn)) op_exec(struct child *c) {
	uint32_t argc = get_u32(c);
	if (argc == 0 || argc > 65536) fail(c, EINVAL, "argv", 125);
	char **argv = calloc(argc + 1, sizeof(char *));
	for (uint32_t i = 0; i < argc; i++) argv[i] = (char *)get_str(c);
	uint32_t envc = get_u32(c);
	if (envc > 65536) fail(c, EINVAL, "env", 125);
	char **envp = calloc(envc + 1, sizeof(char *));
	for (uint32_t i = 0; i < envc; i++) envp[i] = (char *)get_str(c);
	const char *dir = get_str(c);
	// TERM_*: the command's terminal (the Go twin: plan.exec in
	// plan_linux.go).
	uint32_t foreground = get_u32(c);
	enum { TERM_NONE = 0, TERM_CALLER = 1, TERM_PTY = 2 };
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
		// On jail's pty (TERM_PTY) it is a session of its own whose
		// controlling terminal is the pty, never the caller's terminal:
		// job control works inside, and nothing reaches the caller's.
		if (foreground == TERM_CALLER) setpgid(0, 0);
		else setsid();
		if (foreground == TERM_PTY) ioctl(0, TIOCSCTTY, 0);
		if (foreground == TERM_CALLER) {
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
	for (int i = foreground == TERM_CALLER ? 1 : 0; i < c->cmd_fds; i++) close(i);
	int err = 0;
	ssize_t got;
	do got = read(errpipe[0], &err, sizeof(err)); while (got < 0 && errno == EINTR);
	close(errpipe[0]);
	if (got == sizeof(err)) {
		waitpid(pid, NULL, 0);
		fail(c, err, path, err == ENOENT ? 127 : 126);
	}
	report(&(struct report){.kind = REPORT_STARTED});

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
			// A lookup then meets a closed port. The listener stays: a
			// rename waits for pid 1's answer (and a closed listener
			// would fail every rename with ENOSYS), which the loop below
			// then gives between short waits for signals.
			if (c->dns >= 0) close(c->dns);
			c->dns = -1;
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
				report(&(struct report){.kind = REPORT_STOPPED, .signal = WSTOPSIG(status)});
				continue;
			}
			int code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
			struct report exit = {.kind = REPORT_EXIT, .status = code, .signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0, .max_rss_kb = ru.ru_maxrss};
			// Everything else in the sandbox ends before the supervisor
			// hears the result, so a caller that acts on the exit status
			// never races a leftover process. kill(-1) from pid 1 reaches
			// every process of the namespace; a fork in flight fails on
			// the pending SIGKILL. ECHILD comes only once the last
			// descendant (re-parented to pid 1 as its parents die) is gone.
			kill(-1, SIGKILL);
			while (wait4(-1, NULL, 0, NULL) > 0 || errno == EINTR)
				;
			report(&exit);
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
		} else if (c->notify >= 0) {
			struct pollfd pf = {.fd = c->notify, .events = POLLIN};
			if (poll(&pf, 1, 20) > 0) {
				if (pf.revents & POLLIN) answer_notify(c);
				else c->notify = -1;
			}
			siginfo_t si;
			struct timespec now = {0, 0};
			if ((sig = sigtimedwait(&set, &si, &now)) < 0) continue;
		} else {
			siginfo_t si;
			sig = sigwaitinfo(&set, &si);
		}
		if (sig == SIGCONT) {
			// Resumed: give the terminal back to the command's group and
			// wake the whole group, as a shell's fg does. SIGTTOU is
			// blocked here, so taking the terminal from the background
			// cannot stop pid 1.
			if (foreground == TERM_CALLER) tcsetpgrp(0, pid);
			kill(-pid, SIGCONT);
		} else if (sig > 0 && sig != SIGCHLD) {
			kill(pid, sig);
		}
	}
}

// write_file writes s to path in one write (the kernel requires it for
// the id maps).
int write_file(const char *path, const char *s) {
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) return -1;
	ssize_t n = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

// write_id_maps maps one uid and one gid into the new user namespace; the
// process writing them is in it, with every capability there.
void write_id_maps(struct child *c, uint32_t in_uid, uint32_t out_uid, uint32_t in_gid, uint32_t out_gid) {
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
void fork_pid1(struct child *c) {
	// When the whole machine runs out of memory, the kernel's OOM killer
	// takes the sandbox's processes first (pid 1 and the command inherit
	// it): with the rlimit fallback nothing bounds a tree's memory, and a
	// bomb must not cost the host the caller's editor or desktop. Raising
	// it needs no privilege, but an open of /proc/self, which pid 1 can
	// no longer make once it is not dumpable; one already higher is kept.
	raise_oom_score(SANDBOX_OOM_SCORE_ADJ);
	// pid 1 hands this process the writable trees to detach (op_lock).
	int out[2] = {-1, -1};
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out) < 0) out[0] = out[1] = -1;
	pid_t pid = fork();
	CHECK(c, pid, "fork pid 1");
	if (pid == 0) {
		// pid 1 dies with this process, which dies with the supervisor.
		// (getppid() is 0 here: the parent is outside the new pid
		// namespace. Had it died before this prctl, pid 1's next report
		// would meet a closed pipe and SIGPIPE would end it.)
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		if (out[0] >= 0) close(out[0]);
		c->outside = out[1];
		return;
	}
	if (out[1] >= 0) close(out[1]);
	report(&(struct report){.kind = REPORT_PID1, .pid = (int)pid});
	close(3);
	close(4);
	close(5);
	if (out[0] >= 0) {
		// Until pid 1 closes its end: at OP_LOCK, or as it exits.
		int fds[8], nfd, truncated;
		char byte;
		while (recv_fds(out[0], &byte, 1, fds, 8, &nfd, &truncated) > 0) {
			for (int i = 0; i < nfd; i++) {
				if (fchdir(fds[i]) == 0) umount2(".", MNT_DETACH);
				close(fds[i]);
			}
		}
		close(out[0]);
		(void)!chdir("/"); // holds no detached tree
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) _exit(125);
	_exit(WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status));
}

// The kernel's per-user quotas that a sandbox would otherwise share with
// the user's own programs on the host: inotify and fanotify are counted per
// user in each user namespace and in every one above it, so a sandbox that
// took all of its user's inotify instances (128 by default) would leave
// the user's editor and `tail -f` without any while it runs. The sandbox's
// user namespace gets half of what the one it is made in allows; likewise
// the rlimits counted per user (pending signals, POSIX message queues).
// Each sandbox has a share of its own: several at once can still use up
// the user's quota (docs/limits.md).
static const char *const user_quotas[] = {
	"/proc/sys/user/max_inotify_instances",
	"/proc/sys/user/max_inotify_watches",
	"/proc/sys/user/max_fanotify_groups",
	"/proc/sys/user/max_fanotify_marks",
};
_Static_assert(sizeof(user_quotas) / sizeof(user_quotas[0]) == NQUOTAS, "struct user_quotas");

static long read_long(const char *path) {
	char b[32];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) return -1;
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0) return -1;
	b[n] = 0;
	return strtol(b, NULL, 10);
}

// halve_rlimits lowers the per-user rlimits to half, soft and hard, so the
// command cannot raise them back.
static void halve_rlimits(void) {
	static const int res[] = {RLIMIT_SIGPENDING, RLIMIT_MSGQUEUE};
	for (size_t i = 0; i < sizeof(res) / sizeof(res[0]); i++) {
		struct rlimit rl;
		if (getrlimit(res[i], &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur < 2) continue;
		rl.rlim_cur /= 2;
		rl.rlim_max = rl.rlim_cur;
		setrlimit(res[i], &rl);
	}
}

// read_user_quotas reads the quotas of the user namespace jail runs in and
// halves the per-user rlimits; call it before the unshare.
void read_user_quotas(struct user_quotas *q) {
	for (size_t i = 0; i < NQUOTAS; i++) q->v[i] = read_long(user_quotas[i]);
	halve_rlimits();
}

// write_user_quotas gives the new user namespace half of each quota: its
// own table now (the files show the namespace of whoever opens them),
// which this process may write with its capabilities there and the
// command, without them, cannot raise. It returns 0 or an errno.
int write_user_quotas(const struct user_quotas *q) {
	for (size_t i = 0; i < NQUOTAS; i++) {
		if (q->v[i] < 2) continue;
		char v[32];
		snprintf(v, sizeof(v), "%ld\n", q->v[i] / 2);
		if (write_file(user_quotas[i], v) < 0) return errno;
	}
	return 0;
}

// op_unshare creates the namespaces and maps the caller's own ids into the
// new user namespace, then forks: the child is pid 1 of the new pid
// namespace and goes on with the plan; this process stays outside it,
// tells the supervisor pid 1's host pid, and exits with pid 1's status.
// Creating the namespaces here rather than at clone lets the supervisor
// start us with vfork (Go copies its whole address space for a clone with
// CLONE_NEWUSER), and an unprivileged process may write its own maps.
void op_unshare(struct child *c) {
	uint64_t flags = get_u64(c);
	uint32_t in_uid = get_u32(c), out_uid = get_u32(c), in_gid = get_u32(c), out_gid = get_u32(c);
	c->layer = "userns";
	c->stage = "create namespaces";
	struct user_quotas q;
	read_user_quotas(&q);
	CHECK(c, unshare((int)flags), "unshare");
	write_id_maps(c, in_uid, out_uid, in_gid, out_gid);
	int err = write_user_quotas(&q);
	if (err) fail(c, err, "bound the user's inotify and fanotify quotas", 125);
	fork_pid1(c);
}
