//go:build linux

package integration

// A network that explains itself (docs/network.md): --allow on the command line, each refused
// host named once on stderr with the setting that would allow it, the sandbox's own loopback
// in the proxy modes, the proxy summary kept off a terminal, and name lookups that fail at once
// with the network off. The test hosts are the network namespace of network_test.go.

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
)

// resolverPolicy is a policy that points jail's resolver at the test hosts' DNS server and
// allows the web host's private address; its mode stays none, so --allow picks the mode.
func resolverPolicy(h *testHosts, audit string) string {
	return resolverSection(h) + fmt.Sprintf("[audit]\npath = %q\n", audit)
}

// resolverSection is resolverPolicy's [network] section alone.
func resolverSection(h *testHosts) string {
	return fmt.Sprintf("[network]\nresolver = %q\nallow_private = [%q]\n", netip.AddrPortFrom(h.web, 53).String(), h.web.String()+"/32")
}

// TestNetworkAllowFlag: --allow opens one test host for one run (the policy allows nothing and
// its mode is none); another host stays refused and is named on stderr with the fix; bad
// values are refused with the flag's name and the fix.
func TestNetworkAllowFlag(t *testing.T) {
	h := newTestHosts(t)
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-net-")
		cfg := r.dir(t, "jail-it-netcfg-")
		file := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, file, resolverPolicy(h, filepath.Join(cfg, "audit.jsonl")))
		before := h.hitCount(h.web)
		res := r.jail(t, call{dir: ws, args: []string{"run", "--policy", file, "--allow", webName, "--", "/bin/sh", "-c", `
echo "web $(curl -sS -m 10 http://web.test/allowed)"
curl -sS -m 10 -o /dev/null -w 'other %{http_code}\n' http://other.test/
curl -sS -m 10 -o /dev/null -w 'other-again %{http_code}\n' http://other.test/again
curl -sS -m 10 -o /dev/null -w 'port %{http_code}\n' http://web.test:8080/
`}})
		mustExit(t, res, 0)
		if l := wantLine(t, res, "web "); l != "web served-by="+h.web.String()+" path=/allowed" {
			t.Errorf("allowed host: %q\nstderr: %s", l, res.stderr)
		}
		wantLine(t, res, "other 403")
		wantLine(t, res, "port 403")
		if got := h.hitCount(h.web) - before; got != 1 {
			t.Errorf("the test hosts served %d requests, want only the allowed one", got)
		}
		want := "jail: network: refused other.test:80: not in allow (add --allow other.test)"
		if n := strings.Count(res.stderr, want); n != 1 {
			t.Errorf("stderr names the refused host %d times, want once (%q):\n%s", n, want, res.stderr)
		}
		if !strings.Contains(res.stderr, "jail: network: refused web.test:8080: port 8080 is not allowed for this host (add --allow web.test:8080)") {
			t.Errorf("the refused port is not named with its fix:\n%s", res.stderr)
		}

		for _, c := range []struct{ arg, want string }{
			{"https://web.test/x", `--allow "https://web.test/x": a URL is not a host: use --allow web.test`},
			{"web.test:99999", `--allow "web.test:99999": port "99999" is not a port: want 1-65535`},
			{"web.*", `--allow "web.*": a wildcard may only be the whole first label`},
			{"*.com", `--allow "*.com"`},
		} {
			res := r.jail(t, call{dir: ws, args: []string{"run", "--policy", file, "--allow", c.arg, "--", "/bin/true"}})
			mustExit(t, res, 2)
			if !strings.Contains(res.stderr, c.want) {
				t.Errorf("--allow %s: stderr %q, want %q", c.arg, res.stderr, c.want)
			}
		}
		res = r.jail(t, call{dir: ws, args: []string{"run", "--net", "none", "--allow", webName, "--", "/bin/true"}})
		mustExit(t, res, 2)
		if !strings.Contains(res.stderr, "--allow opens hosts through jail's proxy, which --net none turns off") {
			t.Errorf("--net none with --allow: %q", res.stderr)
		}
	})
}

