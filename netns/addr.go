package netns

import "net/netip"

// blockedRange is an address range that is not the public Internet, with the reason a
// connection to it is refused.
type blockedRange struct {
	prefix netip.Prefix
	reason string
}

// blockedV4 lists the IPv4 ranges that are not globally reachable unicast (IANA special-purpose
// registry). The cloud metadata endpoints (169.254.169.254, AWS's 169.254.170.2, GCP's
// metadata.google.internal) all sit in link-local, which is why link-local is here at all.
func blockedV4() []blockedRange {
	return []blockedRange{
		{netip.MustParsePrefix("0.0.0.0/8"), "unspecified or this-network address"},
		{netip.MustParsePrefix("10.0.0.0/8"), "private address (RFC 1918)"},
		{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT address (RFC 6598)"},
		{netip.MustParsePrefix("127.0.0.0/8"), "loopback address"},
		{netip.MustParsePrefix("169.254.0.0/16"), "link-local address (cloud metadata)"},
		{netip.MustParsePrefix("172.16.0.0/12"), "private address (RFC 1918)"},
		{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment address"},
		{netip.MustParsePrefix("192.0.2.0/24"), "documentation address"},
		{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast address"},
		{netip.MustParsePrefix("192.168.0.0/16"), "private address (RFC 1918)"},
		{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking address"},
		{netip.MustParsePrefix("198.51.100.0/24"), "documentation address"},
		{netip.MustParsePrefix("203.0.113.0/24"), "documentation address"},
		{netip.MustParsePrefix("224.0.0.0/4"), "multicast address"},
		{netip.MustParsePrefix("240.0.0.0/4"), "reserved or broadcast address"},
	}
}

// blockedV6 lists the IPv6 ranges inside 2000::/3 that are not the public Internet; everything
// outside 2000::/3 is refused separately. Forms that embed an IPv4 address are handled before
// this list is consulted.
func blockedV6() []blockedRange {
	return []blockedRange{
		{netip.MustParsePrefix("2001::/23"), "IETF protocol assignment address (Teredo, benchmarking, ORCHID)"},
		{netip.MustParsePrefix("2001:db8::/32"), "documentation address"},
		{netip.MustParsePrefix("3fff::/20"), "documentation address"},
	}
}

// classifier decides whether an address is public. It is built once per Rules so the range
// tables are not package globals.
type classifier struct {
	v4, v6 []blockedRange
	// Embedded-IPv4 forms: an address here reaches (or names) an IPv4 host, so it is only as
	// good as the IPv4 address inside it.
	v4Compat, nat64, sixToFour netip.Prefix
	globalUnicast, ula         netip.Prefix
}

func newClassifier() classifier {
	return classifier{
		v4:            blockedV4(),
		v6:            blockedV6(),
		v4Compat:      netip.MustParsePrefix("::/96"),
		nat64:         netip.MustParsePrefix("64:ff9b::/96"),
		sixToFour:     netip.MustParsePrefix("2002::/16"),
		globalUnicast: netip.MustParsePrefix("2000::/3"),
		ula:           netip.MustParsePrefix("fc00::/7"),
	}
}

// blockedReason returns why addr is not a public unicast address, or "" if it is. IPv4-mapped
// addresses are unmapped first, and IPv4-compatible, NAT64 and 6to4 forms are judged by the
// IPv4 address they embed, so ::ffff:127.0.0.1, ::127.0.0.1, 64:ff9b::a9fe:a9fe and
// 2002:a9fe:a9fe:: are all refused like the address inside them.
func (c classifier) blockedReason(addr netip.Addr) string {
	if !addr.IsValid() {
		return "invalid address"
	}
	if addr.Zone() != "" {
		return "scoped (zoned) address"
	}
	addr = addr.Unmap()
	if addr.Is4() {
		for _, r := range c.v4 {
			if r.prefix.Contains(addr) {
				return r.reason
			}
		}
		return ""
	}
	switch {
	case addr.IsUnspecified():
		return "unspecified address"
	case addr.IsLoopback():
		return "loopback address"
	case addr.IsMulticast():
		return "multicast address"
	case addr.IsLinkLocalUnicast():
		return "link-local address"
	case c.v4Compat.Contains(addr), c.nat64.Contains(addr):
		b := addr.As16()
		if r := c.blockedReason(netip.AddrFrom4([4]byte(b[12:16]))); r != "" {
			return "IPv6 form of " + r
		}
		if c.v4Compat.Contains(addr) {
			return "deprecated IPv4-compatible IPv6 address"
		}
		return ""
	case c.sixToFour.Contains(addr):
		b := addr.As16()
		if r := c.blockedReason(netip.AddrFrom4([4]byte(b[2:6]))); r != "" {
			return "6to4 form of " + r
		}
		return ""
	case !c.globalUnicast.Contains(addr):
		// Covers ULA fc00::/7, site-local fec0::/10, discard 100::/64, local NAT64
		// 64:ff9b:1::/48 and everything IANA has not allocated for global unicast.
		if c.ula.Contains(addr) {
			return "private address (unique local, fc00::/7)"
		}
		return "reserved IPv6 address"
	}
	for _, r := range c.v6 {
		if r.prefix.Contains(addr) {
			return r.reason
		}
	}
	return ""
}
