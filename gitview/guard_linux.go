//go:build linux

package gitview

import (
	"fmt"
	"os"
	"strconv"

	"github.com/jail-sandbox/jail/confine"
	"golang.org/x/sys/unix"
)

// A run's guardian finishes what the run does to git when jail is killed
// before its end (docs/git.md, "A run killed before its end"): a process
// in a session of its own (confine/gitguard_linux.c, C only, before any Go
// runtime), which a kill -9 of jail or of its process group does not
// reach. It holds the RUN directory's lock with the supervisor (the same
// open file), learns the sandbox's pid 1 from Started, and exits when
// Finish says "done". When the supervisor goes without saying it, the
// guardian waits for pid 1 to be gone and executes the adopter
// (AdoptMain, mode "meta"): the run's upper adopted, and the repositories
// its sandbox made in subdirectories reduced against the launch walk in
// the RUN directory's meta.

// startGuard starts the run's guardian, when the run has a RUN directory
// and a launch walk to reduce against. Without one (it could not be
// started), a run killed before its end is finished by the next run in
// the workspace or jail clean, as before.
func (r *Run) startGuard() {
	if r.dirfd < 0 || r.launch == nil {
		return
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return
	}
	defer pr.Close()
	key, err1 := unix.Dup(r.keyfd)
	run, err2 := unix.Dup(r.dirfd)
	if err1 != nil || err2 != nil {
		pw.Close()
		return
	}
	kf, rf := os.NewFile(uintptr(key), "key"), os.NewFile(uintptr(run), "run")
	defer kf.Close()
	defer rf.Close()
	p, err := os.StartProcess("/proc/self/exe", []string{"jail", confine.GuardCommand, r.opt.Workspace, r.name, strconv.FormatInt(r.t0, 10), "meta"}, &os.ProcAttr{
		Dir:   "/",
		Env:   os.Environ(),
		Files: []*os.File{pr, nil, os.Stderr, kf, rf},
		Sys:   &unix.SysProcAttr{Setsid: true},
	})
	if err != nil {
		pw.Close()
		return
	}
	go func() {
		// Lifetime: until the guardian exits, when Finish has said
		// "done" (or jail, and so this goroutine, ended).
		p.Wait()
	}()
	r.guard = pw
}

// Started tells the run's guardian the host pid of the sandbox's pid 1,
// which it waits for to be gone before it touches the git state of a run
// whose supervisor was killed.
func (r *Run) Started(pid1 int) {
	if r == nil || r.guard == nil || pid1 <= 0 {
		return
	}
	r.guard.WriteString("pid " + strconv.Itoa(pid1) + "\n")
}

// guardDone tells the guardian the run finished with its git state.
func (r *Run) guardDone() {
	if r.guard == nil {
		return
	}
	fmt.Fprint(r.guard, "done\n")
	r.guard.Close()
	r.guard = nil
}
