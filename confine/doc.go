// Package confine turns a Spec into a confined process: the layers of a jail
// sandbox, from namespaces to the seccomp filter, set up by one static binary
// with no helper programs.
//
// # The launch
//
// The supervisor (the jail process a user started) validates a Spec, resolves
// every host path in it and compiles the seccomp filter with libseccomp. It
// then compiles a plan: the child's instructions in order, every decision
// already made (which mountpoints to create, which Landlock rights this
// kernel's ABI can carry, which layers are skipped). The child only carries
// the plan out.
//
// The child is the jail binary itself, re-executed through /proc/self/exe
// with argv "jail-init". A C constructor (child_linux.c) recognises it and
// runs before the Go runtime starts, as runc's nsexec does: a second Go
// runtime (threads, package initialisers) would cost more than the rest of
// the launch. main still checks [IsChild] first; in a build without cgo it
// reports that the build cannot confine.
//
//	supervisor (Go)                              child (C, before any Go runtime)
//	---------------                              --------------------------------
//	Prestart: vfork+exec /proc/self/exe
//	attach cgroup (v1)
//	plan header on fd 3          -------------->  unshare user, mount, pid, ipc,
//	                                              uts, net, cgroup namespaces;
//	resolve the layout, compile                   write own uid/gid maps; fork:
//	the filter (concurrently)                     pid 1 goes on, the parent stays
//	                            <--------------   outside: {"stage":"pid1","pid"}
//	Start: rest of plan, close   -------------->  pid 1: mounts, pivot_root,
//	                                              Landlock, close fds, drop
//	                                              capabilities, seccomp, fork
//	receive Spec.Sockets on fd 5 <-------------   (sockets opened in the netns)
//	read fd 4                   <--------------   {"stage":"started"} or a
//	                                              {"stage","errno","msg"} failure
//	signals -> pid 1             -------------->  forwarded to the command;
//	                                              zombies reaped
//	read fd 4                   <--------------   {"stage":"exit","status",...}
//	                                              after killing and reaping every
//	                                              other process; pid 1 exits
//
// `jail run` goes further: the constructor of the supervisor itself (argv[1]
// is "run") forks the child before the Go runtime starts. That early child
// wipes the caller's environment and arguments from its copy of memory,
// keeps only its three descriptors, creates every namespace (the network's
// included) at once and forks pid 1, which waits for the header. The
// namespaces are then made on the other CPU while the Go runtime starts, and
// the child needs no exec. Prestart adopts it when the run needs nothing it
// cannot have (the host's network, a cgroup, which must be joined before
// pid 1 exists) and otherwise kills it and execs a child as above. pid 1
// maps the ids from the header and takes the command's stdio over fd 5.
//
// `jail serve` and `jail mcp` start many sandboxes: their constructor forks
// a zygote before the Go runtime starts, a copy of the binary's pristine
// image (the caller's environment and arguments wiped, only /dev/null and
// its socket open) that forks each init on request with CLONE_PARENT, so
// the init is the supervisor's own child and needs no exec of the 11 MB
// binary. Prestart falls back to the exec when there is no zygote or the
// init must start in a cgroup.
//
// Creating the namespaces in the child rather than at clone lets the
// supervisor start it with vfork (Go copies its whole address space for a
// clone with CLONE_NEWUSER), and lets the namespaces be created while the
// supervisor still resolves paths. An unprivileged process may write its own
// id maps once setgroups is denied.
//
// pid 1 kills every process of its namespace and reaps them all before it
// reports the command's exit, so when Wait returns nothing the command
// started (double-forked daemons included) is left. pid 1 carries
// PR_SET_PDEATHSIG towards the process outside, which carries it towards the
// supervisor: the sandbox dies with jail. Once pid 1 has locked its mounts
// into a namespace of its own (OP_LOCK), it hands the process outside the
// roots of the writable trees by descriptor, and that process detaches
// them from the namespace the two shared: the placeholders and the git
// view's .git are then mountpoints only in pid 1's namespace, which its
// exit takes down, and the supervisor removes them without an RCU grace
// period for each (docs/plan-cache.md, "Measured").
//
// # The layers, in the order the child applies them
//
//  1. Namespaces (unshare): the uid and gid are mapped to the caller's own
//     ids, so files keep their owners.
//  2. A new root: a tmpfs into which system directories are bound read-only,
//     the workspace read-write, and private /tmp, /dev, /proc and $HOME are
//     mounted; protected paths in the workspace are covered read-only; then
//     pivot_root and the old root is detached. Binds are made by descriptor
//     (open_tree, mount_setattr with AT_RECURSIVE, move_mount).
//  3. no_new_privs and Landlock (best ABI the kernel has), with rules that
//     mirror the mounts.
//  4. Every inherited descriptor but 0, 1 and 2 is marked close-on-exec.
//  5. All capabilities dropped (bounding, ambient, effective, permitted,
//     inheritable) and locked with securebits.
//  6. The seccomp programs, last before the command's fork and execve.
//
// # Failing closed
//
// A layer that cannot be set up stops the launch with a [*LayerError] that
// names the layer, the errno and the fix. The caller may name layers in
// Spec.AllowDegraded to run without them; nothing is skipped silently.
package confine