// TestNetworkAllowFlagTools: jail tool takes --allow too, and its bash sandbox reaches the host.
func TestNetworkAllowFlagTools(t *testing.T) {
	h := newTestHosts(t)
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-net-")
		cfg := r.dir(t, "jail-it-netcfg-")
		file := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, file, "[approval]\nauto_approve = [\"bash\"]\n"+resolverPolicy(h, filepath.Join(cfg, "audit.jsonl")))
		res := r.jail(t, call{dir: ws, args: []string{"tool", "--policy", file, "-w", ws, "--allow", webName, "bash",
			`{"command": "curl -sS -m 10 http://web.test/tool; curl -sS -m 10 -o /dev/null -w ' other=%{http_code}' http://other.test/"}`}})
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "served-by="+h.web.String()+" path=/tool") || !strings.Contains(res.stdout, "other=403") {
			t.Errorf("jail tool bash with --allow: %s\nstderr: %s", res.stdout, res.stderr)
		}
		if !strings.Contains(res.stderr, "jail: network: refused other.test:80: not in allow (add --allow other.test)") {
			t.Errorf("jail tool: the refused host is not named on stderr:\n%s", res.stderr)
		}
	})
}

// TestNetworkRefusalsNamed: a private address names allow_private; a host name the sandbox
// makes up with terminal control bytes reaches jail's stderr escaped; real npm, refused by
// the proxy, fails at once and its host is named.
func TestNetworkRefusalsNamed(t *testing.T) {
	h := newTestHosts(t)
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-net-")
		cfg := r.dir(t, "jail-it-netcfg-")
		file := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, file, resolverPolicy(h, filepath.Join(cfg, "audit.jsonl")))
		r.writeFile(t, filepath.Join(ws, "evil.py"), `
import socket
# SOCKS5 carries a host name as raw bytes: any byte a terminal would act on.
name = b"\x1b]0;owned\x07\x1b[2Jevil.test"
s = socket.create_connection(("127.0.0.1", 1080), timeout=10)
s.sendall(b"\x05\x01\x00")
s.recv(2)
s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + b"\x01\xbb")
print("evil reply", s.recv(10)[1])
`)
		res := r.jail(t, call{dir: ws, args: []string{"run", "--policy", file, "--allow", insideName, "--", "/bin/sh", "-c", `
curl -sS -m 10 -o /dev/null -w 'inside %{http_code}\n' http://inside.test/
python3 evil.py
`}})
		mustExit(t, res, 0)
		wantLine(t, res, "inside 403")
		want := fmt.Sprintf(`jail: network: refused inside.test:80: resolves to %s: private address (RFC 1918), which jail refuses by default (add "%s/32" to [network] allow_private`, h.internal, h.internal)
		if !strings.Contains(res.stderr, want) {
			t.Errorf("the private address is not named with allow_private:\n%s\nwant %s", res.stderr, want)
		}
		if strings.ContainsAny(res.stderr, "\x1b\x07") {
			t.Errorf("a control byte from the sandbox reached jail's stderr: %q", res.stderr)
		}
		if !strings.Contains(res.stderr, `refused "\x1b]0;owned\a\x1b[2Jevil.test":443: invalid host name`) {
			t.Errorf("the made-up host name is not shown escaped:\n%q", res.stderr)
		}
	})
}

// TestNetworkNpmRefusedNamed: npm, with proxy mode on and its registry not allowed, fails at
// once (the proxy's 403 is final for npm), and jail names the registry and the fix.
func TestNetworkNpmRefusedNamed(t *testing.T) {
	registry := npmRegistryHost(t)
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-npm-")
		cfg := r.dir(t, "jail-it-netcfg-")
		file := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, file, "[audit]\nenabled = false\n")
		res := r.jail(t, call{dir: ws, limit: 90 * time.Second, args: []string{"run", "--policy", file, "--net", "proxy", "--",
			"npm", "ping", "--no-update-notifier"}})
		if res.code == 0 {
			t.Fatalf("npm ping succeeded with its registry refused\nstderr: %s", res.stderr)
		}
		if res.elapsed > 15*time.Second {
			t.Errorf("npm took %s to fail, want a fast failure", res.elapsed)
		}
		want := "jail: network: refused " + registry + ": not in allow (add --allow " + strings.TrimSuffix(registry, ":443") + ")"
		if n := strings.Count(res.stderr, want); n != 1 {
			t.Errorf("stderr names the registry %d times, want once (%q):\n%s", n, want, res.stderr)
		}
	})
}

