// The early child of `jail run`: forked by the constructor before the Go
// runtime starts, it creates every namespace while the supervisor plans,
// then becomes the sandbox's init (early_linux.go adopts it).

//go:build linux && cgo

#include "child_linux.h"

// ---- early start ------------------------------------------------------------
//
// `jail run` forks its sandbox's init here, before the Go runtime starts:
// the namespaces are then created on another CPU while the supervisor
// starts and compiles the plan, and the init needs no exec of its own.
// The supervisor takes the child with jail_take_early (Cmd.Prestart); when
// the run needs something else (the host's network, a cgroup), it closes
// the plan pipe and the child exits.

static struct jail_early early = {.pid = -1, .plan = -1, .status = -1, .sock = -1};

int jail_take_early(struct jail_early *out) {
	if (early.pid < 0) return 0;
	*out = early;
	early.pid = -1;
	return 1;
}

// recv_stdio replaces fds 0, 1 and 2 by the three the supervisor sends on
// fd 5: the command's stdin, stdout and stderr, which the early child
// could not be given when it was forked. The plan cache's run may send
// the tasks files of the run's cgroups v1 with them (lim_joiners in
// fast_linux.c): pid 1 moves itself into each ("0": the writer), before
// anything of the sandbox runs, so all of it is a descendant there.
static void recv_stdio(struct child *c) {
	char byte;
	int fds[5], nfd, truncated;
	c->stage = "receive stdio";
	ssize_t n = recv_fds(5, &byte, 1, fds, 5, &nfd, &truncated);
	CHECK(c, n, "recvmsg");
	if (n != 1 || nfd < 3 || truncated) fail(c, EINVAL, "the supervisor sent no stdio", 125);
	for (int i = 3; i < nfd; i++) {
		c->layer = "limits";
		c->stage = "join the limits' cgroup";
		CHECK(c, write(fds[i], "0", 1) == 1 ? 0 : -1, "cgroup tasks");
		close(fds[i]);
	}
	c->stage = "receive stdio";
	for (int i = 0; i < 3; i++) {
		CHECK(c, dup2(fds[i], i), "dup2 stdio");
		close(fds[i]);
	}
}

// early_pid1 is pid 1 of an early child: it takes the header the
// supervisor sends once it has decided, maps the caller's ids, takes the
// command's stdio and goes on with the plan like any pid 1.
static void __attribute__((noreturn)) early_pid1(struct child *c) {
	uint8_t header[PLAN_HEADER_SIZE];
	read_header(c, header);
	uint64_t flags = get_u64(c);
	uint32_t in_uid = get_u32(c), out_uid = get_u32(c), in_gid = get_u32(c), out_gid = get_u32(c);
	c->layer = "userns";
	c->stage = "create namespaces";
	if (flags != JAIL_EARLY_FLAGS) fail(c, EINVAL, "the plan asks for other namespaces than the early child has", 125);
	write_id_maps(c, in_uid, out_uid, in_gid, out_gid);
	recv_stdio(c);
	c->layer = "mount";
	c->stage = "read plan";
	run_body(c);
}

// signal_masks reads the signals that are not at their default (SigIgn,
// SigCgt) from /proc/self/status, so reset_signals resets only those:
// three system calls instead of two per signal, on the early child's way
// to the namespaces.
static int signal_masks(uint64_t *ign, uint64_t *cgt) {
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0) return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) return -1;
	buf[n] = 0;
	char *i = strstr(buf, "\nSigIgn:\t"), *c = strstr(buf, "\nSigCgt:\t");
	if (!i || !c) return -1;
	*ign = strtoull(i + 9, NULL, 16);
	*cgt = strtoull(c + 9, NULL, 16);
	return 0;
}

