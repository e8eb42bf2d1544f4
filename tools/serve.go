//go:build linux

package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/jail-sandbox/jail/policy"
)

// The JSON-lines protocol of `jail serve` (README: "Tools, jail tool and
// jail serve"): one request per line in, one response per line out, in
// any order, each call through Server.Call (server.go).

// Response is one line jail serve writes.
type Response struct {
	ID     json.RawMessage `json:"id"`
	Type   string          `json:"type"`
	Result *Result         `json:"result,omitempty"`
	Tools  []Definition    `json:"tools,omitempty"`
	// With [tools] disclosure: list_tools's short forms, the names a
	// load_tool unloaded, and a load_tool_resource's document.
	Summaries []Summary `json:"summaries,omitempty"`
	Unloaded  []string  `json:"unloaded,omitempty"`
	Document  string    `json:"document,omitempty"`
	Error     string    `json:"error,omitempty"`
	// approval_request fields
	Tool       string `json:"tool,omitempty"`
	ArgsDigest string `json:"args_digest,omitempty"`
	Risk       string `json:"risk,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// DefaultMaxLine bounds a request line: large enough for a big write,
// small enough that one line cannot exhaust the supervisor.
const DefaultMaxLine = 8 << 20

// maxPending bounds calls accepted but not finished; beyond it a call is
// refused at once rather than queued without limit.
const maxPending = 4096

// Serve reads requests from in and writes responses to out until in ends
// (then waits for the calls still running) or ctx is cancelled.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	s.init()
	// One connection is one caller's context: what it loaded is its own.
	var ds *Disclosure
	if s.Policy != nil && s.Policy.Tools.Disclosure {
		ds = NewDisclosure(int(s.Policy.Tools.DisclosureBudget))
	}
	ctx, cancelAll := context.WithCancel(ctx)
	defer cancelAll()
	var outMu sync.Mutex
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	send := func(r Response) {
		if r.ID == nil {
			r.ID = json.RawMessage("null")
		}
		outMu.Lock()
		defer outMu.Unlock()
		if err := enc.Encode(r); err != nil {
			s.Logger.Error("write response", "err", err)
		}
	}
	var (
		mu        sync.Mutex
		running   = map[string]context.CancelFunc{}
		approvals = map[string]chan bool{}
		calls     sync.WaitGroup
		// inputDone closes at the end of the input: no approval can
		// arrive any more, so pending and later questions are refused at
		// once instead of waiting for the gate's timeout.
		inputDone = make(chan struct{})
	)
	br := bufio.NewReaderSize(in, 64<<10)
	ended := make(chan error, 1)
	// The goroutines of a connection take turns at reading: the one
	// holding the baton reads requests until one is a call, passes the
	// baton on, runs the call itself (so a call starts on the goroutine and
	// CPU that read it, with no hop between the two) and then waits for
	// the baton again. They are reused, so their stacks are already grown
	// (a fresh goroutine per call spent 5% of the server's CPU growing
	// one). The reader that meets the end of the input waits for the calls
	// and dismisses the others.
	baton := make(chan struct{}, 1)
	var idle atomic.Int32
	dismissed := make(chan struct{})
	var turn func()
	turn = func() {
		for {
			idle.Add(1)
			select {
			case <-baton:
				idle.Add(-1)
			case <-dismissed:
				return
			}
			for {
				line, tooLong, err := ReadLine(br, s.MaxLine)
				var run func()
				if tooLong {
					send(Response{Type: "error", Error: fmt.Sprintf("request line longer than %d bytes: refused", s.MaxLine)})
				} else if len(bytes.TrimSpace(line)) > 0 {
					run = s.handle(ctx, line, send, &mu, running, approvals, &calls, inputDone, ds)
				}
				if err != nil {
					close(inputDone)
					if run != nil {
						run()
					}
					calls.Wait()
					close(dismissed)
					ended <- err
					return
				}
				if run != nil {
					if idle.Load() == 0 {
						// Lifetime: until dismissed at the end of the input.
						go turn()
					}
					baton <- struct{}{}
					run()
					break
				}
			}
		}
	}
	baton <- struct{}{}
	// Lifetime: until dismissed at the end of the input.
	go turn()
	if err := <-ended; !errors.Is(err, io.EOF) {
		return fmt.Errorf("serve: read: %w", err)
	}
	return nil
}

// handle dispatches one request line.
func (s *Server) handle(ctx context.Context, line []byte, send func(Response), mu *sync.Mutex, running map[string]context.CancelFunc, approvals map[string]chan bool, calls *sync.WaitGroup, inputDone <-chan struct{}, ds *Disclosure) (run func()) {
	var r Request
	if err := json.Unmarshal(line, &r); err != nil {
		send(Response{ID: idOf(line), Type: "error", Error: "malformed request: " + err.Error()})
		return nil
	}
	if !validID(r.ID) {
		send(Response{Type: "error", Error: `request without an "id" (a string or a number)`})
		return nil
	}
	id := string(r.ID)
	switch r.Type {
	case "list_tools":
		if ds != nil {
			sums, full, err := s.Summaries(r.Context, ds)
			if err != nil {
				send(Response{ID: r.ID, Type: "error", Error: err.Error()})
				return nil
			}
			send(Response{ID: r.ID, Type: "tools", Summaries: sums, Tools: full})
			return nil
		}
		defs, err := s.ListTools(r.Context)
		if err != nil {
			send(Response{ID: r.ID, Type: "error", Error: err.Error()})
			return nil
		}
		send(Response{ID: r.ID, Type: "tools", Tools: defs})
	case "load_tool", "load_tool_resource":
		if ds == nil {
			send(Response{ID: r.ID, Type: "error", Error: r.Type + ": progressive disclosure is off ([tools] disclosure = true turns it on)"})
			return nil
		}
		t, err := s.Permitted(r.Context, r.Name)
		if err != nil {
			send(Response{ID: r.ID, Type: "error", Error: r.Type + ": " + err.Error()})
			return nil
		}
		if r.Type == "load_tool_resource" {
			doc, err := t.Resource(r.Resource)
			if err != nil {
				send(Response{ID: r.ID, Type: "error", Error: err.Error()})
				return nil
			}
			send(Response{ID: r.ID, Type: "resource", Document: doc})
			return nil
		}
		unloaded, err := ds.Load(t.Definition())
		if err != nil {
			send(Response{ID: r.ID, Type: "error", Error: err.Error()})
			return nil
		}
		send(Response{ID: r.ID, Type: "tool", Tools: []Definition{t.Definition()}, Unloaded: unloaded})
	case "cancel":
		mu.Lock()
		c, ok := running[string(r.Target)]
		mu.Unlock()
		if !ok {
			send(Response{ID: r.ID, Type: "error", Error: "cancel: no running call with id " + string(r.Target)})
			return nil
		}
		c()
		send(Response{ID: r.ID, Type: "cancelled"})
	case "approval_response":
		mu.Lock()
		ch, ok := approvals[id]
		delete(approvals, id)
		mu.Unlock()
		if !ok {
			send(Response{ID: r.ID, Type: "error", Error: "approval_response: no pending approval request with id " + id})
			return nil
		}
		ch <- r.Approve
	case "", "call":
		if r.Tool == "" {
			send(Response{ID: r.ID, Type: "error", Error: `call without a "tool"`})
			return nil
		}
		mu.Lock()
		_, dup := running[id]
		busy := len(running) >= maxPending
		var cctx context.Context
		var cancel context.CancelFunc
		if !dup && !busy {
			cctx, cancel = context.WithCancel(ctx)
			running[id] = cancel
		}
		mu.Unlock()
		switch {
		case dup:
			send(Response{ID: r.ID, Type: "error", Error: "a call with id " + id + " is still running"})
			return nil
		case busy:
			send(Response{ID: r.ID, Type: "error", Error: fmt.Sprintf("server busy: %d calls pending", maxPending)})
			return nil
		}
		asker := policy.AskFunc(func(actx context.Context, q policy.Question) (policy.Answer, error) {
			ch := make(chan bool, 1)
			mu.Lock()
			approvals[id] = ch
			mu.Unlock()
			defer func() {
				mu.Lock()
				delete(approvals, id)
				mu.Unlock()
			}()
			send(Response{ID: r.ID, Type: "approval_request", Tool: q.Tool, ArgsDigest: policy.ArgsDigest(q.Args), Risk: q.Risk.String(), Reason: q.Reason})
			select {
			case ok := <-ch:
				return policy.Answer{Approve: ok}, nil
			case <-actx.Done():
				return policy.Answer{}, actx.Err()
			case <-inputDone:
				return policy.Answer{}, errors.New("the harness closed its input: nobody can answer")
			}
		})
		calls.Add(1)
		return func() {
			defer calls.Done()
			defer func() {
				mu.Lock()
				delete(running, id)
				mu.Unlock()
				cancel()
			}()
			res := s.call(cctx, r, asker)
			send(Response{ID: r.ID, Type: "result", Result: &res})
		}
	default:
		send(Response{ID: r.ID, Type: "error", Error: fmt.Sprintf("unknown request type %q (want call, list_tools, load_tool, load_tool_resource, cancel or approval_response)", r.Type)})
	}
	return nil
}

// ReadLine reads one line of at most max bytes. A longer line is consumed
// to its end and reported with tooLong, so the stream stays in step. The
// JSON-lines front ends (jail serve, jail mcp) read their input with it.
func ReadLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > max+1 {
			tooLong = true
			buf = nil
		} else if !tooLong {
			buf = append(buf, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if tooLong {
			return nil, true, err
		}
		return buf, false, err
	}
}

func validID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return false
	}
	var v any
	if json.Unmarshal(id, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

// idOf digs the id out of a line that did not decode as a Request, so a
// harness can match the error to its call when possible.
func idOf(line []byte) json.RawMessage {
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &probe) == nil && validID(probe.ID) {
		return probe.ID
	}
	return nil
}
