// The early child of `jail run` (child_linux.c, early_linux.go).

#ifndef JAIL_EARLY_LINUX_H
#define JAIL_EARLY_LINUX_H

#include <sched.h>

// The namespaces of an early child: every sandbox's (cloneFlags in
// cmd_linux.go) and a network namespace. A test ties the two.
#define JAIL_EARLY_FLAGS (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_NEWNET)

// jail_early is the child forked before the Go runtime started: its pid
// and the supervisor's ends of the plan pipe, the status pipe and the
// socket pair, all close-on-exec.
struct jail_early {
	int pid, plan, status, sock;
};

// jail_take_early hands the early child over once; it returns 0 when there
// is none (not `jail run`, or the fork failed).
int jail_take_early(struct jail_early *out);

#endif
