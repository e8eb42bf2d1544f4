package policy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// approverGate writes script as an executable approver and builds a gate that uses it. The
// script's stdin is saved next to it, so tests can read what jail sent.
func approverGate(t *testing.T, script, timeout string, asker Asker) (*Gate, string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "approver")
	got := filepath.Join(dir, "request.json")
	body := "#!/bin/sh\ncat > " + got + "\n" + script + "\n"
	if err := os.WriteFile(bin, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	pol := "[approval]\napprover = [\"" + bin + "\", \"--mode\", \"strict\"]\n"
	if timeout != "" {
		pol += "approver_timeout = \"" + timeout + "\"\n"
	}
	return gate(t, pol, asker), got
}

func TestApprover(t *testing.T) {
	ctx := context.Background()
	yes := func() *fakeAsker { return &fakeAsker{answer: Answer{Approve: true}} }
	cases := []struct {
		name, script, timeout string
		asker                 *fakeAsker
		call                  Call
		ok                    bool
		step, source          string
		reason                string // part of the decision's reason
		asked                 bool
	}{
		{"approve", `echo '{"decision":"approve","reason":"matches ticket OPS-1"}'`, "", nil, bashCall("git push"), true, "approver", SourceApprover, "approved by the approver: matches ticket OPS-1", false},
		{"deny", `echo '{"decision":"deny","reason":"no pushes on Friday"}'`, "", yes(), bashCall("git push"), false, "approver", SourceApprover, "denied by the approver: no pushes on Friday", false},
		{"escalate to a human who approves", `echo '{"decision":"escalate","reason":"unsure"}'`, "", yes(), bashCall("git push"), true, "ask", SourceHuman, "escalated by the approver: unsure; approved by a human", true},
		{"escalate with nobody to ask", `echo '{"decision":"escalate"}'`, "", nil, bashCall("git push"), false, "ask", SourceNone, "no one to ask", false},
		{"timeout", `sleep 10; echo '{"decision":"approve"}'`, "300ms", yes(), bashCall("git push"), false, "approver", SourceNone, "approver: no answer within 300ms", false},
		{"crash", `echo boom >&2; exit 3`, "", yes(), bashCall("git push"), false, "approver", SourceNone, "failed: boom: exit status 3", false},
		{"garbage", `echo 'yes please'`, "", yes(), bashCall("git push"), false, "approver", SourceNone, "is not a JSON object", false},
		{"unknown decision", `echo '{"decision":"maybe"}'`, "", yes(), bashCall("git push"), false, "approver", SourceNone, `unknown decision "maybe"`, false},
		{"dangerous approved still needs a human", `echo '{"decision":"approve"}'`, "", yes(), Call{Tool: "bash", Args: map[string]any{"command": "make"}, Declared: Dangerous}, true, "ask", SourceHuman, "a dangerous call needs a human", true},
		{"dangerous approved, nobody to ask", `echo '{"decision":"approve"}'`, "", nil, Call{Tool: "bash", Args: map[string]any{"command": "make"}, Declared: Dangerous}, false, "ask", SourceNone, "no one to ask", false},
	}
	for _, c := range cases {
		var asker Asker
		if c.asker != nil {
			asker = c.asker
		}
		g, reqFile := approverGate(t, c.script, c.timeout, asker)
		start := time.Now()
		d := g.Check(ctx, c.call)
		if d.Allowed != c.ok || d.Step != c.step || d.ApprovalSource != c.source || !strings.Contains(d.Reason, c.reason) {
			t.Errorf("%s: got allowed=%v step=%s source=%s reason=%q", c.name, d.Allowed, d.Step, d.ApprovalSource, d.Reason)
		}
		if c.asker != nil && (len(c.asker.asked) > 0) != c.asked {
			t.Errorf("%s: human asked %d times", c.name, len(c.asker.asked))
		}
		if c.asked && !strings.Contains(c.asker.asked[0].Reason, "approver") {
			t.Errorf("%s: the human is not told what the approver said: %q", c.name, c.asker.asked[0].Reason)
		}
		if time.Since(start) > 4*time.Second {
			t.Errorf("%s: took %s", c.name, time.Since(start))
		}
		// What the approver read: the documented object, with the digest and not the arguments.
		b, err := os.ReadFile(reqFile)
		if err != nil {
			t.Fatalf("%s: approver not run: %v", c.name, err)
		}
		var req map[string]any
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatalf("%s: request %q: %v", c.name, b, err)
		}
		if req["tool"] != "bash" || req["args_digest"] != ArgsDigest(c.call.Args) || req["reason"] == "" || strings.Contains(string(b), "git push") {
			t.Errorf("%s: request %s", c.name, b)
		}
		for _, k := range []string{"risk", "action_types", "agent", "role"} {
			if _, ok := req[k]; !ok {
				t.Errorf("%s: request lacks %s: %s", c.name, k, b)
			}
		}
	}
}

func TestApproverMissingAndNotConsulted(t *testing.T) {
	ctx := context.Background()
	g := gate(t, "[approval]\napprover = [\"/nonexistent/approver\"]\n", &fakeAsker{answer: Answer{Approve: true}})
	d := g.Check(ctx, bashCall("make"))
	if d.Allowed || d.Step != "approver" || !strings.Contains(d.Reason, "no such file") {
		t.Errorf("missing approver: %+v", d)
	}
	// A call the policy passes by itself never reaches the approver.
	g2, reqFile := approverGate(t, `echo '{"decision":"deny"}'`, "", nil)
	if d := g2.Check(ctx, Call{Tool: "read"}); !d.Allowed || d.ApprovalSource != SourcePolicy {
		t.Errorf("read: %+v", d)
	}
	if _, err := os.Stat(reqFile); err == nil {
		t.Error("approver consulted for an auto-approved call")
	}
	// The command must be absolute; a project file cannot choose it.
	if _, err := LoadBytes("p.toml", []byte("[approval]\napprover = [\"approve.sh\"]\n"), testEnv(t)); err == nil || !strings.Contains(err.Error(), "p.toml:2: approval.approver") {
		t.Errorf("relative approver: %v", err)
	}
	dir := t.TempDir()
	env := Env{Home: "/home/alice", Workspace: dir}
	proj := writeFile(t, dir, ".jail/policy.toml", "[approval]\napprover = [\"/bin/true\"]\napprover_timeout = \"1s\"\n")
	p, ws, err := Tighten(mustLoad(t, ""), proj, env)
	if err != nil || len(p.Approval.Approver) != 0 || p.Approval.ApproverTimeout != time.Second || len(ws) != 1 || ws[0].Key != "approval.approver" {
		t.Errorf("project approver: %v %v %v %v", err, p.Approval.Approver, p.Approval.ApproverTimeout, ws)
	}
}
