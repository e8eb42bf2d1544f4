//go:build linux

package launch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/netns"
	"github.com/jail-sandbox/jail/policy"
)

func netTestPolicy(t *testing.T, network string) (*policy.Policy, string) {
	t.Helper()
	dir := t.TempDir()
	audit := filepath.Join(dir, "state", "audit.jsonl")
	src := network + fmt.Sprintf("\n[audit]\npath = %q\n", audit)
	p, err := policy.LoadBytes("test.toml", []byte(src), policy.Env{Home: dir, Workspace: dir})
	if err != nil {
		t.Fatalf("policy: %v", err)
	}
	return p, audit
}

func TestNetPrepareNoneAndHost(t *testing.T) {
	p, _ := netTestPolicy(t, "[network]\nmode = \"none\"")
	for _, mode := range []string{policy.NetNone, policy.NetHost} {
		nr, err := PrepareNet(mode, p, &bytes.Buffer{})
		if nr != nil || err != nil {
			t.Fatalf("%s: %v, %v; want nothing to do", mode, nr, err)
		}
		// The nil *Net is usable as is.
		nr.ApplyTo(&Options{}, &confine.Layout{})
		nr.Serve(nil, &bytes.Buffer{})()
		nr.Close()
	}
}

func TestNetPrepareProxy(t *testing.T) {
	p, audit := netTestPolicy(t, `[network]
mode = "proxy"
allow = ["api.example.com:443", "*.pkg.example.org"]
deny = ["uploads.pkg.example.org"]
resolver = "192.0.2.53"`)
	var stderr bytes.Buffer
	nr, err := PrepareNet(policy.NetProxy, p, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer nr.Close()
	want := []confine.Socket{{Network: "tcp", Addr: "127.0.0.1:3128"}, {Network: "tcp", Addr: "127.0.0.1:1080"}}
	if !slices.Equal(nr.sockets, want) || nr.mounts != nil {
		t.Fatalf("sockets %v mounts %v", nr.sockets, nr.mounts)
	}
	if got := stderr.String(); got != "jail: network: proxy mode; allowed hosts: api.example.com:443, *.pkg.example.org; denied: uploads.pkg.example.org\n" {
		t.Fatalf("summary line %q", got)
	}
	o := &Options{Env: []string{"HTTP_PROXY=mine"}}
	nr.ApplyTo(o, &confine.Layout{})
	if !slices.Contains(o.Env, "https_proxy=http://127.0.0.1:3128") || o.Env[len(o.Env)-1] != "HTTP_PROXY=mine" {
		t.Fatalf("env %v: want the proxy variables first, the caller's last (they win)", o.Env)
	}
	if fi, err := os.Stat(audit); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit log: %v %v", fi, err)
	}
}

func TestNetPrepareTransparent(t *testing.T) {
	p, _ := netTestPolicy(t, `[network]
mode = "transparent"
allow = ["git.example.net:22", "api.example.com"]`)
	nr, err := PrepareNet(policy.NetTransparent, p, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	// Two proxies, 64 pool addresses times ports 22, 80 and 443, the DNS stub last.
	if len(nr.sockets) != 2+64*3+1 || nr.sockets[len(nr.sockets)-1] != (confine.Socket{Network: "udp", Addr: "127.0.0.1:53"}) {
		t.Fatalf("%d sockets, last %v", len(nr.sockets), nr.sockets[len(nr.sockets)-1])
	}
	for _, s := range nr.sockets[2 : len(nr.sockets)-1] {
		ap := netip.MustParseAddrPort(s.Addr)
		if s.Network != "tcp" || !ap.Addr().IsLoopback() || ap.Addr() == netip.MustParseAddr("127.0.0.1") {
			t.Fatalf("pool socket %v", s)
		}
	}
	if len(nr.mounts) != 1 || nr.mounts[0].Dest != "/etc/resolv.conf" || nr.mounts[0].Kind != confine.Bind || nr.mounts[0].Writable {
		t.Fatalf("mounts %v", nr.mounts)
	}
	b, err := os.ReadFile(nr.mounts[0].Source)
	if err != nil || !strings.Contains(string(b), "nameserver 127.0.0.1\n") {
		t.Fatalf("resolv.conf %q %v", b, err)
	}
	dir := nr.tmpDir
	nr.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("resolv.conf directory left behind: %v", err)
	}
}

func TestNetPrepareTransparentManyPorts(t *testing.T) {
	var allow []string
	for port := 8000; port < 8020; port++ {
		allow = append(allow, fmt.Sprintf("%q", fmt.Sprintf("svc.example.com:%d", port)))
	}
	p, _ := netTestPolicy(t, "[network]\nmode = \"transparent\"\nallow = ["+strings.Join(allow, ", ")+"]")
	nr, err := PrepareNet(policy.NetTransparent, p, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	defer nr.Close()
	if len(nr.sockets) > maxSockets || len(nr.sockets) != 2+(1021/20)*20+1 {
		t.Fatalf("%d sockets for 20 ports", len(nr.sockets))
	}
}

func TestNetPrepareErrorsBeforeLaunch(t *testing.T) {
	// The policy loader catches most mistakes; what only the proxy's rules refuse still stops
	// the run before anything starts.
	p, _ := netTestPolicy(t, "[network]\nmode = \"proxy\"\nallow = [\"api.example.com\"]")
	p.Network.Allow = []string{"*.co.uk"}
	if _, err := PrepareNet(policy.NetProxy, p, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "network:") {
		t.Fatalf("a wildcard over a public suffix: %v", err)
	}
	p.Network.Allow = nil
	p.Audit.Path = "relative/audit.jsonl"
	if _, err := PrepareNet(policy.NetProxy, p, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "audit") {
		t.Fatalf("an unusable audit path: %v", err)
	}
}

func TestNetAuditRecord(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	var stderr bytes.Buffer
	a, err := openNetAudit(path, false, "hash1", &stderr)
	if err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a.write(netns.Event{Time: when, Proto: "connect", Host: "api.example.com", Port: 443,
		Addr: netip.MustParseAddrPort("192.0.2.7:443"), Decision: netns.Allowed, Reason: "closed", Closed: true,
		BytesIn: 10, BytesOut: 20, Duration: 1500 * time.Millisecond})
	a.write(netns.Event{Time: when, Proto: "dns", Host: "other.example.com", Decision: netns.Denied, Reason: "host not in allowlist"})
	a.close()
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []string{
		`{"time":"2026-01-02T03:04:05Z","type":"network","proto":"connect","host":"api.example.com","port":443,"addr":"192.0.2.7:443","decision":"allowed","reason":"closed","closed":true,"bytes_in":10,"bytes_out":20,"duration_ms":1500,"policy_hash":"hash1"}`,
		`{"time":"2026-01-02T03:04:05Z","type":"network","proto":"dns","host":"other.example.com","decision":"denied","reason":"host not in allowlist","policy_hash":"hash1"}`,
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("invalid JSON %q", l)
		}
	}
	if stderr.Len() != 0 {
		t.Fatalf("stderr %q", stderr.String())
	}
}
