//go:build linux && (amd64 || arm64 || 386 || arm || riscv64 || loong64 || s390x)

package policy

import (
	"os"
	"syscall"
)

// tcflsh is TCFLSH of asm-generic/ioctls.h, the value on these
// architectures (the syscall package does not name it; policy imports
// nothing outside the standard library).
const tcflsh = 0x540B

// flushInput discards what was typed on the terminal f and not read yet
// (TCIFLUSH = 0); nothing if f is not a terminal.
func flushInput(f *os.File) {
	syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), tcflsh, 0)
}
