package gitstate

import (
	"fmt"
	"strings"

	"github.com/jail-sandbox/jail/termtext"
)

// Report says what an adoption did. Every string in it is safe to print:
// names the sandbox chose are escaped when the entry is made.
type Report struct {
	Applied   []string // what reached the host's git directory
	Dropped   []string // what did not, each with its reason
	Conflicts []string // changed on both sides: the host's kept, where the sandbox's went
	// Held are refs not moved because the sandbox's new commits add or
	// change files the host's tools run code from (Options.Hold): each
	// names the ref, the paths, where the sandbox's value is kept and the
	// commands to review and take it.
	Held []string
	// Incomplete is set when objects the sandbox wrote were refused
	// (invalid, or their stream failed git's checks): refs naming them
	// were not adopted, and the caller keeps the sandbox's copy aside.
	Incomplete bool
	// Worktrees are the .git gitfiles (absolute paths) of the linked
	// worktrees adopted: the caller's reduction of gitfiles the sandbox
	// made leaves them.
	Worktrees []string

	// notable is set by an applied change that the user must hear of even
	// though it is applied: a key of the host's repository config the
	// sandbox changed (a remote the host's push may use from now on), a
	// linked worktree it added.
	notable bool
}

func (r *Report) applied(format string, a ...any) {
	r.Applied = append(r.Applied, fmt.Sprintf(format, a...))
}
func (r *Report) appliedNotable(format string, a ...any) {
	r.applied(format, a...)
	r.notable = true
}
func (r *Report) dropped(format string, a ...any) {
	r.Dropped = append(r.Dropped, fmt.Sprintf(format, a...))
}
func (r *Report) conflict(format string, a ...any) {
	r.Conflicts = append(r.Conflicts, fmt.Sprintf(format, a...))
}
func (r *Report) held(format string, a ...any) {
	r.Held = append(r.Held, fmt.Sprintf(format, a...))
}

// Empty reports whether nothing was applied, dropped or in conflict.
func (r *Report) Empty() bool {
	return len(r.Applied) == 0 && len(r.Dropped) == 0 && len(r.Conflicts) == 0 && len(r.Held) == 0
}

// Notable reports whether the adoption holds something a user must hear
// of: dropped, conflicting or held items, or an applied change to the
// host's repository config or worktrees. What else it applied (objects,
// refs, reflogs, the index) is what the user's own git commands did.
func (r *Report) Notable() bool {
	return r.notable || len(r.Dropped) > 0 || len(r.Conflicts) > 0 || len(r.Held) > 0
}

// Summary is one line for a terminal: counts, and the first few dropped
// and conflicting items (the ones a user must know about).
func (r *Report) Summary() string {
	if r.Empty() {
		return "git: nothing to adopt"
	}
	var b strings.Builder
	b.WriteString("git:")
	list := func(label string, items []string) {
		if len(items) == 0 {
			return
		}
		const show = 3
		if b.Len() > len("git:") {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s %d (", label, len(items))
		for i, s := range items {
			if i == show {
				fmt.Fprintf(&b, "; %d more", len(items)-show)
				break
			}
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(s)
		}
		b.WriteString(")")
	}
	// What was applied is named too: a bare count ("adopted 1") told nobody that it was the
	// index a git status refreshed, or which refs moved.
	list("adopted", r.Applied)
	list("dropped", r.Dropped)
	list("conflicts", r.Conflicts)
	if len(r.Held) > 0 {
		if b.Len() > len("git:") {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " held %d (refs whose new commits change files the host runs code from; each on a line below)", len(r.Held))
	}
	// Entries are escaped when made; this is the last line of defence for
	// a caller that appended its own.
	return strings.Map(func(c rune) rune {
		if c != '\\' && termtext.Escape(string(c)) != string(c) {
			return '?'
		}
		return c
	}, b.String())
}
