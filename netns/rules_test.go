package netns

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestNormalizeHost(t *testing.T) {
	good := map[string]string{
		"Example.COM.":                         "example.com",
		"a-b_c.example.org":                    "a-b_c.example.org",
		"127.0.0.1":                            "127.0.0.1",
		"[::1]":                                "::1",
		"2001:DB8::1":                          "2001:db8::1",
		"::ffff:169.254.169.254":               "::ffff:169.254.169.254",
		strings.Repeat("a", 63):                strings.Repeat("a", 63),
		"x." + strings.Repeat("b.", 125) + "c": "x." + strings.Repeat("b.", 125) + "c",
	}
	for in, want := range good {
		got, err := normalizeHost(in)
		if err != nil || got != want {
			t.Errorf("normalizeHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := []string{
		"", ".", "a..b", "exa mple.com", "example.com\r\nX-Evil: 1", "evil\x00.example.com",
		"tab\t.example.com", "ünï.example.com", "a/b.example.com", "*.example.com",
		strings.Repeat("a", 64) + ".com", strings.Repeat("abcd.", 51) + "com", // 258 bytes
		"2130706433", "127.1", "0x7f.0.0.1", "host.0x10", "fe80::1%eth0", "[fe80::1%25eth0]",
	}
	for _, in := range bad {
		if got, err := normalizeHost(in); !errors.Is(err, ErrBadName) {
			t.Errorf("normalizeHost(%q) = %q, %v; want ErrBadName", in, got, err)
		}
	}
}

func TestNewRulesRefuses(t *testing.T) {
	for _, allow := range []string{
		"*", "*:443", "*.com", "*.co.uk", "*.github.io", "*.test", "*.COM.", "*.10.0.0.1",
		"example.com:0", "example.com:65536", "example.com:http", "example.com:+80",
		"bad host", "a\r\nb.com", "*.*.example.com", "exa*mple.com",
	} {
		if _, err := NewRules(RulesConfig{Allow: []string{allow}}); !errors.Is(err, ErrBadRule) && !errors.Is(err, ErrBadName) {
			t.Errorf("allow %q accepted (err %v)", allow, err)
		}
	}
	if _, err := NewRules(RulesConfig{AllowPrivate: []string{"10.0.0.0/33"}}); !errors.Is(err, ErrBadRule) {
		t.Errorf("bad CIDR accepted: %v", err)
	}
	// A deny-side wildcard over a public suffix only takes away, so it is fine.
	if _, err := NewRules(RulesConfig{Deny: []string{"*.com", "*"}}); err != nil {
		t.Errorf("deny wildcard refused: %v", err)
	}
}

func TestRulesMatch(t *testing.T) {
	r, err := NewRules(RulesConfig{
		Allow: []string{"api.example.com", "*.pkg.example.org", "db.example.net:5432", "[2001:db8::5]:8443", "203.0.113.9"},
		Deny:  []string{"evil.pkg.example.org", "api.example.com:80"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		host string
		port int
		want verdict
	}{
		{"api.example.com", 443, verdictAllow},
		{"api.example.com", 80, verdictDeny}, // deny with port wins
		{"api.example.com", 8080, verdictUnknown},
		{"a.pkg.example.org", 443, verdictAllow},
		{"a.b.pkg.example.org", 80, verdictAllow},
		{"pkg.example.org", 443, verdictUnknown}, // wildcard does not match the apex
		{"xpkg.example.org", 443, verdictUnknown},
		{"evil.pkg.example.org", 443, verdictDeny},
		{"db.example.net", 5432, verdictAllow},
		{"db.example.net", 443, verdictUnknown},
		{"2001:db8::5", 8443, verdictAllow},
		{"203.0.113.9", 443, verdictAllow},
		{"other.example.com", 443, verdictUnknown},
	}
	for _, c := range cases {
		if got, reason := r.match(c.host, c.port); got != c.want {
			t.Errorf("match(%s, %d) = %v (%s), want %v", c.host, c.port, got, reason, c.want)
		}
	}
	if got := r.Ports("x.pkg.example.org"); len(got) != 2 || got[0] != 80 || got[1] != 443 {
		t.Errorf("Ports = %v", got)
	}
	if got := r.allPorts(); len(got) != 4 {
		t.Errorf("allPorts = %v, want 80 443 5432 8443", got)
	}
}

func TestAddressClassification(t *testing.T) {
	r, err := NewRules(RulesConfig{})
	if err != nil {
		t.Fatal(err)
	}
	blocked := []string{
		"0.0.0.0", "0.1.2.3", "10.1.2.3", "100.64.0.1", "100.127.255.255", "127.0.0.1", "127.5.6.7",
		"169.254.169.254", "169.254.170.2", "172.16.0.1", "172.31.255.255", "192.0.0.170",
		"192.0.2.1", "192.88.99.1", "192.168.1.1", "198.18.0.1", "198.19.255.255",
		"198.51.100.7", "203.0.113.7", "224.0.0.1", "239.255.255.250", "240.0.0.1",
		"255.255.255.255",
		"::", "::1", "fe80::1", "fc00::1", "fd12:3456::1", "fec0::1", "ff02::1", "100::1",
		"2001:db8::1", "2001::1", "2001:2::1", "3fff::1", "64:ff9b:1::1", "4000::1",
		// IPv4 inside IPv6: mapped, compatible, NAT64 and 6to4 spellings of blocked addresses.
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "::ffff:0.0.0.0",
		"::127.0.0.1", "::a9fe:a9fe", "::8.8.8.8", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe",
		"2002:7f00:1::", "2002:a9fe:a9fe::1", "2002:c0a8:101::",
	}
	for _, s := range blocked {
		if reason := r.addrReason(netip.MustParseAddr(s)); reason == "" {
			t.Errorf("%s allowed, want blocked", s)
		}
	}
	public := []string{
		"1.1.1.1", "8.8.8.8", "100.63.255.255", "100.128.0.0", "172.32.0.1", "11.0.0.1",
		"2606:4700::1111", "2a00:1450::1", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
	}
	for _, s := range public {
		if reason := r.addrReason(netip.MustParseAddr(s)); reason != "" {
			t.Errorf("%s blocked (%s), want allowed", s, reason)
		}
	}
	if reason := r.addrReason(netip.MustParseAddr("169.254.169.254")); !strings.Contains(reason, "link-local") {
		t.Errorf("metadata reason %q", reason)
	}
}

func TestAllowPrivate(t *testing.T) {
	r, err := NewRules(RulesConfig{AllowPrivate: []string{"127.0.0.0/8", "10.1.0.0/16", "fd00::5"}})
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]bool{
		"127.0.0.1": true, "::ffff:127.0.0.9": true, "10.1.2.3": true, "10.2.0.1": false,
		"fd00::5": true, "fd00::6": false, "169.254.169.254": false, "::1": false,
	} {
		if got := r.addrReason(netip.MustParseAddr(s)) == ""; got != want {
			t.Errorf("%s allowed=%v, want %v", s, got, want)
		}
	}
}
