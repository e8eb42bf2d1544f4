//go:build linux

package confine

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestPlanHeaderSize: the header Go writes is planHeaderSize bytes, which
// TestSharedHeader ties to what the C init reads first.
func TestPlanHeaderSize(t *testing.T) {
	h := planHeader(&Spec{UID: 1000, GID: 1000, Net: NetNone}, 1000, 1000)
	if len(h) != planHeaderSize {
		t.Fatalf("header is %d bytes, planHeaderSize says %d", len(h), planHeaderSize)
	}
}

func TestPlanRefuses(t *testing.T) {
	base := func() *Spec {
		return &Spec{Argv: []string{"true"}, Dir: "/w", Hostname: "jail", Net: NetNone, Seccomp: []Program{{{Code: 6, K: 0x7fff0000}}},
			Mounts: []Mount{{Kind: Bind, Source: "/w", Dest: "/w", Writable: true}}}
	}
	var le *LayerError

	s := base()
	if _, err := compilePlanBody(s, 0); !errors.As(err, &le) || le.Layer != LayerLandlock {
		t.Errorf("no Landlock and no degraded mode: got %v", err)
	}
	s.AllowDegraded = []Layer{LayerLandlock}
	if _, err := compilePlanBody(s, 0); err != nil {
		t.Errorf("degraded Landlock refused: %v", err)
	}

	s = base()
	s.ConnectPorts = []uint16{3128}
	if _, err := compilePlanBody(s, 3); !errors.As(err, &le) || !strings.Contains(le.Msg, "ABI 4") {
		t.Errorf("port rules on ABI 3: got %v", err)
	}
	if _, err := compilePlanBody(s, 4); err != nil {
		t.Errorf("port rules on ABI 4: %v", err)
	}

	s = base()
	s.Seccomp = nil
	if _, err := compilePlanBody(s, 7); !errors.As(err, &le) || le.Layer != LayerSeccomp {
		t.Errorf("no filter: got %v", err)
	}

	s = base()
	s.Mounts = append(s.Mounts, Mount{Kind: Tmpfs, Dest: "/w/cache", Writable: true})
	if _, err := compilePlanBody(s, 7); err == nil || !strings.Contains(err.Error(), "inside a bound host tree") {
		t.Errorf("tmpfs inside the workspace bind: got %v", err)
	}

	s = base()
	s.Mounts = append(s.Mounts, Mount{Kind: Overlay, Source: "/w/.git", Upper: "/s/u", Work: "/s/w", Dest: "/elsewhere"})
	if _, err := compilePlanBody(s, 7); err == nil || !strings.Contains(err.Error(), "outside a bound host tree") {
		t.Errorf("overlay outside every bind: got %v", err)
	}

	s = base()
	s.Argv = []string{"echo", "a\x00b"}
	if _, err := compilePlanBody(s, 7); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("NUL in argv: got %v", err)
	}

	s = base()
	s.Sockets = []Socket{{Network: "tcp", Addr: "[::1]:80"}}
	if _, err := compilePlanBody(s, 7); err == nil {
		t.Error("an IPv6 socket address was accepted")
	}
}

// TestPlanOverlay: an overlay's three layers are opened as sources in
// order (lower, upper, work) and the overlay operation names them.
func TestPlanOverlay(t *testing.T) {
	s := &Spec{Argv: []string{"true"}, Dir: "/w", Hostname: "jail", Net: NetNone, Seccomp: []Program{{{Code: 6, K: 0x7fff0000}}},
		Mounts: []Mount{{Kind: Bind, Source: "/w", Dest: "/w", Writable: true},
			{Kind: Overlay, Source: "/w/.git", Upper: "/s/up", Work: "/s/wk", Dest: "/w/.git", Writable: true}}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	body, err := compilePlanBody(s, 7)
	if err != nil {
		t.Fatal(err)
	}
	want := &plan{}
	for i, p := range []string{"/w", "/w/.git", "/s/up", "/s/wk"} {
		want.op(opSource)
		want.u32(uint32(i))
		want.str(p)
		want.identity(Mount{}) // none given: not checked
	}
	if !bytes.Contains(body, want.b) {
		t.Error("the overlay's layers are not sources 1, 2 and 3 in order")
	}
	op := &plan{}
	op.op(opOverlay)
	op.u32(1)
	op.u32(2)
	op.u32(3)
	op.str("/w/.git")
	if !bytes.Contains(body, op.b) {
		t.Error("the overlay operation does not name its three sources")
	}
	s.Mounts[1].Upper = "relative"
	if err := s.Validate(); err == nil {
		t.Error("a relative upper passed Validate")
	}
}
