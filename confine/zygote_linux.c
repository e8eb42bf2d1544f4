// The zygote of `jail serve` and `jail mcp`: forked by the constructor
// before the Go runtime starts, it forks each sandbox's init on request
// (early_linux.go: zygoteFork).

//go:build linux && cgo

#include "child_linux.h"

// ---- zygote -----------------------------------------------------------------
//
// A process that starts many sandboxes (jail serve, jail mcp) has its
// constructor fork a zygote before the Go runtime starts: a small copy of
// the binary's pristine image that forks each sandbox's init on request,
// where an exec of the 11 MB static binary cost a millisecond or more per
// sandbox. The init is forked with CLONE_PARENT, so it is the supervisor's
// own child (waited for, and dying with it, as an exec'd one) and takes
// the same path as an exec'd init from then on.
//
// A request is one message on the zygote's socket: one byte, with the six
// descriptors of an exec'd init (stdin, stdout, stderr, plan, reports,
// sockets). The answer is the init's pid, or a negative errno.

static int zygote = -1;
static pthread_mutex_t zygote_mu = PTHREAD_MUTEX_INITIALIZER;

// The zygote answers at once; one that does not within this long (stopped,
// say) is given up, and every later init is exec'd.
#define ZYGOTE_ANSWER_MS 5000

int jail_send_fds(int sock, const int *fds, int n) {
	char byte = 0;
	char oob[CMSG_SPACE(8 * sizeof(int))];
	if (n < 1 || n > 8) {
		errno = EINVAL;
		return -1;
	}
	memset(oob, 0, sizeof(oob));
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = oob, .msg_controllen = CMSG_SPACE(n * sizeof(int))};
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(h), fds, n * sizeof(int));
	ssize_t k;
	do k = sendmsg(sock, &m, MSG_NOSIGNAL); while (k < 0 && errno == EINTR);
	return k == 1 ? 0 : -1;
}

int jail_zygote_fork(const int fds[6]) {
	int answer = 0;
	pthread_mutex_lock(&zygote_mu);
	if (zygote < 0) {
		pthread_mutex_unlock(&zygote_mu);
		return -ENOSYS;
	}
	ssize_t n;
	if (jail_send_fds(zygote, fds, 6) < 0) {
		// Nothing was forked: the caller execs the init instead.
		close(zygote);
		zygote = -1;
		pthread_mutex_unlock(&zygote_mu);
		return -ENOSYS;
	}
	struct pollfd pfd = {.fd = zygote, .events = POLLIN};
	int ready;
	do ready = poll(&pfd, 1, ZYGOTE_ANSWER_MS); while (ready < 0 && errno == EINTR);
	n = 0;
	if (ready == 1) {
		do n = recv(zygote, &answer, sizeof(answer), 0); while (n < 0 && errno == EINTR);
	}
	if (n != sizeof(answer)) {
		// The request was taken and an init may exist, holding these
		// descriptors: this start fails (its pipes are closed, so such an
		// init ends), and the zygote is not asked again.
		close(zygote);
		zygote = -1;
		answer = -EIO;
	}
	pthread_mutex_unlock(&zygote_mu);
	return answer;
}

// zygote_child runs in a child made by a raw clone, which skips glibc's
// fork bookkeeping: the thread descriptor keeps the zygote's tid. Nothing
// on the init's path reads it with glibc (getpid and raise ask the kernel,
// vfork is a plain system call, fork_pid1's fork rewrites it, and the
// process has one thread, so no lock is contended); a C library that
// caches the tid (musl's raise) would need a fork here.
static void __attribute__((noreturn)) zygote_child(int fds[6]) {
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	prctl(PR_SET_NAME, CHILD_ARG0, 0, 0, 0);
	setpgid(0, 0);
	int lifted[6];
	for (int i = 0; i < 6; i++)
		if ((lifted[i] = lift_fd(fds[i])) < 0) _exit(125);
	for (int i = 0; i < 6; i++)
		if (dup2(lifted[i], i) < 0) _exit(125);
	if (close_from(6, 0) < 0) _exit(125);
	child_main();
}

static void __attribute__((noreturn)) zygote_main(pid_t parent, int sock, int argc, char **argv, char **envp) {
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent) _exit(0);
	forget_caller(argc, argv, envp);
	reset_signals();
	prctl(PR_SET_NAME, "jail-zygote", 0, 0, 0);
	// Its own process group: the terminal's ^C and ^Z are the
	// supervisor's to act on, not the zygote's to die or stop of.
	setpgid(0, 0);
	// Nothing of the caller's stays open here: not its terminal, not its
	// descriptors. The socket moves to 3.
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	int s = lift_fd(sock);
	if (null < 0 || s < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0 || dup2(s, 3) < 0) _exit(125);
	if (close_from(4, 0) < 0) _exit(125);
	for (;;) {
		char byte;
		int fds[6], nfd, truncated;
		ssize_t n = recv_fds(3, &byte, 1, fds, 6, &nfd, &truncated);
		if (n <= 0) _exit(0); // the supervisor is gone
		int answer = -EINVAL;
		if (nfd == 6 && !truncated) {
			pid_t pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
			if (pid == 0) {
				close(3);
				zygote_child(fds);
			}
			answer = pid < 0 ? -errno : pid;
		}
		for (int i = 0; i < nfd; i++) close(fds[i]);
		while (send(3, &answer, sizeof(answer), MSG_NOSIGNAL) < 0 && errno == EINTR)
			;
	}
}

void zygote_start(int argc, char **argv, char **envp) {
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) return;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) zygote_main(parent, sv[1], argc, argv, envp);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		return;
	}
	zygote = sv[0];
}
