package policy

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// ApproverVerdicts keeps the approver's answers about calls a front end
// decides in two rounds, so that the operator's approver runs once per
// call. A front end that must know before a call whether it will ask a
// human (MCP from protocol 2026-07-28 returns the question to the client,
// which repeats the call with the answer) first runs the gate dry with
// Recording, which keeps the approver's verdict, and then the call itself
// with Taking, which uses the kept verdict once instead of running the
// approver again. A verdict is kept as long as the question it may lead to
// can wait for its answer (approval.ask_timeout), and at most maxVerdicts
// at once (the oldest go first). The zero value is ready to use.
type ApproverVerdicts struct {
	mu    sync.Mutex
	kept  map[[32]byte]keptVerdict
	order []keptID // oldest first; entries whose seq is not kept's are stale
	seq   uint64
}

type keptID struct {
	id  [32]byte
	seq uint64
}

// maxVerdicts bounds the verdicts of calls whose second round never came.
const maxVerdicts = 1024

type keptVerdict struct {
	resp ApproverResponse
	at   time.Time
	seq  uint64
}

type verdictsKey struct{}

// verdictsUse is how the gate uses v in one Check: take uses a kept verdict
// once; otherwise a verdict the approver gives is kept.
type verdictsUse struct {
	v    *ApproverVerdicts
	take bool
}

// Recording returns ctx in which the gate keeps the approver's verdict
// about the call, or uses one kept from an earlier round.
func (v *ApproverVerdicts) Recording(ctx context.Context) context.Context {
	return context.WithValue(ctx, verdictsKey{}, verdictsUse{v: v})
}

// Taking returns ctx in which the gate uses a verdict kept for the call
// and forgets it; without one, the approver runs.
func (v *ApproverVerdicts) Taking(ctx context.Context) context.Context {
	return context.WithValue(ctx, verdictsKey{}, verdictsUse{v: v, take: true})
}

// verdictID names one approver request: the same call, risk, reason and
// caller.
func verdictID(req ApproverRequest) [32]byte {
	b, _ := json.Marshal(req)
	return sha256.Sum256(b)
}

func (v *ApproverVerdicts) get(id [32]byte, keep time.Duration, take bool) (ApproverResponse, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k, ok := v.kept[id]
	if !ok {
		return ApproverResponse{}, false
	}
	if take || time.Since(k.at) > keep {
		delete(v.kept, id)
	}
	return k.resp, time.Since(k.at) <= keep
}

func (v *ApproverVerdicts) put(id [32]byte, resp ApproverResponse) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.kept == nil {
		v.kept = map[[32]byte]keptVerdict{}
	}
	v.seq++
	v.kept[id] = keptVerdict{resp: resp, at: time.Now(), seq: v.seq}
	v.order = append(v.order, keptID{id, v.seq})
	for len(v.kept) > maxVerdicts {
		old := v.order[0]
		v.order = v.order[1:]
		if k, ok := v.kept[old.id]; ok && k.seq == old.seq {
			delete(v.kept, old.id)
		}
	}
	if len(v.order) > 2*maxVerdicts {
		// Most of order names verdicts taken since: keep the live ones.
		v.order = slices.DeleteFunc(v.order, func(o keptID) bool { k, ok := v.kept[o.id]; return !ok || k.seq != o.seq })
	}
}

// decideApprover is step 7's question to the approver, through the
// verdicts ctx carries, if any (see ApproverVerdicts).
func (g *Gate) decideApprover(ctx context.Context, req ApproverRequest, keep time.Duration) (ApproverResponse, error) {
	use, _ := ctx.Value(verdictsKey{}).(verdictsUse)
	if use.v == nil {
		return g.Approver.Decide(ctx, req)
	}
	id := verdictID(req)
	if resp, ok := use.v.get(id, keep, use.take); ok {
		return resp, nil
	}
	resp, err := g.Approver.Decide(ctx, req)
	if err == nil && !use.take {
		use.v.put(id, resp)
	}
	return resp, err
}
