// Package confine turns a Spec into a confined process: the layers of a jail
// sandbox, from namespaces to the seccomp filter, set up by one Go binary with
// no helper programs.
//
// # The launch
//
// The supervisor (the jail process a user started) validates a Spec, resolves
// every host path in it, compiles the seccomp filter and only then creates a
// process. The process is the jail binary itself, re-executed through
// /proc/self/exe into fresh user, mount, pid, ipc, uts, network and cgroup
// namespaces. Its first act in main is [IsChild]; [ChildMain] never returns.
//
//	supervisor                                   child (pid 1 in the sandbox)
//	----------                                   ----------------------------
//	resolve paths, compile seccomp
//	clone+exec /proc/self/exe   -------------->  Go runtime starts
//	(uid/gid maps written by the Go runtime)
//	attach cgroup (v1)
//	write Spec on fd 3, close   -------------->  read Spec
//	                                             mounts, pivot_root
//	                                             Landlock, close fds,
//	                                             drop capabilities, seccomp
//	                                             fork+exec the command
//	read fd 4                   <--------------  {"stage":"started"} or a
//	                                             {"stage","errno","msg"} failure
//	                                             reap zombies, forward signals
//	read fd 4                   <--------------  {"stage":"exit","status",...}
//	wait4(child)                                 exit with the command's status
//
// When pid 1 of a pid namespace exits the kernel kills every other process in
// it, so nothing the command started (double-forked daemons included)
// outlives it. The child also carries PR_SET_PDEATHSIG, so it dies with the
// supervisor.
//
// # The layers, in the order the child applies them
//
//  1. Namespaces (created by clone): the uid and gid are mapped to the
//     caller's own ids, so files keep their owners.
//  2. A new root: a tmpfs into which system directories are bound read-only,
//     the workspace read-write, and private /tmp, /dev, /proc and $HOME are
//     mounted; protected paths in the workspace are covered read-only; then
//     pivot_root and the old root is detached.
//  3. Landlock (best ABI the kernel has), with rules that mirror the mounts.
//  4. Every inherited descriptor but 0, 1 and 2 is marked close-on-exec.
//  5. All capabilities dropped (bounding, ambient, effective, permitted,
//     inheritable) and no_new_privs set.
//  6. The seccomp filter compiled by the supervisor, as close to execve as
//     Go allows.
//
// Steps 3 to 6 run on one locked OS thread of the child, and the command is
// forked from that thread, so it inherits exactly that thread's credentials.
//
// # Failing closed
//
// A layer that cannot be set up stops the launch with a [*LayerError] that
// names the layer, the errno and the fix. The caller may name layers in
// Spec.AllowDegraded to run without them; nothing is skipped silently.
package confine
