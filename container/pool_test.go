package container

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
)

type fakeRes struct {
	closed atomic.Bool
	dead   atomic.Bool
}

func (f *fakeRes) Close() error { f.closed.Store(true); return nil }
func (f *fakeRes) Alive() bool  { return !f.dead.Load() }

func TestPoolLifecycles(t *testing.T) {
	ctx := context.Background()
	var made atomic.Int32
	mk := func(context.Context) (*fakeRes, error) { made.Add(1); return &fakeRes{}, nil }
	a1 := Correlation{Agent: "a", Task: "t1"}
	a2 := Correlation{Agent: "a", Task: "t2"}
	b := Correlation{Agent: "b", Task: "t1"}
	for _, tc := range []struct {
		lifecycle string
		want      int32 // resources made for a1, a1, a2, b
	}{{"call", 4}, {"task", 3}, {"agent", 2}} {
		made.Store(0)
		p, err := NewPool[*fakeRes](tc.lifecycle, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var rs []*fakeRes
		for _, ids := range []Correlation{a1, a1, a2, b} {
			r, release, _, err := p.Acquire(ctx, ids, mk)
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
			release()
		}
		if made.Load() != tc.want {
			t.Errorf("%s: made %d, want %d", tc.lifecycle, made.Load(), tc.want)
		}
		if tc.lifecycle == "call" && !rs[0].closed.Load() {
			t.Errorf("call: not closed after its call")
		}
		p.Close()
		for i, r := range rs {
			if !r.closed.Load() {
				t.Errorf("%s: resource %d open after Close", tc.lifecycle, i)
			}
		}
	}
}

func TestPoolIdleAndDead(t *testing.T) {
	ctx := context.Background()
	p, err := NewPool[*fakeRes]("agent", 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	mk := func(context.Context) (*fakeRes, error) { return &fakeRes{}, nil }
	ids := Correlation{Agent: "a"}
	r1, release, fresh, _ := p.Acquire(ctx, ids, mk)
	if !fresh {
		t.Error("the first acquire is not fresh")
	}
	// While in use it never expires; one call at a time.
	time.Sleep(120 * time.Millisecond)
	if r1.closed.Load() {
		t.Fatal("closed while in use")
	}
	busy, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	if _, _, _, err := p.Acquire(busy, ids, mk); err == nil {
		t.Error("a second call got the resource while the first held it")
	}
	cancel()
	release()
	if !testutil.Eventually(5*time.Second, func() bool { return r1.closed.Load() }) {
		t.Fatal("the idle resource is not closed after the grace")
	}
	r2, release, fresh, _ := p.Acquire(ctx, ids, mk)
	if !fresh || r2 == r1 {
		t.Error("an expired resource was reused")
	}
	release()
	r2.dead.Store(true)
	r3, release, fresh, _ := p.Acquire(ctx, ids, mk)
	release()
	if !fresh || r3 == r2 || !r2.closed.Load() {
		t.Error("a dead resource was reused or not closed")
	}
}
