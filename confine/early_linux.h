// The early child of `jail run` and the zygote of `jail serve` and
// `jail mcp` (early_linux.c, zygote_linux.c, early_linux.go), and the C
// twins of Go functions (twins_linux.c).

#ifndef JAIL_EARLY_LINUX_H
#define JAIL_EARLY_LINUX_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

// The namespaces of an early child: every sandbox's (cloneFlags in
// cmd_linux.go) and a network namespace. A test ties the two.
#define JAIL_EARLY_FLAGS (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_NEWNET)

// jail_early is the child forked before the Go runtime started: its pid
// and the supervisor's ends of the plan pipe, the status pipe and the
// socket pair, all close-on-exec.
struct jail_early {
	int pid, plan, status, sock;
};

// jail_take_early hands the early child over once; it returns 0 when there
// is none (not `jail run`, or the fork failed).
int jail_take_early(struct jail_early *out);

// jail_zygote_fork has the zygote of jail serve and jail mcp fork a
// sandbox's init with fds as its descriptors 0-5 (an exec'd init's), as a
// child of this process. It returns the init's pid, or a negative errno
// (-ENOSYS: no zygote in this process).
int jail_zygote_fork(const int fds[6]);

// jail_write_all writes all n bytes of p to fd, retrying on EINTR and
// short writes; -1 when the descriptor takes no more.
int jail_write_all(int fd, const void *p, size_t n);

// jail_send_fds sends one byte with n (1 to 8) descriptors on the socket
// sock; -1 when it was not sent.
int jail_send_fds(int sock, const int *fds, int n);

// JAIL_HINT_PTRACE is the notice the sandbox's init reports the first time
// it refuses a ptrace ({"stage":"notice","text":...}), which both
// supervisors (Go's Cmd.Notice and the plan cache's) print: printable
// ASCII without quotes or backslashes.
#define JAIL_HINT_PTRACE "jail: ptrace refused: this sandbox does not let its processes trace each other (strace, gdb, ASan/LSan builds); allow it for the command's own processes with --allow-ptrace or [seccomp] allow_ptrace = true (docs/commands.md)"

// jail_dns_reply is the answer of a sandbox's name server without network
// (Spec.OffDNS) to the query q of n bytes: written to r, its length
// returned (0: no answer). name receives the name to report, or "".
size_t jail_dns_reply(const uint8_t *q, size_t n, uint8_t r[512], char name[256]);

// jail_signal_name is the name the Go path gives a signal in the JSON
// result (unix.SignalName), "" for one it does not name.
const char *jail_signal_name(int sig);

// The twins of Go functions (twins_linux.c).

// jail_dir_hash is DirsHash in fast_linux.go: the hash of the names of
// the directory fd's subdirectories and .git and HEAD entries (not its own .git
// with skip_git); 0 when it cannot be read.
uint64_t jail_dir_hash(int fd, int skip_git);

// jail_hmac_sha256 is crypto/hmac with SHA-256 and a 32-byte key: the
// plan cache entry's authentication (CachePlan in fast_linux.go).
void jail_hmac_sha256(const uint8_t key[32], const uint8_t *msg, size_t n, uint8_t out[32]);

// jail_sha_portable, when set, keeps SHA-256 off the CPU's SHA extensions
// (a test compares both ways with crypto/hmac).
extern int jail_sha_portable;

// jail_cache_name is planCacheName in fast_linux.go: the entry's file
// name for this user, directory and arguments.
void jail_cache_name(char out[32], unsigned uid, const char *cwd, char **args, int nargs);

// jail_build_env is BuildEnv in env.go, over the process's own envp: a
// calloc'd array of *count entries (some of them malloc'd), or NULL.
char **jail_build_env(char **envp, char **pass, uint32_t npass, char **extra, uint32_t nextra, uint32_t *count);

// jail_json_string writes s as a JSON string at w, never at or past end,
// and returns where it stopped: encoding/json's encoding of a Go string
// (json.Marshal: a byte that is not valid UTF-8 as \ufffd; <, >, &,
// U+2028 and U+2029 escaped; \b \f \n \r \t by name), with line set
// also policy.MarshalLine's ($, `, DEL and the C1 controls as \u00XX). What
// does not fit is cut before a whole character or escape; the closing
// quote is always written when 2 bytes are left.
char *jail_json_string(char *w, char *end, const char *s, int line);

// jail_result is what the plan cache's run knows of a run for its --json
// result: the fields of launch's jsonResult it can have, in that order.
struct jail_result {
	int exit_code;
	const char *signal; // "" or NULL: none
	int timed_out;
	long long duration_ms;
	long max_rss_kb;
	const char *limits, *limits_note; // the method's name; why no cgroup ("" none)
	int oom_killed, pids_limited, pids_ended, memory_ended;
	const char *policy_sha256;
	const char *error, *stage; // a run that ended before its command did, and where; "" or NULL: none
};

// jail_result_json is launch's writeJSON for r (policy.MarshalLine of
// jsonResult, and a newline) into buf, NUL-terminated; it returns the
// line's length, or -1 when the line and its NUL do not fit in cap bytes.
int jail_result_json(char *buf, size_t cap, const struct jail_result *r);

// jail_fast_run runs `jail run` from its plan cache entry without the Go
// runtime (fast_linux.c). It returns only when the Go supervisor must run.
void jail_fast_run(int argc, char **argv, char **envp);

#endif
