package container

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Resource is what a [Pool] keeps: a category's session on top of one container.
type Resource interface {
	// Close ends it (and its container); it is called once, with no call using it.
	Close() error
	// Alive reports whether it can still serve calls (its container runs).
	Alive() bool
}

// Pool hands out resources by the [docker] lifecycle: a fresh one per call ("call"), one per
// task id ("task") or one per agent ("agent"), the kept ones ended after IdleGrace without a
// call. Calls on one kept resource take turns. The zero Pool is not usable: use [NewPool].
type Pool[R Resource] struct {
	lifecycle string
	grace     time.Duration

	mu      sync.Mutex
	entries map[string]*entry[R]
	closed  bool
}

type entry[R Resource] struct {
	turn  chan struct{} // one call at a time; holds a token while a call runs
	r     R
	made  bool
	timer *time.Timer
	inUse bool
}

// NewPool makes a pool for lifecycle ("call", "task" or "agent") and grace (> 0).
func NewPool[R Resource](lifecycle string, grace time.Duration) (*Pool[R], error) {
	switch lifecycle {
	case "call", "task", "agent":
	default:
		return nil, fmt.Errorf("container: unknown lifecycle %q (accepted: call, task, agent)", lifecycle)
	}
	if grace <= 0 {
		return nil, fmt.Errorf("container: idle grace must be positive, not %v", grace)
	}
	return &Pool[R]{lifecycle: lifecycle, grace: grace, entries: map[string]*entry[R]{}}, nil
}

// key names the resource a call of ids shares; "" is a call's own.
func (p *Pool[R]) key(ids Correlation) string {
	switch p.lifecycle {
	case "task":
		return "task\x00" + ids.Agent + "\x00" + ids.Session + "\x00" + ids.Task
	case "agent":
		return "agent\x00" + ids.Agent
	}
	return ""
}

// Acquire returns the resource for a call of ids, made with make when there is none (or
// the kept one died), and a release the caller must call once when the call is done. fresh
// says the resource was made for this call.
func (p *Pool[R]) Acquire(ctx context.Context, ids Correlation, newR func(context.Context) (R, error)) (r R, release func(), fresh bool, err error) {
	key := p.key(ids)
	if key == "" {
		r, err = newR(ctx)
		if err != nil {
			return r, nil, false, err
		}
		return r, func() { r.Close() }, true, nil
	}
	var e *entry[R]
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return r, nil, false, fmt.Errorf("container: the pool is closed")
		}
		e = p.entries[key]
		if e == nil {
			e = &entry[R]{turn: make1()}
			p.entries[key] = e
		}
		p.mu.Unlock()
		select {
		case <-e.turn:
		case <-ctx.Done():
			return r, nil, false, fmt.Errorf("container: waiting for the previous call on this container: %w", ctx.Err())
		}
		p.mu.Lock()
		if p.entries[key] == e {
			break
		}
		// It expired (or the pool closed) while this call waited: look again.
		p.mu.Unlock()
		e.turn <- struct{}{}
	}
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	e.inUse = true
	p.mu.Unlock()
	giveBack := func() {
		p.mu.Lock()
		e.inUse = false
		if !p.closed && p.entries[key] == e {
			e.timer = time.AfterFunc(p.grace, func() { p.expire(key, e) })
		}
		p.mu.Unlock()
		e.turn <- struct{}{}
	}
	if e.made && !e.r.Alive() {
		e.r.Close()
		e.made = false
	}
	if !e.made {
		nr, err := newR(ctx)
		if err != nil {
			giveBack()
			return r, nil, false, err
		}
		e.r, e.made, fresh = nr, true, true
	}
	var once sync.Once
	return e.r, func() { once.Do(giveBack) }, fresh, nil
}

// Drop ends the kept resource of ids now (a category's reset, or one that failed).
func (p *Pool[R]) Drop(ids Correlation) {
	key := p.key(ids)
	if key == "" {
		return
	}
	p.mu.Lock()
	e, ok := p.entries[key]
	p.mu.Unlock()
	if !ok {
		return
	}
	<-e.turn
	if e.made {
		e.r.Close()
		e.made = false
	}
	e.turn <- struct{}{}
}

// expire ends an entry's resource after the idle grace, unless a call took it meanwhile.
func (p *Pool[R]) expire(key string, e *entry[R]) {
	select {
	case <-e.turn:
	default:
		return // a call has it; its release starts a new timer
	}
	p.mu.Lock()
	if e.inUse || p.entries[key] != e {
		p.mu.Unlock()
		e.turn <- struct{}{}
		return
	}
	delete(p.entries, key)
	p.mu.Unlock()
	if e.made {
		e.r.Close()
		e.made = false
	}
	e.turn <- struct{}{}
}

// Close ends every kept resource, waiting for calls still running on them.
func (p *Pool[R]) Close() {
	p.mu.Lock()
	p.closed = true
	entries := p.entries
	p.entries = map[string]*entry[R]{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range entries {
		wg.Add(1)
		// Lifetime: until this entry's call (if any) is done and its resource closed.
		go func() {
			defer wg.Done()
			<-e.turn
			if e.timer != nil {
				e.timer.Stop()
			}
			if e.made {
				e.r.Close()
				e.made = false
			}
			e.turn <- struct{}{}
		}()
	}
	wg.Wait()
}

func make1() chan struct{} {
	c := make(chan struct{}, 1)
	c <- struct{}{}
	return c
}
