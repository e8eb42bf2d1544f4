//go:build linux

package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/jail-sandbox/jail/policy"
)

// Request is one line a harness sends to `jail serve` (README: "Tools,
// jail tool and jail serve"). Type is empty (or "call") for a tool call,
// "list_tools", "cancel" (Target names the call) or "approval_response"
// (ID names the call that asked, Approve the answer).
type Request struct {
	ID      json.RawMessage `json:"id"`
	Type    string          `json:"type,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Context CallContext     `json:"context"`
	Target  json.RawMessage `json:"target,omitempty"`
	Approve bool            `json:"approve,omitempty"`
	// Name and Resource are the arguments of load_tool and load_tool_resource.
	Name     string `json:"name,omitempty"`
	Resource string `json:"resource,omitempty"`
}

// Server routes tool calls to workers under the policy. The exported
// fields are set before the first Serve or Call and not changed after.
type Server struct {
	Registry   *Registry
	Policy     *policy.Policy
	PolicyHash string
	Home       string
	// Audit receives one record per call; nil writes none.
	Audit *policy.AuditLog
	// Spawn starts a worker in a fresh sandbox.
	Spawn func(ctx context.Context) (*Worker, error)
	// SpawnReadOnly starts a worker whose sandbox has the workspace
	// mounted read-only, for callers whose role says so (verify, review,
	// analysis, triage): their bash cannot write either. Nil refuses such
	// calls rather than run them in a writable workspace.
	SpawnReadOnly func(ctx context.Context) (*Worker, error)
	// SpawnShell makes a held sandbox for one bash call (readOnly: the
	// workspace mounted read-only). When set, every bash call runs in a
	// fresh sandbox of its own rather than in a worker.
	SpawnShell func(ctx context.Context, readOnly bool) (*Shell, error)
	// SpareShells is how many bash sandboxes are kept made ahead, per
	// kind, for a long-lived server; zero makes none after a call.
	SpareShells int
	// MaxConcurrency bounds calls running at once, and the workers alive
	// and bash sandboxes in use of each kind; zero means runtime.NumCPU().
	MaxConcurrency int
	// MaxLine bounds one request line; zero means DefaultMaxLine.
	MaxLine int
	// BashMaxTimeout is bash's maximum per-call timeout (policy
	// limits.timeout).
	BashMaxTimeout time.Duration
	// MaxBackground bounds the background processes (bash
	// run_in_background, each in a sandbox from SpawnShell) alive at once
	// (policy limits.background); zero or less refuses them, with
	// BackgroundOff as the reason. They end with Close.
	MaxBackground int
	BackgroundOff string
	// Asker answers approval questions for Call (jail tool); Serve asks
	// its harness instead.
	Asker  policy.Asker
	Logger *slog.Logger

	once     sync.Once
	pool     *pool
	roPool   *pool
	shells   *shells
	bg       *background
	running  chan struct{} // one per call running, MaxConcurrency at most
	mu       sync.Mutex
	gates    map[policy.Subject]*policy.Gate
	idem     map[string]*idemEntry
	idemKeys []string // insertion order, to bound idem
	sessions map[string]*session
}

// maxIdempotencyKeys bounds the remembered results; the oldest go first.
const maxIdempotencyKeys = 10000

type idemEntry struct {
	done chan struct{}
	res  Result
}

type session struct {
	mu    sync.Mutex // one bash call of a session at a time
	state Session
}

func (s *Server) init() {
	s.once.Do(func() {
		if s.MaxConcurrency <= 0 {
			s.MaxConcurrency = runtime.NumCPU()
		}
		if s.MaxLine <= 0 {
			s.MaxLine = DefaultMaxLine
		}
		if s.Logger == nil {
			s.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		}
		s.pool = newPool(s.Spawn, s.MaxConcurrency)
		s.roPool = newPool(s.SpawnReadOnly, s.MaxConcurrency)
		s.shells = newShells(s.SpawnShell, s.SpareShells, s.MaxConcurrency)
		off := s.BackgroundOff
		if off == "" {
			off = "this server keeps no background processes"
		}
		if s.SpawnShell == nil {
			off = "bash calls run in the tool worker here, not in sandboxes of their own"
		}
		s.bg = newBackground(s.MaxBackground, off)
		s.running = make(chan struct{}, s.MaxConcurrency)
		s.gates = map[policy.Subject]*policy.Gate{}
		s.idem = map[string]*idemEntry{}
		s.sessions = map[string]*session{}
	})
}

// Close ends every idle worker and every background process; call it
// after Serve returned.
func (s *Server) Close() {
	s.init()
	s.bg.close()
	s.pool.close()
	s.roPool.close()
	s.shells.close()
}

// PrewarmTool readies what a call of tool runs in: a held sandbox for
// bash when each bash call has its own, else a worker.
func (s *Server) PrewarmTool(ctx context.Context, tool string) error {
	s.init()
	if tool == "bash" && s.SpawnShell != nil {
		return s.shells.prewarm(ctx, false)
	}
	return s.Prewarm(ctx, 1)
}

// Prewarm starts n workers ahead of the first calls, and, when n > 0 and
// bash calls have sandboxes of their own, the first of those.
func (s *Server) Prewarm(ctx context.Context, n int) error {
	s.init()
	if n > 0 && s.SpawnShell != nil && s.SpareShells > 0 {
		if err := s.shells.prewarm(ctx, false); err != nil {
			return err
		}
	}
	var ws []*Worker
	defer func() {
		for _, w := range ws {
			s.pool.put(w)
		}
	}()
	for range min(n, s.MaxConcurrency) {
		w, err := s.pool.get(ctx)
		if err != nil {
			return err
		}
		ws = append(ws, w)
	}
	return nil
}

// gate returns the policy gate for who, built once per subject.
func (s *Server) gate(who policy.Subject) (*policy.Gate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.gates[who]; ok {
		return g, nil
	}
	g, err := policy.NewGate(s.Policy, s.Registry.Infos(), who, s.Home, nil)
	if err != nil {
		return nil, err
	}
	s.gates[who] = g
	return g, nil
}

// ListTools is the definitions of the tools who may call, in registry
// order: the granted tools of [Server.Toolset]; a tool the policy does not
// grant, or that cannot run here (jail check says why), is absent.
func (s *Server) ListTools(cc CallContext) ([]Definition, error) {
	ts, err := s.Toolset(cc)
	if err != nil {
		return nil, err
	}
	defs := []Definition{}
	for _, d := range ts.Granted {
		if t, ok := s.Registry.Lookup(d.Tool.Name); ok {
			defs = append(defs, t.Definition())
		}
	}
	return defs, nil
}

// Call runs one call through the gate and a worker, with s.Asker for
// approvals. The result is never a Go error: every failure is an error
// result.
func (s *Server) Call(ctx context.Context, r Request) Result {
	s.init()
	return s.call(ctx, r, s.Asker)
}

func (s *Server) call(ctx context.Context, r Request, asker policy.Asker) Result {
	start := time.Now()
	var args map[string]any
	json.Unmarshal(r.Args, &args) // validation below reports what is wrong
	pc := policy.Call{Tool: r.Tool, Args: args, Unattended: r.Context.Unattended}
	var ts *policy.Toolset
	audit := func(d policy.Decision) {
		if s.Audit == nil {
			return
		}
		rec := policy.NewAuditRecord(time.Now(), ts, pc, d, s.PolicyHash, time.Since(start))
		if err := s.Audit.Write(rec); err != nil {
			s.Logger.Error("audit", "err", err)
		}
	}
	refuse := func(outcome policy.Outcome, why string) Result {
		audit(policy.Decision{Outcome: outcome, ApprovalSource: policy.SourceNone, Reason: why, Step: "serve"})
		return errorf("%s", why)
	}
	t, ok := s.Registry.Lookup(r.Tool)
	if !ok {
		return refuse(policy.OutcomeDenied, fmt.Sprintf("unknown tool %q", r.Tool))
	}
	pc.Declared = t.Risk
	if err := t.ready(); err != nil {
		return refuse(policy.OutcomeDenied, fmt.Sprintf("tool %s cannot run here: %v", t.Name, err))
	}
	g, err := s.gate(policy.Subject{Agent: r.Context.Agent, Role: r.Context.Role})
	if err != nil {
		return refuse(policy.OutcomeDenied, err.Error())
	}
	ts = g.Toolset
	if err := t.Validate(r.Args); err != nil {
		return refuse(policy.OutcomeDenied, err.Error())
	}

	// A repeated write or edit with the same key returns the first result.
	key := r.Context.IdempotencyKey
	if key != "" && slices.Contains(t.Capabilities, policy.CapFSWrite) {
		key = r.Context.Agent + "\x00" + t.Name + "\x00" + key
		s.mu.Lock()
		e, seen := s.idem[key]
		if !seen {
			e = &idemEntry{done: make(chan struct{})}
			s.idem[key] = e
			s.idemKeys = append(s.idemKeys, key)
			if len(s.idemKeys) > maxIdempotencyKeys {
				delete(s.idem, s.idemKeys[0])
				s.idemKeys = s.idemKeys[1:]
			}
		}
		s.mu.Unlock()
		if seen {
			select {
			case <-e.done:
			case <-ctx.Done():
				return errorf("cancelled while waiting for the first call with this idempotency key")
			}
			res := e.res
			res.Meta = cloneMeta(res.Meta)
			res.Meta["idempotent_replay"] = true
			audit(policy.Decision{Allowed: true, Outcome: policy.OutcomeAllowed, ApprovalSource: policy.SourcePolicy, Step: "idempotency", Reason: "repeated idempotency key: the first result is returned, nothing applied"})
			return res
		}
		var res Result
		defer func() {
			e.res = res
			close(e.done)
		}()
		res = s.decideAndRun(ctx, t, g, pc, r, asker, audit)
		return res
	}
	return s.decideAndRun(ctx, t, g, pc, r, asker, audit)
}

func cloneMeta(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (s *Server) decideAndRun(ctx context.Context, t *Tool, g *policy.Gate, pc policy.Call, r Request, asker policy.Asker, audit func(policy.Decision)) Result {
	gc := *g // the same toolset and guard; this call's asker
	gc.Asker = asker
	var sess *session
	var st Session
	if t.Name == "bash" {
		// The session is held from the decision to the end of the call:
		// the command is judged against the state it will run in, which
		// no other call of the session changes meanwhile.
		sess = s.session(r.Context)
		sess.mu.Lock()
		defer sess.mu.Unlock()
		st = sess.state
		pc.Shell = st.Shell()
		if s.SpawnShell != nil && !runInBackground(r.Args) {
			v, err := s.shells.view(ctx, g.Toolset != nil && g.Toolset.WorkspaceReadOnly)
			if err != nil {
				audit(policy.Decision{Outcome: policy.OutcomeDenied, ApprovalSource: policy.SourceNone, Reason: err.Error(), Step: "serve"})
				return errorf("%v", err)
			}
			gc.GitConfig = v.gitConfig(&st)
		}
	}
	d := gc.Check(ctx, pc)
	if !d.Allowed {
		audit(d)
		return Result{IsError: true, Content: fmt.Sprintf("%s: %s (%s)", d.Outcome, d.Reason, t.Name),
			Meta: map[string]any{"decision": d.Outcome, "reason": d.Reason, "step": d.Step}}
	}
	if t.Host != nil {
		res := t.Host(ctx, HostCall{Args: r.Args, Context: r.Context, Request: string(r.ID), Timeout: t.Timeout, OutputCap: t.OutputCap, bg: s.bg})
		audit(d)
		return res
	}
	timeout := t.Timeout
	if t.Name == "bash" {
		timeout = BashTimeout(r.Args, s.BashMaxTimeout)
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	req := callRequest{Tool: t.Name, Args: r.Args, Timeout: timeout, OutputCap: t.OutputCap}
	workers := s.pool
	if g.Toolset != nil && g.Toolset.WorkspaceReadOnly {
		workers = s.roPool
	}
	if sess != nil {
		req.Session = &st
	}
	var res Result
	var newState *Session
	var err error
	select {
	case s.running <- struct{}{}:
		defer func() { <-s.running }()
	case <-ctx.Done():
		audit(d)
		return errorf("cancelled while waiting for a free slot (max_concurrency %d)", s.MaxConcurrency)
	}
	if t.Name == "bash" && runInBackground(r.Args) {
		res = s.startBackground(ctx, g.Toolset != nil && g.Toolset.WorkspaceReadOnly, r.Context, req)
	} else if t.Name == "bash" && s.SpawnShell != nil {
		res, newState, err = s.runShell(ctx, g.Toolset != nil && g.Toolset.WorkspaceReadOnly, req)
	} else {
		res, newState, err = s.run(ctx, workers, req)
	}
	if err != nil {
		res = errorf("%v", err)
	}
	if sess != nil && newState != nil && newState.Cwd != "" {
		sess.state = *newState
	}
	audit(d)
	return res
}

// run gets a worker, makes the call, and puts the worker back, or
// discards it when it died or got stuck.
func (s *Server) run(ctx context.Context, workers *pool, req callRequest) (Result, *Session, error) {
	w, err := workers.get(ctx)
	if err != nil {
		return Result{}, nil, fmt.Errorf("no worker: %w", err)
	}
	res, sess, err := w.call(ctx, req)
	if err != nil {
		workers.discard(w)
		if ctx.Err() != nil {
			return errorf("cancelled"), nil, nil
		}
		return Result{}, nil, err
	}
	workers.put(w)
	return res, sess, nil
}

// runShell runs a bash call in a fresh sandbox of its own.
func (s *Server) runShell(ctx context.Context, readOnly bool, req callRequest) (Result, *Session, error) {
	a, err := decode[struct{ Command string }](req.Args)
	if err != nil {
		return errorf("%v", err), nil, nil
	}
	sh, err := s.shells.take(ctx, readOnly)
	if err != nil {
		return Result{}, nil, err
	}
	res, next := bashCall(ctx, sh, a.Command, req.Session, req.OutputCap, req.Timeout)
	s.shells.done(sh, readOnly)
	return res, next, nil
}

func (s *Server) session(cc CallContext) *session {
	key := cc.Agent + "\x00" + cc.Role + "\x00" + cc.TaskID
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.sessions[key]
	if !ok {
		se = &session{}
		s.sessions[key] = se
	}
	return se
}
