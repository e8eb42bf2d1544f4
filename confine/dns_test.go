//go:build linux && cgo

package confine

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

func dnsQuery(t testing.TB, name string, typ dnsmessage.Type, edns bool) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 0xbeef, RecursionDesired: true})
	b.StartQuestions()
	if err := b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}); err != nil {
		t.Fatal(err)
	}
	if edns {
		b.StartAdditionals()
		var rh dnsmessage.ResourceHeader
		rh.SetEDNS0(1232, dnsmessage.RCodeSuccess, false)
		b.OPTResource(rh, dnsmessage.OPTResource{})
	}
	msg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// TestDNSReply: the answers of pid 1's name server without network (pid1_linux.c), as a
// stub resolver reads them.
func TestDNSReply(t *testing.T) {
	for _, c := range []struct {
		name       string
		q          []byte
		rcode      dnsmessage.RCode
		report     string
		noQuestion bool
	}{
		{"A", dnsQuery(t, "Registry.NPMjs.org.", dnsmessage.TypeA, false), dnsmessage.RCodeNameError, "registry.npmjs.org", false},
		{"AAAA with EDNS", dnsQuery(t, "api.example.com.", dnsmessage.TypeAAAA, true), dnsmessage.RCodeNameError, "api.example.com", false},
		{"single label", dnsQuery(t, "jail.", dnsmessage.TypeA, false), dnsmessage.RCodeNameError, "", false},
		{"PTR", dnsQuery(t, "1.0.0.127.in-addr.arpa.", dnsmessage.TypePTR, false), dnsmessage.RCodeNameError, "", false},
		{"MX", dnsQuery(t, "example.com.", dnsmessage.TypeMX, false), dnsmessage.RCodeNameError, "", false},
		{"unprintable", dnsQuery(t, "a\\027b.example.", dnsmessage.TypeA, false), dnsmessage.RCodeNameError, "", false},
	} {
		r, name := dnsReply(c.q)
		if name != c.report {
			t.Errorf("%s: reports %q, want %q", c.name, name, c.report)
		}
		var p dnsmessage.Parser
		h, err := p.Start(r)
		if err != nil {
			t.Fatalf("%s: answer does not parse: %v", c.name, err)
		}
		if h.ID != 0xbeef || !h.Response || !h.Authoritative || !h.RecursionDesired || h.RCode != c.rcode {
			t.Errorf("%s: header %+v", c.name, h)
		}
		qs, err := p.AllQuestions()
		if err != nil || len(qs) != 1 {
			t.Fatalf("%s: questions %v %v", c.name, qs, err)
		}
		if err := p.SkipAllAnswers(); err != nil {
			t.Fatal(err)
		}
	}
	// A response is never answered; what does not parse is FORMERR; another opcode NOTIMP.
	resp := dnsQuery(t, "a.example.", dnsmessage.TypeA, false)
	resp[2] |= 0x80
	if r, _ := dnsReply(resp); r != nil {
		t.Errorf("a response was answered: %x", r)
	}
	for _, c := range []struct {
		name  string
		q     []byte
		rcode byte
	}{
		{"truncated question", dnsQuery(t, "a.example.", dnsmessage.TypeA, false)[:16], 1},
		{"compression pointer", []byte{0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1}, 1},
		{"two questions", append([]byte{0, 1, 1, 0, 0, 2}, make([]byte, 6)...), 1},
		{"notify opcode", append([]byte{0, 1, 0x20, 0, 0, 1}, make([]byte, 6)...), 4},
	} {
		r, name := dnsReply(c.q)
		if len(r) != 12 || r[3]&0xf != c.rcode || r[5] != 0 || name != "" {
			t.Errorf("%s: answer %x name %q, want a bare header with rcode %d", c.name, r, name, c.rcode)
		}
	}
	for _, short := range [][]byte{nil, {1}, make([]byte, 11), make([]byte, 513)} {
		if r, _ := dnsReply(short); r != nil {
			t.Errorf("%d bytes answered", len(short))
		}
	}
}

// FuzzDNSReply: whatever the sandbox sends, the answer stays inside the datagram's bytes,
// carries the query's ID, and a reported name is one a terminal can show.
func FuzzDNSReply(f *testing.F) {
	f.Add(dnsQuery(f, "registry.npmjs.org.", dnsmessage.TypeA, true))
	f.Add([]byte{0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1})
	f.Add(bytes.Repeat([]byte{63}, 300))
	f.Fuzz(func(t *testing.T, q []byte) {
		r, name := dnsReply(q)
		if r == nil {
			return
		}
		if len(r) > len(q) || len(r) < 12 || r[0] != q[0] || r[1] != q[1] || r[2]&0x80 == 0 {
			t.Fatalf("answer %x to %x", r, q)
		}
		if name != "" && (strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != "" || !strings.Contains(name, ".") || len(name) > 253) {
			t.Fatalf("reported name %q", name)
		}
	})
}
