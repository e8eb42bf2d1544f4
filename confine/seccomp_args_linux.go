//go:build linux

package confine

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Classic BPF opcodes and seccomp constants used by argFilter.
const (
	bpfLdAbsW = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	bpfJeqK   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	bpfRetK   = unix.BPF_RET | unix.BPF_K

	seccompRetAllow = 0x7fff0000
	seccompRetErrno = 0x00050000

	// Offsets in struct seccomp_data: nr, arch, then args[6] as u64.
	offNr    = 0
	offArch  = 4
	offArg0L = 16 // low 32 bits of args[0] on little-endian machines
)

// auditArch is the AUDIT_ARCH_* value of the native ABI.
func auditArch() (uint32, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return 0xC000003E, true
	case "arm64":
		return 0xC00000B7, true
	}
	return 0, false
}

// argFilter is the second seccomp program: allow-lists over one argument,
// which libseccomp's rule language cannot state as denials. It compares the
// low 32 bits only, exactly the int the kernel reads, so stray upper bits
// neither hide nor spoil a value. The kernel runs every installed filter
// and the strictest answer wins, so this program only ever narrows the
// libseccomp one. Other architectures pass here; the libseccomp program
// refuses them as a whole.
func argFilter() Program {
	arch, ok := auditArch()
	if !ok {
		return nil
	}
	socketOK := []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}
	// personality: the query 0xffffffff, PER_LINUX, PER_LINUX32 and
	// ADDR_NO_RANDOMIZE (setarch -R, debuggers), alone or with PER_LINUX32.
	// Everything else re-enables legacy behaviour (READ_IMPLIES_EXEC,
	// MMAP_PAGE_ZERO) or a foreign execution domain.
	personaOK := []uint32{0x0, 0x8, 0x0040000, 0x0040008, 0xffffffff}

	var p Program
	stmt := func(code uint16, k uint32) { p = append(p, SockFilter{Code: code, K: k}) }
	jeq := func(k uint32, jt, jf uint8) { p = append(p, SockFilter{Code: bpfJeqK, Jt: jt, Jf: jf, K: k}) }
	allowList := func(ok []uint32, errno unix.Errno) {
		stmt(bpfLdAbsW, offArg0L)
		for i, v := range ok {
			// Jump over the remaining compares and the deny to the allow.
			jeq(v, uint8(len(ok)-i), 0)
		}
		stmt(bpfRetK, seccompRetErrno|uint32(errno))
		stmt(bpfRetK, seccompRetAllow)
	}

	stmt(bpfLdAbsW, offArch)
	jeq(arch, 1, 0)
	stmt(bpfRetK, seccompRetAllow)
	stmt(bpfLdAbsW, offNr)
	// Layout: [socket?] [personality?] [allow] [socket block] [personality block]
	sock := len(socketOK) + 3 // length of the socket allowList block
	jeq(uint32(unix.SYS_SOCKET), 2, 0)
	jeq(uint32(unix.SYS_PERSONALITY), uint8(1+sock), 0)
	stmt(bpfRetK, seccompRetAllow)
	allowList(socketOK, unix.EAFNOSUPPORT)
	allowList(personaOK, unix.EPERM)
	return p
}
