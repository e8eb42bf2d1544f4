//go:build linux && cgo

package confine

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

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

// TestFastSignalNames: the plan cache's JSON result names a signal as the
// Go path's does (unix.SignalName), and leaves out one Go does not name.
func TestFastSignalNames(t *testing.T) {
	for sig := -1; sig <= 65; sig++ {
		if got, want := fastSignalName(sig), unix.SignalName(syscall.Signal(sig)); got != want {
			t.Errorf("signal %d: plan cache names it %q, the Go path %q", sig, got, want)
		}
	}
}
