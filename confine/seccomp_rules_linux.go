package confine

import "golang.org/x/sys/unix"

// argCond is one comparison on a syscall argument. Masked compares are used
// for 32-bit arguments because the kernel ignores the upper half of the
// register while a plain 64-bit compare would not: ioctl(fd, TIOCSTI|1<<32)
// must still match TIOCSTI.
type argCond struct {
	Arg   uint
	Op    argOp
	Mask  uint64 // for opMaskedEQ: (arg & Mask) == Value
	Value uint64
}

// argOp is the comparison of an argCond.
type argOp int

const (
	opMaskedEQ argOp = iota
	opNE
)

// denyRule is one entry of the default deny-list: the calls it matches, the
// conditions (all must hold; none means always), the errno returned, and the
// reason it is there. docs/seccomp.md is generated from the same table by a
// test, so the two cannot disagree.
type denyRule struct {
	Names []string
	Conds []argCond
	Errno unix.Errno
	Why   string
}

const mask32 = 0xffffffff

// defaultDenyRules is the filter every sandbox gets. Everything not listed
// is allowed: the filter removes kernel attack surface an ordinary build,
// test or agent never needs, and returns EPERM so programs see a clear
// failure instead of dying.
func defaultDenyRules() []denyRule {
	rules := []denyRule{
		{Names: []string{"io_uring_setup", "io_uring_enter", "io_uring_register"},
			Why: "io_uring performs file and network operations the filter never sees, and has a long record of privilege-escalation bugs"},
		{Names: []string{"bpf"},
			Why: "eBPF programs run in the kernel; verifier bugs are a recurring path to kernel code execution"},
		{Names: []string{"perf_event_open"},
			Why: "performance counters leak kernel addresses and timing side channels, and the subsystem is a frequent CVE source"},
		{Names: []string{"userfaultfd"},
			Why: "userfaultfd lets a process pause the kernel mid-copy, which turns kernel race conditions into reliable exploits"},
		{Names: []string{"keyctl", "add_key", "request_key"},
			Why: "the kernel keyring is not namespaced: keys of the host user would be reachable, jail's plan cache key among them (this rule cannot be lifted by [seccomp] allow)"},
		{Names: []string{"kexec_load", "kexec_file_load"},
			Why: "loading a new kernel"},
		{Names: []string{"init_module", "finit_module", "delete_module"},
			Why: "loading or unloading kernel modules"},
		{Names: []string{"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr"},
			Why: "the file-system view is fixed before the command starts; remounting a read-only bind writable or uncovering a hidden path must be impossible"},
		{Names: []string{"unshare", "setns"},
			Why: "new namespaces give back a full capability set in a child user namespace, the entry point of most container-escape exploits"},
		{Names: []string{"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp"},
			Why: "reading or steering another process's memory and descriptors; `--allow-ptrace` (`[seccomp] allow_ptrace`) lifts ptrace and process_vm_* for tracers of the command's own processes, with jail's pid 1 kept out of reach (not dumpable)"},
		{Names: []string{"open_by_handle_at", "name_to_handle_at"},
			Why: "file handles open files by inode number, bypassing the mount view (the 2014 'shocker' container escape)"},
		{Names: []string{"acct"},
			Why: "process accounting writes a host file"},
		{Names: []string{"swapon", "swapoff"},
			Why: "host swap configuration"},
		{Names: []string{"reboot"},
			Why: "rebooting the host (in a pid namespace it would only end the sandbox, but nothing needs it)"},
		{Names: []string{"settimeofday", "clock_settime", "clock_adjtime", "adjtimex"},
			Why: "the clock is not namespaced: setting it changes the host's time"},
		{Names: []string{"iopl", "ioperm"},
			Why: "raw I/O port access"},
		{Names: []string{"syslog"},
			Why: "the kernel log leaks kernel addresses and other users' activity"},
		{Names: []string{"quotactl", "lookup_dcookie", "uselib", "vhangup", "nfsservctl"},
			Why: "obsolete or host-administration calls nothing in a sandbox needs"},
		// CVE-2017-5226: TIOCSTI pushes characters into the terminal's input
		// queue, so a sandboxed process sharing the caller's terminal could
		// type commands into the caller's shell after jail exits.
		{Names: []string{"ioctl"}, Conds: []argCond{{Arg: 1, Op: opMaskedEQ, Mask: mask32, Value: unix.TIOCSTI}},
			Why: "TIOCSTI injects input into the controlling terminal (CVE-2017-5226)"},
		// CVE-2023-1523 class: TIOCLINUX subcode 2/3 (selection paste) types
		// into a virtual console the same way.
		{Names: []string{"ioctl"}, Conds: []argCond{{Arg: 1, Op: opMaskedEQ, Mask: mask32, Value: unix.TIOCLINUX}},
			Why: "TIOCLINUX can paste the console selection into the terminal's input"},
		{Names: []string{"clone3"}, Errno: unix.ENOSYS,
			Why: "clone3 passes its flags in memory the filter cannot read; ENOSYS makes libc fall back to clone, whose flags are checked"},
	}

	// Namespace flags of clone(2): each set bit is its own rule because a
	// masked compare matches one exact pattern.
	for _, f := range []uint64{unix.CLONE_NEWNS, unix.CLONE_NEWUSER, unix.CLONE_NEWPID, unix.CLONE_NEWNET,
		unix.CLONE_NEWIPC, unix.CLONE_NEWUTS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME} {
		rules = append(rules, denyRule{Names: []string{"clone"}, Conds: []argCond{{Arg: 0, Op: opMaskedEQ, Mask: f, Value: f}},
			Why: "clone with a namespace flag is unshare by another name"})
	}

	// Socket families and personality values are allow-lists, which
	// libseccomp cannot express as a deny rule (one compare per argument);
	// argFilter checks them in a second, hand-assembled program. Netlink
	// protocols other than route are refused here.
	rules = append(rules,
		denyRule{Names: []string{"socket"}, Conds: []argCond{{Arg: 0, Op: opMaskedEQ, Mask: mask32, Value: unix.AF_NETLINK}, {Arg: 2, Op: opNE, Value: unix.NETLINK_ROUTE}},
			Errno: unix.EAFNOSUPPORT, Why: "netlink protocols other than route (audit, netfilter, uevents, ...)"},
	)
	return rules
}
