package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func names(ds []ToolDecision) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Tool.Name)
	}
	return out
}

func mustLoad(t testing.TB, body string) *Policy {
	t.Helper()
	p, err := LoadBytes("test.toml", []byte(body), Env{Home: "/home/alice", Workspace: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResolveGrantOutsideRemitIsUnavailable(t *testing.T) {
	p := mustLoad(t, `
[agents.rev]
role = "review"
grants = ["edit", "bash"]
denies = ["grep"]
`)
	ts, err := Resolve(p, Catalogue(), Subject{Agent: "rev"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(ts.Granted); !slices.Equal(got, []string{"read", "ls", "glob"}) {
		t.Errorf("granted = %v", got)
	}
	if got := names(ts.Unavailable); !slices.Equal(got, []string{"edit", "bash", "bash_output", "bash_kill"}) {
		t.Errorf("unavailable = %v", got)
	}
	d, _ := ts.Lookup("bash")
	if !strings.Contains(d.Reason, "outside the review role's remit") {
		t.Errorf("bash reason = %q", d.Reason)
	}
	if d, _ := ts.Lookup("grep"); d.Status != StatusDenied || !strings.Contains(d.Reason, "agents.rev.denies") {
		t.Errorf("grep = %+v", d)
	}
	if !ts.WorkspaceReadOnly {
		t.Error("review role must get a read-only workspace")
	}
	// Every registry tool lands in exactly one list.
	if n := len(ts.Granted) + len(ts.Denied) + len(ts.Unavailable); n != len(Catalogue()) {
		t.Errorf("%d decisions for %d tools", n, len(Catalogue()))
	}
}

func TestResolveDenyWinsOverGrant(t *testing.T) {
	p := mustLoad(t, "[agents.a]\nrole = \"build\"\ngrants = [\"web_fetch\"]\ndenies = [\"web_fetch\", \"bash\"]\n[network]\nmode = \"proxy\"\nallow = [\"api.example.org\"]\n[tools]\nalso_allow = [\"web_fetch\"]\n")
	ts, _ := Resolve(p, Catalogue(), Subject{Agent: "a"})
	for _, n := range []string{"web_fetch", "bash"} {
		if d, _ := ts.Lookup(n); d.Status != StatusDenied {
			t.Errorf("%s = %+v, want denied", n, d)
		}
	}
	p2 := mustLoad(t, "[agents.a]\nrole = \"build\"\ngrants = [\"web_fetch\"]\n[tools]\ndeny = [\"edit\"]\nalso_allow = [\"web_fetch\"]\n[network]\nmode = \"proxy\"\n")
	ts2, _ := Resolve(p2, Catalogue(), Subject{Agent: "a"})
	if d, _ := ts2.Lookup("web_fetch"); d.Status != StatusGranted {
		t.Errorf("grant inside remit with network = %+v", d)
	}
	if d, _ := ts2.Lookup("edit"); d.Status != StatusDenied || d.Reason != "denied by tools.deny" {
		t.Errorf("tools.deny over role default = %+v", d)
	}
}

func TestResolveNetworkNoneAndSecurityProfiles(t *testing.T) {
	p := mustLoad(t, "[tools]\nprofile = \"full\"\n[docker]\nenabled = true\n")
	ts, _ := Resolve(p, Catalogue(), Subject{})
	if d, _ := ts.Lookup("web_fetch"); d.Status != StatusDenied || !strings.Contains(d.Reason, "network.mode = none") {
		t.Errorf("web_fetch = %+v", d)
	}
	// The browser's requests are decided one by one by its egress, which under mode none
	// reaches only the session's own background servers (docs/browser.md).
	for _, n := range []string{"browser_navigate", "browser_click"} {
		if d, _ := ts.Lookup(n); d.Status != StatusGranted {
			t.Errorf("%s = %+v", n, d)
		}
	}
	pd := mustLoad(t, "[tools]\nprofile = \"full\"\nsecurity = \"daemon\"\n")
	ts, _ = Resolve(pd, Catalogue(), Subject{})
	if d, _ := ts.Lookup("bash"); d.Status != StatusDenied || !strings.Contains(d.Reason, "strips process.exec") {
		t.Errorf("daemon bash = %+v", d)
	}
	if d, _ := ts.Lookup("write"); d.Status != StatusGranted {
		t.Errorf("daemon write = %+v", d)
	}
	pp := mustLoad(t, "[tools]\nprofile = \"full\"\nsecurity = \"public\"\n")
	ts, _ = Resolve(pp, Catalogue(), Subject{})
	if got := names(ts.Granted); !slices.Equal(got, []string{"read", "ls", "glob", "grep"}) {
		t.Errorf("public granted = %v", got)
	}
	// A tool unknown to the static map is stripped by what it declares, not by its name.
	reg := append(Catalogue(), ToolInfo{Name: "mcp_shell", Risk: ReadOnly, Capabilities: []string{CapProcessExec}})
	ts, _ = Resolve(pd, reg, Subject{})
	if d, _ := ts.Lookup("mcp_shell"); d.Status != StatusDenied {
		t.Errorf("mcp_shell under daemon = %+v", d)
	}
}

func TestResolveProfiles(t *testing.T) {
	ts, _ := Resolve(mustLoad(t, "[tools]\nprofile = \"minimal\"\nalso_allow = [\"edit\"]\n"), Catalogue(), Subject{})
	if got := names(ts.Granted); !slices.Equal(got, []string{"read", "ls", "glob", "grep", "edit"}) {
		t.Errorf("minimal+edit = %v", got)
	}
	ts, _ = Resolve(mustLoad(t, "[tools]\nprofile = \"full\"\nallow = [\"grep\", \"read\"]\n"), Catalogue(), Subject{})
	if got := names(ts.Granted); !slices.Equal(got, []string{"read", "grep"}) {
		t.Errorf("allow is exclusive and registry-ordered: %v", got)
	}
	// The profile bounds roles too.
	ts, _ = Resolve(mustLoad(t, "[tools]\nprofile = \"minimal\"\n"), Catalogue(), Subject{Role: "build"})
	if d, _ := ts.Lookup("bash"); d.Status != StatusDenied || !strings.Contains(d.Reason, "profile minimal") {
		t.Errorf("build under minimal: bash = %+v", d)
	}
}

func TestResolveDeterministicAndRegistryOrdered(t *testing.T) {
	a := mustLoad(t, "[agents.x]\nrole = \"custom\"\ngrants = [\"grep\", \"bash\", \"read\"]\n")
	b := mustLoad(t, "[agents.x]\nrole = \"custom\"\ngrants = [\"read\", \"grep\", \"bash\"]\n")
	ta, _ := Resolve(a, Catalogue(), Subject{Agent: "x"})
	tb, _ := Resolve(b, Catalogue(), Subject{Agent: "x"})
	if !slices.Equal(names(ta.Granted), names(tb.Granted)) || !slices.Equal(names(ta.Granted), []string{"read", "grep", "bash", "bash_output", "bash_kill"}) {
		t.Errorf("%v vs %v", names(ta.Granted), names(tb.Granted))
	}
	// custom starts empty.
	ts, _ := Resolve(a, Catalogue(), Subject{Role: "custom"})
	if len(ts.Granted) != 0 {
		t.Errorf("custom role granted %v", names(ts.Granted))
	}
}

func TestResolveUserRoleAndRisk(t *testing.T) {
	p := mustLoad(t, "[roles.docs]\nremit = [\"fs.read\", \"fs.write\"]\nmax_risk = \"write\"\ndefaults = [\"read\", \"write\"]\n[agents.d]\nrole = \"docs\"\ngrants = [\"bash\"]\n")
	ts, err := Resolve(p, Catalogue(), Subject{Agent: "d"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(ts.Granted); !slices.Equal(got, []string{"read", "write"}) {
		t.Errorf("docs granted = %v", got)
	}
	if d, _ := ts.Lookup("bash"); d.Status != StatusUnavailable {
		t.Errorf("bash = %+v", d)
	}
	if ts.WorkspaceReadOnly {
		t.Error("docs role has fs.write; workspace should be rw")
	}
	// A tool that declares a lower risk than the static map keeps the map's.
	if r := EffectiveRisk(ToolInfo{Name: "bash", Risk: ReadOnly}); r != Exec {
		t.Errorf("EffectiveRisk(bash declared read_only) = %v", r)
	}
	if r := EffectiveRisk(ToolInfo{Name: "read", Risk: Dangerous}); r != Dangerous {
		t.Errorf("declaration must be able to raise risk: %v", r)
	}
	if _, err := Resolve(p, Catalogue(), Subject{Agent: "nobody"}); err == nil {
		t.Error("unknown agent resolved")
	}
	if _, err := Resolve(p, Catalogue(), Subject{Agent: "d", Role: "build"}); err == nil {
		t.Error("agent with a conflicting role resolved")
	}
}

// TestResolveCompanionsFollowBash: bash_output and bash_kill land where
// bash did, and a deny naming one of them still wins.
func TestResolveCompanionsFollowBash(t *testing.T) {
	p := mustLoad(t, "[agents.a]\nrole = \"custom\"\ngrants = [\"bash\"]\ndenies = [\"bash_kill\"]\n[agents.b]\nrole = \"custom\"\ngrants = [\"read\", \"bash_output\"]\n")
	ts, _ := Resolve(p, Catalogue(), Subject{Agent: "a"})
	if got := names(ts.Granted); !slices.Equal(got, []string{"bash", "bash_output"}) {
		t.Errorf("a: granted %v", got)
	}
	if d, _ := ts.Lookup("bash_kill"); d.Status != StatusDenied || !strings.Contains(d.Reason, "agents.a.denies") {
		t.Errorf("a: bash_kill %+v", d)
	}
	ts, _ = Resolve(p, Catalogue(), Subject{Agent: "b"})
	if d, _ := ts.Lookup("bash_output"); d.Status != StatusDenied || !strings.Contains(d.Reason, "goes with bash") {
		t.Errorf("b: a grant of bash_output alone gives it: %+v", d)
	}
}

// TestResolveAgentNamedAfterProfile: under a policy that defines no
// [agents.claude], --agent claude (the README's jail mcp --agent claude)
// gets the operator's toolset, never more; --role narrows it as it would
// alone; a name that is neither an agent nor a profile is refused, naming
// the fix; a defined agent keeps its own toolset.
func TestResolveAgentNamedAfterProfile(t *testing.T) {
	p := mustLoad(t, "[agents.bot]\nrole = \"review\"\n")
	op, err := Resolve(p, Catalogue(), Subject{})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := Resolve(p, Catalogue(), Subject{Agent: "claude"})
	if err != nil {
		t.Fatalf("--agent claude under a policy without [agents.claude]: %v", err)
	}
	if !ts.AgentUndefined || ts.Agent != "claude" || ts.Role != "" || len(ts.Granted) != len(op.Granted) {
		t.Errorf("claude = %+v, want the operator's %d granted tools", ts, len(op.Granted))
	}
	rv, err := Resolve(p, Catalogue(), Subject{Agent: "codex", Role: "review"})
	if err != nil || rv.Role != "review" {
		t.Fatalf("--agent codex --role review: %+v, %v", rv, err)
	}
	if d, _ := rv.Lookup("bash"); d.Status == StatusGranted {
		t.Error("--agent codex --role review grants bash")
	}
	if _, err := Resolve(p, Catalogue(), Subject{Agent: "cluade"}); err == nil || !strings.Contains(err.Error(), "[agents.cluade]") || !strings.Contains(err.Error(), "agents bot") {
		t.Errorf("a typo: %v", err)
	}
	off := mustLoad(t, "[profiles.claude]\ndisabled = true\n")
	if _, err := Resolve(off, Catalogue(), Subject{Agent: "claude"}); err == nil {
		t.Error("an agent named after a disabled profile resolved")
	}
	bot, err := Resolve(p, Catalogue(), Subject{Agent: "bot"})
	if err != nil || bot.AgentUndefined || bot.Role != "review" {
		t.Errorf("bot = %+v, %v", bot, err)
	}
}

// TestUnknownNamesSayWhatIsKnown: an unknown agent, role or profile is
// refused with the names the policy knows, the flag that names one and the
// table that defines one, the same way for each kind.
func TestUnknownNamesSayWhatIsKnown(t *testing.T) {
	p := mustLoad(t, "[agents.helper]\nrole = \"fix\"\n[roles.mine]\nremit = [\"fs.read\"]\n")
	_, errAgent := Resolve(p, nil, Subject{Agent: "cluade"})
	_, errRole := Resolve(p, nil, Subject{Role: "fixx"})
	errProfile := p.UnknownProfile("cladue")
	for _, c := range []struct {
		err  error
		want []string
	}{
		{errAgent, []string{`unknown agent "cluade"`, "helper", "claude, codex", "--agent", "[agents.cluade]"}},
		{errRole, []string{`unknown role "fixx"`, "fix", "mine", "--role", "[roles.fixx]"}},
		{errProfile, []string{`unknown profile "cladue"`, "claude", "none", "--profile", "[profiles.cladue]"}},
	} {
		var u *UnknownName
		if !errors.As(c.err, &u) {
			t.Fatalf("not an UnknownName: %v", c.err)
		}
		for _, w := range c.want {
			if !strings.Contains(c.err.Error(), w) {
				t.Errorf("%q does not say %q", c.err, w)
			}
		}
	}
	if s := p.UnknownProfile("a\nb").Error(); strings.Contains(s, "\n") {
		t.Errorf("a name with a newline breaks the line: %q", s)
	}
}
