//go:build linux && cgo

package confine

// The values of jail_linux.h as C sees them, for TestSharedHeader.

/*
#include <fcntl.h>
#include <signal.h>
#include "jail_linux.h"
#include "gitguard_linux.h"

static const int jail_forwarded[] = {JAIL_FORWARDED_SIGNALS};
static int jail_forwarded_n(void) { return sizeof(jail_forwarded) / sizeof(jail_forwarded[0]); }
static int jail_forwarded_at(int i) { return jail_forwarded[i]; }
*/
import "C"

import "fmt"

// sharedHeader maps each name jail_linux.h defines (and the hidden
// commands of gitguard_linux.h) to its value, printed as Go prints it.
func sharedHeader() map[string]string {
	return map[string]string{
		"JAIL_PLAN_MAGIC":              C.JAIL_PLAN_MAGIC,
		"PLAN_HEADER_SIZE":             fmt.Sprint(C.PLAN_HEADER_SIZE),
		"OP_END":                       fmt.Sprint(C.OP_END),
		"OP_DUMPABLE":                  fmt.Sprint(C.OP_DUMPABLE),
		"OP_HOSTNAME":                  fmt.Sprint(C.OP_HOSTNAME),
		"OP_LOOPBACK":                  fmt.Sprint(C.OP_LOOPBACK),
		"OP_SOCKETS":                   fmt.Sprint(C.OP_SOCKETS),
		"OP_PRIVATE":                   fmt.Sprint(C.OP_PRIVATE),
		"OP_SOURCE":                    fmt.Sprint(C.OP_SOURCE),
		"OP_NEWROOT":                   fmt.Sprint(C.OP_NEWROOT),
		"OP_BIND":                      fmt.Sprint(C.OP_BIND),
		"OP_TMPFS":                     fmt.Sprint(C.OP_TMPFS),
		"OP_HIDE":                      fmt.Sprint(C.OP_HIDE),
		"OP_PROTECT":                   fmt.Sprint(C.OP_PROTECT),
		"OP_SYMLINK":                   fmt.Sprint(C.OP_SYMLINK),
		"OP_PROC":                      fmt.Sprint(C.OP_PROC),
		"OP_DEV":                       fmt.Sprint(C.OP_DEV),
		"OP_PIVOT":                     fmt.Sprint(C.OP_PIVOT),
		"OP_NNP":                       fmt.Sprint(C.OP_NNP),
		"OP_LANDLOCK":                  fmt.Sprint(C.OP_LANDLOCK),
		"OP_CLOEXEC":                   fmt.Sprint(C.OP_CLOEXEC),
		"OP_CAPS":                      fmt.Sprint(C.OP_CAPS),
		"OP_SECCOMP":                   fmt.Sprint(C.OP_SECCOMP),
		"OP_EXEC":                      fmt.Sprint(C.OP_EXEC),
		"OP_UNSHARE":                   fmt.Sprint(C.OP_UNSHARE),
		"OP_LOCK":                      fmt.Sprint(C.OP_LOCK),
		"OP_HOLD":                      fmt.Sprint(C.OP_HOLD),
		"OP_PIN":                       fmt.Sprint(C.OP_PIN),
		"OP_DNS":                       fmt.Sprint(C.OP_DNS),
		"OP_OVERLAY":                   fmt.Sprint(C.OP_OVERLAY),
		"OP_FILE":                      fmt.Sprint(C.OP_FILE),
		"OP_MORE":                      fmt.Sprint(C.OP_MORE),
		"JAIL_FD_PLAN":                 fmt.Sprint(C.JAIL_FD_PLAN),
		"JAIL_FD_REPORT":               fmt.Sprint(C.JAIL_FD_REPORT),
		"JAIL_FD_SOCKETS":              fmt.Sprint(C.JAIL_FD_SOCKETS),
		"JAIL_STAGE_PID1":              C.JAIL_STAGE_PID1,
		"JAIL_STAGE_HELD":              C.JAIL_STAGE_HELD,
		"JAIL_STAGE_STARTED":           C.JAIL_STAGE_STARTED,
		"JAIL_STAGE_NOTICE":            C.JAIL_STAGE_NOTICE,
		"JAIL_STAGE_STOPPED":           C.JAIL_STAGE_STOPPED,
		"JAIL_STAGE_EXIT":              C.JAIL_STAGE_EXIT,
		"JAIL_STAGE_ERROR":             C.JAIL_STAGE_ERROR,
		"CHILD_ARG0":                   C.CHILD_ARG0,
		"CACHE_MAGIC":                  C.CACHE_MAGIC,
		"MAX_ENTRY":                    fmt.Sprint(C.MAX_ENTRY),
		"CACHE_KEY_NAME":               C.CACHE_KEY_NAME,
		"FACT_REALPATH":                fmt.Sprint(C.FACT_REALPATH),
		"FACT_TYPE":                    fmt.Sprint(C.FACT_TYPE),
		"FACT_LINK":                    fmt.Sprint(C.FACT_LINK),
		"FACT_FILE":                    fmt.Sprint(C.FACT_FILE),
		"FACT_DIR":                     fmt.Sprint(C.FACT_DIR),
		"FACT_DIRS":                    fmt.Sprint(C.FACT_DIRS),
		"FACT_GLOB":                    fmt.Sprint(C.FACT_GLOB),
		"FACT_TREE":                    fmt.Sprint(C.FACT_TREE),
		"FACT_STAT":                    fmt.Sprint(C.FACT_STAT),
		"MAX_TREE":                     fmt.Sprint(C.MAX_TREE),
		"LIMIT_NONE":                   fmt.Sprint(C.LIMIT_NONE),
		"LIMIT_CGROUP2":                fmt.Sprint(C.LIMIT_CGROUP2),
		"LIMIT_CGROUP1":                fmt.Sprint(C.LIMIT_CGROUP1),
		"LIMIT_RLIMIT":                 fmt.Sprint(C.LIMIT_RLIMIT),
		"WATCH_INTERVAL_MS":            fmt.Sprint(C.WATCH_INTERVAL_MS),
		"PIDS_BOMB_TICKS":              fmt.Sprint(C.PIDS_BOMB_TICKS),
		"MEM_WATCH_INTERVAL_MS":        fmt.Sprint(C.MEM_WATCH_INTERVAL_MS),
		"JAIL_FORWARDED_SIGNALS":       fmt.Sprint(forwardedSignals()),
		"NR_open_tree":                 fmt.Sprint(C.NR_open_tree),
		"NR_move_mount":                fmt.Sprint(C.NR_move_mount),
		"NR_fsopen":                    fmt.Sprint(C.NR_fsopen),
		"NR_fsconfig":                  fmt.Sprint(C.NR_fsconfig),
		"NR_fsmount":                   fmt.Sprint(C.NR_fsmount),
		"NR_openat2":                   fmt.Sprint(C.NR_openat2),
		"NR_mount_setattr":             fmt.Sprint(C.NR_mount_setattr),
		"NR_landlock_create_ruleset":   fmt.Sprint(C.NR_landlock_create_ruleset),
		"NR_landlock_add_rule":         fmt.Sprint(C.NR_landlock_add_rule),
		"NR_landlock_restrict_self":    fmt.Sprint(C.NR_landlock_restrict_self),
		"J_OPEN_TREE_CLONE":            fmt.Sprint(C.J_OPEN_TREE_CLONE),
		"J_OPEN_TREE_CLOEXEC":          fmt.Sprint(C.J_OPEN_TREE_CLOEXEC),
		"J_AT_RECURSIVE":               fmt.Sprint(C.J_AT_RECURSIVE),
		"J_MOVE_MOUNT_F_EMPTY_PATH":    fmt.Sprint(C.J_MOVE_MOUNT_F_EMPTY_PATH),
		"J_MOVE_MOUNT_T_EMPTY_PATH":    fmt.Sprint(C.J_MOVE_MOUNT_T_EMPTY_PATH),
		"J_MOUNT_ATTR_RDONLY":          fmt.Sprint(C.J_MOUNT_ATTR_RDONLY),
		"J_FSOPEN_CLOEXEC":             fmt.Sprint(C.J_FSOPEN_CLOEXEC),
		"J_FSMOUNT_CLOEXEC":            fmt.Sprint(C.J_FSMOUNT_CLOEXEC),
		"J_FSCONFIG_SET_FLAG":          fmt.Sprint(C.J_FSCONFIG_SET_FLAG),
		"J_FSCONFIG_SET_STRING":        fmt.Sprint(C.J_FSCONFIG_SET_STRING),
		"J_FSCONFIG_SET_FD":            fmt.Sprint(C.J_FSCONFIG_SET_FD),
		"J_FSCONFIG_CMD_CREATE":        fmt.Sprint(C.J_FSCONFIG_CMD_CREATE),
		"J_RESOLVE_NO_MAGICLINKS":      fmt.Sprint(C.J_RESOLVE_NO_MAGICLINKS),
		"J_RESOLVE_NO_SYMLINKS":        fmt.Sprint(C.J_RESOLVE_NO_SYMLINKS),
		"J_RESOLVE_BENEATH":            fmt.Sprint(C.J_RESOLVE_BENEATH),
		"J_LANDLOCK_RULE_PATH_BENEATH": fmt.Sprint(C.J_LANDLOCK_RULE_PATH_BENEATH),
		"J_LANDLOCK_RULE_NET_PORT":     fmt.Sprint(C.J_LANDLOCK_RULE_NET_PORT),
		"JAIL_GUARD_COMMAND":           C.JAIL_GUARD_COMMAND,
		"JAIL_ADOPT_COMMAND":           C.JAIL_ADOPT_COMMAND,
	}
}

// forwardedSignals is JAIL_FORWARDED_SIGNALS.
func forwardedSignals() []int {
	var sigs []int
	for i := range int(C.jail_forwarded_n()) {
		sigs = append(sigs, int(C.jail_forwarded_at(C.int(i))))
	}
	return sigs
}
