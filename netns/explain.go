package netns

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/jail-sandbox/jail/termtext"
)

// Cause classifies a refusal by what would have allowed it. The zero value is a refusal no
// setting lifts (a malformed request, a name that is not a name).
type Cause uint8

// Causes of refusals.
const (
	// CauseProtocol: the request itself was refused (bad name, nested proxy request, a Host
	// header that disagrees, a SOCKS5 command jail does not carry).
	CauseProtocol Cause = iota
	// CauseNotAllowed: no allow entry names the host.
	CauseNotAllowed
	// CausePort: an allow entry names the host, but not this port.
	CausePort
	// CauseDenyRule: a deny entry matched.
	CauseDenyRule
	// CauseAddress: the name resolves to an address that is not public and no allow_private
	// range covers it. Event.Addr is that address.
	CauseAddress
	// CauseResolve: jail could not resolve the name.
	CauseResolve
	// CauseDial: the connection was allowed, but the host did not answer.
	CauseDial
	// CauseUnmapped: a transparent-mode address that no name was handed out for.
	CauseUnmapped
)

// Explain returns the line that tells a person about a refused connection: what was refused,
// why, and the flag or policy key that would allow it. Every byte that came from the sandbox
// (the host name above all) is escaped, so the line cannot carry terminal control sequences.
// It returns "" for events that are not refusals.
func Explain(ev Event) string {
	if ev.Decision != Denied || ev.Closed {
		return ""
	}
	host := termtext.Line(ev.Host) // an invalid name arrives Go-quoted (printable ASCII)
	target := host
	if ev.Port > 0 {
		target = net.JoinHostPort(host, strconv.Itoa(ev.Port))
	}
	allowArg := host
	// An allow entry without a port opens 80 and 443 (RulesConfig.DefaultPorts when nil).
	if ev.Port > 0 && ev.Port != 80 && ev.Port != 443 {
		allowArg = net.JoinHostPort(host, strconv.Itoa(ev.Port))
	}
	what := "refused " + target
	if ev.Proto == "dns" {
		what = "refused the name " + host
	}
	reason := termtext.Line(ev.Reason)
	switch ev.Cause {
	case CauseNotAllowed:
		return fmt.Sprintf("jail: network: %s: not in allow (add --allow %s)", what, allowArg)
	case CausePort:
		return fmt.Sprintf("jail: network: %s: port %d is not allowed for this host (add --allow %s)", what, ev.Port, allowArg)
	case CauseDenyRule:
		return fmt.Sprintf("jail: network: %s: %s (remove it from [network] deny to allow this host)", what, reason)
	case CauseAddress:
		a := ev.Addr.Addr().Unmap()
		cidr := a.String() + "/" + strconv.Itoa(a.BitLen())
		return fmt.Sprintf("jail: network: %s: %s, which jail refuses by default (add %q to [network] allow_private if this host is meant to be reached)", what, reason, cidr)
	case CauseResolve:
		return fmt.Sprintf("jail: network: %s: %s (jail resolves names itself: check the name, or [network] resolver)", what, reason)
	case CauseDial:
		return fmt.Sprintf("jail: network: %s: allowed, but %s", what, reason)
	case CauseUnmapped:
		return fmt.Sprintf("jail: network: %s: %s (in transparent mode, connect by name)", what, reason)
	}
	return fmt.Sprintf("jail: network: %s: %s", what, reason)
}

// maxRefusalLines bounds the lines one run prints: a sandbox that asks for thousands of hosts
// must not flood the caller's terminal. The audit log keeps every refusal.
const maxRefusalLines = 20

// Refusals writes the Explain line of each refused host once per run. Feed it every Event (it
// is safe for concurrent use, as Config.Audit requires).
type Refusals struct {
	w     io.Writer
	mu    sync.Mutex
	seen  map[string]bool
	lines int
	// quiet (Quiet) are refused without a line each; quietSaid says their one line was written.
	quietWho  string
	quiet     []string
	quietSaid bool
}

// NewRefusals returns a Refusals that writes to w.
func NewRefusals(w io.Writer) *Refusals {
	return &Refusals{w: w, seen: map[string]bool{}}
}

// Quiet names hosts (allow syntax: host, host:port, *.domain) an agent asks for telemetry and
// update checks that its profile leaves closed: the first refusal of any of them, for not
// being allowed, is one line naming them all; the rest are not named (the audit log has
// each). who is the profile, for the line.
func (r *Refusals) Quiet(who string, hosts []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.quietWho, r.quiet = who, hosts
}

