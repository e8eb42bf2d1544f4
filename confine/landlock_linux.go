//go:build linux

package confine

import (
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
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
		case Bind, Tmpfs, Overlay:
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

// Network and scope rights, as the plan passes them.
const (
	llConnectTCP        = ll.AccessNetConnectTCP
	llScopeAbstractUnix = ll.ScopeAbstractUnixSocket
	llScopeSignal       = ll.ScopeSignal
)

// landlockABI is the kernel's Landlock ABI version, 0 when unavailable.
func landlockABI() (int, error) {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0, err
	}
	return v, nil
}
