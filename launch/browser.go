//go:build linux

package launch

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/chromedp/cdproto/network"

	"github.com/jail-sandbox/jail/browser"
	"github.com/jail-sandbox/jail/container"
	"github.com/jail-sandbox/jail/netns"
	"github.com/jail-sandbox/jail/policy"
)

// BackgroundDialer connects to a port on the loopback of an agent's background processes
// (tools.Server.DialBackground): the browser's localhost. Nil refuses localhost.
type BackgroundDialer func(ctx context.Context, agent string, port int) (net.Conn, error)

// browserStateDir is where the agents' browser profiles and passkeys live: jail's own state
// directory, which every sandbox has hidden (guarded) and no container binds but its agent's
// profile.
func browserStateDir(home string) string {
	base := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		if !filepath.IsAbs(home) {
			return ""
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "jail", "browser")
}

// browserEgress is the policy's egress for the browsers (docs/browser.md): the [network]
// rules in the proxy and transparent modes (and host: the browser is never unfiltered); under
// none, no host at all, so only localhost (the session's background servers) is reached.
// Every decision is audited with the network records ("proto":"browser").
func browserEgress(p *policy.Policy, audit *policy.AuditLog, stderr io.Writer) (*netns.Proxy, error) {
	n := p.Network
	rc := netns.RulesConfig{Deny: n.Deny}
	if n.Mode != policy.NetNone {
		rc.Allow, rc.AllowPrivate = n.Allow, n.AllowPrivate
	}
	rules, err := netns.NewRules(rc)
	if err != nil {
		return nil, fmt.Errorf("network (for the browser): %w", err)
	}
	server := n.Resolver
	if a, perr := netip.ParseAddr(server); perr == nil {
		server = netip.AddrPortFrom(a, 53).String()
	}
	res, err := netns.NewResolver(server)
	if err != nil {
		return nil, fmt.Errorf("network.resolver: %w", err)
	}
	cfg := netns.Config{Rules: rules, Resolver: res, Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if audit != nil {
		na := &netAudit{log: audit, policyHash: p.Hash(), stderr: stderr}
		cfg.Audit = na.write
	}
	return netns.New(cfg)
}

// newBrowsers builds the browser category of a front end from the policy's [docker] and
// [network] values. disabled, when set, is why its tools cannot run.
func newBrowsers(p *policy.Policy, eng *container.Engine, disabled, workspace, home, session string, limits container.Limits,
	audit *policy.AuditLog, local BackgroundDialer, stderr io.Writer) (*browser.Browsers, error) {
	proxy, err := browserEgress(p, audit, stderr)
	if err != nil {
		return nil, err
	}
	d := p.Docker
	return browser.New(browser.Config{Engine: eng, Image: cmp.Or(d.BrowserImage, policy.DefaultBrowserImage), Limits: limits,
		Lifecycle: cmp.Or(d.Lifecycle, policy.DefaultDockerLifecycle), IdleGrace: cmp.Or(d.IdleGrace, policy.DefaultDockerIdleGrace),
		Session: session, Workspace: workspace, StateDir: browserStateDir(home), Disabled: disabled,
		Egress: func(agent string) *browser.Egress {
			eg := &browser.Egress{Dial: proxy.Dial}
			if p.Network.Mode == policy.NetHost {
				// Under host the background processes share the host's network namespace:
				// their loopback is the host's, so the relay would reach every server on this
				// machine's loopback, not only the agent's own.
				eg.Local = func(context.Context, int) (net.Conn, error) {
					return nil, &browser.Refusal{Reason: network.ErrorReasonBlockedByClient,
						Why: `jail: browser: localhost is refused under [network] mode = "host": the session's background processes share the host's loopback there, so it would reach every server on this machine (mode = "proxy" or "none" gives them a loopback of their own that the browser can reach)`}
				}
			} else if local != nil {
				eg.Local = func(ctx context.Context, port int) (net.Conn, error) { return local(ctx, agent, port) }
			}
			return eg
		}})
}
