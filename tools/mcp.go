//go:build linux

package tools

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jail-sandbox/jail/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServer adapts a Server to MCP for one caller identity.
type mcpServer struct {
	tools *Server
	who   CallContext
	// granted are the names ListTools gave who; a registered tool outside
	// it is refused through the gate, so the refusal is audited and says
	// why.
	granted map[string]bool
	// progressEvery is the interval of progress notifications.
	progressEvery time.Duration
	logger        *slog.Logger

	// srv, ds and registered serve progressive disclosure ([tools]
	// disclosure): only the discovery tools and the loaded ones are
	// registered with the SDK, which announces each change
	// (notifications/tools/list_changed). Without disclosure every
	// granted tool is registered once.
	srv        *mcp.Server
	ds         *Disclosure
	mu         sync.Mutex
	registered map[string]bool

	// verdicts carries the approver's verdict from a call's dry run
	// (WouldAsk) or first round to the call itself.
	verdicts policy.ApproverVerdicts
}

func (m *mcpServer) isRegistered(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.registered[name]
}

// NewMCPServer builds the MCP server (`jail mcp`) offering the tools ts
// grants who, as jail version. It sets ts.Asker, so ts must not be
// serving other front ends. Serve it over NewLineTransport.
func NewMCPServer(ts *Server, who CallContext, version string, logger *slog.Logger) (*mcp.Server, error) {
	defs, err := ts.ListTools(who)
	if err != nil {
		return nil, fmt.Errorf("list the tools of %s: %w", subjectName(who), err)
	}
	m := &mcpServer{tools: ts, who: who, granted: map[string]bool{}, progressEvery: time.Second, logger: logger,
		registered: map[string]bool{}}
	disclose := ts.Policy != nil && ts.Policy.Tools.Disclosure
	ts.Asker = policy.AskFunc(elicitApproval)
	srv := mcp.NewServer(&mcp.Implementation{Name: "jail", Title: "jail sandbox", Version: version}, &mcp.ServerOptions{
		Instructions: "Every tool runs inside a sandbox (namespaces, Landlock, seccomp) confined to the workspace; " +
			"paths are relative to the workspace. A refused call's text says why.",
		Logger: logger,
		// The tool list is fixed for the process (the policy is read
		// once), so no list_changed notifications; declared even when
		// the policy grants nothing, so the client sees an empty list
		// rather than a server without
		// With disclosure the list changes as the client loads
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: disclose}},
	})
	m.srv = srv
	for _, d := range defs {
		t, ok := ts.Registry.Lookup(d.Name)
		if !ok {
			return nil, fmt.Errorf("tool %s is granted but not registered", d.Name)
		}
		m.granted[d.Name] = true
		if !disclose {
			srv.AddTool(mcpTool(d, t.Capabilities), m.handler(d.Name))
			m.registered[d.Name] = true
		}
	}
	if disclose {
		m.ds = NewDisclosure(int(ts.Policy.Tools.DisclosureBudget))
		m.addDiscoveryTools()
	}
	srv.AddReceivingMiddleware(m.refuseUngranted)
	return srv, nil
}

func subjectName(cc CallContext) string {
	switch {
	case cc.Agent != "":
		return "agent " + cc.Agent
	case cc.Role != "":
		return "role " + cc.Role
	}
	return "the default caller"
}

// refuseUngranted sends a call of a registered tool the policy does not
// grant through the gate: the model learns the policy's reason from an
// error result and the audit log records the attempt, where the SDK would
// answer a JSON-RPC "unknown tool". Names jail has no tool for still get
// that JSON-RPC error.
func (m *mcpServer) refuseUngranted(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
		if !ok || m.isRegistered(p.Name) {
			return next(ctx, method, req)
		}
		if _, known := m.tools.Registry.Lookup(p.Name); !known {
			return next(ctx, method, req)
		}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		return m.call(ctx, ss, p), nil
	}
}

// handler runs one call of a granted tool.
func (m *mcpServer) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		stop := m.reportProgress(ctx, req, name)
		defer stop()
		return m.call(ctx, req.Session, req.Params), nil
	}
}

