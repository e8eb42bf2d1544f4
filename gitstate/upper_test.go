package gitstate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The sandbox removes refs/heads and makes it again: overlayfs marks the
// new directory opaque, and the host's loose branches under it are gone in
// the sandbox's view. Their deletion is adopted; the recreated one is set.
func TestAdoptOpaqueDirectory(t *testing.T) {
	r := newRepo(t)
	r.git("branch", "old1")
	r.git("branch", "old2")
	base := r.take()
	o := r.overlay()
	o.run(`c=$(git rev-parse main); rm -rf .git/refs/heads && mkdir .git/refs/heads && echo $c > .git/refs/heads/main && echo $c > .git/refs/heads/fresh`)
	rep := o.adopt(base, Options{RunID: "o"})
	if got := r.git("for-each-ref", "--format=%(refname)", "refs/heads"); got != "refs/heads/fresh\nrefs/heads/main\n" {
		t.Fatalf("host branches %q: %+v", got, rep)
	}
}

func TestAdoptLimits(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	o.run(`for i in $(seq 1 50); do git branch b$i; done`)
	rep := o.adopt(base, Options{RunID: "l", Limits: Limits{Entries: 20}})
	if len(rep.Applied) != 0 || !contains(rep.Dropped, "more than 20") {
		t.Fatalf("entry limit not enforced: %+v", rep)
	}
	if got := r.git("for-each-ref", "--format=%(refname)"); got != "refs/heads/main\n" {
		t.Fatalf("host refs: %q", got)
	}
	// One oversized file is dropped on its own; the rest is adopted.
	o2 := r.overlay()
	o2.run(`git branch small && head -c 5000 /dev/zero > .git/COMMIT_EDITMSG`)
	rep = o2.adopt(base, Options{RunID: "l2", Limits: Limits{FileBytes: 4096}})
	if !contains(rep.Dropped, "COMMIT_EDITMSG: 5000 bytes, over the limit") || r.rev("small") == "" {
		t.Fatalf("file limit: %+v", rep)
	}
}

// A hard link in the upper may be another file's inode (overlayfs copies
// up with one link; the sandbox made this one): never read.
func TestAdoptDropsHardLinks(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	o.run(`git branch linked && ln .git/refs/heads/linked .git/refs/heads/linked2`)
	rep := o.adopt(base, Options{RunID: "h"})
	if !contains(rep.Dropped, "refs/heads/linked: hard-linked") || r.rev("linked") != "" {
		t.Fatalf("hard link adopted: %+v", rep)
	}
}

func TestSummaryEscapes(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	o.run(`printf x > "$(printf '.git/evil\033]0;pwned\007\033[2J')"`)
	rep := o.adopt(base, Options{RunID: "e"})
	s := rep.Summary()
	if strings.ContainsAny(s, "\x1b\x07") || !strings.Contains(s, `evil\x1b]0;pwned\x07\x1b[2J`) {
		t.Fatalf("summary not escaped: %q", s)
	}
	for _, d := range rep.Dropped {
		if strings.ContainsAny(d, "\x1b\x07") {
			t.Fatalf("report entry not escaped: %q", d)
		}
	}
}

func TestAdoptNothingChanged(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	o.run(`git log >/dev/null; git branch --list >/dev/null`)
	rep := o.adopt(base, Options{RunID: "n"})
	if len(rep.Applied) != 0 || len(rep.Conflicts) != 0 {
		t.Fatalf("%+v", rep)
	}
	t.Log(rep.Summary())
	if _, err := os.Stat(filepath.Join(r.gitdir(), "refs/jail")); err == nil {
		t.Fatal("refs/jail made without a conflict")
	}
}

// TestReportNotable: an adoption that only applied what the sandbox's git did (a commit, the
// index) is not notable; one that changed the host's repository config is, as is a drop.
func TestReportNotable(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	o := r.overlay()
	o.run(`git status >/dev/null`)
	if rep := o.adopt(base, Options{RunID: "q"}); rep.Notable() {
		t.Errorf("git status is notable: %s", rep.Summary())
	}
	base = r.take()
	o = r.overlay()
	o.run(`git config user.email inside@example.com`)
	if rep := o.adopt(base, Options{RunID: "c"}); !rep.Notable() {
		t.Errorf("a config key the sandbox set is not notable: %s", rep.Summary())
	}
}
