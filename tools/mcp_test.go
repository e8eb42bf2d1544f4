//go:build linux

package tools_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
	"github.com/jail-sandbox/jail/launch"
	"github.com/jail-sandbox/jail/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lockedBuffer collects the server's stderr, written by many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// mcpHarness is a jail mcp server running in this process, built by the
// same code as the command (launch.NewToolServer, tools.NewMCPServer,
// tools.NewLineTransport), with real sandboxed workers, reached over a
// pair of pipes.
type mcpHarness struct {
	t      *testing.T
	ws     string
	audit  string
	stderr *lockedBuffer
	in     *io.PipeWriter // the server's stdin
	out    *io.PipeReader // the server's stdout
	done   chan error     // Run's error, after every worker ended
}

// startMCP serves the tools policyTOML grants agent in a fresh workspace.
func startMCP(t *testing.T, policyTOML, agent string) *mcpHarness {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	h := &mcpHarness{t: t, ws: ws, audit: filepath.Join(dir, "audit.jsonl"), stderr: &lockedBuffer{}, done: make(chan error, 1)}
	pf := filepath.Join(dir, "policy.toml")
	if err := os.WriteFile(pf, fmt.Appendf(nil, "%s\n[audit]\npath = %q\n", policyTOML, h.audit), 0o644); err != nil {
		t.Fatal(err)
	}
	ts, closeAll, err := launch.NewToolServer(&launch.Options{Workdir: ws, PolicyFile: pf}, 2, h.stderr)
	if err != nil {
		t.Fatalf("launch.NewToolServer: %v\n%s", err, h.stderr)
	}
	srv, err := tools.NewMCPServer(ts, tools.CallContext{Agent: agent}, "test", slog.New(slog.NewTextHandler(h.stderr, nil)))
	if err != nil {
		closeAll()
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h.in, h.out = inW, outR
	go func() {
		// Lifetime: until the client closes the server's stdin (Cleanup
		// at the latest); then every worker is ended before done.
		err := srv.Run(context.Background(), tools.NewLineTransport(inR, outW, 1<<20))
		closeAll()
		outW.Close()
		h.done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR) // a response still being written must not block Run
		select {
		case <-h.done:
		case <-time.After(30 * time.Second):
			t.Errorf("jail mcp did not end within 30s of its stdin closing\n%s", h.stderr)
		}
	})
	return h
}

// connect attaches an SDK client to the harness, speaking the SDK's
// newest protocol version.
func (h *mcpHarness) connect(opts *mcp.ClientOptions) *mcp.ClientSession {
	return h.connectVersion(opts, "")
}

// connectVersion attaches an SDK client speaking protocol version (empty:
// the SDK's newest).
func (h *mcpHarness) connectVersion(opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	h.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "jail-test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.IOTransport{Reader: h.out, Writer: h.in}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		h.t.Fatalf("connect: %v\n%s", err, h.stderr)
	}
	h.t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and returns its result's text, failing on a protocol
// error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return res, text.String()
}

// autoBashPolicy lets bash run without asking, as most harnesses set it.
const autoBashPolicy = "[approval]\nauto_approve = [\"bash\"]\n"

