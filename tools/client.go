//go:build linux

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
// responses come from its stdout. It serves one call at a time (a pool
// holds several for concurrency), and the call reads its own answer: a
// reader goroutine handing answers over would cost every call a hop.
type Worker struct {
	in   io.WriteCloser
	out  *bufio.Reader // read by the call holding mu
	stop func()        // ends the worker's sandbox; called once by Close

	mu      sync.Mutex // one call at a time
	writeMu sync.Mutex
	nextID  uint64
	dead    chan struct{} // closed once a call found the response stream ended
	err     error         // why it ended; set before dead closes
	once    sync.Once
	close   sync.Once
}

// NewWorker wraps a running worker's pipes. stop must end the worker (kill
// its sandbox) and wait for it; Close calls it once.
func NewWorker(in io.WriteCloser, out io.Reader, stop func()) *Worker {
	return &Worker{in: in, out: bufio.NewReaderSize(out, 64<<10), stop: stop, dead: make(chan struct{})}
}

// fail records why the response stream ended.
func (w *Worker) fail(err error) {
	w.once.Do(func() {
		w.err = err
		close(w.dead)
	})
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
// timeout plus that grace) is killed and reported as gone.
func (w *Worker) call(ctx context.Context, c callRequest) (Result, *Session, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.dead:
		return Result{}, nil, fmt.Errorf("%w: %v", ErrWorkerGone, w.err)
	default:
	}
	w.nextID++
	id := w.nextID
	b, err := json.Marshal(workerRequest{ID: id, Tool: c.Tool, Args: c.Args, TimeoutMS: c.Timeout.Milliseconds(), OutputCap: c.OutputCap, Session: c.Session})
	if err != nil {
		return Result{}, nil, err
	}
	if err := w.send(b); err != nil {
		w.fail(err)
		return Result{}, nil, fmt.Errorf("%w: %v", ErrWorkerGone, err)
	}
	// Cancellation and the deadline act from the side while this call
	// reads: a cancel line when ctx ends, and Close, which ends the read,
	// when the worker does not answer in time. Neither acts once the call
	// is over (finish), so a worker back in the pool is never touched.
	var mu sync.Mutex
	finished, expired := false, false
	hard := time.AfterFunc(c.Timeout+cancelGrace, func() {
		mu.Lock()
		if finished {
			mu.Unlock()
			return
		}
		expired = true
		mu.Unlock()
		w.Close()
	})
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if finished {
			return
		}
		cb, _ := json.Marshal(workerRequest{Cancel: id})
		w.send(cb)
		hard.Reset(cancelGrace)
	})
	// finish ends the side actions and reports whether the deadline's
	// Close got to the worker first.
	finish := func() (killed bool) {
		mu.Lock()
		finished = true
		killed = expired
		mu.Unlock()
		hard.Stop()
		stop()
		return killed
	}
	for {
		line, tooLong, err := ReadLine(w.out, maxWorkerLine)
		var r workerResponse
		switch {
		case tooLong:
			err = fmt.Errorf("worker: response longer than %d bytes", maxWorkerLine)
		case err == nil:
			if jerr := json.Unmarshal(line, &r); jerr != nil {
				err = fmt.Errorf("worker: bad response: %w", jerr)
			}
		case err == io.EOF:
			err = errors.New("worker: exited")
		}
		if err != nil {
			w.fail(err)
			if finish() {
				return Result{}, nil, fmt.Errorf("%w: no answer %s after the call's deadline", ErrWorkerGone, cancelGrace)
			}
			return Result{}, nil, fmt.Errorf("%w: %v", ErrWorkerGone, err)
		}
		if r.ID == id {
			if finish() {
				// Answered as the deadline struck: the answer stands, the
				// worker is being killed and must not be used again.
				w.fail(errors.New("worker: killed at the call's deadline"))
			}
			return r.Result, r.Session, nil
		}
		// The late answer to an abandoned call.
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
