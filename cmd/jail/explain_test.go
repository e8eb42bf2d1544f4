//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jail-sandbox/jail/launch"
	"github.com/jail-sandbox/jail/policy"
	"github.com/jail-sandbox/jail/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// explainPolicies are policies whose toolsets differ in each way Resolve
// and the registry can make them differ.
var explainPolicies = []struct {
	name, toml, agent string
}{
	{"default", "", ""},
	// The regression: web_fetch is in the static map but not in the
	// registry, so explain must not call it granted.
	{"proxy-web-fetch", "[network]\nmode = \"proxy\"\nallow = [\"example.com\"]\n[tools]\nalso_allow = [\"web_fetch\"]\n", ""},
	{"agent-review", "[agents.rev]\nrole = \"review\"\ngrants = [\"bash\"]\ndenies = [\"grep\"]\n", "rev"},
	{"deny-and-daemon", "[tools]\ndeny = [\"edit\"]\nsecurity = \"daemon\"\n", ""},
	{"workspace-ro", "[sandbox]\nworkspace_ro = true\n", ""},
	{"minimal-elevated", "[access]\nlevel = \"elevated\"\n[tools]\nprofile = \"minimal\"\nalso_allow = [\"bash\"]\n", ""},
}

// TestExplainMatchesFrontEnds: the tools `jail policy explain --json`
// calls granted are exactly those `jail serve` lists (list_tools) and
// `jail mcp` lists (tools/list), for each policy.
func TestExplainMatchesFrontEnds(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no user policy
	for _, pc := range explainPolicies {
		t.Run(pc.name, func(t *testing.T) {
			ws, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			pf := filepath.Join(dir, "policy.toml")
			if err := os.WriteFile(pf, fmt.Appendf(nil, "%s\n[audit]\npath = %q\n", pc.toml, filepath.Join(dir, "audit.jsonl")), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"explain", "--json", "--policy", pf, "-w", ws}
			if pc.agent != "" {
				args = append(args, "--agent", pc.agent)
			}
			code, out, errs := runPolicy(t, args...)
			var ex launch.Explanation
			if code != 0 || json.Unmarshal([]byte(out), &ex) != nil {
				t.Fatalf("explain: %d %s %s", code, out, errs)
			}
			var explained []string
			for _, d := range ex.Toolset.Granted {
				explained = append(explained, d.Tool.Name)
				if d.Approval == nil || d.Approval.Summary == "" {
					t.Errorf("explain: granted %s without its approval state", d.Tool.Name)
				}
			}
			for _, d := range append(ex.Toolset.Denied, ex.Toolset.Unavailable...) {
				if d.Approval != nil {
					t.Errorf("explain: %s is %s but has an approval state", d.Tool.Name, d.Status)
				}
			}
			if pc.name == "proxy-web-fetch" && (slices.Contains(explained, "web_fetch") || !slices.Contains(ex.Absent, "web_fetch")) {
				t.Errorf("explain: web_fetch granted %v, absent %v: there is no such tool in this build", explained, ex.Absent)
			}

			// jail serve: list_tools over JSON lines.
			o := &toolOptions{maxConc: 1}
			o.run.Workdir, o.run.PolicyFile = ws, pf
			var stderr bytes.Buffer
			s, closeAll, err := launch.NewToolServer(&o.run, o.maxConc, &stderr)
			if err != nil {
				t.Fatalf("newToolServer: %v\n%s", err, &stderr)
			}
			defer closeAll()
			req, _ := json.Marshal(tools.Request{ID: json.RawMessage("1"), Type: "list_tools", Context: tools.CallContext{Agent: pc.agent}})
			var resp bytes.Buffer
			if err := s.Serve(context.Background(), bytes.NewReader(append(req, '\n')), &resp); err != nil {
				t.Fatal(err)
			}
			var lr tools.Response
			if err := json.Unmarshal(resp.Bytes(), &lr); err != nil || lr.Type != "tools" {
				t.Fatalf("list_tools: %v %s", err, resp.Bytes())
			}
			var served []string
			for _, d := range lr.Tools {
				served = append(served, d.Name)
			}
			if !slices.Equal(explained, served) {
				t.Errorf("explain grants %v; jail serve lists %v", explained, served)
			}

			// jail mcp: tools/list (the SDK sorts by name).
			res := mcpListTools(t, ws, pf, pc.agent)
			var listed []string
			for _, tl := range res.Tools {
				listed = append(listed, tl.Name)
			}
			sorted := slices.Sorted(slices.Values(explained))
			if !slices.Equal(sorted, listed) {
				t.Errorf("explain grants %v; jail mcp lists %v", sorted, listed)
			}
		})
	}
}

// TestExplainApprovalState: a granted tool whose calls ask, and are
// refused with nobody to ask, says so in explain, with the key that would
// let it run, and that is what the gate does with such a call.
func TestExplainApprovalState(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "cfg"))
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	pf := filepath.Join(dir, "p.toml")
	os.WriteFile(pf, []byte("[approval]\nrequire_approval = [\"write\"]\n"), 0o644)
	code, out, errs := runPolicy(t, "explain", "--policy", pf, "-w", ws)
	if code != 0 {
		t.Fatalf("explain: %d %s", code, errs)
	}
	for _, want := range []string{
		"asks (refused when nobody can answer); refused unattended",
		`to run it without asking: approval.auto_approve = ["bash"]`,
		`to run it unattended: approval.unattended_policy = "allow"`,
		"to run it without asking: remove write from approval.require_approval",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = runPolicy(t, "explain", "--json", "--policy", pf, "-w", ws)
	var ex launch.Explanation
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatal(err)
	}
	env, _ := launch.PolicyEnv(ws)
	p, _, err := policy.LoadEffective(pf, env)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := launch.CoreRegistry(0)
	if err != nil {
		t.Fatal(err)
	}
	g, err := policy.NewGate(p, reg.Infos(), policy.Subject{}, env.Home, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ex.Toolset.Granted {
		args := map[string]any{"path": "x", "content": "x", "command": "ls"}
		// No asker: a call that "asks" is refused, one that "runs" runs.
		got := g.Check(context.Background(), policy.Call{Tool: d.Tool.Name, Args: args})
		if got.Allowed != (d.Approval.Attended == policy.ApprovalRuns) {
			t.Errorf("%s: explain says %q, the gate with nobody to ask: %+v", d.Tool.Name, d.Approval.Summary, got)
		}
		got = g.Check(context.Background(), policy.Call{Tool: d.Tool.Name, Args: args, Unattended: true})
		if got.Allowed != (d.Approval.Unattended == policy.ApprovalRuns) {
			t.Errorf("%s: explain says %q, the gate unattended: %+v", d.Tool.Name, d.Approval.Summary, got)
		}
	}
}

// mcpListTools is what `jail mcp --agent agent` answers to tools/list, from
// a server built as the command builds it.
func mcpListTools(t *testing.T, ws, pf, agent string) *mcp.ListToolsResult {
	t.Helper()
	var stderr bytes.Buffer
	ts, closeAll, err := launch.NewToolServer(&launch.Options{Workdir: ws, PolicyFile: pf}, 1, &stderr)
	if err != nil {
		t.Fatalf("launch.NewToolServer: %v\n%s", err, &stderr)
	}
	defer closeAll()
	srv, err := tools.NewMCPServer(ts, tools.CallContext{Agent: agent}, "test", slog.New(slog.NewTextHandler(&stderr, nil)))
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "jail-test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v\n%s", err, &stderr)
	}
	return res
}
