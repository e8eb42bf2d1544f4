package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Worker is the supervisor's end of one worker: requests go to its stdin,
// responses come from its stdout. It serves one call at a time; a pool
// holds several for concurrency.
type Worker struct {
	in   io.WriteCloser
	stop func() // ends the worker's sandbox; called once by Close

	mu      sync.Mutex // one call at a time
	writeMu sync.Mutex
	nextID  uint64
	resp    chan workerResponse
	dead    chan struct{} // closed when the response stream ends
	err     error         // why it ended; set before dead closes
	close   sync.Once
}

// NewWorker wraps a running worker's pipes. stop must end the worker (kill
// its sandbox) and wait for it; Close calls it once.
func NewWorker(in io.WriteCloser, out io.Reader, stop func()) *Worker {
	w := &Worker{in: in, stop: stop, resp: make(chan workerResponse, 1), dead: make(chan struct{})}
	go func() {
		// Lifetime: until the worker's stdout ends (it exited or Close
		// killed it).
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), maxWorkerLine)
		for sc.Scan() {
			var r workerResponse
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				w.err = fmt.Errorf("worker: bad response: %w", err)
				break
			}
			w.resp <- r
		}
		if w.err == nil {
			w.err = sc.Err()
		}
		if w.err == nil {
			w.err = errors.New("worker: exited")
		}
		close(w.dead)
		io.Copy(io.Discard, out) // let the worker finish writing, if it still is
	}()
	return w
}

// ErrWorkerGone means the worker died during a call; the call's result is
// unknown and the worker must be discarded.
var ErrWorkerGone = errors.New("the tool worker died")

// callRequest is one call as the supervisor sends it.
type callRequest struct {
	Tool      string
	Args      json.RawMessage
	Timeout   time.Duration
	OutputCap int
	Session   *Session
}

// cancelGrace is how long a worker may take to answer a cancelled call
// before it is considered stuck and killed.
const cancelGrace = 3 * time.Second

// call sends one call and waits for its result. When ctx ends first, the
// worker is told to cancel, and the cancelled call's own result is
// returned; a worker that does not answer within cancelGrace (or its
// timeout plus that grace) is reported as gone.
func (w *Worker) call(ctx context.Context, c callRequest) (Result, *Session, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nextID++
	id := w.nextID
	b, err := json.Marshal(workerRequest{ID: id, Tool: c.Tool, Args: c.Args, TimeoutMS: c.Timeout.Milliseconds(), OutputCap: c.OutputCap, Session: c.Session})
	if err != nil {
		return Result{}, nil, err
	}
	if err := w.send(b); err != nil {
		return Result{}, nil, fmt.Errorf("%w: %v", ErrWorkerGone, err)
	}
	hard := time.NewTimer(c.Timeout + cancelGrace)
	defer hard.Stop()
	done := ctx.Done()
	for {
		select {
		case r := <-w.resp:
			if r.ID != id {
				continue // the late answer to an abandoned call
			}
			return r.Result, r.Session, nil
		case <-w.dead:
			return Result{}, nil, fmt.Errorf("%w: %v", ErrWorkerGone, w.err)
		case <-done:
			done = nil
			cb, _ := json.Marshal(workerRequest{Cancel: id})
			w.send(cb)
			hard.Reset(cancelGrace)
		case <-hard.C:
			return Result{}, nil, fmt.Errorf("%w: no answer %s after the call's deadline", ErrWorkerGone, cancelGrace)
		}
	}
}

func (w *Worker) send(line []byte) error {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	_, err := w.in.Write(append(line, '\n'))
	return err
}

// Close ends the worker.
func (w *Worker) Close() {
	w.close.Do(func() {
		w.in.Close()
		if w.stop != nil {
			w.stop()
		}
	})
}
