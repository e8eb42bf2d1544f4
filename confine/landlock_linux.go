//go:build linux

package confine

import (
	"fmt"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// landlockRule grants Access beneath Path (a path of the new root).
type landlockRule struct {
	Path   string
	Access uint64
}

// Access rights grouped the way the mount view uses them.
const (
	llRead  = ll.AccessFSReadFile | ll.AccessFSReadDir
	llWrite = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile |
		ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo |
		ll.AccessFSMakeSym | ll.AccessFSRefer | ll.AccessFSTruncate | ll.AccessFSResolveUnix
)

// landlockFSRights is what each ABI version can handle. Handling every
// right the kernel knows means anything not granted by a rule is denied.
func landlockFSRights(abi int) uint64 {
	switch {
	case abi <= 0:
		return 0
	case abi == 1:
		return (1 << 13) - 1
	case abi == 2:
		return (1 << 14) - 1
	case abi <= 4:
		return (1 << 15) - 1
	case abi <= 8:
		return (1 << 16) - 1
	default:
		return (1 << 17) - 1
	}
}

// landlockRules mirrors the mount view: what is mounted read-only may be
// read (and executed where marked), what is writable may be changed. A
// path of the sandbox that no rule covers (the tmpfs root itself) gets
// nothing, so Landlock still holds if a mount were ever wrong.
func landlockRules(s *Spec) []landlockRule {
	// Listing directories of the view is harmless (everything in it is
	// meant to be seen) and programs walk up to / (getcwd, find).
	rules := []landlockRule{{Path: "/", Access: ll.AccessFSReadDir}}
	for _, m := range s.Mounts {
		var a uint64
		switch m.Kind {
		case Bind, Tmpfs:
			a = llRead
			if m.Writable {
				a |= llWrite
			}
			if m.Exec {
				a |= ll.AccessFSExecute
			}
		case Proc:
			// Writes to /proc/self (oom_score_adj, comm) are ordinary;
			// the host-wide files are covered read-only by the mounts.
			a = llRead | ll.AccessFSWriteFile
		case Dev:
			rules = append(rules,
				landlockRule{Path: m.Dest, Access: llRead | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev},
				landlockRule{Path: m.Dest + "/shm", Access: llRead | llWrite})
			continue
		default:
			continue
		}
		rules = append(rules, landlockRule{Path: m.Dest, Access: a})
	}
	return rules
}

// landlockABI is the kernel's Landlock ABI version, 0 when unavailable.
func landlockABI() (int, error) {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0, err
	}
	return v, nil
}

// applyLandlock restricts the calling thread (and what it forks) to rules.
// The caller holds the OS thread locked and has set no_new_privs.
func applyLandlock(s *Spec, abi int) error {
	handled := landlockFSRights(abi)
	attr := ll.RulesetAttr{HandledAccessFS: handled}
	if abi >= 4 && s.ConnectPorts != nil {
		attr.HandledAccessNet = ll.AccessNetConnectTCP
	}
	if abi >= 6 {
		// Abstract unix sockets have no path, so mounts cannot hide the
		// host's (an X server's @/tmp/.X11-unix, dbus); scoping stops them,
		// and stops signals to processes outside the sandbox's domain.
		attr.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	fd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return fmt.Errorf("landlock: create ruleset: %w", err)
	}
	defer unix.Close(fd)
	for _, r := range landlockRules(s) {
		pfd, err := unix.Open(r.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("landlock: open %s: %w", r.Path, err)
		}
		access := r.Access & handled
		// A rule on a file (not a directory) may only carry file rights.
		var st unix.Stat_t
		if unix.Fstat(pfd, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			access &= ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
		}
		err = ll.LandlockAddPathBeneathRule(fd, &ll.PathBeneathAttr{AllowedAccess: access, ParentFd: pfd}, 0)
		unix.Close(pfd)
		if err != nil {
			return fmt.Errorf("landlock: rule for %s: %w", r.Path, err)
		}
	}
	if attr.HandledAccessNet != 0 {
		for _, p := range s.ConnectPorts {
			if err := ll.LandlockAddNetPortRule(fd, &ll.NetPortAttr{AllowedAccess: ll.AccessNetConnectTCP, Port: uint64(p)}, 0); err != nil {
				return fmt.Errorf("landlock: port rule %d: %w", p, err)
			}
		}
	}
	// No TSYNC flag: only this thread, from which the command is forked.
	if err := ll.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("landlock: restrict self: %w", err)
	}
	return nil
}
