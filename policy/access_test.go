package policy

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func grantedNames(ts *Toolset) []string {
	var names []string
	for _, d := range ts.Granted {
		names = append(names, d.Tool.Name)
	}
	return names
}

// TestAccessLevelsResolve loads each level and checks what it expands to, the toolset it
// resolves to and how the gate then decides representative calls.
func TestAccessLevelsResolve(t *testing.T) {
	ctx := context.Background()
	type call struct {
		c    Call
		ok   bool
		step string
	}
	cases := []struct {
		level     string
		wsRO      bool
		net       string
		profile   string
		granted   []string
		calls     []call
		expansion int
	}{
		{LevelSandboxed, true, NetNone, ProfileMinimal, []string{"read", "ls", "glob", "grep"}, []call{
			{Call{Tool: "read"}, true, "auto-risk"},
			{Call{Tool: "write"}, false, "toolset"},
			{bashCall("ls"), false, "toolset"},
		}, 6},
		{LevelRestricted, false, NetNone, ProfileCoding, []string{"read", "ls", "glob", "grep", "write", "edit", "bash", "bash_output", "bash_kill"}, []call{
			{bashCall("ls -la"), true, "auto-approve"},
			{Call{Tool: "write"}, true, "auto-risk"},
			{bashCall("git push"), false, "ask"},
			{bashCall("npm install left-pad"), false, "ask"},
			{bashCall("go test ./..."), false, "ask"},
		}, 6},
		{LevelStandard, false, NetNone, ProfileCoding, []string{"read", "ls", "glob", "grep", "write", "edit", "bash", "bash_output", "bash_kill"}, []call{
			{bashCall("go test ./... && go vet ./..."), true, "auto-approve"},
			{bashCall("git add -A && git commit -m x"), true, "auto-approve"},
			{bashCall("git push"), false, "ask"},
			{bashCall("npm publish"), false, "ask"},
			{bashCall("python tool.py"), false, "ask"},
		}, 5},
		{LevelCustom, false, NetNone, ProfileCoding, []string{"read", "ls", "glob", "grep", "write", "edit", "bash", "bash_output", "bash_kill"}, []call{
			{bashCall("go test ./..."), false, "ask"},
		}, 0},
	}
	for _, c := range cases {
		p := mustLoad(t, "[access]\nlevel = \""+c.level+"\"\n")
		if p.Sandbox.WorkspaceRO != c.wsRO || p.Network.Mode != c.net || p.Tools.Profile != c.profile || len(p.Access.Expanded) != c.expansion {
			t.Errorf("%s: ws_ro=%v net=%s profile=%s expanded=%v", c.level, p.Sandbox.WorkspaceRO, p.Network.Mode, p.Tools.Profile, p.Access.Expanded)
		}
		g, err := NewGate(p, Catalogue(), Subject{}, "/home/alice", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := grantedNames(g.Toolset); !slices.Equal(got, c.granted) {
			t.Errorf("%s: granted %v, want %v", c.level, got, c.granted)
		}
		if g.Toolset.WorkspaceReadOnly != c.wsRO {
			t.Errorf("%s: toolset workspace read-only = %v", c.level, g.Toolset.WorkspaceReadOnly)
		}
		for _, cl := range c.calls {
			d := g.Check(ctx, cl.c)
			if d.Allowed != cl.ok || d.Step != cl.step {
				t.Errorf("%s: %s %v: allowed=%v step=%s reason=%q", c.level, cl.c.Tool, cl.c.Args, d.Allowed, d.Step, d.Reason)
			}
		}
	}
	// custom is the same policy as no level at all.
	if mustLoad(t, "[access]\nlevel = \"custom\"\n").Hash() != mustLoad(t, "").Hash() {
		t.Error("custom changes the policy")
	}
	if d := func() ToolDecision {
		ts, _ := Resolve(mustLoad(t, "[access]\nlevel = \"sandboxed\"\n"), Catalogue(), Subject{})
		d, _ := ts.Lookup("write")
		return d
	}(); !strings.Contains(d.Reason, "workspace_ro") {
		t.Errorf("sandboxed write reason: %q", d.Reason)
	}
}

// TestAccessElevatedNeedsHuman checks that elevated asks a human once, at the first call,
// refuses without one, records the answer, and then decides with its broad approvals.
func TestAccessElevatedNeedsHuman(t *testing.T) {
	ctx := context.Background()
	p := mustLoad(t, "[access]\nlevel = \"elevated\"\n")
	if p.Tools.Profile != ProfileFull || p.Network.Mode != NetNone {
		t.Fatalf("elevated expanded to profile %s, network %s", p.Tools.Profile, p.Network.Mode)
	}
	newGate := func(a Asker) *Gate {
		g, err := NewGate(p, Catalogue(), Subject{}, "/home/alice", a)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	// Nobody to ask, or unattended: refused, and nothing recorded as a human answer.
	if d := newGate(nil).Check(ctx, bashCall("git status")); d.Allowed || d.Step != "access" || !strings.Contains(d.Reason, "no one to ask") || d.ElevationSource != "" {
		t.Errorf("no asker: %+v", d)
	}
	yes := &fakeAsker{answer: Answer{Approve: true}}
	g := newGate(yes)
	un := bashCall("git status")
	un.Unattended = true
	if d := g.Check(ctx, un); d.Allowed || d.Step != "access" || !strings.Contains(d.Reason, "nobody is there") || len(yes.asked) != 0 {
		t.Errorf("unattended: %+v (asked %d)", d, len(yes.asked))
	}
	// The first attended call asks; the human's approval is on that decision and its audit record.
	d := g.Check(ctx, bashCall("git push"))
	if !d.Allowed || d.Elevation != "approved" || d.ElevationSource != SourceHuman || len(yes.asked) != 1 || !strings.Contains(yes.asked[0].Reason, "elevated") {
		t.Fatalf("first call: %+v (asked %v)", d, yes.asked)
	}
	if rec := NewAuditRecord(time.Time{}, nil, bashCall("git push"), d, "h", 0); rec.Elevation != "approved" || rec.ElevationSource != SourceHuman {
		t.Errorf("audit record: %+v", rec)
	}
	// Later calls, through copies of the gate as the front ends make, do not ask again.
	gc := *g
	if d := gc.Check(ctx, bashCall("npm install && curl -fsS https://example.com")); !d.Allowed || d.Step != "auto-approve" || d.Elevation != "" || len(yes.asked) != 1 {
		t.Errorf("second call: %+v (asked %d)", d, len(yes.asked))
	}
	if d := gc.Check(ctx, bashCall("npm publish")); d.Step != "ask" || d.ApprovalSource != SourceHuman || len(yes.asked) != 2 {
		t.Errorf("publish still needs approval: %+v", d)
	}
	// A human's refusal sticks for the session.
	no := &fakeAsker{}
	g = newGate(no)
	if d := g.Check(ctx, Call{Tool: "read"}); d.Allowed || d.Elevation != "refused" || d.ElevationSource != SourceHuman {
		t.Errorf("refused: %+v", d)
	}
	if d := g.Check(ctx, Call{Tool: "read"}); d.Allowed || d.Step != "access" || len(no.asked) != 1 {
		t.Errorf("after refusal: %+v (asked %d)", d, len(no.asked))
	}
}

// TestAccessExplicitKeysWin checks that keys written in the file override the level's values and
// that the expansion says so.
func TestAccessExplicitKeysWin(t *testing.T) {
	p := mustLoad(t, "[access]\nlevel = \"sandboxed\"\n[tools]\nprofile = \"coding\"\n[approval]\nrequire_approval = [\"vcs\"]\n")
	if p.Tools.Profile != ProfileCoding || !slices.Equal(p.Approval.RequireApproval, []string{"vcs"}) || !p.Sandbox.WorkspaceRO {
		t.Errorf("override: %+v %+v", p.Tools, p.Approval)
	}
	var over []string
	for _, s := range p.Access.Expanded {
		if s.Overridden {
			over = append(over, s.Key)
		}
	}
	if !slices.Equal(over, []string{"tools.profile", "approval.require_approval"}) {
		t.Errorf("overridden: %v", over)
	}
	// workspace_ro still removes the writing tools from the coding profile.
	ts, _ := Resolve(p, Catalogue(), Subject{})
	if got := grantedNames(ts); !slices.Equal(got, []string{"read", "ls", "glob", "grep", "bash", "bash_output", "bash_kill"}) {
		t.Errorf("granted: %v", got)
	}
	if _, err := LoadBytes("p.toml", []byte("\n[access]\nlevel = \"root\"\n"), testEnv(t)); err == nil || !strings.Contains(err.Error(), "p.toml:3: access.level: unknown value \"root\"") {
		t.Errorf("unknown level: %v", err)
	}
}

// TestAccessProjectFile checks that a project file's level only tightens and cannot elevate.
func TestAccessProjectFile(t *testing.T) {
	dir := t.TempDir()
	env := Env{Home: "/home/alice", Workspace: dir}
	writeProject := func(t *testing.T, _ Env, body string) string { return writeFile(t, dir, ".jail/policy.toml", body) }
	base := mustLoad(t, "[access]\nlevel = \"standard\"\n")
	proj := writeProject(t, env, "[access]\nlevel = \"sandboxed\"\n")
	p, _, err := Tighten(base, proj, env)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Sandbox.WorkspaceRO || p.Tools.Profile != ProfileMinimal || p.Access.Level != LevelSandboxed {
		t.Errorf("sandboxed project: %+v %+v %q", p.Sandbox.WorkspaceRO, p.Tools.Profile, p.Access.Level)
	}
	proj = writeProject(t, env, "[access]\nlevel = \"elevated\"\n")
	p, ws, err := Tighten(base, proj, env)
	if err != nil {
		t.Fatal(err)
	}
	if p.Access.Level != LevelStandard || p.Tools.Profile != ProfileCoding || len(ws) != 1 || ws[0].Key != "access.level" {
		t.Errorf("elevated project: level %q profile %q widenings %v", p.Access.Level, p.Tools.Profile, ws)
	}
	// A user policy's read-only workspace cannot be reopened.
	ro := mustLoad(t, "[sandbox]\nworkspace_ro = true\n")
	proj = writeProject(t, env, "[sandbox]\nworkspace_ro = false\n")
	p, ws, _ = Tighten(ro, proj, env)
	if !p.Sandbox.WorkspaceRO || len(ws) != 1 {
		t.Errorf("workspace_ro reopened: %v %v", p.Sandbox.WorkspaceRO, ws)
	}
}