// npmRegistryHost is npm's configured registry as host:port, or skips.
func npmRegistryHost(t *testing.T) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("requires npm: not on PATH")
	}
	out, err := exec.Command(npm, "config", "get", "registry").Output()
	if err != nil {
		t.Skipf("requires npm's registry setting: npm config get registry: %v", err)
	}
	reg := strings.TrimSpace(string(out))
	host, ok := strings.CutPrefix(reg, "https://")
	port := "443"
	if !ok {
		if host, ok = strings.CutPrefix(reg, "http://"); !ok {
			t.Skipf("requires an http(s) registry URL, got %q", reg)
		}
		port = "80"
	}
	host, _, _ = strings.Cut(host, "/")
	if !strings.Contains(host, ":") {
		host += ":" + port
	}
	return host
}

// TestNetworkLoopbackInProxyModes: a test suite that starts servers on 127.0.0.1:RANDOM inside
// the sandbox and connects to them passes with the network on, as it does with it off.
func TestNetworkLoopbackInProxyModes(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("requires /usr/bin/python3 inside the sandbox: not installed")
	}
	suiteSrc := `
import http.server, socket, threading, unittest, urllib.request

class Local(unittest.TestCase):
    def test_http_server(self):
        srv = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        port = srv.server_address[1]
        # urllib honours the proxy variables; NO_PROXY keeps loopback direct.
        with urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=10) as r:
            self.assertEqual(r.status, 200)
        srv.shutdown()

    def test_raw_tcp(self):
        ln = socket.socket()
        ln.bind(("127.0.0.1", 0))
        ln.listen()
        c = socket.create_connection(ln.getsockname(), timeout=10)
        a, _ = ln.accept()
        c.sendall(b"ping")
        self.assertEqual(a.recv(4), b"ping")

if __name__ == "__main__":
    unittest.main()
`
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-net-")
		cfg := r.dir(t, "jail-it-netcfg-")
		r.writeFile(t, filepath.Join(ws, "test_local.py"), suiteSrc)
		file := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, file, "[network]\nallow = [\"web.test\"]\n[audit]\nenabled = false\n")
		for _, mode := range []string{"none", "proxy", "transparent"} {
			res := r.jail(t, call{dir: ws, args: []string{"run", "--policy", file, "--net", mode, "--", "python3", "-m", "unittest", "-v", "test_local"}})
			if res.code != 0 || !strings.Contains(res.stderr, "OK") {
				t.Errorf("--net %s: the loopback test suite failed (exit %d):\n%s", mode, res.code, res.stderr)
			}
		}
	})
}

// TestNetworkSummaryNotOnTerminal: the proxy summary goes to logs, not to a terminal, where
// it would come before every command of an interactive session; --net host still warns there.
func TestNetworkSummaryNotOnTerminal(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		cfg := r.dir(t, "jail-it-cfg-")
		pol := cfg + "/policy.toml"
		r.writeFile(t, pol, "[network]\nmode = \"proxy\"\nallow = [\"web.test\"]\n[audit]\nenabled = false\n")
		p, cmd := startOnTTY(t, r, ws, "--policy", pol, "--", "/bin/sh", "-c", "echo proxied-$HTTPS_PROXY")
		p.expect(t, "proxied-http://127.0.0.1:3128")
		if code := waitExit(t, cmd); code != 0 {
			t.Fatalf("jail exited %d", code)
		}
		p.mu.Lock()
		out := p.out.String()
		p.mu.Unlock()
		if strings.Contains(out, "jail: network:") {
			t.Errorf("the proxy summary was printed on the terminal:\n%s", out)
		}
		p, cmd = startOnTTY(t, r, ws, "--policy", pol, "--net", "host", "--", "/bin/true")
		p.expect(t, "jail: WARNING: --net host")
		waitExit(t, cmd)
		// In a log (not a terminal) the summary stays.
		res := r.jail(t, call{dir: ws, args: []string{"run", "--policy", pol, "--", "/bin/true"}})
		if !strings.Contains(res.stderr, "jail: network: proxy mode; allowed hosts: web.test") {
			t.Errorf("no summary in a log: %q", res.stderr)
		}
	})
}

