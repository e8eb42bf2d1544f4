package netns

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// RulesConfig is the network part of a policy in plain values, so this package does not depend
// on the policy package. The zero value allows nothing.
type RulesConfig struct {
	// Allow lists "host", "host:port", "*.domain" and "*.domain:port" entries. An entry without
	// a port allows DefaultPorts. "*.domain" matches names below domain at any depth, not
	// domain itself. Bare "*" and wildcards over a public suffix ("*.com", "*.co.uk",
	// "*.github.io") are refused: they would allow most of the Internet.
	Allow []string
	// Deny uses the same syntax and wins over Allow. An entry without a port denies every port;
	// wildcards over public suffixes are accepted here since they only take away.
	Deny []string
	// AllowPrivate lists CIDRs (or single addresses) that may be connected to even though they
	// are loopback, private, link-local or otherwise not public. Empty: only public addresses.
	AllowPrivate []string
	// DefaultPorts are the ports an Allow entry without a port allows. Nil: 80 and 443.
	DefaultPorts []int
}

// Rules is a compiled RulesConfig. It is immutable and safe for concurrent use.
type Rules struct {
	allow, deny  []entry
	allowPrivate []netip.Prefix
	class        classifier
}

// entry is one allow or deny line. ports nil means "default ports" in the allowlist and "every
// port" in the denylist.
type entry struct {
	text     string
	host     string // normalized; for a wildcard, the domain after "*."
	wildcard bool
	ports    []int
}

// verdict is the outcome of matching a name against the rules alone.
type verdict int

const (
	verdictUnknown verdict = iota
	verdictAllow
	verdictDeny
)

// NewRules compiles c, refusing any entry that cannot be used.
func NewRules(c RulesConfig) (*Rules, error) {
	defPorts := c.DefaultPorts
	if defPorts == nil {
		defPorts = []int{80, 443}
	}
	for _, p := range defPorts {
		if p < 1 || p > 65535 {
			return nil, fmt.Errorf("netns: default port %d: %w", p, ErrBadRule)
		}
	}
	r := &Rules{class: newClassifier()}
	for _, s := range c.Allow {
		e, err := parseEntry(s, true)
		if err != nil {
			return nil, err
		}
		if e.ports == nil {
			e.ports = slices.Clone(defPorts)
		}
		r.allow = append(r.allow, e)
	}
	for _, s := range c.Deny {
		e, err := parseEntry(s, false)
		if err != nil {
			return nil, err
		}
		r.deny = append(r.deny, e)
	}
	for _, s := range c.AllowPrivate {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil || a.Zone() != "" {
				return nil, fmt.Errorf("netns: allow_private %q is not a CIDR or address: %w", s, ErrBadRule)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		r.allowPrivate = append(r.allowPrivate, p.Masked())
	}
	return r, nil
}

// parseEntry parses one "host[:port]" or "*.domain[:port]" entry.
func parseEntry(s string, allow bool) (entry, error) {
	bad := func(why string, err error) (entry, error) {
		return entry{}, fmt.Errorf("netns: rule %q: %s: %w", s, why, err)
	}
	e := entry{text: s}
	hostPart := s
	// A port is present for "name:port" and "[v6]:port"; a bare IPv6 literal has several colons.
	if strings.HasPrefix(s, "[") {
		if i := strings.LastIndex(s, "]:"); i > 0 {
			hostPart = s[:i+1]
			p, err := parsePort(s[i+2:])
			if err != nil {
				return bad("bad port", err)
			}
			e.ports = []int{p}
		}
	} else if strings.Count(s, ":") == 1 {
		i := strings.IndexByte(s, ':')
		hostPart = s[:i]
		p, err := parsePort(s[i+1:])
		if err != nil {
			return bad("bad port", err)
		}
		e.ports = []int{p}
	}
	if hostPart == "*" {
		if allow {
			return bad("bare * would allow every host", ErrBadRule)
		}
		e.wildcard = true // deny "*" matches every host, which switches the allowlist off
		return e, nil
	}
	if rest, ok := strings.CutPrefix(hostPart, "*."); ok {
		e.wildcard = true
		hostPart = rest
	}
	h, err := normalizeHost(hostPart)
	if err != nil {
		return bad("bad host", err)
	}
	e.host = h
	if e.wildcard {
		if _, err := netip.ParseAddr(h); err == nil {
			return bad("wildcard over an address", ErrBadRule)
		}
		// PublicSuffix knows the ICANN and private sections of the Public Suffix List and treats
		// an unknown TLD as a suffix too, so "*.internal" is refused as well as "*.com".
		if suffix, _ := publicsuffix.PublicSuffix(h); allow && suffix == h {
			return bad("wildcard over the public suffix "+h, ErrBadRule)
		}
	}
	return e, nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 || strconv.Itoa(p) != s {
		return 0, fmt.Errorf("%q is not a port 1-65535: %w", s, ErrBadRule)
	}
	return p, nil
}

func (e entry) matchesHost(host string) bool {
	if e.wildcard {
		return e.host == "" || strings.HasSuffix(host, "."+e.host)
	}
	return host == e.host
}

// match decides host:port from the name rules alone. host must be normalized.
func (r *Rules) match(host string, port int) (verdict, string) {
	for _, e := range r.deny {
		if e.matchesHost(host) && (e.ports == nil || slices.Contains(e.ports, port)) {
			return verdictDeny, "denied by rule " + strconv.Quote(e.text)
		}
	}
	hostKnown := false
	for _, e := range r.allow {
		if e.matchesHost(host) {
			hostKnown = true
			if slices.Contains(e.ports, port) {
				return verdictAllow, "allowed by rule " + strconv.Quote(e.text)
			}
		}
	}
	if hostKnown {
		return verdictUnknown, "port " + strconv.Itoa(port) + " not allowed for host"
	}
	return verdictUnknown, reasonNotInAllow
}

// reasonNotInAllow is the reason for a host no rule mentions.
const reasonNotInAllow = "host not in allowlist"

// addrReason returns why a connection to addr is refused, or "" if it may be made: public
// addresses always, others only inside an allow_private CIDR.
func (r *Rules) addrReason(addr netip.Addr) string {
	reason := r.class.blockedReason(addr)
	if reason == "" {
		return ""
	}
	u := addr.Unmap()
	for _, p := range r.allowPrivate {
		if p.Contains(u) || p.Contains(addr) {
			return ""
		}
	}
	return reason
}

// Ports returns the ports the allowlist opens for host (normalized), sorted, for transparent
// mode's listeners.
func (r *Rules) Ports(host string) []int {
	var ports []int
	for _, e := range r.allow {
		if e.matchesHost(host) {
			ports = append(ports, e.ports...)
		}
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}

// allPorts returns every port any allow entry opens.
func (r *Rules) allPorts() []int {
	var ports []int
	for _, e := range r.allow {
		ports = append(ports, e.ports...)
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}