// call runs p through the tools server. ctx is cancelled by the SDK when
// the client sends notifications/cancelled or disconnects; the worker then
// kills the call's processes.
//
// Approval takes one of two shapes, after the protocol version the client
// speaks. Up to 2025-11-25 the gate's question goes to the client as an
// elicitation/create request while the call waits (elicitApproval). From
// 2026-07-28 a server may not send requests while serving one (multi
// round-trip requests, SEP-2322): a call that will need approval returns
// the question as an input request instead, and the client repeats the
// call with the answer, which the gate then reads.
func (m *mcpServer) call(ctx context.Context, ss *mcp.ServerSession, p *mcp.CallToolParamsRaw) *mcp.CallToolResult {
	args := p.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}") // MCP makes arguments optional
	}
	if ss != nil && multiRoundTrip(ss) && canElicit(ss) {
		key := approvalKey(p.Name, args)
		if ans, ok := p.InputResponses[key].(*mcp.ElicitResult); ok {
			ctx = context.WithValue(ctx, answerKey{}, ans)
		} else if q, asks := m.tools.WouldAsk(m.verdicts.Recording(ctx), Request{Tool: p.Name, Args: args, Context: m.who}); asks {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{key: approvalQuestion(q)}}
		}
		// The approver answered in the dry run (or in the round that
		// returned the question): its verdict decides the call, and it
		// runs once per call.
		ctx = m.verdicts.Taking(ctx)
	}
	ctx = context.WithValue(ctx, sessionKey{}, ss)
	res := m.tools.Call(ctx, Request{Tool: p.Name, Args: args, Context: m.who})
	return mcpResult(res)
}

// multiRoundTrip reports whether the session speaks a protocol version in
// which approval questions travel as input requests (2026-07-28 on).
func multiRoundTrip(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= "2026-07-28"
}

// canElicit reports whether the client declared it can ask its user.
func canElicit(ss *mcp.ServerSession) bool {
	ip := ss.InitializeParams()
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil
}

// approvalKey names an approval question after the exact call it is
// about, so an answer the client returns applies to that call only: a
// repeat with other arguments is asked again.
func approvalKey(tool string, args json.RawMessage) string {
	sum := sha256.Sum256(append([]byte(tool+"\x00"), args...))
	return "jail-approval-" + hex.EncodeToString(sum[:8])
}

// reportProgress sends a progress notification every m.progressEvery
// while a call runs, when the request carries a progress token, so a
// client can tell a long bash call from a hung server. The returned stop
// ends the notifications and waits for them.
func (m *mcpServer) reportProgress(ctx context.Context, req *mcp.CallToolRequest, name string) (stop func()) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		// Lifetime: until the call returns (stop) or is cancelled; stop
		// waits for it.
		defer wg.Done()
		tick := time.NewTicker(m.progressEvery)
		defer tick.Stop()
		start := time.Now()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			elapsed := time.Since(start)
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
				Progress: elapsed.Seconds(), Message: fmt.Sprintf("%s running for %s", name, elapsed.Round(time.Second))})
			if err != nil {
				m.logger.Debug("progress notification", "tool", name, "err", err)
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// sessionKey carries a call's *mcp.ServerSession in its context, for the
// approval question: the gate hands the asker only the context.
type sessionKey struct{}

// answerKey carries the client's answer (*mcp.ElicitResult) to a
// multi-round-trip approval question in the repeated call's context.
type answerKey struct{}

// maxElicitArgs bounds the arguments quoted in an approval question; a
// whole file being written is no use in a dialog.
const maxElicitArgs = 2000

// elicitApproval is the tools server's Asker: it asks the client's user
// whether a call the gate holds may run. Accepting the (empty) form
// approves; declining or dismissing refuses. A client that did not declare
// the elicitation capability gets an error, which the gate turns into a
// refusal with this reason; the gate also bounds the wait (ask_timeout).
func elicitApproval(ctx context.Context, q policy.Question) (policy.Answer, error) {
	if ans, ok := ctx.Value(answerKey{}).(*mcp.ElicitResult); ok {
		return policy.Answer{Approve: ans.Action == "accept"}, nil
	}
	ss, _ := ctx.Value(sessionKey{}).(*mcp.ServerSession)
	if ss == nil {
		return policy.Answer{}, errors.New("no MCP session to ask")
	}
	if !canElicit(ss) {
		return policy.Answer{}, errors.New("the MCP client cannot ask its user (it did not declare the elicitation capability)")
	}
	res, err := ss.Elicit(ctx, approvalQuestion(q))
	if err != nil {
		return policy.Answer{}, fmt.Errorf("elicitation: %w", err)
	}
	return policy.Answer{Approve: res.Action == "accept"}, nil
}

// approvalQuestion is the elicitation form for q: a message and an empty
// schema, since accepting or declining is the whole answer.
func approvalQuestion(q policy.Question) *mcp.ElicitParams {
	args, _ := json.Marshal(q.Args)
	quoted := string(args)
	if len(quoted) > maxElicitArgs {
		quoted = quoted[:maxElicitArgs] + fmt.Sprintf("... [%d chars truncated]", len(quoted)-maxElicitArgs)
	}
	who := q.Agent
	if who == "" {
		who = "the agent"
	}
	msg := fmt.Sprintf("jail: %s wants to run %s (%s).\nWhy approval is needed: %s\nArguments: %s\nAccept to allow this one call; decline to refuse it.",
		who, q.Tool, q.Risk, q.Reason, quoted)
	return &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}
}