func TestMCPListTools(t *testing.T) {
	h := startMCP(t, autoBashPolicy+`
[roles.docs]
remit = ["fs.read", "fs.write"]
max_risk = "write"
defaults = ["read", "ls", "glob", "grep", "write", "edit"]
[agents.writer]
role = "docs"
denies = ["edit"]
`, "writer")
	cs := h.connect(nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		byName[tl.Name] = tl
	}
	// Exactly the role's defaults minus the agent's deny: no bash (outside
	// the remit), no edit (denied). The SDK lists tools by name.
	slices.Sort(names)
	if want := []string{"glob", "grep", "ls", "read", "write"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	read, write := byName["read"], byName["write"]
	if read.Title != "Read a file" || read.Annotations == nil || !read.Annotations.ReadOnlyHint || !read.Annotations.IdempotentHint ||
		read.Annotations.OpenWorldHint == nil || *read.Annotations.OpenWorldHint {
		t.Fatalf("read declaration: %+v %+v", read, read.Annotations)
	}
	if write.Annotations.ReadOnlyHint || write.Annotations.DestructiveHint == nil || !*write.Annotations.DestructiveHint || !write.Annotations.IdempotentHint {
		t.Fatalf("write annotations: %+v", write.Annotations)
	}
	schema, _ := json.Marshal(read.InputSchema)
	if !strings.Contains(string(schema), `"path"`) || !strings.Contains(string(schema), `"required"`) {
		t.Fatalf("read schema: %s", schema)
	}
}

func TestMCPCoreTools(t *testing.T) {
	h := startMCP(t, autoBashPolicy, "")
	cs := h.connect(nil)
	os.MkdirAll(filepath.Join(h.ws, "src"), 0o755)
	os.WriteFile(filepath.Join(h.ws, "src", "main.go"), []byte("package main\n\nfunc main() { println(\"needle\") }\n"), 0o644)

	steps := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"write", map[string]any{"path": "notes.txt", "content": "alpha\nbeta\n"}, ""},
		{"read", map[string]any{"path": "notes.txt"}, "beta"},
		{"edit", map[string]any{"path": "notes.txt", "old_string": "beta", "new_string": "gamma"}, ""},
		{"read", map[string]any{"path": "notes.txt"}, "gamma"},
		{"glob", map[string]any{"pattern": "**/*.go"}, "src/main.go"},
		{"grep", map[string]any{"pattern": "needle"}, "src/main.go"},
		{"ls", map[string]any{"path": "."}, "notes.txt"},
		{"bash", map[string]any{"command": "cat notes.txt; echo uid=$(id -u) host=$(hostname)"}, "host=jail"},
	}
	for _, s := range steps {
		res, text := call(t, cs, s.tool, s.args)
		if res.IsError || !strings.Contains(text, s.want) {
			t.Fatalf("%s %v: error=%v %q (want %q)\n%s", s.tool, s.args, res.IsError, text, s.want, h.stderr)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(h.ws, "notes.txt")); string(b) != "alpha\ngamma\n" {
		t.Fatalf("host file: %q", b)
	}
	// A path outside the workspace is a tool error the model can act on.
	res, text := call(t, cs, "read", map[string]any{"path": "../../etc/passwd"})
	if !res.IsError || !strings.Contains(text, "outside the workspace") {
		t.Fatalf("escape: %v %q", res.IsError, text)
	}
	// bash's exit status travels in the result's meta.
	res, _ = call(t, cs, "bash", map[string]any{"command": "exit 3"})
	meta, _ := res.Meta["jail/meta"].(map[string]any) // the wire name clients read
	if meta["exit_code"] != float64(3) {
		t.Fatalf("bash meta: %+v (error %v)", res.Meta, res.IsError)
	}
}

func TestMCPDeniedTool(t *testing.T) {
	h := startMCP(t, autoBashPolicy+"[tools]\ndeny = [\"bash\"]\n", "")
	cs := h.connect(nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if tl.Name == "bash" {
			t.Fatal("a denied tool is listed")
		}
	}
	// Calling it anyway: an error result with the policy's reason, and
	// an audit record of the attempt.
	cr, text := call(t, cs, "bash", map[string]any{"command": "touch pwned"})
	if !cr.IsError || !strings.Contains(text, "tools.deny") {
		t.Fatalf("denied call: %v %q", cr.IsError, text)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "pwned")); err == nil {
		t.Fatal("the denied call ran")
	}
	if b, _ := os.ReadFile(h.audit); !strings.Contains(string(b), `"denied"`) {
		t.Fatalf("no audit record of the denied call: %s", b)
	}
	// A tool jail does not have is a JSON-RPC error, and the session
	// goes on.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool"}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("unknown tool: %v", err)
	}
	// Arguments the schema refuses: a tool error naming the argument.
	cr, text = call(t, cs, "read", map[string]any{"path": 5})
	if !cr.IsError || !strings.Contains(text, "invalid arguments") || !strings.Contains(text, "/path") {
		t.Fatalf("invalid arguments: %v %q", cr.IsError, text)
	}
}

