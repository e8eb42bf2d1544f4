package netns

import (
	"fmt"
	"net/netip"
	"strings"
)

// maxNameLen and maxLabelLen are the DNS limits (RFC 1035 section 2.3.4) for the text form of a
// name without its trailing dot.
const (
	maxNameLen  = 253
	maxLabelLen = 63
)

// normalizeHost returns host in the one form rules are matched against: lower case, no trailing
// dot, IPv6 literals without brackets. It refuses anything that is not a plain DNS name or IP
// literal, because a name that reaches a resolver, a log line or a header must not carry control
// characters (header injection, log forging) and must mean the same thing to every parser.
func normalizeHost(host string) (string, error) {
	if host == "" {
		return "", fmt.Errorf("%w: empty host", ErrBadName)
	}
	if len(host) > maxNameLen+3 { // allow brackets and a trailing dot before the exact check
		return "", fmt.Errorf("%w: name longer than %d bytes", ErrBadName, maxNameLen)
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; c <= ' ' || c >= 0x7f {
			return "", fmt.Errorf("%w: control, space or non-ASCII byte %#x in name", ErrBadName, c)
		}
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if strings.Contains(host, ":") {
		a, err := netip.ParseAddr(host)
		if err != nil || a.Zone() != "" {
			return "", fmt.Errorf("%w: %q is not an IPv6 address without zone", ErrBadName, host)
		}
		return a.String(), nil
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if a, err := netip.ParseAddr(host); err == nil {
		return a.String(), nil
	}
	if len(host) > maxNameLen {
		return "", fmt.Errorf("%w: name longer than %d bytes", ErrBadName, maxNameLen)
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" {
			return "", fmt.Errorf("%w: empty label in %q", ErrBadName, host)
		}
		if len(l) > maxLabelLen {
			return "", fmt.Errorf("%w: label longer than %d bytes", ErrBadName, maxLabelLen)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("%w: byte %q not allowed in name", ErrBadName, c)
			}
		}
	}
	// A name whose last label is numeric is an IPv4 literal in some other spelling
	// ("2130706433", "127.1", "0x7f.1") to inet_aton-style parsers; refuse it so no parser
	// downstream can read it as an address the rules never saw.
	if last := labels[len(labels)-1]; isNumericLabel(last) {
		return "", fmt.Errorf("%w: %q looks like an IPv4 address in a non-standard form", ErrBadName, host)
	}
	return host, nil
}

func isNumericLabel(l string) bool {
	if strings.HasPrefix(l, "0x") {
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}
