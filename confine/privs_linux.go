//go:build linux

package confine

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Secure bits (linux/securebits.h): after these, uid 0 gains no capability
// by execve and the setting cannot be undone.
const (
	secbitNoroot             = 1 << 0
	secbitNorootLocked       = 1 << 1
	secbitNoSetuidFixup      = 1 << 2
	secbitNoSetuidFixupLock  = 1 << 3
	secbitKeepCapsLocked     = 1 << 5
	secbitNoCapAmbientRaise  = 1 << 6
	secbitNoCapAmbientLocked = 1 << 7
)

// lastCap reads the highest capability number the kernel knows, so the
// bounding set is emptied completely on kernels newer than this code.
func lastCap() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, fmt.Errorf("read cap_last_cap: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("parse cap_last_cap: %w", err)
	}
	return n, nil
}

// dropPrivileges empties every capability set of the calling thread and
// locks it so: the command starts with nothing, cannot regain capabilities
// by executing a setuid or file-capability binary, and, when the caller is
// root (uid 0 inside), execve gives it nothing either.
func dropPrivileges(last int) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	bits := secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLock |
		secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientLocked
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0); err != nil {
		return fmt.Errorf("set securebits: %w", err)
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// loadSeccomp installs prog on every thread of the process (TSYNC), so no
// thread of jail's pid 1 is left unfiltered either. no_new_privs is set
// already by dropPrivileges.
func loadSeccomp(progs []Program) error {
	if len(progs) == 0 {
		return fmt.Errorf("seccomp: no filter program")
	}
	for i, p := range progs {
		if err := loadSeccompProgram(p); err != nil {
			return fmt.Errorf("seccomp: program %d: %w", i, err)
		}
	}
	return nil
}

func loadSeccompProgram(prog Program) error {
	if len(prog) == 0 {
		return fmt.Errorf("empty program")
	}
	insns := make([]unix.SockFilter, len(prog))
	for i, p := range prog {
		insns[i] = unix.SockFilter{Code: p.Code, Jt: p.Jt, Jf: p.Jf, K: p.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(insns)), Filter: &insns[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("load filter: %w", errno)
	}
	if r != 0 {
		return fmt.Errorf("thread %d could not be synchronised", r)
	}
	return nil
}

// markFdsCloexec marks every descriptor from 3 up close-on-exec, so the
// command inherits only stdin, stdout and stderr. CVE-2024-21626 (runc) was
// a leaked descriptor of a host directory, usable as a working directory
// through /proc/self/fd.
func markFdsCloexec() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Kernels before 5.11: walk the table.
	ents, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return fmt.Errorf("close_range: %w; list fds: %w", err, rerr)
	}
	for _, e := range ents {
		fd, _ := strconv.Atoi(e.Name())
		if fd > 2 {
			unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
	return nil
}
