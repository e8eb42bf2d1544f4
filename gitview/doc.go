// Package gitview decides how the workspace's git directories look inside
// a sandbox, and brings back what the sandbox changed in them once it has
// ended.
//
// A git directory is code the host runs later: its hooks, the programs
// its config names, the directories its commondir and gitfiles point to.
// So the sandbox never writes the host's git directory. It sees an
// overlay instead: the host's directory, objects/ included, as the
// read-only lower layer and a private upper directory in jail's state
// directory (outside every sandbox's view). Objects are not bound live:
// git does not check an object's hash when it reads one for a checkout,
// so an object rewritten in place would reach the host's work tree. The
// overlay's root is a mountpoint, so .git can be neither renamed nor
// removed.
//
// When the sandbox (its whole pid namespace) has ended, the supervisor
// adopts the upper with package gitstate: new objects verified by git as
// from an untrusted remote, then refs, HEAD, the index (without flags or
// extensions that hide changes), logs and config keys that run nothing,
// three-way against the state taken at launch; everything else is
// dropped and named. An upper whose objects were refused is kept aside
// as kept-RUN and not tried again. A run that ended before its upper was
// adopted (jail killed) leaves it in the state directory with a record of
// its launch walk. The run's guardian (guard_linux.go), a process in a
// session of its own, adopts it and reduces the repositories that run's
// sandbox made in subdirectories once the sandbox is gone; when the
// guardian was killed too, the next run in that workspace (or jail clean,
// Clean) does, before its own walk.
//
// Runs at once in one workspace, or in nested workspaces: every change
// the end of a run makes in the host tree (moving a protected name aside,
// reducing a repository) claims the entry first (confine.Claim), since a
// rename or a removal would take another live run's mount on it along.
// One a live run holds is recorded as pending (pending_linux.go) and
// finished by the last run out, the next launch or jail clean
// (ReducePending).
//
// A --rw tree that is a repository gets a view of its own, made as the
// workspace's (Trees, Options.Tree; rwtrees_linux.go).
//
// docs/git.md has the threat model and the guarantee.
package gitview