// reset_signals gives a process forked before the Go runtime the signal
// state an exec'd init gets from os.StartProcess: every signal at its
// default, except SIGHUP and SIGINT when the caller ignored them (as the
// Go runtime keeps them), and nothing blocked. Whatever the caller set (an
// ignored SIGCHLD would make pid 1 wait for ever) stops here.
void reset_signals(void) {
	uint64_t ign = 0, cgt = 0;
	int known = signal_masks(&ign, &cgt) == 0;
	for (int sig = 1; sig < NSIG && sig <= 64; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP) continue;
		uint64_t bit = 1ULL << (sig - 1);
		if (known) {
			if (!((ign | cgt) & bit)) continue;
			if ((sig == SIGHUP || sig == SIGINT) && (ign & bit)) continue;
		} else {
			struct sigaction old;
			if (sigaction(sig, NULL, &old) < 0) continue;
			if ((sig == SIGHUP || sig == SIGINT) && old.sa_handler == SIG_IGN) continue;
		}
		signal(sig, SIG_DFL);
	}
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

// forget_caller wipes the caller's environment and command line from a
// copy of the supervisor's memory made before the Go runtime started: pid
// 1 has no use for them, and the command could read /proc/1/cmdline; an
// exec'd init has neither. The strings are contiguous, so the init's name
// takes the place of the arguments.
void forget_caller(int argc, char **argv, char **envp) {
	for (char **e = envp; e && *e; e++) memset(*e, 0, strlen(*e));
	char *a0 = argv[0], *aend = argv[argc - 1] + strlen(argv[argc - 1]);
	memset(a0, 0, aend - a0);
	if (aend - a0 >= (ptrdiff_t)sizeof(CHILD_ARG0)) memcpy(a0, CHILD_ARG0, sizeof(CHILD_ARG0));
	prctl(PR_SET_NAME, CHILD_ARG0, 0, 0, 0);
}

// lift_fd copies fd above 5, so that placing descriptors on 0-5 cannot
// overwrite one of them (fds the caller left open sit anywhere, these
// included).
int lift_fd(int fd) { return fcntl(fd, F_DUPFD, 6); }

static void __attribute__((noreturn)) early_child(pid_t parent, int plan, int status, int sock, int argc, char **argv, char **envp) {
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent) _exit(125);
	setpgid(0, 0);
	forget_caller(argc, argv, envp);
	reset_signals();
	int p = lift_fd(plan), s = lift_fd(status), k = lift_fd(sock);
	if (p < 0 || s < 0 || k < 0 || dup2(p, 3) < 0 || dup2(s, 4) < 0 || dup2(k, 5) < 0) _exit(125);
	// Only 0-5 stay open, as in an exec'd init; 0-2 are replaced by
	// recv_stdio.
	if (close_from(6, 0) < 0) _exit(125);
	struct child c;
	init_child(&c);
	c.layer = "userns";
	c.stage = "create namespaces";
	struct user_quotas q;
	read_user_quotas(&q);
	int err = unshare(JAIL_EARLY_FLAGS) < 0 ? errno : 0;
	const char *what = "unshare";
	if (!err && (err = write_user_quotas(&q))) what = "bound the user's inotify and fanotify quotas";
	if (err) {
		// Reported once the supervisor has sent its header, which is
		// when it reads reports.
		uint8_t header[PLAN_HEADER_SIZE];
		read_full(&c, header, sizeof(header));
		c.layer = "userns";
		c.stage = "create namespaces";
		fail(&c, err, what, 125);
	}
	fork_pid1(&c); // returns in pid 1 only
	early_pid1(&c);
}

void early_start(int argc, char **argv, char **envp) {
	int plan[2], status[2], sock[2];
	if (pipe2(plan, O_CLOEXEC) < 0) return;
	if (pipe2(status, O_CLOEXEC) < 0) goto close_plan;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock) < 0) goto close_status;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) early_child(parent, plan[0], status[1], sock[1], argc, argv, envp);
	if (pid < 0) goto close_sock;
	close(plan[0]);
	close(status[1]);
	close(sock[1]);
	early = (struct jail_early){.pid = pid, .plan = plan[1], .status = status[0], .sock = sock[0]};
	return;
close_sock:
	close(sock[0]);
	close(sock[1]);
close_status:
	close(status[0]);
	close(status[1]);
close_plan:
	close(plan[0]);
	close(plan[1]);
}