func TestMCPElicitation(t *testing.T) {
	pol := "[approval]\nrequire_approval = [\"write\"]\nask_timeout = \"3s\"\n"
	approve := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if !strings.Contains(req.Params.Message, "write") || !strings.Contains(req.Params.Message, "x.txt") {
			return nil, fmt.Errorf("question without the tool or its arguments: %q", req.Params.Message)
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	decline := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	silent := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	type elicitCase struct {
		name    string
		handler func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
		written bool
		want    string
	}
	cases := []elicitCase{
		{"approve", approve, true, "x.txt"},
		{"decline", decline, false, "refused by a human"},
		{"no-capability", nil, false, "did not declare the elicitation capability"},
	}
	// 2025-06-18: the question is an elicitation/create request during
	// the call, bounded by ask_timeout. The SDK's newest version: the
	// question is an input request and the client repeats the call
	// (SEP-2322); the client holds the question, so there is no server
	// timeout to test there.
	for _, version := range []string{"2025-06-18", ""} {
		vcases := cases
		if version != "" {
			vcases = append(vcases, elicitCase{"no-answer", silent, false, "no answer within 3s"})
		}
		for _, tc := range vcases {
			t.Run(cmp.Or(version, "newest")+"/"+tc.name, func(t *testing.T) {
				h := startMCP(t, pol, "")
				cs := h.connectVersion(&mcp.ClientOptions{ElicitationHandler: tc.handler}, version)
				res, text := call(t, cs, "write", map[string]any{"path": "x.txt", "content": "x"})
				_, err := os.Stat(filepath.Join(h.ws, "x.txt"))
				if res.IsError == tc.written || (err == nil) != tc.written || !strings.Contains(text, tc.want) {
					t.Fatalf("error=%v written=%v %q (want %q)\n%s", res.IsError, err == nil, text, tc.want, h.stderr)
				}
				// The decision is audited once, with who decided.
				b, _ := os.ReadFile(h.audit)
				if n := bytes.Count(b, []byte("\n")); n != 1 {
					t.Fatalf("%d audit records, want 1:\n%s", n, b)
				}
				if tc.written && !bytes.Contains(b, []byte(`"approved"`)) {
					t.Fatalf("audit of an approved call: %s", b)
				}
			})
		}
	}
}

func TestMCPCancelAndProgress(t *testing.T) {
	h := startMCP(t, autoBashPolicy, "")
	var mu sync.Mutex
	var progress []float64
	cs := h.connect(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		progress = append(progress, req.Params.Progress)
	}})
	marker := fmt.Sprintf("%d", 900000+time.Now().UnixNano()%99999)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		// Lifetime: one call, ended by cancel below.
		p := &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "sleep " + marker, "timeout": 600}}
		p.SetProgressToken("tok")
		_, err := cs.CallTool(ctx, p)
		errc <- err
	}()
	if !testutil.Eventually(10*time.Second, func() bool { return len(testutil.Processes("sleep\x00"+marker)) > 0 }) {
		t.Fatalf("the sleep never started\n%s", h.stderr)
	}
	// Progress arrives every second while the call runs.
	if !testutil.Eventually(10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(progress) >= 2 }) {
		t.Fatalf("progress notifications: %v", progress)
	}
	mu.Lock()
	if progress[1] <= progress[0] {
		t.Fatalf("progress does not increase: %v", progress)
	}
	mu.Unlock()
	cancel() // the client sends notifications/cancelled
	if err := <-errc; err == nil {
		t.Fatal("a cancelled call returned no error")
	}
	if !testutil.Eventually(10*time.Second, func() bool { return len(testutil.Processes("sleep\x00"+marker)) == 0 }) {
		t.Fatalf("the cancelled call's process is still alive: %v", testutil.Processes("sleep\x00"+marker))
	}
	// The server and its pool are still usable.
	if res, text := call(t, cs, "bash", map[string]any{"command": "echo after"}); res.IsError || text != "after\n" {
		t.Fatalf("after cancel: %v %q", res.IsError, text)
	}
	if b, _ := os.ReadFile(h.audit); !bytes.Contains(b, []byte("sleep "+marker)) && !bytes.Contains(b, []byte(`"bash"`)) {
		t.Fatalf("audit: %s", b)
	}
}

