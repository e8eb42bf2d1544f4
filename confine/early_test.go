//go:build linux && cgo

package confine

import "testing"

// TestEarlyFlagsAreTheDefaultSandbox ties JAIL_EARLY_FLAGS to the
// namespaces Prestart asks for: a mismatch would make every `jail run`
// throw its early child away (or the child refuse the plan).
func TestEarlyFlagsAreTheDefaultSandbox(t *testing.T) {
	for _, n := range []NetMode{NetNone} {
		if got := namespaceFlags(&Spec{Net: n}); got != earlyFlags {
			t.Errorf("net %q: namespaces %#x, the early child has %#x", n, got, earlyFlags)
		}
	}
	if namespaceFlags(&Spec{Net: NetHost}) == earlyFlags {
		t.Error("the host's network must not be given an early child's network namespace")
	}
}

// TestNoEarlyChildInTests: the constructor forks one only for `jail run`.
func TestNoEarlyChildInTests(t *testing.T) {
	if e, ok := takeEarly(); ok {
		t.Fatalf("a test binary got an early child (pid %d)", e.pid)
	}
}