// quietHost says host:port is one of r.quiet's.
func (r *Refusals) quietHost(host string, port int) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, q := range r.quiet {
		h, p := q, ""
		if i := strings.LastIndexByte(q, ':'); i >= 0 {
			h, p = q[:i], q[i+1:]
		}
		if p != "" && p != strconv.Itoa(port) || p == "" && port != 80 && port != 443 {
			continue
		}
		if strings.HasPrefix(h, "*.") && strings.HasSuffix(host, h[1:]) || host == h {
			return true
		}
	}
	return false
}

// Event writes ev's line unless the same host and port (and cause) was reported already.
func (r *Refusals) Event(ev Event) {
	line := Explain(ev)
	if line == "" {
		return
	}
	if ev.Cause == CauseNotAllowed || ev.Cause == CausePort {
		r.mu.Lock()
		quiet := r.quietHost(ev.Host, ev.Port)
		first := quiet && !r.quietSaid
		r.quietSaid = r.quietSaid || quiet
		r.mu.Unlock()
		if first {
			io.WriteString(r.w, line+"; it is one of the hosts the "+termtext.Line(r.quietWho)+
				" profile leaves closed, for the agent's telemetry and update checks ("+termtext.Line(strings.Join(r.quiet, ", "))+"), which are not named again (the audit log has each)\n")
		}
		if quiet {
			return
		}
	}
	key := ev.Proto + " " + ev.Host + " " + strconv.Itoa(ev.Port) + " " + strconv.Itoa(int(ev.Cause))
	if ev.Proto != "dns" {
		// CONNECT, plain HTTP and SOCKS5 are three routes to one host: one line for all.
		key = ev.Host + " " + strconv.Itoa(ev.Port) + " " + strconv.Itoa(int(ev.Cause))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[key] || r.lines > maxRefusalLines {
		return
	}
	r.seen[key] = true
	r.lines++
	if r.lines > maxRefusalLines {
		line = "jail: network: more connections were refused; the audit log has every one"
	}
	io.WriteString(r.w, line+"\n")
}

// CheckAllow checks one --allow value (HOST, HOST:PORT, *.DOMAIN or *.DOMAIN:PORT) and returns
// it as an allow entry. Its errors say what to type instead: a URL, a port out of range or a
// wildcard anywhere but the first label are the usual mistakes.
func CheckAllow(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("empty: want HOST or HOST:PORT, e.g. --allow registry.npmjs.org")
	}
	if i := strings.Index(s, "://"); i >= 0 {
		host := s[i+3:]
		if j := strings.IndexAny(host, "/?#"); j >= 0 {
			host = host[:j]
		}
		if at := strings.LastIndexByte(host, '@'); at >= 0 {
			host = host[at+1:]
		}
		if host == "" {
			return "", fmt.Errorf("a URL is not a host: want HOST or HOST:PORT")
		}
		return "", fmt.Errorf("a URL is not a host: use --allow %s", termtext.Escape(host))
	}
	if strings.ContainsAny(s, "/?#@") {
		return "", fmt.Errorf("want HOST or HOST:PORT without a path or user (e.g. --allow %s)", termtext.Escape(strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune("/?#@", r) })[0]))
	}
	hostPart, port := s, ""
	if strings.HasPrefix(s, "[") {
		if i := strings.LastIndex(s, "]:"); i > 0 {
			hostPart, port = s[:i+1], s[i+2:]
		}
	} else if strings.Count(s, ":") == 1 {
		hostPart, port, _ = strings.Cut(s, ":")
	}
	if port != "" || strings.HasSuffix(s, ":") {
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 || strconv.Itoa(p) != port {
			return "", fmt.Errorf("port %q is not a port: want 1-65535, e.g. --allow %s:443", termtext.Escape(port), termtext.Escape(hostPart))
		}
	}
	if strings.Contains(hostPart, "*") {
		rest, ok := strings.CutPrefix(hostPart, "*.")
		if hostPart == "*" {
			return "", fmt.Errorf("* would allow every host: name each host (--allow api.example.com) or a domain (--allow '*.example.com')")
		}
		if !ok || strings.Contains(rest, "*") {
			return "", fmt.Errorf("a wildcard may only be the whole first label, as in '*.example.com' (which matches names below example.com, not example.com itself)")
		}
	}
	if _, err := parseEntry(s, true); err != nil {
		return "", fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "netns: "))
	}
	return s, nil
}
