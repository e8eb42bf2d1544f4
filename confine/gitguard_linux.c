// The guardian of a run's git state (docs/git.md, "A run killed before
// its end"): a process in a session of its own that outlives the
// supervisor, so that a `kill -9` of jail, or of its process group, does
// not leave the repositories its sandbox made in subdirectories live on
// the host with their hooks and core.fsmonitor. It waits for the
// supervisor to say it finished; when the supervisor goes without saying
// so, it waits for the sandbox's pid 1 to be gone (its whole pid
// namespace with it) and executes the Go adopter, which adopts the run's
// git state and reduces those repositories as the supervisor's end would
// have. Pure C, before the Go runtime: it costs a fork (the plan cache's
// run) or an exec that never starts Go (the Go supervisor) per run.

//go:build linux && cgo

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gitguard_linux.h"

#define NR_pidfd_open 434
#define NR_close_range 436

// guard waits on in for the supervisor's lines ("pid N" once the
// sandbox's pid 1 runs, "done" when it finished) and acts on their
// absence. keyfd and runfd are descriptors 3 and 4 (the workspace's state
// directory and the RUN directory, whose lock the guardian holds with the
// supervisor: the same open file), which the adopter is given.
static void __attribute__((noreturn)) guard(int in, const char *ws, const char *run, const char *t0, const char *mode, int pid1, char **envp) {
	setsid(); // fails, harmlessly, when the exec'd guardian has its session already
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	// Nothing of the terminal's may end it; a write to a stderr whose
	// reader went is an error, not a signal.
	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
	int pidfd = pid1 > 0 ? (int)syscall(NR_pidfd_open, pid1, 0) : -1;
	char buf[128];
	size_t have = 0;
	for (;;) {
		ssize_t n = read(in, buf + have, sizeof(buf) - 1 - have);
		if (n < 0 && errno == EINTR) continue;
		if (n <= 0) break;
		have += n;
		buf[have] = 0;
		char *nl;
		while ((nl = strchr(buf, '\n'))) {
			*nl = 0;
			if (!strcmp(buf, "done")) _exit(0);
			if (!strncmp(buf, "pid ", 4) && pidfd < 0) {
				int p = atoi(buf + 4);
				if (p > 0) pidfd = (int)syscall(NR_pidfd_open, p, 0);
			}
			size_t used = nl + 1 - buf;
			memmove(buf, nl + 1, have - used + 1);
			have -= used;
		}
		if (have == sizeof(buf) - 1) have = 0; // a line too long: not the supervisor's
	}
	close(in);
	// The supervisor went without finishing. Its death ends the sandbox
	// (each process's parent-death signal); the git state is touched
	// only once pid 1 is gone, which the kernel reports after every
	// other process of its namespace is.
	if (pidfd >= 0) {
		struct pollfd p = {.fd = pidfd, .events = POLLIN};
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
	} else {
		// No sandbox was started yet, or its pid is unknown: its
		// processes, if any, were being made and die with the
		// supervisor within milliseconds.
		struct timespec ts = {0, 200 * 1000000L};
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	fcntl(3, F_SETFD, 0);
	fcntl(4, F_SETFD, 0);
	char *argv[] = {"jail", JAIL_ADOPT_COMMAND, (char *)ws, "3", "4", (char *)run, (char *)t0, (char *)mode, NULL};
	execve("/proc/self/exe", argv, envp);
	_exit(127);
}

void jail_git_guard_main(int argc, char **argv, char **envp) {
	if (argc != 6 || strcmp(argv[1], JAIL_GUARD_COMMAND)) return;
	guard(0, argv[2], argv[3], argv[4], argv[5], 0, envp);
}

// retitle writes the guardian's command line (jail __git-guard WS RUN
// LAUNCH-NS MODE) over the arguments this fork inherited, within their
// space (a longer one is cut), so that ps and /proc/PID/cmdline show what
// it is.
static void retitle(int argc, char **argv, const char *ws, const char *run, const char *t0, const char *mode) {
	if (argc < 1 || !argv || !argv[0]) return;
	char *start = argv[0], *end = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
	const char *parts[] = {"jail", JAIL_GUARD_COMMAND, ws, run, t0, mode};
	char *p = start;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]) && p < end; i++) {
		size_t n = strlen(parts[i]) + 1;
		if (n > (size_t)(end - p)) n = end - p;
		memmove(p, parts[i], n);
		p += n;
	}
	if (p < end) memset(p, 0, end - p);
	end[-1] = 0;
}

int jail_git_guard_fork(int keyfd, int runfd, const char *ws, const char *run, const char *t0, const char *mode, int pid1, int argc, char **argv, char **envp) {
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) return -1;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		// Descriptors 0 (the supervisor's lines), 3 and 4, /dev/null as
		// stdout, stderr kept for the adopter's report, nothing else:
		// the guardian must hold no end of the sandbox's pipes.
		int in = fcntl(p[0], F_DUPFD_CLOEXEC, 100), k = fcntl(keyfd, F_DUPFD_CLOEXEC, 100), r = fcntl(runfd, F_DUPFD_CLOEXEC, 100);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (in < 0 || k < 0 || r < 0 || null < 0 || dup2(in, 0) < 0 || dup2(null, 1) < 0 || dup2(k, 3) < 0 || dup2(r, 4) < 0) _exit(127);
		syscall(NR_close_range, 5, ~0U, 0);
		// Run in this fork, not executed: an exec of the static binary
		// starts its C library again, whose CPUID queries of the cache
		// geometry trap to the hypervisor on a virtual machine (0.8 ms of
		// CPU each on the development VM, the most of a static program's
		// start). The arguments it shows are rewritten to say what it is.
		// Its strings (ws, run, t0) are the fork's copies, not in argv.
		retitle(argc, argv, ws, run, t0, mode);
		guard(0, ws, run, t0, mode, pid1, envp);
	}
	close(p[0]);
	char line[32];
	int n = snprintf(line, sizeof(line), "pid %d\n", pid1);
	if (write(p[1], line, n) != n) {
		close(p[1]);
		return -1;
	}
	return p[1];
}
