package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestAlwaysReachesGrantsFile: a human's "always" is saved to
// approval.grants_file, so a later session (a new gate from the same
// policy) passes the same call without asking; a copy of the gate (what
// the front ends make per call) shares it at once.
func TestAlwaysReachesGrantsFile(t *testing.T) {
	dir := t.TempDir()
	grants := filepath.Join(dir, "grants.json")
	if err := os.WriteFile(grants, []byte(`[{"tool":"edit"}]`), 0o640); err != nil {
		t.Fatal(err)
	}
	body := "[approval]\ngrants_file = \"" + grants + "\"\n"
	a := &fakeAsker{answer: Answer{Approve: true, Remember: true}}
	g := gate(t, body, a)
	per := *g // a front end's per-call copy
	d := per.Check(context.Background(), bashCall("make deploy"))
	if !d.Allowed || !strings.Contains(d.Reason, "saved to approval.grants_file") {
		t.Fatalf("approved with always: %+v", d)
	}
	if len(a.asked) != 1 || a.asked[0].GrantsFile != grants {
		t.Fatalf("question %+v: does not say where always goes", a.asked)
	}
	if d := g.Check(context.Background(), bashCall("make deploy")); !d.Allowed || d.Step != "grant" || len(a.asked) != 1 {
		t.Fatalf("the session's gate asked again: %+v (asked %d)", d, len(a.asked))
	}
	st, err := os.Stat(grants)
	if err != nil || st.Mode().Perm() != 0o640 {
		t.Fatalf("grants file mode not kept: %v %v", st.Mode(), err)
	}
	later := gate(t, body, nil) // nobody to ask
	if d := later.Check(context.Background(), bashCall("make deploy")); !d.Allowed || d.Step != "grant" {
		t.Fatalf("a later session does not see the saved grant: %+v", d)
	}
	if d := later.Check(context.Background(), Call{Tool: "edit", Args: map[string]any{}}); !d.Allowed {
		t.Fatalf("the grant already in the file was lost: %+v", d)
	}
	if d := later.Check(context.Background(), bashCall("make deploy-prod")); d.Allowed {
		t.Fatalf("a grant for another command applied: %+v", d)
	}
}

// TestSaveGrant: concurrent saves lose nothing, a new file is 0600, no
// temporary file is left, a symlink in the file's place is not followed,
// and the same grant is not repeated.
func TestSaveGrant(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "grants.json")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := SaveGrant(path, Grant{Tool: "bash", Command: fmt.Sprint("make ", i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	SaveGrant(path, Grant{Tool: "bash", Command: "make 3"})
	gs, err := LoadGrants(path)
	if err != nil || len(gs) != 8 {
		t.Fatalf("%d grants after 8 saves and one repeat: %v %+v", len(gs), err, gs)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("new grants file mode %v", st.Mode())
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Fatalf("left in the directory: %v", ents)
	}
	target := filepath.Join(dir, "elsewhere.json")
	os.WriteFile(target, []byte("[]"), 0o600)
	link := filepath.Join(dir, "link.json")
	os.Symlink(target, link)
	if err := SaveGrant(link, Grant{Tool: "bash", Command: "x"}); err == nil {
		t.Fatal("saved through a symlink")
	}
	if b, _ := os.ReadFile(target); string(b) != "[]" {
		t.Fatalf("the symlink's target changed: %s", b)
	}
	var back []Grant
	b, _ := os.ReadFile(path)
	if json.Unmarshal(b, &back) != nil {
		t.Fatalf("not a JSON array: %s", b)
	}
}

// TestTerminalAskerOffersAlwaysOnlyWhenItLasts: without a grants file
// the prompt does not offer "always".
func TestTerminalAskerOffersAlwaysOnlyWhenItLasts(t *testing.T) {
	for _, file := range []string{"", "/home/alice/.config/jail/grants.json"} {
		r, w, _ := os.Pipe()
		w.WriteString("y\n")
		var out strings.Builder
		if _, err := (&TerminalAsker{In: r, Out: &out}).Ask(context.Background(), Question{Tool: "bash", GrantsFile: file}); err != nil {
			t.Fatal(err)
		}
		r.Close()
		w.Close()
		if offered := strings.Contains(out.String(), "[a]lways"); offered != (file != "") || file != "" && !strings.Contains(out.String(), file) {
			t.Errorf("grants file %q: prompt %q", file, out.String())
		}
	}
}