// TestNetworkOffLookupsFailAtOnce: with the network off (the default), real npm fails at once
// instead of retrying for 70 seconds, jail says once why and how to open the network, and a
// run that looks nothing up prints nothing. pid 1's name server answers every query with
// NXDOMAIN and survives what a hostile command sends it. Both launch paths.
func TestNetworkOffLookupsFailAtOnce(t *testing.T) {
	registry := npmRegistryHost(t)
	registryName, _, _ := strings.Cut(registry, ":")
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-off-")
		cache := r.dir(t, "jail-it-cache-")
		env := []string{"XDG_CACHE_HOME=" + cache}
		res := r.jail(t, call{dir: ws, env: env, limit: 90 * time.Second, args: []string{"run", "--", "npm", "ping", "--no-update-notifier"}})
		if res.code == 0 {
			t.Fatalf("npm ping succeeded with the network off")
		}
		if res.elapsed > 10*time.Second {
			t.Errorf("npm took %s to fail with the network off, want a fast failure", res.elapsed)
		}
		if !strings.Contains(res.stderr, "ENOTFOUND") {
			t.Errorf("npm did not fail on the lookup:\n%s", res.stderr)
		}
		want := "jail: network: " + registryName + ": the network is off, so no name resolves (open it with --allow " + registryName + ", or --net proxy)"
		if n := strings.Count(res.stderr, want); n != 1 {
			t.Errorf("the network-off line appears %d times, want once (%q):\n%s", n, want, res.stderr)
		}

		r.writeFile(t, filepath.Join(ws, "dns.py"), `
import socket, time
def q(name, qtype=1, flags=b"\x01\x00", qd=b"\x00\x01"):
    labels = b"".join(bytes([len(l)]) + l for l in name.split(b".")) + b"\x00"
    return b"\x12\x34" + flags + qd + b"\x00\x00\x00\x00\x00\x00" + labels + bytes([0, qtype]) + b"\x00\x01"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
def ask(label, pkt):
    s.sendto(pkt, ("127.0.0.1", 53))
    try:
        r = s.recv(600)
        print(label, "rcode", r[3] & 15, "id", r[:2].hex(), "qr", r[2] >> 7)
    except socket.timeout:
        print(label, "no answer")
ask("plain", q(b"first.example"))
ask("second", q(b"second.example"))
ask("control", q(b"\x1b]0;x\x07.example"))
ask("response", b"\x12\x34\x81\x80" + q(b"r.example")[4:])
ask("garbage", b"\x00\x01\x02")
ask("short-name", q(b"first.example")[:20])
ask("compressed", b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\xc0\x0c\x00\x01\x00\x01")
ask("opcode", q(b"x.example", flags=b"\x28\x00"))
ask("after", q(b"after.example"))
t = time.time()
try:
    socket.getaddrinfo("third.example", 443)
except socket.gaierror as e:
    print("getaddrinfo", e.errno, round(time.time() - t, 1))
`)
		res = r.jail(t, call{dir: ws, env: env, args: []string{"run", "--", "python3", "dns.py"}})
		mustExit(t, res, 0)
		for _, w := range []string{"plain rcode 3 id 1234 qr 1", "second rcode 3", "control rcode 3", "response no answer",
			"short-name rcode 1", "compressed rcode 1", "opcode rcode 4", "after rcode 3"} {
			wantLine(t, res, w)
		}
		// EAI_NONAME (-2), a final answer, where the host's unreachable name server gave
		// EAI_AGAIN (-3); at once (seconds only on a machine this loaded).
		var secs float64
		if l := wantLine(t, res, "getaddrinfo "); !strings.HasPrefix(l, "getaddrinfo -2 ") {
			t.Errorf("getaddrinfo without network: %q, want EAI_NONAME (-2)", l)
		} else if fmt.Sscan(strings.TrimPrefix(l, "getaddrinfo -2 "), &secs); secs > 3 {
			t.Errorf("getaddrinfo without network took %.1fs", secs)
		}
		if n := strings.Count(res.stderr, "the network is off"); n != 1 || !strings.Contains(res.stderr, "jail: network: first.example:") {
			t.Errorf("want one line, for first.example:\n%q", res.stderr)
		}
		if strings.ContainsAny(res.stderr, "\x1b\x07") {
			t.Errorf("a control byte reached jail's stderr: %q", res.stderr)
		}

		res = r.jail(t, call{dir: ws, env: env, args: []string{"run", "--", "/bin/sh", "-c", "cat /etc/resolv.conf; echo end"}})
		mustExit(t, res, 0)
		if strings.TrimSpace(res.stdout) != "end" || strings.Contains(res.stderr, "jail: network") {
			t.Errorf("resolv.conf inside is not empty, or a run that looked nothing up printed a line:\nstdout %q\nstderr %q", res.stdout, res.stderr)
		}
	})
}

