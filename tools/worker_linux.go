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
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Options are the settings the registry's tools take from the policy.
type Options struct {
	// BashMaxTimeout is the longest a bash call may run (policy
	// limits.timeout); calls asking for more get this.
	BashMaxTimeout time.Duration
}

// Core is the core tools in their registry order, the order of
// policy.Catalogue.
func Core(o Options) []*Tool {
	if o.BashMaxTimeout <= 0 {
		o.BashMaxTimeout = 10 * time.Minute
	}
	return []*Tool{readTool(), lsTool(), globTool(), grepTool(), writeTool(), editTool(), bashTool(o.BashMaxTimeout), bashOutputTool(), bashKillTool()}
}

// DefaultTimeout bounds a call of a tool that declares no Timeout.
const DefaultTimeout = time.Minute

// workerRequest is one line from the supervisor to a worker: a call, or a
// cancellation of the call with the id in Cancel.
type workerRequest struct {
	ID        uint64          `json:"id,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Args      json.RawMessage `json:"args,omitempty"`
	TimeoutMS int64           `json:"timeout_ms,omitempty"`
	OutputCap int             `json:"output_cap,omitempty"`
	Session   *Session        `json:"session,omitempty"`
	Cancel    uint64          `json:"cancel,omitempty"`
}

// workerResponse is the answer to one call.
type workerResponse struct {
	ID      uint64   `json:"id"`
	Result  Result   `json:"result"`
	Session *Session `json:"session,omitempty"`
}

// WorkerMain serves tool calls on in and out until in ends; it is the
// hidden `jail __tool-worker` command, run as the COMMAND of a sandbox, so
// every call runs under the sandbox's mounts, Landlock and seccomp. The
// working directory is the workspace. It returns the process's exit code.
func WorkerMain(in io.Reader, out io.Writer) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "jail tool worker:", err)
		return 125
	}
	ws, err := OpenWorkspace(wd)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jail tool worker:", err)
		return 125
	}
	defer ws.Close()
	// Orphans of bash calls are reparented here rather than to the
	// sandbox's init, so killTree finds them (double-forked daemons).
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "jail tool worker: PR_SET_CHILD_SUBREAPER:", err)
	}
	reg, err := NewRegistry(Core(Options{})...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jail tool worker:", err)
		return 125
	}
	var bash sync.Mutex
	if err := serveWorker(context.Background(), reg, ws, &bash, in, out); err != nil {
		fmt.Fprintln(os.Stderr, "jail tool worker:", err)
		return 1
	}
	return 0
}

// serveWorker reads requests and runs calls one at a time, in order, while
// the reader stays free to act on cancellations.
func serveWorker(ctx context.Context, reg *Registry, ws *Workspace, bash *sync.Mutex, in io.Reader, out io.Writer) error {
	var (
		mu      sync.Mutex                        // guards the three maps
		cancels = map[uint64]context.CancelFunc{} // calls running
		queued  = map[uint64]bool{}               // calls waiting for the runner
		early   = map[uint64]bool{}               // queued calls cancelled before they started
		outMu   sync.Mutex
	)
	enc := json.NewEncoder(out)
	calls := make(chan workerRequest, 64)
	// read and ls are bounded by their size and entry caps; the rest may
	// run long and must stay cancellable while the reader goes on.
	inline := map[string]bool{"read": true, "ls": true}
	done := make(chan struct{})
	go func() {
		// Lifetime: until calls is closed (the supervisor closed stdin) and
		// the calls already queued have run.
		defer close(done)
		for req := range calls {
			mu.Lock()
			cctx, cancel := context.WithCancel(ctx)
			delete(queued, req.ID)
			if early[req.ID] {
				cancel() // cancelled while queued
				delete(early, req.ID)
			}
			cancels[req.ID] = cancel
			mu.Unlock()
			res, sess := runCall(cctx, reg, ws, bash, req)
			cancel()
			mu.Lock()
			delete(cancels, req.ID)
			mu.Unlock()
			outMu.Lock()
			enc.Encode(workerResponse{ID: req.ID, Result: res, Session: sess})
			outMu.Unlock()
		}
	}()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxWorkerLine)
	var err error
	for sc.Scan() {
		var req workerRequest
		if e := json.Unmarshal(sc.Bytes(), &req); e != nil {
			err = fmt.Errorf("bad request from the supervisor: %w", e)
			break
		}
		if req.Cancel != 0 {
			// The call's own line came first (the supervisor cancels only
			// what it sent): it is running, queued, or already answered,
			// and then the cancel is moot.
			mu.Lock()
			if c := cancels[req.Cancel]; c != nil {
				c()
			} else if queued[req.Cancel] {
				early[req.Cancel] = true
			}
			mu.Unlock()
			continue
		}
		if inline[req.Tool] && len(calls) == 0 {
			// Short, bounded calls with nothing queued ahead run here:
			// a hand-over to the runner goroutine costs a thread wake-up,
			// as much as the read itself.
			res, sess := runCall(ctx, reg, ws, bash, req)
			outMu.Lock()
			enc.Encode(workerResponse{ID: req.ID, Result: res, Session: sess})
			outMu.Unlock()
			continue
		}
		mu.Lock()
		queued[req.ID] = true
		mu.Unlock()
		calls <- req
	}
	close(calls)
	<-done
	if err == nil {
		err = sc.Err()
	}
	return err
}

// maxWorkerLine bounds one request from the supervisor, which has already
// refused larger ones from its own client.
const maxWorkerLine = 64 << 20

// runCall runs one call, turning a panic into an error result: a broken
// tool must not take the worker, and the calls queued behind it, down.
func runCall(ctx context.Context, reg *Registry, ws *Workspace, bash *sync.Mutex, req workerRequest) (res Result, sess *Session) {
	t, ok := reg.Lookup(req.Tool)
	if !ok {
		return errorf("unknown tool %q", req.Tool), nil
	}
	if t.run == nil {
		return errorf("tool %s runs in the supervisor, not in a worker", t.Name), nil
	}
	if ctx.Err() != nil {
		// Cancelled while it waited in the queue: nothing of it runs.
		return Result{IsError: true, Content: "[cancelled before it started]", Meta: map[string]any{"cancelled": true}}, nil
	}
	x := &execCtx{ws: ws, outputCap: req.OutputCap, timeout: time.Duration(req.TimeoutMS) * time.Millisecond, bash: bash}
	if x.outputCap <= 0 {
		x.outputCap = t.OutputCap
	}
	if x.timeout <= 0 {
		x.timeout = DefaultTimeout
	}
	if t.Name == "bash" {
		x.session = &Session{}
		if req.Session != nil {
			*x.session = *req.Session
		}
		sess = x.session
	}
	defer func() {
		if p := recover(); p != nil {
			res, sess = errorf("tool %s failed: %v\n%s", t.Name, p, debug.Stack()), nil
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, x.timeout+time.Second) // bash kills at x.timeout itself
	defer cancel()
	res = t.run(ctx, x, req.Args)
	if ctx.Err() == context.DeadlineExceeded && t.Name != "bash" {
		res = errorf("%s timed out after %s", t.Name, x.timeout)
	} else if errors.Is(ctx.Err(), context.Canceled) && !res.IsError {
		res = errorf("cancelled")
	}
	return res, sess
}
