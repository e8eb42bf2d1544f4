package policy

import (
	"context"
	"testing"
)

// BenchmarkGateBash is the policy's share of every bash call: the guard's
// parse and the ordered checks.
func BenchmarkGateBash(b *testing.B) {
	p := mustLoad(b, "[approval]\nauto_approve = [\"bash\"]\n")
	g, err := NewGate(p, Catalogue(), Subject{}, "/home/alice", nil)
	if err != nil {
		b.Fatal(err)
	}
	c := Call{Tool: "bash", Args: map[string]any{"command": "true"}}
	for b.Loop() {
		if d := g.Check(context.Background(), c); !d.Allowed {
			b.Fatal(d.Reason)
		}
	}
}