func TestMCPDisconnectEndsSandboxes(t *testing.T) {
	h := startMCP(t, autoBashPolicy, "")
	cs := h.connect(nil)
	marker := fmt.Sprintf("%d", 800000+time.Now().UnixNano()%99999)
	go func() {
		// Lifetime: until the session closes under it.
		cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "sleep " + marker + " & sleep " + marker + "; wait", "timeout": 600}})
	}()
	if !testutil.Eventually(10*time.Second, func() bool { return len(testutil.Processes("sleep\x00"+marker)) == 2 }) {
		t.Fatalf("the sleeps never started\n%s", h.stderr)
	}
	// The client goes away: stdin ends.
	h.in.Close()
	go io.Copy(io.Discard, h.out)
	select {
	case err := <-h.done:
		if err != nil {
			t.Logf("Run: %v", err)
		}
		h.done <- err // for Cleanup
	case <-time.After(20 * time.Second):
		t.Fatalf("jail mcp did not end after stdin closed\n%s", h.stderr)
	}
	if pids := testutil.Processes("sleep\x00" + marker); len(pids) > 0 {
		t.Fatalf("processes outlived the client: %v", pids)
	}
	if pids := testutil.Processes(launch.WorkerCommand); len(pids) > 0 {
		t.Fatalf("workers outlived the client: %v", pids)
	}
}

// rawSession initialises a session by hand, for input no SDK client sends.
type rawSession struct {
	t   *testing.T
	h   *mcpHarness
	out *bufio.Scanner
}

func (r *rawSession) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.h.in, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

type rawResponse struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (r *rawSession) next() rawResponse {
	r.t.Helper()
	if !r.out.Scan() {
		r.t.Fatalf("server output ended: %v\n%s", r.out.Err(), r.h.stderr)
	}
	var resp rawResponse
	if err := json.Unmarshal(r.out.Bytes(), &resp); err != nil {
		r.t.Fatalf("bad response %q: %v", r.out.Bytes(), err)
	}
	return resp
}

