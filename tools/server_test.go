//go:build linux

package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/policy"
)

// serverHarness drives a Server over pipes, as a harness drives jail serve,
// with workers running in this process (the sandboxed worker is covered by
// integration/tools_test.go).
type serverHarness struct {
	t       *testing.T
	f       *fixture
	in      *io.PipeWriter
	out     *bufio.Scanner
	done    chan error
	spawned int
	mu      sync.Mutex
	audit   string
}

func newServerHarness(t *testing.T, pol *policy.Policy, maxConc int) *serverHarness {
	subreaper(t)
	f := newFixture(t)
	h := &serverHarness{t: t, f: f, done: make(chan error, 1)}
	h.audit = filepath.Join(t.TempDir(), "audit.jsonl")
	al, err := policy.OpenAuditLog(h.audit, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { al.Close() })
	if pol == nil {
		pol = policy.Default(policy.Env{Home: t.TempDir(), Workspace: f.dir})
	}
	s := &Server{Registry: f.reg, Policy: pol, PolicyHash: pol.Hash(), Audit: al, MaxConcurrency: maxConc, MaxLine: 1 << 20,
		BashMaxTimeout: time.Minute,
		Spawn: func(ctx context.Context) (*Worker, error) {
			h.mu.Lock()
			h.spawned++
			h.mu.Unlock()
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			stopped := make(chan struct{})
			go func() {
				// Lifetime: until the worker's stdin closes (Close).
				serveWorker(context.Background(), f.reg, f.ws, &f.bash, inR, outW)
				outW.Close()
				close(stopped)
			}()
			return NewWorker(inW, outR, func() { inR.Close(); <-stopped }), nil
		}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h.in = inW
	h.out = bufio.NewScanner(outR)
	h.out.Buffer(make([]byte, 1<<20), 16<<20)
	go func() {
		// Lifetime: until the test closes the request pipe.
		err := s.Serve(context.Background(), inR, outW)
		s.Close()
		outW.Close()
		h.done <- err
	}()
	t.Cleanup(func() { inW.Close() })
	return h
}

func (h *serverHarness) send(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

func (h *serverHarness) next() Response {
	h.t.Helper()
	if !h.out.Scan() {
		h.t.Fatalf("server output ended: %v", h.out.Err())
	}
	var r Response
	if err := json.Unmarshal(h.out.Bytes(), &r); err != nil {
		h.t.Fatalf("bad response %q: %v", h.out.Bytes(), err)
	}
	return r
}

func (h *serverHarness) auditRecords() []policy.AuditRecord {
	b, _ := os.ReadFile(h.audit)
	var out []policy.AuditRecord
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r policy.AuditRecord
		if json.Unmarshal([]byte(l), &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

func TestServeProtocol(t *testing.T) {
	h := newServerHarness(t, nil, 4)
	h.f.write("hello.txt", "hi\n")

	h.send(`{"id":1,"type":"list_tools"}`)
	r := h.next()
	var names []string
	for _, d := range r.Tools {
		names = append(names, d.Name)
	}
	if r.Type != "tools" || strings.Join(names, ",") != "read,ls,glob,grep,write,edit,bash,bash_output,bash_kill" {
		t.Fatalf("list_tools: %+v", r)
	}

	h.send(`{"id":"r1","tool":"read","args":{"path":"hello.txt"}}`)
	r = h.next()
	if string(r.ID) != `"r1"` || r.Type != "result" || r.Result.Content != "     1\thi\n" {
		t.Fatalf("read: %+v", r)
	}
	// Malformed lines, a huge line, unknown types: errors, and the server goes on.
	h.send(`{"id":2,"tool":`)
	if r = h.next(); r.Type != "error" || !strings.Contains(r.Error, "malformed") {
		t.Fatalf("malformed: %+v", r)
	}
	h.send(`not json at all`)
	if r = h.next(); r.Type != "error" {
		t.Fatalf("garbage: %+v", r)
	}
	h.send(`{"id":3,"tool":"write","args":{"path":"big","content":"` + strings.Repeat("x", 2<<20) + `"}}`)
	if r = h.next(); r.Type != "error" || !strings.Contains(r.Error, "longer than") {
		t.Fatalf("huge: %+v", r)
	}
	h.send(`{"tool":"read","args":{"path":"hello.txt"}}`)
	if r = h.next(); r.Type != "error" || !strings.Contains(r.Error, "id") {
		t.Fatalf("no id: %+v", r)
	}
	h.send(`{"id":4,"type":"dance"}`)
	if r = h.next(); r.Type != "error" || string(r.ID) != "4" {
		t.Fatalf("unknown type: %+v", r)
	}
	h.send(`{"id":5,"tool":"nosuch","args":{}}`)
	if r = h.next(); !r.Result.IsError || !strings.Contains(r.Result.Content, "unknown tool") {
		t.Fatalf("unknown tool: %+v", r)
	}
	h.send(`{"id":6,"tool":"read","args":{"path":7}}`)
	if r = h.next(); !r.Result.IsError || !strings.Contains(r.Result.Content, "/path") {
		t.Fatalf("invalid args: %+v", r)
	}
	h.send(`{"id":7,"tool":"read","args":{"path":"hello.txt"}}`)
	if r = h.next(); r.Result.IsError {
		t.Fatalf("after errors: %+v", r)
	}
	// Every call is audited with the policy hash; refusals too.
	recs := h.auditRecords()
	if len(recs) != 4 { // the huge line and the request without an id never became calls
		t.Fatalf("%d audit records, want 4: %+v", len(recs), recs)
	}
	for _, rec := range recs {
		if rec.PolicyHash == "" || rec.ArgsDigest == "" {
			t.Errorf("audit record without hash or digest: %+v", rec)
		}
	}
	if recs[0].Tool != "read" || recs[0].Decision != policy.OutcomeAllowed || recs[2].Decision != policy.OutcomeDenied {
		t.Errorf("audit records: %+v", recs)
	}
}

// autoBash is the default policy with bash approved without asking.
func autoBash(t *testing.T) *policy.Policy {
	pol := policy.Default(policy.Env{Home: t.TempDir(), Workspace: t.TempDir()})
	pol.Approval.AutoApprove = []string{"bash"}
	return pol
}

func TestServeConcurrentAndCancel(t *testing.T) {
	h := newServerHarness(t, autoBash(t), 4)
	h.f.write("a.txt", "a\n")
	// A slow call does not hold up the others: answers come out of order.
	h.send(`{"id":"slow","tool":"bash","args":{"command":"sleep 30"}}`)
	for i := range 20 {
		h.send(fmt.Sprintf(`{"id":%d,"tool":"read","args":{"path":"a.txt"}}`, i))
	}
	seen := map[string]bool{}
	for range 20 {
		r := h.next()
		if r.Result == nil || r.Result.IsError {
			t.Fatalf("concurrent read: %+v", r)
		}
		seen[string(r.ID)] = true
	}
	if len(seen) != 20 {
		t.Fatalf("answers: %v", seen)
	}
	h.send(`{"id":"c","type":"cancel","target":"slow"}`)
	got := map[string]Response{}
	for range 2 {
		r := h.next()
		got[string(r.ID)] = r
	}
	if got[`"c"`].Type != "cancelled" {
		t.Fatalf("cancel ack: %+v", got)
	}
	if res := got[`"slow"`].Result; res == nil || !res.IsError || !strings.Contains(res.Content, "cancelled") {
		t.Fatalf("cancelled call: %+v", got[`"slow"`])
	}
	h.mu.Lock()
	spawned := h.spawned
	h.mu.Unlock()
	if spawned > 4 {
		t.Fatalf("%d workers for max_concurrency 4", spawned)
	}
	// The cancelled bash left the pool usable.
	h.send(`{"id":"after","tool":"bash","args":{"command":"echo ok"}}`)
	if r := h.next(); r.Result.Content != "ok\n" {
		t.Fatalf("after cancel: %+v", r)
	}
}

func TestServeIdempotency(t *testing.T) {
	h := newServerHarness(t, nil, 2)
	h.f.write("n.txt", "1\n")
	edit := `{"id":%d,"tool":"edit","args":{"path":"n.txt","old_string":"1","new_string":"11"},"context":{"idempotency_key":"k1"}}`
	h.send(fmt.Sprintf(edit, 1))
	r1 := h.next()
	h.send(fmt.Sprintf(edit, 2))
	r2 := h.next()
	if r1.Result.IsError || r2.Result.Meta["idempotent_replay"] != true || r2.Result.Content != r1.Result.Content {
		t.Fatalf("idempotency: %+v / %+v", r1.Result, r2.Result)
	}
	if got := h.f.read("n.txt"); got != "11\n" {
		t.Fatalf("applied twice: %q", got)
	}
	// Another key applies again.
	h.send(`{"id":3,"tool":"edit","args":{"path":"n.txt","old_string":"11","new_string":"111"},"context":{"idempotency_key":"k2"}}`)
	if r := h.next(); r.Result.IsError || h.f.read("n.txt") != "111\n" {
		t.Fatalf("new key: %+v", r)
	}
}

func TestServeApproval(t *testing.T) {
	pol := policy.Default(policy.Env{Home: t.TempDir(), Workspace: t.TempDir()})
	pol.Approval.RequireApproval = []string{"write"}
	pol.Approval.AskTimeout = 300 * time.Millisecond
	h := newServerHarness(t, pol, 2)
	h.send(`{"id":"w","tool":"write","args":{"path":"x.txt","content":"x"}}`)
	r := h.next()
	if r.Type != "approval_request" || string(r.ID) != `"w"` || r.Tool != "write" || r.ArgsDigest == "" || r.Risk != "write" {
		t.Fatalf("approval request: %+v", r)
	}
	h.send(`{"id":"w","type":"approval_response","approve":true}`)
	if r = h.next(); r.Result == nil || r.Result.IsError {
		t.Fatalf("approved call: %+v", r)
	}
	h.send(`{"id":"n","tool":"write","args":{"path":"y.txt","content":"y"}}`)
	h.next()
	h.send(`{"id":"n","type":"approval_response","approve":false}`)
	if r = h.next(); !r.Result.IsError || !strings.Contains(r.Result.Content, "refused") {
		t.Fatalf("refused call: %+v", r)
	}
	// Nobody answers: the gate's timeout denies.
	h.send(`{"id":"t","tool":"write","args":{"path":"z.txt","content":"z"}}`)
	h.next()
	if r = h.next(); !r.Result.IsError || !strings.Contains(r.Result.Content, "no answer") {
		t.Fatalf("timed-out approval: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(h.f.dir, "y.txt")); err == nil {
		t.Fatal("a refused write happened")
	}
	recs := h.auditRecords()
	if len(recs) != 3 || recs[0].Decision != policy.OutcomeApproved || recs[0].ApprovalSource != policy.SourceHuman || recs[1].Decision != policy.OutcomeRefused {
		t.Fatalf("audit: %+v", recs)
	}
	// Unattended: nobody to ask, denied at once.
	h.send(`{"id":"u","tool":"write","args":{"path":"u.txt","content":"u"},"context":{"unattended":true}}`)
	if r = h.next(); !r.Result.IsError {
		t.Fatalf("unattended: %+v", r)
	}
}

func TestServePolicyHidesTools(t *testing.T) {
	pol := policy.Default(policy.Env{Home: t.TempDir(), Workspace: t.TempDir()})
	pol.Tools.Deny = []string{"bash"}
	h := newServerHarness(t, pol, 1)
	h.send(`{"id":1,"type":"list_tools"}`)
	for _, d := range h.next().Tools {
		if d.Name == "bash" {
			t.Fatal("a denied tool is listed")
		}
	}
	h.send(`{"id":2,"tool":"bash","args":{"command":"true"}}`)
	if r := h.next(); !r.Result.IsError || !strings.Contains(r.Result.Content, "tools.deny") {
		t.Fatalf("denied tool: %+v", r)
	}
}

// TestUnreadyToolIsLeftOut: a tool that cannot run on this machine is
// absent from list_tools, refused with its reason when called anyway, and
// reported by Readiness.
func TestUnreadyToolIsLeftOut(t *testing.T) {
	h := newServerHarness(t, nil, 1)
	ls, _ := h.f.reg.Lookup("ls")
	ls.Ready = func() error { return errors.New("the ls image is absent") }
	h.send(`{"id":1,"type":"list_tools"}`)
	resp := h.next()
	listed := map[string]bool{}
	for _, d := range resp.Tools {
		listed[d.Name] = true
	}
	if listed["ls"] || !listed["read"] {
		t.Fatalf("list_tools: %v", listed)
	}
	h.send(`{"id":2,"tool":"ls","args":{"path":"."}}`)
	if r := h.next(); r.Result == nil || !r.Result.IsError || !strings.Contains(r.Result.Content, "cannot run here: the ls image is absent") {
		t.Fatalf("call to an unready tool: %+v", r)
	}
	var found bool
	for _, rd := range h.f.reg.Readiness() {
		if rd.Tool == "ls" {
			found = !rd.Ready && rd.Why == "the ls image is absent"
		}
		if rd.Tool == "bash" && !rd.Ready {
			t.Errorf("bash reported unready on a machine with /bin/sh: %s", rd.Why)
		}
	}
	if !found {
		t.Fatalf("Readiness: %+v", h.f.reg.Readiness())
	}
}
