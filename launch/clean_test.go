//go:build linux

package launch

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jail-sandbox/jail/home"
)

// TestCleanPicks pins which homes each form of `jail clean` removes, on
// real homes under a temporary root: -w its workspace's, --gone those of
// workspaces that no longer exist, --all every one, --dry-run none.
func TestCleanPicks(t *testing.T) {
	root := home.Root("/nonexistent", t.TempDir())
	live, gone, other := t.TempDir(), t.TempDir(), t.TempDir()
	for _, ws := range []string{live, gone, other} {
		if _, err := home.Open(root, ws); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	left := func() []string {
		es, err := home.List(root)
		if err != nil {
			t.Fatal(err)
		}
		var ws []string
		for _, e := range es {
			ws = append(ws, e.Workspace)
		}
		return ws
	}
	run := func(c Clean) (int, string, string) {
		c.HomesRoot, c.GitState = root, state
		var out, errb bytes.Buffer
		code := c.Main(&out, &errb)
		return code, out.String(), errb.String()
	}

	code, out, _ := run(Clean{Gone: true, DryRun: true})
	if code != 0 || !strings.Contains(out, "would remove") || !strings.Contains(out, gone+" (gone)") || strings.Contains(out, live) || strings.Contains(out, other) {
		t.Fatalf("--gone --dry-run: %d %q", code, out)
	}
	if n := len(left()); n != 3 {
		t.Fatalf("--dry-run removed something: %d homes left, want 3", n)
	}
	code, out, _ = run(Clean{Gone: true})
	if code != 0 || !strings.HasPrefix(out, "removed") || !strings.Contains(out, gone) {
		t.Fatalf("--gone: %d %q", code, out)
	}
	if ws := left(); len(ws) != 2 || strings.Contains(strings.Join(ws, " "), gone) {
		t.Fatalf("--gone left %v, want the homes of %s and %s", ws, live, other)
	}
	code, out, _ = run(Clean{Workspace: live})
	if code != 0 || !strings.Contains(out, live) || strings.Contains(out, other) || strings.Contains(out, "total") {
		t.Fatalf("-w: %d %q", code, out)
	}
	if ws := left(); len(ws) != 1 || ws[0] != other {
		t.Fatalf("-w %s left %v, want only %s", live, ws, other)
	}
	code, out, _ = run(Clean{Workspace: live})
	if code != 0 || out != "jail clean: "+live+" has no persistent home\n" {
		t.Fatalf("-w again: %d %q", code, out)
	}
	// Two homes print a total.
	if _, err := home.Open(root, live); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run(Clean{All: true, DryRun: true})
	if code != 0 || !strings.Contains(out, "total ") || !strings.Contains(out, "in 2 homes") {
		t.Fatalf("--all --dry-run: %d %q", code, out)
	}
	code, _, _ = run(Clean{All: true})
	if ws := left(); code != 0 || len(ws) != 0 {
		t.Fatalf("--all: %d, left %v", code, ws)
	}
	code, _, errs := run(Clean{Workspace: filepath.Join(gone, "nope")})
	if code != 2 || !strings.Contains(errs, "jail clean: workspace:") {
		t.Fatalf("-w of a missing directory: %d %q, want 2 and the workspace named", code, errs)
	}
}

// TestCleanCheck pins the flags that exclude each other.
func TestCleanCheck(t *testing.T) {
	for _, c := range []struct {
		c   Clean
		bad bool
	}{
		{Clean{}, false},
		{Clean{Workspace: "/x"}, false},
		{Clean{All: true}, false},
		{Clean{Gone: true, DryRun: true}, false},
		{Clean{All: true, Gone: true}, true},
		{Clean{All: true, Workspace: "/x"}, true},
		{Clean{Gone: true, Workspace: "/x"}, true},
	} {
		err := c.c.Check()
		if (err != nil) != c.bad || err != nil && !errors.Is(err, ErrCleanUsage) {
			t.Errorf("%+v: Check() = %v, want bad=%v", c.c, err, c.bad)
		}
		if c.bad {
			var out, errb bytes.Buffer
			if code := c.c.Main(&out, &errb); code != 2 || out.Len() != 0 {
				t.Errorf("%+v: Main = %d, %q; want 2 and nothing removed", c.c, code, out.String())
			}
		}
	}
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1.0K", 1536: "1.5K", 10 << 10: "10K", 3 << 30: "3.0G"} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
}
