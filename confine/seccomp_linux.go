//go:build linux && cgo

package confine

import (
	"fmt"
	"io"
	"os"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// SeccompOptions adjusts the default filter. Names are syscall names as
// libseccomp knows them; an unknown name is an error, never ignored.
type SeccompOptions struct {
	// Deny adds syscalls that always fail with EPERM.
	Deny []string
	// Allow removes default rules for these syscalls. It exists for the rare
	// program that needs one (a debugger needs ptrace) and is printed by
	// jail check; it cannot allow what another layer forbids.
	Allow []string
	// Ptrace lets the command trace its own processes (strace, gdb,
	// LSan's tracer): ptrace, process_vm_readv and process_vm_writev are
	// allowed. pid 1 is not dumpable and the pid namespace names nothing
	// outside, so only the command's own processes can be traced.
	Ptrace bool
}

// ptraceCalls are what SeccompOptions.Ptrace allows.
func ptraceCalls() []string { return []string{"ptrace", "process_vm_readv", "process_vm_writev"} }

// CompileSeccomp builds the filter in the supervisor, so that a bad rule is
// an error before any process exists and the program can be inspected by
// tests. The child only loads the instructions.
func CompileSeccomp(opts SeccompOptions) ([]Program, error) {
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return nil, fmt.Errorf("seccomp: new filter: %w", err)
	}
	defer f.Release()
	// Syscalls from a secondary ABI (i386 through int 0x80, x32) do not
	// match the native rules at all, so they are refused as a whole.
	if err := f.SetBadArchAction(seccomp.ActErrno.SetReturnCode(int16(unix.EPERM))); err != nil {
		return nil, fmt.Errorf("seccomp: bad-arch action: %w", err)
	}
	// The child sets no_new_privs itself, at its own step.
	if err := f.SetNoNewPrivsBit(false); err != nil {
		return nil, fmt.Errorf("seccomp: no_new_privs attribute: %w", err)
	}
	// A binary tree of syscall numbers keeps the cost per syscall flat
	// however long the list grows.
	_ = f.SetOptimize(2)

	allowed := map[string]bool{}
	for _, name := range opts.Allow {
		if _, err := seccomp.GetSyscallFromName(name); err != nil {
			return nil, fmt.Errorf("seccomp: allow %q: unknown syscall name", name)
		}
		if name == "keyctl" || name == "add_key" || name == "request_key" {
			// The user keyring holds the key that authenticates the plan
			// cache (fast_linux.go) and the host user's own keys.
			return nil, fmt.Errorf("seccomp: allow %q: the kernel keyring holds the host user's keys and jail's plan cache key; this rule cannot be lifted (remove it from [seccomp] allow)", name)
		}
		allowed[name] = true
	}
	if opts.Ptrace {
		for _, name := range ptraceCalls() {
			allowed[name] = true
		}
	}
	rules := defaultDenyRules()
	for _, name := range opts.Deny {
		rules = append(rules, denyRule{Names: []string{name}, Why: "policy"})
	}
	for _, r := range rules {
		errno := r.Errno
		if errno == 0 {
			errno = unix.EPERM
		}
		act := seccomp.ActErrno.SetReturnCode(int16(errno))
		var conds []seccomp.ScmpCondition
		for _, c := range r.Conds {
			var cond seccomp.ScmpCondition
			if c.Op == opNE {
				cond, err = seccomp.MakeCondition(c.Arg, seccomp.CompareNotEqual, c.Value)
			} else {
				cond, err = seccomp.MakeCondition(c.Arg, seccomp.CompareMaskedEqual, c.Mask, c.Value)
			}
			if err != nil {
				return nil, fmt.Errorf("seccomp: condition for %v: %w", r.Names, err)
			}
			conds = append(conds, cond)
		}
		for _, name := range r.Names {
			if allowed[name] {
				continue
			}
			act := act
			if name == "ptrace" && len(r.Conds) == 0 {
				// Refused by pid 1 through the listener (EPERM, as the
				// rule's errno), which lets jail say how to allow it.
				act = seccomp.ActNotify
			}
			call, err := seccomp.GetSyscallFromName(name)
			if err != nil {
				return nil, fmt.Errorf("seccomp: deny %q: unknown syscall name", name)
			}
			if len(conds) == 0 {
				err = f.AddRule(call, act)
			} else {
				err = f.AddRuleConditional(call, act, conds)
			}
			if err != nil {
				return nil, fmt.Errorf("seccomp: rule for %s: %w", name, err)
			}
		}
	}
	ruled := map[string]bool{}
	for _, r := range rules {
		for _, n := range r.Names {
			ruled[n] = !allowed[n]
		}
	}
	if err := addHeldNameNotify(f, ruled); err != nil {
		return nil, err
	}
	if err := addCreateNotify(f, ruled); err != nil {
		return nil, err
	}
	prog, err := exportBPF(f)
	if err != nil {
		return nil, err
	}
	return []Program{prog, argFilter()}, nil
}

