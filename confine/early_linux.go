//go:build linux && cgo

package confine

/*
#define _GNU_SOURCE
#include "early_linux.h"
*/
import "C"

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// earlyFlags are the namespaces an early child has (JAIL_EARLY_FLAGS).
const earlyFlags = uint64(C.JAIL_EARLY_FLAGS)

// early is the sandbox init that early_linux.c forked for `jail run` before
// the Go runtime started, with the supervisor's ends of its pipes.
type early struct {
	pid                  int
	plan, status, socket *os.File
}

// takeEarly hands over the early child, once per process; ok is false when
// there is none.
func takeEarly() (e early, ok bool) {
	var c C.struct_jail_early
	if C.jail_take_early(&c) == 0 {
		return early{}, false
	}
	return early{
		pid:    int(c.pid),
		plan:   os.NewFile(uintptr(c.plan), "plan"),
		status: os.NewFile(uintptr(c.status), "status"),
		socket: os.NewFile(uintptr(c.sock), "sockets"),
	}, true
}

// zygoteFork has this process's zygote fork a sandbox's init with files
// as its descriptors 0-5; ok is false when the process has no zygote or
// it is gone, and the caller then execs the init.
func zygoteFork(files []*os.File) (pid int, ok bool, err error) {
	var fds [6]C.int
	for i, f := range files {
		fds[i] = C.int(f.Fd())
	}
	r := int(C.jail_zygote_fork(&fds[0]))
	switch {
	case r > 0:
		return r, true, nil
	case r == -int(syscall.ENOSYS): // no zygote, or it took nothing
		return 0, false, nil
	default:
		return 0, true, fmt.Errorf("zygote: fork the sandbox's init: %w", syscall.Errno(-r))
	}
}

// fastHMAC is the plan cache's HMAC-SHA-256 of msg under key (32 bytes),
// on the CPU's SHA extensions unless portable. For tests.
func fastHMAC(key, msg []byte, portable bool) []byte {
	var out [32]byte
	var p *C.uint8_t
	if len(msg) > 0 {
		p = (*C.uint8_t)(unsafe.Pointer(&msg[0]))
	}
	C.jail_sha_portable = 0
	if portable {
		C.jail_sha_portable = 1
	}
	C.jail_hmac_sha256((*C.uint8_t)(unsafe.Pointer(&key[0])), p, C.size_t(len(msg)), (*C.uint8_t)(unsafe.Pointer(&out[0])))
	C.jail_sha_portable = 0
	return out[:]
}

// fastSignalName is the plan cache's name for sig in a JSON result, which
// must be the Go path's (a test compares them).
func fastSignalName(sig int) string { return C.GoString(C.jail_signal_name(C.int(sig))) }

// dnsReply is pid 1's answer to the DNS query q (Spec.OffDNS), and the name it would report
// ("" for none); nil when it would not answer. For tests.
func dnsReply(q []byte) ([]byte, string) {
	var r [512]byte
	var name [256]C.char
	var p *C.uint8_t
	if len(q) > 0 {
		p = (*C.uint8_t)(unsafe.Pointer(&q[0]))
	}
	n := C.jail_dns_reply(p, C.size_t(len(q)), (*C.uint8_t)(unsafe.Pointer(&r[0])), &name[0])
	if n == 0 {
		return nil, C.GoString(&name[0])
	}
	return r[:n:n], C.GoString(&name[0])
}

// fastDirsHash is the plan cache's DirsHash (a test compares them).
func fastDirsHash(fd int, skipGit bool) uint64 {
	skip := C.int(0)
	if skipGit {
		skip = 1
	}
	return uint64(C.jail_dir_hash(C.int(fd), skip))
}