// mcpTool is the MCP declaration of a tool: its schema, a title, and
// hints derived from its effective risk and capabilities.
func mcpTool(d Definition, caps []string) *mcp.Tool {
	caps = effectiveCapabilities(d.Name, caps)
	readOnly := d.Risk == policy.ReadOnly
	openWorld := slices.Contains(caps, policy.CapNetworkOutbound) || slices.Contains(caps, policy.CapBrowser)
	ann := &mcp.ToolAnnotations{
		Title:         toolTitle(d.Name),
		ReadOnlyHint:  readOnly,
		OpenWorldHint: &openWorld,
		// A read-only call changes nothing, so repeating it changes
		// nothing either; write replaces a file with the same content.
		IdempotentHint: readOnly || idempotentTools()[d.Name],
	}
	if !readOnly {
		// Every tool above read_only replaces, edits or runs something
		// that can delete: none is merely additive.
		destructive := true
		ann.DestructiveHint = &destructive
	}
	return &mcp.Tool{Name: d.Name, Title: ann.Title, Description: d.Description, InputSchema: d.InputSchema, Annotations: ann}
}

// effectiveCapabilities is the union of a tool's declared capabilities
// and the policy's static map, as the gate reads them: a tool cannot talk
// its hints down either.
func effectiveCapabilities(name string, declared []string) []string {
	caps := slices.Clone(declared)
	for _, t := range policy.Catalogue() {
		if t.Name != name {
			continue
		}
		for _, c := range t.Capabilities {
			if !slices.Contains(caps, c) {
				caps = append(caps, c)
			}
		}
	}
	return caps
}

// idempotentTools are the tools above read_only whose repetition with the
// same arguments has no further effect.
func idempotentTools() map[string]bool { return map[string]bool{"write": true} }

// toolTitle is the human title a client shows for a tool; a tool without
// an entry gets its name in words ("browser_click" -> "Browser click").
func toolTitle(name string) string {
	titles := map[string]string{
		"read":  "Read a file",
		"ls":    "List a directory",
		"glob":  "Find files by pattern",
		"grep":  "Search file contents",
		"write": "Write a file",
		"edit":  "Edit a file",
		"bash":  "Run a shell command",
	}
	if t, ok := titles[name]; ok {
		return t
	}
	words := strings.ReplaceAll(name, "_", " ")
	if words == "" {
		return words
	}
	return strings.ToUpper(words[:1]) + words[1:]
}

// Result meta keys that become MCP image content. A tool that captures a
// screen (the browser and desktop tools) puts the PNG, base64-encoded, in
// meta[metaImagePNG]; the MCP result carries it as an image block after
// the text and leaves it out of the structured meta.
const metaImagePNG = "image_png_base64"

// metaKey is the _meta key under which an MCP result carries the tool's
// structured meta (exit code, truncation, decision, ...).
const metaKey = "jail/meta"

