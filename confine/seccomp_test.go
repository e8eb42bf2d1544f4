//go:build linux && cgo

package confine

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// runArgFilter executes the hand-assembled program in x/net/bpf's VM. The
// VM loads words big-endian, so the fake seccomp_data is written that way:
// the program's view of each word is the same as the kernel's on a
// little-endian machine.
func runArgFilter(t *testing.T, arch, nr uint32, arg0 uint64) uint32 {
	t.Helper()
	var ins []bpf.Instruction
	for _, f := range argFilter() {
		ins = append(ins, bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}.Disassemble())
	}
	vm, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatalf("program does not validate: %v", err)
	}
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], nr)
	binary.BigEndian.PutUint32(data[4:], arch)
	binary.BigEndian.PutUint32(data[16:], uint32(arg0)) // low half
	binary.BigEndian.PutUint32(data[20:], uint32(arg0>>32))
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(ret)
}

func TestArgFilter(t *testing.T) {
	arch, ok := auditArch()
	if !ok {
		t.Skip("argFilter has no program for this architecture")
	}
	deny := func(e unix.Errno) uint32 { return seccompRetErrno | uint32(e) }
	cases := []struct {
		name string
		arch uint32
		nr   uint32
		arg  uint64
		want uint32
	}{
		{"socket unix", arch, unix.SYS_SOCKET, unix.AF_UNIX, seccompRetAllow},
		{"socket inet", arch, unix.SYS_SOCKET, unix.AF_INET, seccompRetAllow},
		{"socket inet6", arch, unix.SYS_SOCKET, unix.AF_INET6, seccompRetAllow},
		{"socket netlink", arch, unix.SYS_SOCKET, unix.AF_NETLINK, seccompRetAllow},
		{"socket packet", arch, unix.SYS_SOCKET, unix.AF_PACKET, deny(unix.EAFNOSUPPORT)},
		{"socket vsock", arch, unix.SYS_SOCKET, unix.AF_VSOCK, deny(unix.EAFNOSUPPORT)},
		{"socket alg", arch, unix.SYS_SOCKET, unix.AF_ALG, deny(unix.EAFNOSUPPORT)},
		{"socket packet with upper bits", arch, unix.SYS_SOCKET, 1<<32 | unix.AF_PACKET, deny(unix.EAFNOSUPPORT)},
		{"socket inet with upper bits is inet", arch, unix.SYS_SOCKET, 1<<32 | unix.AF_INET, seccompRetAllow},
		{"personality query", arch, unix.SYS_PERSONALITY, 0xffffffff, seccompRetAllow},
		{"personality linux", arch, unix.SYS_PERSONALITY, 0, seccompRetAllow},
		{"personality linux32", arch, unix.SYS_PERSONALITY, 8, seccompRetAllow},
		{"personality no-randomize", arch, unix.SYS_PERSONALITY, 0x0040000, seccompRetAllow},
		{"personality READ_IMPLIES_EXEC", arch, unix.SYS_PERSONALITY, 0x0400000, deny(unix.EPERM)},
		{"personality MMAP_PAGE_ZERO", arch, unix.SYS_PERSONALITY, 0x0100000, deny(unix.EPERM)},
		{"personality foreign domain", arch, unix.SYS_PERSONALITY, 0x1, deny(unix.EPERM)},
		{"other syscall", arch, unix.SYS_GETPID, 0, seccompRetAllow},
		{"foreign arch passes to the libseccomp program", 0x40000003, unix.SYS_SOCKET, unix.AF_PACKET, seccompRetAllow},
	}
	for _, c := range cases {
		if got := runArgFilter(t, c.arch, c.nr, c.arg); got != c.want {
			t.Errorf("%s: got %#x, want %#x", c.name, got, c.want)
		}
	}
}

func TestCompileSeccomp(t *testing.T) {
	progs, err := CompileSeccomp(SeccompOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(progs) != 2 || len(progs[0]) < 50 || len(progs[1]) < 10 {
		t.Fatalf("unexpected program sizes: %d programs", len(progs))
	}
	if _, err := CompileSeccomp(SeccompOptions{Deny: []string{"no_such_call"}}); err == nil {
		t.Fatal("an unknown syscall name in Deny was accepted")
	}
	if _, err := CompileSeccomp(SeccompOptions{Allow: []string{"no_such_call"}}); err == nil {
		t.Fatal("an unknown syscall name in Allow was accepted")
	}
	withPtrace, err := CompileSeccomp(SeccompOptions{Allow: []string{"ptrace"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(withPtrace[0]) >= len(progs[0]) {
		t.Fatal("allowing ptrace did not remove its rule")
	}
}

func BenchmarkCompileSeccomp(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := CompileSeccomp(SeccompOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
