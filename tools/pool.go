//go:build linux

package tools

import (
	"context"
	"errors"
	"fmt"
)

// The pool of tool workers a Server keeps: idle ones taken first, at most
// MaxConcurrency alive.

// pool holds idle workers and bounds the live ones.
type pool struct {
	spawn func(ctx context.Context) (*Worker, error)
	idle  chan *Worker
	slots chan struct{} // one per live worker
}

func newPool(spawn func(context.Context) (*Worker, error), n int) *pool {
	return &pool{spawn: spawn, idle: make(chan *Worker, n), slots: make(chan struct{}, n)}
}

func (p *pool) get(ctx context.Context) (*Worker, error) {
	select {
	case w := <-p.idle:
		return w, nil
	default:
	}
	select {
	case w := <-p.idle:
		return w, nil
	case p.slots <- struct{}{}:
		if p.spawn == nil {
			<-p.slots
			return nil, errors.New("no way to start a worker")
		}
		w, err := p.spawn(ctx)
		if err != nil {
			<-p.slots
			return nil, fmt.Errorf("start a worker: %w", err)
		}
		return w, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *pool) put(w *Worker) {
	select {
	case <-w.dead:
		p.discard(w)
		return
	default:
	}
	p.idle <- w
}

func (p *pool) discard(w *Worker) {
	w.Close()
	<-p.slots
}

func (p *pool) close() {
	for {
		select {
		case w := <-p.idle:
			p.discard(w)
		default:
			return
		}
	}
}
