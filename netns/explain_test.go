package netns

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
)

func TestCheckAllow(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"registry.npmjs.org", "registry.npmjs.org", ""},
		{"git.example.net:22", "git.example.net:22", ""},
		{"*.example.com", "*.example.com", ""},
		{"*.example.com:8443", "*.example.com:8443", ""},
		{"[2001:db8::1]:443", "[2001:db8::1]:443", ""},
		{"https://registry.npmjs.org/", "", "use --allow registry.npmjs.org"},
		{"https://user@host.example:8443/x", "", "use --allow host.example:8443"},
		{"host.example/path", "", "e.g. --allow host.example"},
		{"host.example:70000", "", "want 1-65535"},
		{"host.example:0", "", "want 1-65535"},
		{"host.example:", "", "want 1-65535"},
		{"*", "", "every host"},
		{"example.*", "", "whole first label"},
		{"a*.example.com", "", "whole first label"},
		{"*.*.example.com", "", "whole first label"},
		{"*.com", "", "public suffix"},
		{"", "", "want HOST"},
		{"bad\x1b[31mname", "", "bad host"},
	} {
		got, err := CheckAllow(c.in)
		if c.err == "" {
			if err != nil || got != c.want {
				t.Errorf("CheckAllow(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("CheckAllow(%q) error %v, want one containing %q", c.in, err, c.err)
		}
		if err != nil && strings.ContainsAny(err.Error(), "\x1b") {
			t.Errorf("CheckAllow(%q) error carries a control byte: %q", c.in, err)
		}
	}
}

func TestExplain(t *testing.T) {
	for _, c := range []struct {
		ev   Event
		want string
	}{
		{Event{Proto: "connect", Host: "registry.example", Port: 443, Decision: Denied, Cause: CauseNotAllowed, Reason: reasonNotInAllow},
			"jail: network: refused registry.example:443: not in allow (add --allow registry.example)"},
		{Event{Proto: "connect", Host: "registry.example", Port: 8443, Decision: Denied, Cause: CauseNotAllowed},
			"add --allow registry.example:8443)"},
		{Event{Proto: "http", Host: "inside.example", Port: 80, Addr: netip.MustParseAddrPort("10.1.2.3:80"), Decision: Denied, Cause: CauseAddress, Reason: "resolves to 10.1.2.3: private address (RFC 1918)"},
			`add "10.1.2.3/32" to [network] allow_private`},
		{Event{Proto: "dns", Host: "other.test", Decision: Denied, Cause: CauseNotAllowed},
			"refused the name other.test: not in allow (add --allow other.test)"},
		{Event{Proto: "connect", Host: "\x1b]0;owned\x07evil", Port: 443, Decision: Denied, Cause: CauseProtocol, Reason: "invalid host name"},
			`refused \x1b]0;owned\x07evil:443: invalid host name`},
	} {
		got := Explain(c.ev)
		if !strings.Contains(got, c.want) {
			t.Errorf("Explain(%+v) = %q, want it to contain %q", c.ev, got, c.want)
		}
		for i := 0; i < len(got); i++ {
			if got[i] < ' ' || got[i] >= 0x7f {
				t.Errorf("Explain line carries byte %#x: %q", got[i], got)
			}
		}
	}
	if Explain(Event{Decision: Allowed}) != "" {
		t.Error("an allowed connection explained")
	}
}

func TestRefusalsOncePerHost(t *testing.T) {
	var b bytes.Buffer
	r := NewRefusals(&b)
	ev := Event{Proto: "connect", Host: "a.example", Port: 443, Decision: Denied, Cause: CauseNotAllowed}
	r.Event(ev)
	ev.Proto = "socks5"
	r.Event(ev)
	r.Event(Event{Proto: "connect", Host: "a.example", Port: 443, Decision: Allowed})
	if n := strings.Count(b.String(), "\n"); n != 1 {
		t.Fatalf("%d lines for one host, want 1:\n%s", n, b.String())
	}
	for i := range 100 {
		r.Event(Event{Proto: "connect", Host: "h" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + ".example", Port: 443, Decision: Denied, Cause: CauseNotAllowed})
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != maxRefusalLines+1 || !strings.Contains(lines[len(lines)-1], "audit log has every one") {
		t.Fatalf("%d lines, want %d ending with the audit note:\n%s", len(lines), maxRefusalLines+1, b.String())
	}
}

// TestRefusalsQuietHosts: an agent's telemetry and update hosts (a profile's quiet list) are
// named in one line for all of them, the first time one is refused; other hosts keep their
// own line, and a quiet host refused for another cause (a deny rule) is named as usual.
func TestRefusalsQuietHosts(t *testing.T) {
	var b bytes.Buffer
	r := NewRefusals(&b)
	r.Quiet("gemini", []string{"play.googleapis.com:443", "*.sentry.io", "registry.npmjs.org:443"})
	for _, ev := range []Event{
		{Proto: "connect", Host: "play.googleapis.com", Port: 443, Decision: Denied, Cause: CauseNotAllowed},
		{Proto: "connect", Host: "o1.ingest.sentry.io", Port: 443, Decision: Denied, Cause: CauseNotAllowed},
		{Proto: "connect", Host: "registry.npmjs.org", Port: 443, Decision: Denied, Cause: CauseNotAllowed},
		{Proto: "socks5", Host: "play.googleapis.com", Port: 443, Decision: Denied, Cause: CauseNotAllowed},
	} {
		r.Event(ev)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "refused play.googleapis.com:443: not in allow (add --allow play.googleapis.com)") ||
		!strings.Contains(lines[0], "the gemini profile leaves closed") || !strings.Contains(lines[0], "registry.npmjs.org:443") {
		t.Fatalf("quiet hosts: %q, want one line naming the first and the list", lines)
	}
	r.Event(Event{Proto: "http", Host: "play.googleapis.com", Port: 80, Decision: Denied, Cause: CauseNotAllowed})
	r.Event(Event{Proto: "connect", Host: "other.example", Port: 443, Decision: Denied, Cause: CauseNotAllowed})
	r.Event(Event{Proto: "connect", Host: "play.googleapis.com", Port: 443, Decision: Denied, Cause: CauseDenyRule, Reason: "denied by rule"})
	if n := strings.Count(b.String(), "\n"); n != 4 {
		t.Fatalf("%d lines, want 4 (a port the list does not name, another host and a deny rule are named):\n%s", n, b.String())
	}
}