// TestNetworkAllowFlagNpm: real npm reaches its registry with one --allow and nothing in the
// policy but the registry's address range: on this machine the registry's names resolve into
// 203.0.113.0/24, a documentation range jail refuses unless allow_private names it.
func TestNetworkAllowFlagNpm(t *testing.T) {
	registry := npmRegistryHost(t)
	name, port, _ := strings.Cut(registry, ":")
	allow := name
	if port != "443" && port != "80" {
		allow = registry
	}
	private := registryPrivateRanges(t, name)
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-npm-")
		cfg := r.dir(t, "jail-it-netcfg-")
		file := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, file, netPolicy("none", "", filepath.Join(cfg, "audit.jsonl"), nil, private))
		res := r.jail(t, call{dir: ws, limit: 2 * time.Minute, args: []string{"run", "--policy", file, "--allow", allow, "--",
			"npm", "view", "--no-update-notifier", "is-number@7.0.0", "version"}})
		mustExit(t, res, 0)
		if strings.TrimSpace(res.stdout) != "7.0.0" {
			t.Errorf("npm view through --allow %s: %q\nstderr: %s", allow, res.stdout, res.stderr)
		}
		if strings.Contains(res.stderr, "jail: network: refused") {
			t.Errorf("a refusal with the registry allowed:\n%s", res.stderr)
		}
	})
}

// registryPrivateRanges returns the allow_private ranges a test needs for host: the /24 (IPv4)
// or /64 (IPv6) around every non-public address it resolves to here (203.0.113.0/24 on the
// development machine, whose answers may move within it), or skips when it does not resolve.
func registryPrivateRanges(t *testing.T, host string) []string {
	t.Helper()
	addrs, err := net.DefaultResolver.LookupNetIP(t.Context(), "ip", host)
	if err != nil {
		t.Skipf("requires %s to resolve on this host: %v", host, err)
	}
	var ranges []string
	for _, a := range addrs {
		a = a.Unmap()
		if publicAddr(a) {
			continue
		}
		bits := 24
		if a.Is6() {
			bits = 64
		}
		p, _ := a.Prefix(bits)
		if !slices.Contains(ranges, p.String()) {
			ranges = append(ranges, p.String())
		}
	}
	return ranges
}

// TestNetworkServe: jail serve takes --allow for its tools' sandboxes, names refused hosts on
// its stderr (never on stdout, its protocol); without network its bash sandboxes' lookups fail
// at once and the first is explained there.
func TestNetworkServe(t *testing.T) {
	h := newTestHosts(t)
	forEach(t, func(t *testing.T, r runner) {
		_, s := r.toolsIn(t, resolverSection(h), "--allow", webName)
		res := s.call(1, "bash", `{"command": "curl -sS -m 10 http://web.test/served; curl -sS -m 10 -o /dev/null -w ' other=%{http_code}' http://other.test/"}`)
		if res.Result == nil || !strings.Contains(res.Result.Content, "served-by="+h.web.String()+" path=/served") || !strings.Contains(res.Result.Content, "other=403") {
			t.Fatalf("bash through --allow: %+v\nstderr: %s", res.Result, s.err.String())
		}
		waitFor(t, func() bool {
			return strings.Contains(s.err.String(), "jail: network: refused other.test:80: not in allow (add --allow other.test)")
		},
			func() string { return "jail serve's stderr does not name the refused host:\n" + s.err.String() })

		_, off := r.toolsIn(t, "")
		start := time.Now()
		res = off.call(1, "bash", `{"command": "getent hosts registry.example.org; echo rc=$?"}`)
		if res.Result == nil || !strings.Contains(res.Result.Content, "rc=2") || time.Since(start) > 10*time.Second {
			t.Fatalf("lookup without network: %+v after %s", res.Result, time.Since(start))
		}
		waitFor(t, func() bool {
			return strings.Contains(off.err.String(), "jail: network: registry.example.org: the network is off")
		},
			func() string { return "jail serve's stderr does not explain the lookup:\n" + off.err.String() })
	})
}

// waitFor polls cond for up to 10 seconds, then fails with msg().
func waitFor(t *testing.T, cond func() bool, msg func() string) {
	t.Helper()
	if !testutil.Eventually(10*time.Second, cond) {
		t.Fatal(msg())
	}
}
