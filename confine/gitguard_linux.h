// The guardian of a run's git state (gitguard_linux.c), started by both
// supervisors: the plan cache's run forks it, the Go supervisor executes
// it (gitview.Run, GuardCommand in gitguard_linux.go).

#ifndef JAIL_GITGUARD_LINUX_H
#define JAIL_GITGUARD_LINUX_H

// The hidden commands of the guardian and of the Go adopter it executes
// (GuardCommand and AdoptCommand in Go).
#define JAIL_GUARD_COMMAND "__git-guard"
#define JAIL_ADOPT_COMMAND "__git-adopt"

// jail_git_guard_main is the guardian the Go supervisor executes
// (jail __git-guard WS RUN LAUNCH-NS MODE, the supervisor's lines on descriptor 0,
// the state directory on 3 and the locked RUN directory on 4); it returns
// only when argv is not that.
void jail_git_guard_main(int argc, char **argv, char **envp);

// jail_git_guard_fork forks the guardian of the RUN directory run (held
// locked on runfd, beneath keyfd) of the workspace ws, begun at t0 (unix
// ns, in decimal), whose sandbox's pid 1 is pid1, and returns the descriptor the supervisor writes "done\n" to
// when it finished (close-on-exec), or -1. mode is the adopter's:
// "cached" (a plan made where no repository lay below the root) or
// "meta" (reduce against the launch walk the RUN directory records).
// argc and argv are the process's arguments, which the guardian's
// command line is written over.
int jail_git_guard_fork(int keyfd, int runfd, const char *ws, const char *run, const char *t0, const char *mode, int pid1, int argc, char **argv,
                        char **envp);

#endif
