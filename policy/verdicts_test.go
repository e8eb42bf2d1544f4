package policy

import (
	"testing"
	"time"
)

// TestApproverVerdicts: a kept verdict is used while its question may
// wait, taken once, and the oldest go first past maxVerdicts.
func TestApproverVerdicts(t *testing.T) {
	var v ApproverVerdicts
	a := verdictID(ApproverRequest{Tool: "write", ArgsDigest: "a"})
	b := verdictID(ApproverRequest{Tool: "write", ArgsDigest: "b"})
	if a == b {
		t.Fatal("two calls share a verdict id")
	}
	v.put(a, ApproverResponse{Decision: VerdictApprove})
	if r, ok := v.get(a, time.Minute, false); !ok || r.Decision != VerdictApprove {
		t.Fatalf("recording round: %+v %v", r, ok)
	}
	if _, ok := v.get(b, time.Minute, true); ok {
		t.Fatal("a verdict for another call")
	}
	if _, ok := v.get(a, time.Minute, true); !ok {
		t.Fatal("the call's own round found no verdict")
	}
	if _, ok := v.get(a, time.Minute, true); ok {
		t.Fatal("a verdict taken twice")
	}
	v.put(a, ApproverResponse{Decision: VerdictDeny})
	if _, ok := v.get(a, 0, false); ok {
		t.Fatal("a verdict older than the question may wait")
	}
	for i := range maxVerdicts + 10 {
		v.put(verdictID(ApproverRequest{Tool: "bash", ArgsDigest: string(rune(i))}), ApproverResponse{Decision: VerdictEscalate})
	}
	if len(v.kept) != maxVerdicts || len(v.order) > 2*maxVerdicts {
		t.Fatalf("%d kept, %d in order", len(v.kept), len(v.order))
	}
	if _, ok := v.get(verdictID(ApproverRequest{Tool: "bash", ArgsDigest: string(rune(0))}), time.Minute, false); ok {
		t.Fatal("the oldest verdict outlived the bound")
	}
}
