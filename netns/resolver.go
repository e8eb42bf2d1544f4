package netns

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"
)

// Resolver looks names up for the supervisor. It is the only place a name becomes an address:
// the proxy checks every address it returns and dials one of those addresses, never the name.
type Resolver struct {
	r       *net.Resolver
	lookups atomic.Int64
}

// NewResolver returns a resolver that asks server ("host:53", an IP literal and port) over UDP
// and TCP, or the system resolver (/etc/resolv.conf, /etc/hosts) when server is "". The
// `[network] resolver` policy key lands here; tests point it at a DNS server they run.
func NewResolver(server string) (*Resolver, error) {
	if server == "" {
		return &Resolver{r: &net.Resolver{PreferGo: true}}, nil
	}
	ap, err := netip.ParseAddrPort(server)
	if err != nil {
		return nil, fmt.Errorf("netns: resolver %q must be ip:port: %w", server, err)
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	return &Resolver{r: &net.Resolver{
		PreferGo: true,
		// The Go resolver passes the nameserver from resolv.conf as address; ignoring it sends
		// every query to the configured server instead.
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, ap.String())
		},
	}}, nil
}

// Lookups counts the names looked up so far; tests use it to prove one lookup per connection.
func (r *Resolver) Lookups() int64 { return r.lookups.Load() }

// Lookup returns every address host resolves to. host must be normalized; an IP literal is
// returned as is without a query.
func (r *Resolver) Lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	r.lookups.Add(1)
	// The trailing dot makes the name absolute, so resolv.conf's search list cannot turn
	// "api" into "api.corp.example" behind the rules' back.
	name := host
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	addrs, err := r.r.LookupNetIP(ctx, "ip", name)
	if err != nil {
		return nil, fmt.Errorf("netns: resolve %s: %w", host, err)
	}
	return addrs, nil
}
