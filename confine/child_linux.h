// What the C files of the sandbox's init share among themselves (not with
// Go: early_linux.h is that interface): the child's state, the kernel
// constants it uses, and the functions one role's file calls in another's.
//
//	child_linux.c   which program this process is (the constructor)
//	plan_linux.c    the plan interpreter: decoding, reporting, each operation
//	pid1_linux.c    pid 1: the namespaces, exec, signals, reaping, DNS, ptrace
//	early_linux.c   the early child of `jail run`, forked before Go starts
//	zygote_linux.c  the zygote of `jail serve` and `jail mcp`
//	fast_linux.c    the plan cache's run (its own state; only early_linux.h)
//	gitguard_linux.c the guardian of a run's git state (gitguard_linux.h)

#ifndef JAIL_CHILD_LINUX_H
#define JAIL_CHILD_LINUX_H

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
	OP_MORE = 29,
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

#define CHECK(c, expr, msg) do { if ((expr) < 0) fail((c), errno, (msg), 125); } while (0)

#define PLAN_HEADER_SIZE (8 + 4 + 8 + 4 * 4) // planHeaderSize in plan_linux.go

// ---- plan_linux.c ---------------------------------------------------------

// report_line writes one JSON line to the supervisor on fd 4.
void report_line(const char *line, size_t n);
// fail reports the stage that failed and ends the process (pid 1, and with
// it the namespace). code 127/126 mark a command that could not be executed.
void __attribute__((noreturn)) fail(struct child *c, int err, const char *msg, int code);
uint32_t get_u32(struct child *c);
uint64_t get_u64(struct child *c);
const char *get_str(struct child *c);
// read_full reads exactly n bytes of the plan from fd 3.
void read_full(struct child *c, uint8_t *b, size_t n);
// read_header reads the plan's fixed-size header and leaves the cursor
// after the OP_UNSHARE opcode.
void read_header(struct child *c, uint8_t header[PLAN_HEADER_SIZE]);
void init_child(struct child *c);
// run_body reads the rest of the plan to EOF and carries it out.
void __attribute__((noreturn)) run_body(struct child *c);
int close_from(unsigned low, int cloexec);
ssize_t recv_fds(int sock, void *buf, size_t len, int *fds, int max, int *nfd, int *truncated);
void op_lock(struct child *c);

// ---- pid1_linux.c ---------------------------------------------------------

int write_file(const char *path, const char *s);
void write_id_maps(struct child *c, uint32_t in_uid, uint32_t out_uid, uint32_t in_gid, uint32_t out_gid);
// fork_pid1 returns in pid 1 only.
void fork_pid1(struct child *c);
void op_unshare(struct child *c);
void __attribute__((noreturn)) op_exec(struct child *c);

// ---- early_linux.c --------------------------------------------------------

void reset_signals(void);
void forget_caller(int argc, char **argv, char **envp);
int lift_fd(int fd);
void early_start(int argc, char **argv, char **envp);

// ---- zygote_linux.c, child_linux.c ----------------------------------------

void zygote_start(int argc, char **argv, char **envp);
void __attribute__((noreturn)) child_main(void);

#endif
