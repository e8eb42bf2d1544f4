package gitstate

import (
	"fmt"
	"strings"
	"time"
)

// Options tune an adoption.
type Options struct {
	// RunID names this run's conflict refs: refs/jail/<RunID>/<ref>. It
	// must be one valid ref name component; empty takes a time stamp.
	RunID string
	// Submodules are index paths of gitlinks (mode 160000) the index may
	// newly stage because jail adopted those repositories itself. Any
	// other new gitlink makes the index refused.
	Submodules []string
	// Hold, when set, is asked before a ref the sandbox moved is written
	// with the object ids it names (a commit; a tag and the commit it
	// peels to): it returns the work-tree paths of files the host's
	// tools run code from (hooks, editor and agent settings, ...) that
	// the commits new since launch add or change. A ref with any, or
	// whose commits could not be listed (err), is not moved: the
	// sandbox's value is kept as refs/jail/<RunID>/<ref> and named in
	// Report.Held, so the host's git restore, checkout or reset never
	// writes such a file from history it did not review.
	Hold func(oids []string) (paths []string, err error)
	// Protected, when set, reports whether an index entry staging the
	// blob oid at path is a file the host's tools run code from. An
	// index that stages such an entry the host's index did not have is
	// not adopted (the host's git restore would write it into the work
	// tree).
	Protected func(path, oid string) bool
	// Limits bound what is read from the sandbox's side.
	Limits Limits
	// Worktree, when set, judges a linked worktree the sandbox added (git
	// worktree add): name is its worktrees/<name>, gitfile the worktree's
	// .git as its gitdir file names it. It returns "" when the host sees
	// what the sandbox wrote there (the workspace) and the .git there is
	// the gitfile git wrote for it, else why the worktree is not adopted
	// (what the person is told). Without it, none is.
	Worktree func(name, gitfile string) string
	// Scratch, when above 0, is a directory descriptor in which the
	// adoption makes the git directory of the git it verifies the
	// sandbox's objects with (removed when done): private to the user
	// and in no sandbox's view, as jail's state directory is. Without
	// it, a private directory is made in the temporary directory.
	Scratch int
	// WorkTree, when above 0, is a descriptor of the repository's work
	// tree: an index entry the sandbox refreshed keeps its stat data when
	// the file there has that stat data and the entry's content (without
	// it, that stat data is cleared). A submodule's or a bare repository's
	// git directory has none.
	WorkTree int
}

func (o Options) runID() (string, error) {
	if o.RunID == "" {
		return time.Now().UTC().Format("20060102T150405.000000000Z"), nil
	}
	if strings.Contains(o.RunID, "/") || !validRefPath(o.RunID) {
		return "", fmt.Errorf("gitstate: run id %s is not a valid ref name component", esc(o.RunID))
	}
	return o.RunID, nil
}

// Limits bound what Adopt reads from a sandbox's upper directory. A zero
// field takes its default.
type Limits struct {
	Entries   int   // names in the upper, all directories together (default 100000)
	Bytes     int64 // bytes read from the upper in total (default 2 GiB)
	FileBytes int64 // size of any one file (default 1 GiB; refs and config have smaller fixed caps)
	Depth     int   // directory depth (default 64)
}

func (l Limits) withDefaults() Limits {
	if l.Entries <= 0 {
		l.Entries = 100000
	}
	if l.Bytes <= 0 {
		l.Bytes = 2 << 30
	}
	if l.FileBytes <= 0 {
		l.FileBytes = 1 << 30
	}
	if l.Depth <= 0 {
		l.Depth = 64
	}
	return l
}
