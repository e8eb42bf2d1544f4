// Which program this process is, decided before the Go runtime starts
// (ARCHITECTURE.md, "One binary, several programs"): the constructor runs
// first in every process of the jail binary, as runc's nsexec does, and
// never returns when the process is a sandbox's init. The roles live in
// one file each (child_linux.h lists them).

//go:build linux && cgo

#include "child_linux.h"
#include "gitguard_linux.h"

static int is_child(int argc, char **argv) {
	struct stat st;
	return argc == 1 && argv && argv[0] && !strcmp(argv[0], CHILD_ARG0) && fstat(3, &st) == 0 && S_ISFIFO(st.st_mode);
}

// child_main is a sandbox's init with its descriptors in place (0-2 the
// command's stdio, 3 the plan, 4 the reports, 5 the sockets), whether it
// was exec'd or forked by the zygote.
void __attribute__((noreturn)) child_main(void) {
	struct child c;
	init_child(&c);
	// The header comes first and alone: the namespaces are created while
	// the supervisor still prepares the rest (Cmd.Prestart).
	uint8_t header[PLAN_HEADER_SIZE];
	read_header(&c, header);
	op_unshare(&c); // returns in pid 1 only
	c.layer = "mount";
	c.stage = "read plan";
	run_body(&c);
}

// stdio_open makes sure descriptors 0-2 are open (on /dev/null if the
// caller closed them), as the Go runtime does: the pipes made here must not
// take their numbers, or the supervisor would later treat a pipe to the
// sandbox's init as its own stdout.
static int stdio_open(void) {
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
		int n = open("/dev/null", O_RDWR);
		if (n != fd) {
			if (n >= 0) close(n);
			return -1;
		}
	}
	return 0;
}

// jail_child_main runs before the Go runtime. It returns (to let Go start)
// only when this process is not a sandbox's init.
__attribute__((constructor)) static void jail_child_main(int argc, char **argv, char **envp) {
	if (is_child(argc, argv)) child_main();
	if (argc < 2 || stdio_open() < 0) return;
	jail_git_guard_main(argc, argv, envp); // returns unless it is the guardian
	if (argc >= 2 && !strcmp(argv[1], "run")) {
		early_start(argc, argv, envp);
		jail_fast_run(argc, argv, envp);
	}
	if (argc >= 2 && (!strcmp(argv[1], "serve") || !strcmp(argv[1], "mcp"))) zygote_start(argc, argv, envp);
}