// heldNameCalls move or remove a name: the calls the kernel refuses with
// EBUSY on a mountpoint jail made (a protected path, a bound file).
func heldNameCalls() []string { return []string{"rename", "renameat", "renameat2", "rmdir"} }

// addHeldNameNotify hands the calls that can meet a mountpoint jail made to
// the sandbox's pid 1 (SECCOMP_RET_USER_NOTIF), which lets each go on
// unchanged after looking whether it names such a mountpoint, and then says
// on stderr how jail holds it (busy_hint in pid1_linux.c): a program's own
// "Device or resource busy" does not. unlinkat only when it removes a
// directory (AT_REMOVEDIR): a file unlink, which builds do by the
// thousand, stays in the kernel. A rename costs a round trip to pid 1
// (BenchmarkRenameInside).
//
// A call a rule refuses already (ruled: a policy's [seccomp] deny) keeps
// that rule.
func addHeldNameNotify(f *seccomp.ScmpFilter, ruled map[string]bool) error {
	for _, name := range heldNameCalls() {
		if ruled[name] {
			continue
		}
		call, err := seccomp.GetSyscallFromName(name)
		if err != nil {
			continue // rename and rmdir are not in every architecture's table
		}
		if err := f.AddRule(call, seccomp.ActNotify); err != nil {
			return fmt.Errorf("seccomp: notify rule for %s: %w", name, err)
		}
	}
	if ruled["unlinkat"] {
		return nil
	}
	call, err := seccomp.GetSyscallFromName("unlinkat")
	if err != nil {
		return fmt.Errorf("seccomp: unlinkat: %w", err)
	}
	cond, err := seccomp.MakeCondition(2, seccomp.CompareMaskedEqual, unix.AT_REMOVEDIR, unix.AT_REMOVEDIR)
	if err == nil {
		err = f.AddRuleConditional(call, seccomp.ActNotify, []seccomp.ScmpCondition{cond})
	}
	if err != nil {
		return fmt.Errorf("seccomp: notify rule for unlinkat: %w", err)
	}
	return nil
}

// addCreateNotify hands the calls that create a name or open one for
// writing to the sandbox's pid 1 as addHeldNameNotify does, which says on
// stderr how jail holds a protected path the call would meet (create_hint
// in pid1_linux.c: "Is a directory" from echo x > .envrc says nothing of
// why). open and openat only with O_CREAT: a plain open, which everything
// does by the thousand, stays in the kernel; a file a build creates costs
// a round trip to pid 1 (BenchmarkCreateInside). openat2 keeps its flags in
// memory a filter cannot read and stays in the kernel, without the hint.
func addCreateNotify(f *seccomp.ScmpFilter, ruled map[string]bool) error {
	for _, c := range []struct {
		name string
		flag int // the argument holding the open flags; -1: every call
	}{{"creat", -1}, {"mkdir", -1}, {"mkdirat", -1}, {"open", 1}, {"openat", 2}} {
		if ruled[c.name] {
			continue
		}
		call, err := seccomp.GetSyscallFromName(c.name)
		if err != nil {
			continue // open, creat and mkdir are not in every architecture's table
		}
		if c.flag < 0 {
			err = f.AddRule(call, seccomp.ActNotify)
		} else {
			var cond seccomp.ScmpCondition
			cond, err = seccomp.MakeCondition(uint(c.flag), seccomp.CompareMaskedEqual, unix.O_CREAT, unix.O_CREAT)
			if err == nil {
				err = f.AddRuleConditional(call, seccomp.ActNotify, []seccomp.ScmpCondition{cond})
			}
		}
		if err != nil {
			return fmt.Errorf("seccomp: notify rule for %s: %w", c.name, err)
		}
	}
	return nil
}

// exportBPF reads the compiled program back through a memfd: libseccomp
// 2.5 only writes to a descriptor.
func exportBPF(f *seccomp.ScmpFilter) (Program, error) {
	fd, err := unix.MemfdCreate("jail-seccomp", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("seccomp: memfd: %w", err)
	}
	mf := os.NewFile(uintptr(fd), "jail-seccomp")
	defer mf.Close()
	if err := f.ExportBPF(mf); err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	if _, err := mf.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	raw, err := io.ReadAll(mf)
	if err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("seccomp: export: empty program")
	}
	prog, err := programFromBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("seccomp: export: %w", err)
	}
	return prog, nil
}