// mcpResult maps a tool result to MCP content: the text as a text block,
// an image in the meta as an image block, is_error as IsError.
func mcpResult(r Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: r.IsError, Content: []mcp.Content{}}
	var img []byte
	if s, ok := r.Meta[metaImagePNG].(string); ok {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			out.IsError = true
			r.Content += fmt.Sprintf("\n[the tool's image (meta %q) is not valid base64: %v]", metaImagePNG, err)
		} else {
			img = b
		}
	}
	if r.Content != "" || img == nil {
		out.Content = append(out.Content, &mcp.TextContent{Text: r.Content})
	}
	if img != nil {
		out.Content = append(out.Content, &mcp.ImageContent{Data: img, MIMEType: "image/png"})
	}
	if len(r.Meta) > 0 {
		meta := make(map[string]any, len(r.Meta))
		for k, v := range r.Meta {
			if k != metaImagePNG {
				meta[k] = v
			}
		}
		if len(meta) > 0 {
			out.Meta = mcp.Meta{metaKey: meta}
		}
	}
	return out
}

// addDiscoveryTools registers list_tools, load_tool and load_tool_resource,
// the three levels of progressive disclosure as MCP  A granted tool
// that is not loaded can still be called: the gate decides it as any other.
func (m *mcpServer) addDiscoveryTools() {
	text := func(s string, isErr bool) *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: isErr, Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	readOnly := false
	ann := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &readOnly}
	m.addDiscovery(&mcp.Tool{Name: "list_tools", Title: "List tools", Annotations: ann,
		Description: "List every tool you may use, in short (name, summary, risk, loaded). Load one with load_tool to get its full definition.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sums, _, err := m.tools.Summaries(m.who, m.ds)
			if err != nil {
				return text(err.Error(), true), nil
			}
			b, _ := json.Marshal(sums)
			return text(string(b), false), nil
		})
	var args struct {
		Name     string `json:"name"`
		Resource string `json:"resource"`
	}
	m.addDiscovery(&mcp.Tool{Name: "load_tool", Title: "Load a tool", Annotations: ann,
		Description: "Load a tool's full definition so you can call it; the oldest-loaded tools are unloaded when the budget is full.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["name"],"properties":{"name":{"type":"string"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			a := args
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return text("load_tool: "+err.Error(), true), nil
			}
			t, err := m.tools.Permitted(m.who, a.Name)
			if err != nil {
				return text("load_tool: "+err.Error(), true), nil
			}
			d := t.Definition()
			unloaded, err := m.ds.Load(d)
			if err != nil {
				return text(err.Error(), true), nil
			}
			m.mu.Lock()
			for _, u := range unloaded {
				delete(m.registered, u)
			}
			m.registered[d.Name] = true
			m.mu.Unlock()
			if len(unloaded) > 0 {
				m.srv.RemoveTools(unloaded...)
			}
			m.srv.AddTool(mcpTool(d, t.Capabilities), m.handler(d.Name))
			msg := "loaded " + d.Name
			if len(unloaded) > 0 {
				msg += "; unloaded " + strings.Join(unloaded, ", ")
			}
			return text(msg, false), nil
		})
	m.addDiscovery(&mcp.Tool{Name: "load_tool_resource", Title: "Read a tool resource", Annotations: ann,
		Description: "Read one document of a tool (schema, description, examples) without loading it.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["name","resource"],"properties":{"name":{"type":"string"},"resource":{"type":"string"}}}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			a := args
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return text("load_tool_resource: "+err.Error(), true), nil
			}
			t, err := m.tools.Permitted(m.who, a.Name)
			if err != nil {
				return text("load_tool_resource: "+err.Error(), true), nil
			}
			doc, err := t.Resource(a.Resource)
			if err != nil {
				return text(err.Error(), true), nil
			}
			return text(doc, false), nil
		})
}

func (m *mcpServer) addDiscovery(t *mcp.Tool, h mcp.ToolHandler) {
	m.srv.AddTool(t, h)
	m.mu.Lock()
	m.registered[t.Name] = true
	m.mu.Unlock()
}
