//go:build linux

package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/jail-sandbox/jail/policy"
)

// disclosureServer serves 50 tools (the 7 core ones and 43 test tools)
// with progressive disclosure on and the given budget.
func disclosureServer(t *testing.T, budget int64) (send func(string), next func() Response) {
	t.Helper()
	ts := Core(Options{})
	for i := len(ts); i < 50; i++ {
		ts = append(ts, &Tool{Name: fmt.Sprintf("probe_%02d", i), Description: fmt.Sprintf("Probe %d. Returns a fixed answer; used to test disclosure with a long description that costs tokens.", i),
			Schema:       `{"type":"object","additionalProperties":false,"properties":{"n":{"type":"integer","description":"a number the probe ignores, documented at some length"}}}`,
			Capabilities: []string{"fs.read"}, Resources: map[string]string{"examples": `{"n": 1}`},
			run: func(context.Context, *execCtx, json.RawMessage) Result { return Result{Content: "ok"} }})
	}
	reg, err := NewRegistry(ts...)
	if err != nil {
		t.Fatal(err)
	}
	pol := policy.Default(policy.Env{Home: t.TempDir(), Workspace: t.TempDir()})
	pol.Tools.Profile = policy.ProfileFull
	pol.Tools.Disclosure = true
	pol.Tools.DisclosureBudget = budget
	s := &Server{Registry: reg, Policy: pol, PolicyHash: pol.Hash(), MaxConcurrency: 1}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		// Lifetime: until the test closes the request pipe.
		s.Serve(context.Background(), inR, outW)
		s.Close()
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close() })
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	return func(line string) { io.WriteString(inW, line+"\n") }, func() Response {
		if !sc.Scan() {
			t.Fatal("server ended")
		}
		var r Response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
}

func TestProgressiveDisclosure(t *testing.T) {
	// A budget that holds about two probe definitions.
	var one Definition
	{
		tl := &Tool{Name: "probe_10", Description: "Probe 10. Returns a fixed answer; used to test disclosure with a long description that costs tokens.",
			Schema: `{"type":"object","additionalProperties":false,"properties":{"n":{"type":"integer","description":"a number the probe ignores, documented at some length"}}}`}
		one = tl.Definition()
	}
	budget := int64(one.tokens()*2 + one.tokens()/2)
	send, next := disclosureServer(t, budget)

	send(`{"id":1,"type":"list_tools"}`)
	r := next()
	if len(r.Summaries) != 50 || len(r.Tools) != 0 {
		t.Fatalf("list_tools: %d summaries, %d full definitions; want 50 and 0", len(r.Summaries), len(r.Tools))
	}
	if r.Summaries[0].Name != "read" || strings.Contains(r.Summaries[10].Summary, "used to test") {
		t.Fatalf("summaries are not short first sentences in registry order: %+v", r.Summaries[:2])
	}
	fullList, _ := json.Marshal(r)
	if len(fullList) > 50*200 {
		t.Errorf("the disclosed list is %d bytes for 50 tools", len(fullList))
	}

	for i, name := range []string{"probe_10", "probe_11"} {
		send(fmt.Sprintf(`{"id":%d,"type":"load_tool","name":%q}`, 10+i, name))
		if r := next(); r.Type != "tool" || len(r.Tools) != 1 || r.Tools[0].Name != name || len(r.Unloaded) != 0 {
			t.Fatalf("load %s: %+v", name, r)
		}
	}
	// A third load passes the budget: the oldest-loaded goes.
	send(`{"id":12,"type":"load_tool","name":"probe_12"}`)
	if r := next(); r.Type != "tool" || len(r.Unloaded) != 1 || r.Unloaded[0] != "probe_10" {
		t.Fatalf("third load: %+v", r)
	}
	send(`{"id":13,"type":"list_tools"}`)
	r = next()
	var loaded []string
	for _, d := range r.Tools {
		loaded = append(loaded, d.Name)
	}
	if strings.Join(loaded, ",") != "probe_11,probe_12" {
		t.Fatalf("loaded after unloading: %v", loaded)
	}

	send(`{"id":14,"type":"load_tool_resource","name":"probe_20","resource":"examples"}`)
	if r := next(); r.Type != "resource" || r.Document != `{"n": 1}` {
		t.Fatalf("resource: %+v", r)
	}
	send(`{"id":15,"type":"load_tool_resource","name":"probe_20","resource":"missing"}`)
	if r := next(); r.Type != "error" || !strings.Contains(r.Error, "it has: schema, description, examples") {
		t.Fatalf("missing resource: %+v", r)
	}
	send(`{"id":16,"type":"load_tool","name":"no_such_tool"}`)
	if r := next(); r.Type != "error" {
		t.Fatalf("unknown tool loaded: %+v", r)
	}
	// A call does not need a load: the policy and the schema decide.
	send(`{"id":17,"tool":"probe_30","args":{"n":"x"}}`)
	if r := next(); r.Result == nil || !r.Result.IsError || !strings.Contains(r.Result.Content, "/n") {
		t.Fatalf("validation of an unloaded tool: %+v", r)
	}
}

func TestDisclosureOff(t *testing.T) {
	h := newServerHarness(t, nil, 1)
	h.send(`{"id":1,"type":"load_tool","name":"read"}`)
	if r := h.next(); r.Type != "error" || !strings.Contains(r.Error, "disclosure is off") {
		t.Fatalf("load_tool with disclosure off: %+v", r)
	}
	h.send(`{"id":2,"type":"list_tools"}`)
	if r := h.next(); len(r.Tools) == 0 || len(r.Summaries) != 0 {
		t.Fatalf("list_tools with disclosure off: %+v", r)
	}
}
