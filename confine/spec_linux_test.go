package confine

import (
	"bytes"
	"reflect"
	"testing"
)

// TestEveryFieldReachesThePlan: the plan is the child's only input, so
// every field of a Spec must change it. A field added to Spec and forgotten
// by the plan compiler fails here.
func TestEveryFieldReachesThePlan(t *testing.T) {
	s := validSpec()
	s.Argv = []string{"/bin/sh", "-c", "echo \"$1\" 'é' \x01", "--", ""}
	s.Env = []string{"PATH=/usr/bin:/bin", "EMPTY=", "EQ=a=b", "UTF8=日本語"}
	s.UID, s.GID = 1000, 1001
	s.Hostname = "jail"
	s.ConnectPorts = []uint16{0, 443, 65535}
	s.Sockets = []Socket{{Network: "tcp", Addr: "127.0.0.1:3128"}, {Network: "udp", Addr: "127.0.0.1:53"}}
	s.Seccomp = []Program{
		{{Code: 0x20, Jt: 0, Jf: 0, K: 4}, {Code: 0x15, Jt: 1, Jf: 0, K: 0xC000003E}, {Code: 0x06, K: 0x7fff0000}},
		{{Code: 0xffff, Jt: 255, Jf: 255, K: 0xffffffff}},
	}
	s.RLimits = []RLimit{{Resource: 9, Cur: 1 << 20, Max: ^uint64(0)}}
	s.AllowDegraded = []Layer{LayerLandlock}
	s.Foreground = true
	s.OffDNS = &OffDNS{Notice: "jail: {name}"}

	// Compiled for ABI 7 and for a kernel without Landlock (where the plan
	// depends on AllowDegraded: without it the compiler refuses).
	plan := func(s *Spec) []byte {
		out := planHeader(s, 4000, 4001)
		for _, abi := range []int{7, 0} {
			body, err := compilePlanBody(s, abi)
			if err != nil {
				body = []byte("error: " + err.Error())
			}
			out = append(out, body...)
		}
		return out
	}
	full := plan(s)
	if bytes.Contains(full, []byte("error: ")) {
		t.Fatalf("the full spec does not compile: %s", full)
	}
	v := reflect.ValueOf(s).Elem()
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		if name == "Hold" {
			// Set, it takes the command out of the plan (Cmd.Exec sends
			// it), so it is checked the other way round.
			c := *s
			c.Hold = true
			if bytes.Equal(plan(&c), full) {
				t.Error("Spec.Hold does not change the plan")
			}
			continue
		}
		if name == "PTY" {
			// Set, it replaces Foreground's value in the plan.
			c := *s
			c.PTY = true
			if bytes.Equal(plan(&c), full) {
				t.Error("Spec.PTY does not change the plan")
			}
			continue
		}
		if v.Field(i).IsZero() {
			t.Errorf("the test does not set Spec.%s", name)
			continue
		}
		c := *s
		reflect.ValueOf(&c).Elem().Field(i).Set(reflect.Zero(v.Field(i).Type()))
		if name == "Net" {
			c.Net = NetHost
			c.Sockets = nil // sockets need the sandbox's own namespace
		}
		if bytes.Equal(plan(&c), full) {
			t.Errorf("Spec.%s does not reach the child: the plan is the same without it", name)
		}
	}
}
