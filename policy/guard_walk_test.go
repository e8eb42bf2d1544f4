package policy

import (
	"fmt"
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

// deepInputs are lines at the guard's bounds, and past them: each nests
// or repeats one construct n times.
func deepInputs(n int) map[string]string {
	rep := func(open, mid, close string) string {
		return strings.Repeat(open, n) + mid + strings.Repeat(close, n)
	}
	return map[string]string{
		"if":           rep("if true; then ", "ls", "; fi"),
		"while":        rep("while true; do ", "ls", "; done"),
		"case":         rep("case x in x) ", "ls", ";; esac"),
		"subshell":     rep("(", "ls", ")"),
		"quoted-close": rep("( echo ')'; ", "ls", ")"),
		"cmdsubst":     rep("echo $(", "ls", ")"),
		"brace":        rep("{ ", "ls", "; }"),
		"sequence":     rep("ls; ", "ls", ""),
		"and":          rep("ls && ", "ls", ""),
		"pipeline":     rep("cat f | ", "wc -l", ""),
		"sql-pipe":     rep("echo x | psql | ", "ls", ""),
	}
}

// TestGuardBounds: every input past a bound is refused as unparseable,
// naming the bound, whatever construct it repeats or nests (a ")" in
// quotes, a comment or a case pattern cannot hide a level), and a text
// parsed again and again (eval of a session variable) counts each time.
func TestGuardBounds(t *testing.T) {
	g := testGuard(t, GuardConfig{})
	for name, line := range deepInputs(maxOpens + 1) {
		r := g.Check(line)
		if r.Level != GuardHard || !slices.ContainsFunc(r.Hits, func(h GuardHit) bool { return h.ID == GuardUnparseable }) || !strings.Contains(r.Reason(), "the guard") {
			t.Errorf("%s past the bounds: %s %+v", name, r.Level, r.Hits)
		}
		if len(r.Hits) > 0 && len(r.Hits[0].Command) > 300 {
			t.Errorf("%s: the hit quotes %d bytes", name, len(r.Hits[0].Command))
		}
	}
	for name, line := range deepInputs(100) {
		if r := g.Check(line); r.Level == GuardHard {
			t.Errorf("%s within the bounds: %+v", name, r.Hits)
		}
	}
	big := strings.Repeat("ls; ", 1<<18) // 1 MiB, 262144 commands
	sh := &Shell{Cwd: "/w", Env: []string{"S=" + strings.Repeat("echo x; ", 1<<17)}}
	for _, line := range []string{big, strings.Repeat(`eval "$S"; `, 20)} {
		if r := g.CheckIn(line, sh); r.Level != GuardHard || !strings.Contains(r.Reason(), "for the guard to read") {
			t.Errorf("%.40q...: %s %s", line, r.Level, r.Reason())
		}
	}
	// A here-document of code with some thousand brackets is read.
	doc := "cat > a.json <<'EOF'\n" + strings.Repeat(`{"a": [1, 2, {"b": "c"}]},`+"\n", 2000) + "EOF\n"
	if r := g.Check(doc); r.Level == GuardHard {
		t.Errorf("a here-document of 6000 brackets: %+v", r.Hits)
	}
}

// BenchmarkGuardBounds is the guard's cost on the worst lines it reads:
// each construct repeated or nested up to the bounds (maxOpens,
// maxCommands), and past them, refused before the parse.
func BenchmarkGuardBounds(b *testing.B) {
	g := testGuard(b, GuardConfig{})
	for _, n := range []int{1000, maxOpens / 2, maxOpens + 1} {
		for name, line := range deepInputs(n) {
			b.Run(fmt.Sprintf("%s-%d", name, n), func(b *testing.B) {
				for b.Loop() {
					g.Check(line)
				}
			})
		}
	}
}
