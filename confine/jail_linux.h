// Every value the C side of package confine shares with its Go side, in
// one place: the plan's format and operations, the init's descriptors and
// report stages, the programs chosen by argv, the plan cache's format, fact
// kinds and limit methods, the signals a supervisor forwards, and the
// kernel's numbers the C code uses without libc's headers. TestSharedHeader
// (header_test.go) reads each through cgo (header_linux.go) and compares it
// with its Go twin, named beside it here; a value both sides need is added
// here and to that test's table, never to one side with a comment.

#ifndef JAIL_LINUX_H
#define JAIL_LINUX_H

// ---- the plan (plan_linux.go writes it, plan_linux.c carries it out) ------

#define JAIL_PLAN_MAGIC "JAILPLN1"           // planMagic
#define PLAN_HEADER_SIZE (8 + 4 + 8 + 4 * 4) // planHeaderSize

// The plan's operations (op* in plan_linux.go), in the order the
// supervisor writes them.
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
	OP_MORE = 29, // u32 ms the supervisor may take to send the rest (fast_linux.c)
};

// ---- a sandbox's init -------------------------------------------------------

// Its descriptors beside stdio (the Files of cmd_linux.go's start): the
// plan, read to EOF; the reports; the sockets both ways.
#define JAIL_FD_PLAN 3    // fdPlan
#define JAIL_FD_REPORT 4  // fdReport
#define JAIL_FD_SOCKETS 5 // fdSockets

// The stage of each report line on JAIL_FD_REPORT, {"stage":...} (stage*
// in init_linux.go; plan_linux.c: report).
#define JAIL_STAGE_PID1 "pid1"       // stagePID1: outside the pid namespace, with pid 1's host pid
#define JAIL_STAGE_HELD "held"       // stageHeld: confined, waiting for its command (OP_HOLD)
#define JAIL_STAGE_STARTED "started" // stageStarted: the command was executed
#define JAIL_STAGE_NOTICE "notice"   // stageNotice: a line for the person (a refused ptrace, a lookup without network)
#define JAIL_STAGE_STOPPED "stopped" // stageStopped: the command stopped (^Z)
#define JAIL_STAGE_EXIT "exit"       // stageExit: the command's status; nothing of the sandbox is left
#define JAIL_STAGE_ERROR "error"     // stageError: a failure, with its layer, stage, errno and message

// ---- programs chosen by argv (ARCHITECTURE.md) ---------------------------

#define CHILD_ARG0 "jail-init" // childArg0: a sandbox's init, exec'd

// ---- the plan cache (fast_linux.go writes entries, fast_linux.c replays) ---

#define CACHE_MAGIC "JAILFST4"           // cacheMagic
#define MAX_ENTRY (1 << 20)              // maxCacheEntry
#define CACHE_KEY_NAME "jail:plan-cache" // cacheKeyName

// Fact kinds (fact* in fast_linux.go, which says what each checks).
#define FACT_REALPATH 1
#define FACT_TYPE 2
#define FACT_LINK 3
#define FACT_FILE 4
#define FACT_DIR 5
#define FACT_DIRS 6
#define FACT_GLOB 7
#define FACT_TREE 8
#define FACT_STAT 9
#define MAX_TREE 100001 // maxUnreadableWalk (rootonly_linux.go), and the root

// Limit methods (limitCode of a LimitMethod).
#define LIMIT_NONE 0
#define LIMIT_CGROUP2 1
#define LIMIT_CGROUP1 2
#define LIMIT_RLIMIT 3

// The process-limit and memory watch (watch_linux.go).
#define WATCH_INTERVAL_MS 1000 // watchInterval
#define PIDS_BOMB_TICKS 10 // pidsBombTicks
#define MEM_WATCH_INTERVAL_MS 250 // memWatchInterval

// ---- signals ----------------------------------------------------------------

// The signals a supervisor forwards to its sandbox (ForwardedSignals);
// pid 1 forwards them to the command, with SIGCONT.
#define JAIL_FORWARDED_SIGNALS SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGUSR1, SIGUSR2

// ---- the kernel's numbers (golang.org/x/sys/unix) -------------------------

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

#endif
