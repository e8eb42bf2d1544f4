package policy

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// publicSuffixes lists multi-label suffixes under which unrelated parties register names, so a
// wildcard over them (e.g. "*.github.io") would allow strangers' hosts. It is a short, curated
// subset of the Public Suffix List, not the whole list; every single-label suffix ("*.com",
// "*.dev") is refused by rule without needing a list.
func publicSuffixes() []string {
	return []string{
		"co.uk", "org.uk", "ac.uk", "gov.uk", "com.au", "net.au", "org.au", "co.jp", "ne.jp", "or.jp",
		"com.br", "com.cn", "com.mx", "co.in", "co.nz", "co.za", "com.tr", "com.tw", "co.kr",
		"github.io", "gitlab.io", "githubusercontent.com", "herokuapp.com", "appspot.com",
		"cloudfront.net", "amazonaws.com", "azurewebsites.net", "blob.core.windows.net",
		"vercel.app", "netlify.app", "pages.dev", "workers.dev", "web.app", "firebaseapp.com",
		"fly.dev", "onrender.com", "ngrok.io", "ngrok-free.app", "duckdns.org", "s3.amazonaws.com",
	}
}

// checkHost validates a host pattern: "name", "*.name", an IP, each optionally with ":port".
func checkHost(h string) error {
	host, _, err := splitHostPort(h)
	if err != nil {
		return err
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	name := strings.TrimPrefix(host, "*.")
	label := regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	for _, l := range strings.Split(name, ".") {
		if !label.MatchString(l) {
			return fmt.Errorf("%q is not a host name (accepted: lower-case name, *.name, or IP, each with optional :port)", h)
		}
	}
	return nil
}

// checkAllowHost also refuses patterns too wide to be an allowlist.
func checkAllowHost(h string) error {
	if host, _, _ := splitHostPort(h); host == "*" {
		return fmt.Errorf("%q allows every host; name the hosts instead", h)
	}
	if err := checkHost(h); err != nil {
		return err
	}
	host, _, _ := splitHostPort(h)
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		if !strings.Contains(rest, ".") || slices.Contains(publicSuffixes(), rest) {
			return fmt.Errorf("%q covers a public suffix, so it would allow anyone's host; name a domain you trust", h)
		}
	}
	return nil
}

func splitHostPort(h string) (host string, port int, err error) {
	if h == "*" {
		return h, 0, nil
	}
	host = h
	portText := ""
	switch {
	case strings.HasPrefix(h, "["):
		end := strings.Index(h, "]")
		if end < 0 {
			return "", 0, fmt.Errorf("%q: unclosed [", h)
		}
		host = h[1:end]
		if rest := h[end+1:]; rest != "" {
			if !strings.HasPrefix(rest, ":") {
				return "", 0, fmt.Errorf("%q: junk after ]", h)
			}
			portText = rest[1:]
		}
	case strings.Count(h, ":") == 1:
		host, portText, _ = strings.Cut(h, ":")
	}
	if portText != "" || strings.HasSuffix(h, ":") {
		p, perr := strconv.Atoi(portText)
		if perr != nil || p < 1 || p > 65535 {
			return "", 0, fmt.Errorf("%q has a bad port (accepted: 1-65535)", h)
		}
		port = p
	}
	if host == "" {
		return "", 0, fmt.Errorf("empty host in %q", h)
	}
	return host, port, nil
}

// hostCovered reports whether every host pattern h matches is also matched by one of allow, so
// a project file may narrow the allowlist but never add to it.
func hostCovered(h string, allow []string) bool {
	host, port, err := splitHostPort(h)
	if err != nil {
		return false
	}
	for _, a := range allow {
		ah, ap, err := splitHostPort(a)
		if err != nil || (ap != 0 && ap != port) {
			continue
		}
		if ah == host {
			return true
		}
		if rest, ok := strings.CutPrefix(ah, "*."); ok {
			// *.example.com covers a.example.com and *.a.example.com, not example.com itself.
			if strings.HasSuffix(strings.TrimPrefix(host, "*."), "."+rest) {
				return true
			}
		}
	}
	return false
}

// prefixCovered reports whether CIDR c lies inside one of allowed.
func prefixCovered(c string, allowed []string) bool {
	pc, err := netip.ParsePrefix(c)
	if err != nil {
		return false
	}
	for _, a := range allowed {
		pa, err := netip.ParsePrefix(a)
		if err == nil && pa.Bits() <= pc.Bits() && pa.Contains(pc.Masked().Addr()) {
			return true
		}
	}
	return false
}
