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
//	census_linux.c  a sandbox's tasks and memory, counted from outside
//	                (census_linux.h: the plan cache's run and, through cgo, Go)

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
#include "jail_linux.h"

#define J_SECBITS 0xEF /* NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED, NO_CAP_AMBIENT_RAISE, and their locks */

struct j_open_how { uint64_t flags, mode, resolve; };
struct j_mount_attr { uint64_t attr_set, attr_clr, propagation, userns_fd; };
struct j_ruleset_attr { uint64_t handled_fs, handled_net, scoped; };
struct j_path_beneath { uint64_t allowed; int32_t parent_fd; } __attribute__((packed));
struct j_net_port { uint64_t allowed, port; };


#define MAX_SOURCES 256
#define NEWROOT "/tmp"
#define EMPTY_FILE ".jail-empty"

// The child's whole state; it is one process that runs one plan.
// MAX_WRITABLE bounds the writable binds pid 1 hands to the process
// outside (op_lock); past it the rest stay mounted there until it exits,
// which only makes the removals at the end slower.
#define MAX_WRITABLE 16

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
	int kept_hinted;   // the notice of a held empty directory's removal was reported (kept_dir)
	uint32_t busy[32]; // hashes of the paths a held-name notice named (busy_hint)
	int nbusy;
	uint64_t mounted[16]; // a bit per hash of each mountpoint's last name; all set: unknown
	int mounted_read;     // mounted is filled
	int mem_fd;           // /proc/PID/mem of mem_pid, the last caller busy_hint read, or -1
	uint32_t mem_pid;
	struct seccomp_notif_sizes sizes;
	// The socket to the process outside the pid namespace (fork_pid1), or
	// -1, and the roots of the writable binds pid 1 made, which OP_LOCK
	// hands it to detach (MAX_WRITABLE, -1 past nwritable).
	int outside;
	int writable[MAX_WRITABLE];
	int nwritable;
};

// The per-user kernel quotas a sandbox gets half of (pid1_linux.c).
#define NQUOTAS 4
struct user_quotas {
	long v[NQUOTAS];
};
void read_user_quotas(struct user_quotas *q);
int write_user_quotas(const struct user_quotas *q);

#define CHECK(c, expr, msg) do { if ((expr) < 0) fail((c), errno, (msg), 125); } while (0)


// ---- plan_linux.c ---------------------------------------------------------

// A report of the init to its supervisor (JAIL_STAGE_*), written by
// report: the kind says which of the fields it carries.
enum report_kind { REPORT_PID1, REPORT_HELD, REPORT_STARTED, REPORT_NOTICE, REPORT_STOPPED, REPORT_EXIT, REPORT_ERROR };
struct report {
	enum report_kind kind;
	int pid;                      // REPORT_PID1: pid 1's host pid
	const char *text;             // REPORT_NOTICE: printable, for a person
	int status, signal;           // REPORT_EXIT (status, signal); REPORT_STOPPED (signal)
	long max_rss_kb;              // REPORT_EXIT
	const char *layer, *stage;    // REPORT_ERROR: where it failed
	int err;                      // REPORT_ERROR: errno
	const char *msg;              // REPORT_ERROR: what failed (may be NULL)
};
// report writes r as one JSON line on JAIL_FD_REPORT.
void report(const struct report *r);
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
