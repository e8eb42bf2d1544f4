//go:build linux && cgo

package confine

import (
	"fmt"
	"os"
	"regexp"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSharedHeader ties every value jail_linux.h shares with Go to its Go
// twin, by name, as cgo reads the C side (sharedHeader): a name on one
// side only, or two values that differ, fails.
func TestSharedHeader(t *testing.T) {
	signals := func(s []os.Signal) string {
		var n []int
		for _, sig := range s {
			n = append(n, int(sig.(syscall.Signal)))
		}
		return fmt.Sprint(n)
	}
	twins := map[string]any{
		"JAIL_PLAN_MAGIC": planMagic, "PLAN_HEADER_SIZE": planHeaderSize,
		"OP_END": opEnd, "OP_DUMPABLE": opDumpable, "OP_HOSTNAME": opHostname, "OP_LOOPBACK": opLoopback,
		"OP_SOCKETS": opSockets, "OP_PRIVATE": opPrivate, "OP_SOURCE": opSource, "OP_NEWROOT": opNewRoot, "OP_BIND": opBind,
		"OP_TMPFS": opTmpfs, "OP_HIDE": opHide, "OP_PROTECT": opProtect, "OP_SYMLINK": opSymlink, "OP_PROC": opProc,
		"OP_DEV": opDev, "OP_PIVOT": opPivot, "OP_NNP": opNNP, "OP_LANDLOCK": opLandlock, "OP_CLOEXEC": opCloexec,
		"OP_CAPS": opCaps, "OP_SECCOMP": opSeccomp, "OP_EXEC": opExec, "OP_UNSHARE": opUnshare, "OP_LOCK": opLock, "OP_HOLD": opHold, "OP_PIN": opPin, "OP_DNS": opDNS, "OP_OVERLAY": opOverlay, "OP_FILE": opFile, "OP_MORE": opMore,
		"JAIL_FD_PLAN": fdPlan, "JAIL_FD_REPORT": fdReport, "JAIL_FD_SOCKETS": fdSockets,
		"JAIL_STAGE_PID1": stagePID1, "JAIL_STAGE_HELD": stageHeld, "JAIL_STAGE_STARTED": stageStarted, "JAIL_STAGE_NOTICE": stageNotice,
		"JAIL_STAGE_STOPPED": stageStopped, "JAIL_STAGE_EXIT": stageExit, "JAIL_STAGE_ERROR": stageError,
		"CHILD_ARG0": childArg0, "JAIL_GUARD_COMMAND": GuardCommand, "JAIL_ADOPT_COMMAND": AdoptCommand,
		"CACHE_MAGIC": cacheMagic, "MAX_ENTRY": maxCacheEntry, "CACHE_KEY_NAME": cacheKeyName,
		"FACT_REALPATH": factRealpath, "FACT_TYPE": factType, "FACT_LINK": factLink, "FACT_FILE": factFile, "FACT_DIR": factDir,
		"FACT_DIRS": factDirs, "FACT_GLOB": factGlob, "FACT_TREE": factTree, "FACT_STAT": factStat, "MAX_TREE": maxUnreadableWalk + 1,
		"LIMIT_NONE": limitCode(LimitNone), "LIMIT_CGROUP2": limitCode(LimitCgroup2), "LIMIT_CGROUP1": limitCode(LimitCgroup1), "LIMIT_RLIMIT": limitCode(LimitRLimit),
		"WATCH_INTERVAL_MS": watchInterval.Milliseconds(), "PIDS_BOMB_TICKS": pidsBombTicks, "MEM_WATCH_INTERVAL_MS": memWatchInterval.Milliseconds(),
		"JAIL_FORWARDED_SIGNALS": signals(ForwardedSignals()),
		"NR_open_tree":           unix.SYS_OPEN_TREE, "NR_move_mount": unix.SYS_MOVE_MOUNT, "NR_fsopen": unix.SYS_FSOPEN, "NR_fsconfig": unix.SYS_FSCONFIG,
		"NR_fsmount": unix.SYS_FSMOUNT, "NR_openat2": unix.SYS_OPENAT2, "NR_mount_setattr": unix.SYS_MOUNT_SETATTR,
		"NR_landlock_create_ruleset": unix.SYS_LANDLOCK_CREATE_RULESET, "NR_landlock_add_rule": unix.SYS_LANDLOCK_ADD_RULE, "NR_landlock_restrict_self": unix.SYS_LANDLOCK_RESTRICT_SELF,
		"J_OPEN_TREE_CLONE": unix.OPEN_TREE_CLONE, "J_OPEN_TREE_CLOEXEC": unix.OPEN_TREE_CLOEXEC, "J_AT_RECURSIVE": unix.AT_RECURSIVE,
		"J_MOVE_MOUNT_F_EMPTY_PATH": unix.MOVE_MOUNT_F_EMPTY_PATH, "J_MOVE_MOUNT_T_EMPTY_PATH": unix.MOVE_MOUNT_T_EMPTY_PATH, "J_MOUNT_ATTR_RDONLY": unix.MOUNT_ATTR_RDONLY,
		"J_FSOPEN_CLOEXEC": unix.FSOPEN_CLOEXEC, "J_FSMOUNT_CLOEXEC": unix.FSMOUNT_CLOEXEC, "J_FSCONFIG_SET_FLAG": unix.FSCONFIG_SET_FLAG,
		"J_FSCONFIG_SET_STRING": unix.FSCONFIG_SET_STRING, "J_FSCONFIG_SET_FD": unix.FSCONFIG_SET_FD, "J_FSCONFIG_CMD_CREATE": unix.FSCONFIG_CMD_CREATE,
		"J_RESOLVE_NO_MAGICLINKS": unix.RESOLVE_NO_MAGICLINKS, "J_RESOLVE_NO_SYMLINKS": unix.RESOLVE_NO_SYMLINKS, "J_RESOLVE_BENEATH": unix.RESOLVE_BENEATH,
		"J_LANDLOCK_RULE_PATH_BENEATH": unix.LANDLOCK_RULE_PATH_BENEATH, "J_LANDLOCK_RULE_NET_PORT": 2, // LANDLOCK_RULE_NET_PORT of linux/landlock.h (6.7), not in x/sys v0.50
	}
	c := sharedHeader()
	for name, cv := range c {
		gv, ok := twins[name]
		switch {
		case !ok:
			t.Errorf("%s (%s) is shared by the C side but has no Go twin in this table", name, cv)
		case fmt.Sprint(gv) != cv:
			t.Errorf("%s is %s in C and %v in Go", name, cv, gv)
		}
	}
	for name := range twins {
		if _, ok := c[name]; !ok {
			t.Errorf("%s has a Go twin but sharedHeader does not read it from C", name)
		}
	}
	// Every name the header defines is read: one added there alone fails.
	src, err := os.ReadFile("jail_linux.h")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^#define ([A-Za-z_0-9]+)|^\t(OP_[A-Z]+) =`).FindAllSubmatch(src, -1) {
		name := string(m[1]) + string(m[2])
		if _, ok := c[name]; !ok && name != "JAIL_LINUX_H" {
			t.Errorf("jail_linux.h defines %s, which sharedHeader does not read", name)
		}
	}
}
