package testutil

import (
	"context"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// TestDNS resolves through the server with Go's own resolver: static
// names, NXDOMAIN for others, a changing answer and the A query count.
func TestDNS(t *testing.T) {
	d, addr := StartDNS(t)
	d.Static("web.jail.test", netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("::1"))
	d.Set("rebind.jail.test", func(n int) []netip.Addr {
		return []netip.Addr{netip.AddrFrom4([4]byte{10, 0, 0, byte(n + 1)})}
	})
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", addr)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := r.LookupNetIP(ctx, "ip", "web.jail.test")
	slices.SortFunc(got, netip.Addr.Compare)
	if err != nil || len(got) != 2 || got[0] != netip.MustParseAddr("127.0.0.2") || got[1] != netip.MustParseAddr("::1") {
		t.Fatalf("web: %v %v", got, err)
	}
	if _, err := r.LookupNetIP(ctx, "ip4", "nothing.jail.test"); err == nil {
		t.Fatal("an unknown name resolved")
	}
	for i := 1; i <= 2; i++ {
		got, err := r.LookupNetIP(ctx, "ip4", "rebind.jail.test")
		if err != nil || len(got) != 1 || got[0].As4()[3] != byte(i) {
			t.Fatalf("rebind lookup %d: %v %v", i, got, err)
		}
	}
	if n := d.Queries("rebind.jail.test"); n != 2 {
		t.Fatalf("%d A queries counted, want 2", n)
	}
}

// TestEventually: true at once costs nothing; never true returns false
// after the timeout.
func TestEventually(t *testing.T) {
	start := time.Now()
	if !Eventually(time.Second, func() bool { return true }) || time.Since(start) > 100*time.Millisecond {
		t.Fatal("a condition true at once")
	}
	n := 0
	if !Eventually(5*time.Second, func() bool { n++; return n == 5 }) {
		t.Fatal("a condition true at the fifth poll")
	}
	start = time.Now()
	if Eventually(50*time.Millisecond, func() bool { return false }) || time.Since(start) < 50*time.Millisecond {
		t.Fatal("a condition never true")
	}
}

// TestProcesses finds a process by a marker in its arguments, and no
// longer once it was killed.
func TestProcesses(t *testing.T) {
	marker := "1" + time.Now().Format("150405.000000")
	cmd := exec.Command("sleep", marker)
	if err := cmd.Start(); err != nil {
		t.Skipf("requires sleep(1): %v", err)
	}
	defer cmd.Wait()
	for _, find := range []func(string) []int{Processes, LiveProcesses} {
		if p := find("sleep\x00" + marker); !slices.Equal(p, []int{cmd.Process.Pid}) {
			t.Fatalf("found %v, want [%d]", p, cmd.Process.Pid)
		}
	}
	cmd.Process.Kill()
	if !Eventually(5*time.Second, func() bool { return len(Processes(marker)) == 0 && len(LiveProcesses(marker)) == 0 }) {
		t.Fatalf("a killed process is still listed: %v", Processes(marker))
	}
}