func TestMCPMalformedInput(t *testing.T) {
	h := startMCP(t, autoBashPolicy, "")
	r := &rawSession{t: t, h: h, out: bufio.NewScanner(h.out)}
	r.out.Buffer(make([]byte, 64<<10), 4<<20)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if resp := r.next(); resp.Error != nil {
		t.Fatalf("initialize: %+v", resp.Error)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	for _, tc := range []struct {
		line string
		id   any
		code int
	}{
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list"`, nil, -32700},                 // cut short
		{`not json at all`, nil, -32700},                                               // garbage
		{`{"jsonrpc":"1.0","id":3,"method":"tools/list"}`, float64(3), -32600},         // wrong version
		{`[{"jsonrpc":"2.0","id":4,"method":"tools/list"}]`, nil, -32600},              // a batch
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":5}}`, nil, 0}, // bad params: the SDK's error
		{`{"jsonrpc":"2.0","id":6,"method":"no/such/method"}`, float64(6), -32601},     // unknown method
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope"}}`, float64(7), -32602},
		{`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"read","arguments":{"path":"x","extra":1}}}`, float64(8), 0},
		{`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"write","arguments":{"path":"big","content":"` + strings.Repeat("a", 2<<20) + `"}}}`, nil, -32600},
	} {
		r.send(tc.line)
		resp := r.next()
		short := tc.line[:min(len(tc.line), 80)]
		switch {
		case tc.code != 0 && (resp.Error == nil || resp.Error.Code != tc.code || fmt.Sprint(resp.ID) != fmt.Sprint(tc.id)):
			t.Errorf("%s: got id %v %+v, want id %v code %d", short, resp.ID, resp.Error, tc.id, tc.code)
		case tc.code == 0 && tc.id != nil && (resp.Error != nil || !strings.Contains(string(resp.Result), `"isError":true`)):
			// Arguments the schema refuses are a tool error (MCP: the
			// model can correct them), not a protocol error.
			t.Errorf("%s: got %+v %s, want a tool error", short, resp.Error, resp.Result)
		case tc.code == 0 && tc.id == nil && resp.Error == nil:
			t.Errorf("%s: got %s, want a JSON-RPC error", short, resp.Result)
		}
	}
	if _, err := os.Stat(filepath.Join(h.ws, "big")); err == nil {
		t.Fatal("an oversized request was executed")
	}
	// Still up: a well-formed call works.
	r.send(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo alive"}}}`)
	if resp := r.next(); resp.Error != nil || !strings.Contains(string(resp.Result), "alive") {
		t.Fatalf("after bad input: %+v %s", resp.Error, resp.Result)
	}
}

// TestMCPDisclosure: with [tools] disclosure the client sees the three
// discovery tools, loads a tool to get it listed (the server announces the
// change), and can still call a granted tool it did not load.
func TestMCPDisclosure(t *testing.T) {
	h := startMCP(t, "[tools]\ndisclosure = true\n", "")
	changed := make(chan struct{}, 8)
	cs := h.connect(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	names := func() []string {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := names(); strings.Join(got, ",") != "list_tools,load_tool,load_tool_resource" {
		t.Fatalf("tools before any load: %v", got)
	}
	if _, text := call(t, cs, "list_tools", map[string]any{}); !strings.Contains(text, `"name":"grep"`) || !strings.Contains(text, `"loaded":false`) {
		t.Fatalf("list_tools: %s", text)
	}
	if res, text := call(t, cs, "load_tool", map[string]any{"name": "grep"}); res.IsError || !strings.Contains(text, "loaded grep") {
		t.Fatalf("load_tool: %s", text)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed after load_tool")
	}
	if got := names(); !slices.Contains(got, "grep") || slices.Contains(got, "read") {
		t.Fatalf("tools after loading grep: %v", got)
	}
	if res, text := call(t, cs, "load_tool_resource", map[string]any{"name": "bash", "resource": "schema"}); res.IsError || !strings.Contains(text, `"command"`) {
		t.Fatalf("load_tool_resource: %s", text)
	}
	// ls is granted but not loaded: the call still runs in the sandbox.
	if res, text := call(t, cs, "ls", map[string]any{"path": "."}); res.IsError {
		t.Fatalf("call of a granted tool that is not loaded: %s", text)
	}
}

// TestMCPElevationOncePerSession: under access level elevated, a client
// speaking the newest protocol (approval questions as input requests) is
// asked to elevate once, not at every call: the front end asks the gate
// that decides the calls, whose elevation holds for the session.
func TestMCPElevationOncePerSession(t *testing.T) {
	h := startMCP(t, "[access]\nlevel = \"elevated\"\n", "")
	var asked []string
	cs := h.connect(&mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept"}, nil
	}})
	os.WriteFile(filepath.Join(h.ws, "a.txt"), []byte("alpha\n"), 0o644)
	for i := range 3 {
		res, text := call(t, cs, "read", map[string]any{"path": "a.txt"})
		if res.IsError || !strings.Contains(text, "alpha") {
			t.Fatalf("call %d: %v %q\n%s", i, res.IsError, text, h.stderr)
		}
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "elevated") {
		t.Fatalf("asked %d times, want once for the elevation: %q", len(asked), asked)
	}
}

// TestMCPAnswersEveryRequestAtEOF: when the client closes its input
// without waiting, every request it sent still gets its response before
// jail mcp exits, as in jail serve: a running call is cancelled (its
// sandbox ends) and answered, and a call waiting for the client's answer
// to an approval question is refused at once, not after ask_timeout.
func TestMCPAnswersEveryRequestAtEOF(t *testing.T) {
	h := startMCP(t, autoBashPolicy+"require_approval = [\"write\"]\nask_timeout = \"1m\"\n", "")
	r := &rawSession{t: t, h: h, out: bufio.NewScanner(h.out)}
	r.out.Buffer(make([]byte, 64<<10), 4<<20)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
	if resp := r.next(); resp.Error != nil {
		t.Fatalf("initialize: %+v", resp.Error)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	marker := fmt.Sprintf("%d", 700000+time.Now().UnixNano()%99999)
	r.send(`{"jsonrpc":"2.0","id":"long","method":"tools/call","params":{"name":"bash","arguments":{"command":"sleep ` + marker + `","timeout":600}}}`)
	r.send(`{"jsonrpc":"2.0","id":"ask","method":"tools/call","params":{"name":"write","arguments":{"path":"w.txt","content":"x"}}}`)
	// The write's question arrives; the sleep is running.
	var asked bool
	for !asked {
		if !r.out.Scan() {
			t.Fatalf("output ended: %s", h.stderr)
		}
		asked = strings.Contains(r.out.Text(), `"elicitation/create"`)
	}
	if !testutil.Eventually(10*time.Second, func() bool { return len(testutil.Processes("sleep\x00"+marker)) == 1 }) {
		t.Fatalf("the sleep never started\n%s", h.stderr)
	}
	start := time.Now()
	h.in.Close() // no answer, no cancellation: the client is gone
	answered := map[string]string{}
	for r.out.Scan() {
		var resp struct {
			ID     any             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(r.out.Bytes(), &resp) == nil && resp.ID != nil {
			answered[fmt.Sprint(resp.ID)] = string(resp.Result) + string(resp.Error)
		}
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %s to answer and exit", took)
	}
	for _, id := range []string{"long", "ask"} {
		if _, ok := answered[id]; !ok {
			t.Errorf("request %q left without a response; got %v\n%s", id, answered, h.stderr)
		}
	}
	// Refused: the question failed (nobody can answer) or the call was
	// cancelled first; either way not "no answer within 1m".
	if ask := answered["ask"]; !strings.Contains(ask, `"isError":true`) || strings.Contains(ask, "no answer within") ||
		!strings.Contains(ask, "nobody can answer") && !strings.Contains(ask, "cancelled before an answer") {
		t.Errorf("the asking call's response: %s", answered["ask"])
	}
	if _, err := os.Stat(filepath.Join(h.ws, "w.txt")); err == nil {
		t.Error("the unanswered write ran")
	}
	if pids := testutil.Processes("sleep\x00" + marker); len(pids) > 0 {
		t.Errorf("the cancelled call's processes outlived the session: %v", pids)
	}
}

// TestMCPApproverRunsOnce: the operator's approver runs once per call,
// whichever protocol the client speaks. From 2026-07-28 a call that may
// ask is first run through the gate dry (to return the question as an
// input request) and then for real, maybe in a second round with the
// answer; the approver's verdict from the first run decides the second.
func TestMCPApproverRunsOnce(t *testing.T) {
	for _, verdict := range []string{"approve", "escalate", "deny"} {
		for _, version := range []string{"2025-06-18", ""} {
			t.Run(cmp.Or(version, "newest")+"/"+verdict, func(t *testing.T) {
				dir := t.TempDir()
				runs := filepath.Join(dir, "runs")
				approver := filepath.Join(dir, "approver")
				script := fmt.Sprintf("#!/bin/sh\ncat >/dev/null\necho run >> %q\necho '{\"decision\":%q}'\n", runs, verdict)
				if err := os.WriteFile(approver, []byte(script), 0o755); err != nil {
					t.Fatal(err)
				}
				h := startMCP(t, fmt.Sprintf("[approval]\nrequire_approval = [\"write\"]\napprover = [%q]\n", approver), "")
				var asked int
				cs := h.connectVersion(&mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					return &mcp.ElicitResult{Action: "accept"}, nil
				}}, version)
				res, text := call(t, cs, "write", map[string]any{"path": "x.txt", "content": "x"})
				b, _ := os.ReadFile(runs)
				if n := bytes.Count(b, []byte("run\n")); n != 1 {
					t.Errorf("the approver ran %d times for one call, want once", n)
				}
				wantAsked, wantWritten := 0, verdict != "deny"
				if verdict == "escalate" {
					wantAsked = 1
				}
				if asked != wantAsked || res.IsError == wantWritten {
					t.Errorf("asked %d times (want %d), error %v %q\n%s", asked, wantAsked, res.IsError, text, h.stderr)
				}
				// A second call with the same arguments is a call of its own:
				// the approver is asked again.
				call(t, cs, "write", map[string]any{"path": "x.txt", "content": "x"})
				b, _ = os.ReadFile(runs)
				if n := bytes.Count(b, []byte("run\n")); n != 2 {
					t.Errorf("the approver ran %d times for two calls, want twice", n)
				}
			})
		}
	}
}
