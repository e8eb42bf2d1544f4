package policy

import (
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// recorder is a third visitor of the walk: what it is told is what the
// guard's rules and the action classifier are told.
type recorder struct{ commands, redirects, wrappers, unread []string }

func (r *recorder) command(c *call) { r.commands = append(r.commands, c.text) }
func (r *recorder) redirect(op syntax.RedirOperator, target string, _ bool) {
	r.redirects = append(r.redirects, op.String()+target)
}
func (r *recorder) pipeline([][]arg)   {}
func (r *recorder) wrapper(args []arg) { r.wrappers = append(r.wrappers, args[0].v) }
func (r *recorder) unreadable(_ unreadableKind, text, _ string) {
	r.unread = append(r.unread, text)
}

// TestWalkNested pins that every text a line hands to a shell is walked
// once, for every visitor: the command inside reaches the recorder, the
// guard (rm -rf / is a hard block) and the classifier (code:delete)
// alike, however it is nested.
func TestWalkNested(t *testing.T) {
	g := testGuard(t, GuardConfig{})
	for _, line := range []string{
		"rm -rf /",
		"sh -c 'rm -rf /'",
		"bash -ec 'rm -rf /'",
		"eval 'rm -rf /'",
		"trap 'rm -rf /' EXIT",
		"find . -exec rm -rf / \\;",
		"sed -n '1e rm -rf /' f",
		"awk 'BEGIN { system(\"rm -rf /\") }'",
		"git -c 'alias.x=!rm -rf /' x",
		"alias y='rm -rf'; y /",
		"sudo -u root rm -rf /",
		"env -S 'rm -rf /'",
		"su -c 'rm -rf /'",
		"watch -n 1 rm -rf /",
		"nice -n 5 timeout 3 xargs rm -rf /",
		"echo $(rm -rf /)",
	} {
		r := &recorder{}
		newWalk("/home/u", r).script(line, 0)
		if !slices.ContainsFunc(r.commands, func(c string) bool { return strings.HasPrefix(c, "rm -rf /") }) {
			t.Errorf("%q: the walk told %q, not rm -rf /", line, r.commands)
		}
		res := g.Check(line)
		if res.Level != GuardHard || !hasHit(res, GuardRmRoot, GuardHard) {
			t.Errorf("%q: guard %v %+v, want a hard %s", line, res.Level, res.Hits, GuardRmRoot)
		}
		if !slices.Contains(res.Actions, ActCodeDelete) {
			t.Errorf("%q: actions %v, want %s among them", line, res.Actions, ActCodeDelete)
		}
	}
}

// TestWalkEvents pins what else the visitors are told: redirections with
// their targets, the wrappers stripped, and what cannot be read.
func TestWalkEvents(t *testing.T) {
	r := &recorder{}
	newWalk("/home/u", r).script(`sudo nice make > "$HOME/out" 2>&1; sh -c "$X"; (`, 0)
	if len(r.unread) != 1 {
		t.Errorf("unreadable %q, want the line that does not parse", r.unread)
	}
	r = &recorder{}
	newWalk("/home/u", r).script(`sudo nice make > "$HOME/out" 2>&1; sh -c "$X"`, 0)
	if want := []string{">/home/u/out", ">&1"}; !slices.Equal(r.redirects, want) {
		t.Errorf("redirects %q, want %q", r.redirects, want)
	}
	if want := []string{"sudo", "nice"}; !slices.Equal(r.wrappers, want) {
		t.Errorf("wrappers %q, want %q", r.wrappers, want)
	}
	if want := []string{"make", "sh -c $?"}; !slices.Equal(r.commands, want) {
		t.Errorf("commands %q, want %q", r.commands, want)
	}
	if want := []string{"$?"}; !slices.Equal(r.unread, want) {
		t.Errorf("unreadable %q, want the script known only at run time", r.unread)
	}
}
