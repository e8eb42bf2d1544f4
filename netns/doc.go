// Package netns is the supervisor side of jail's network modes.
//
// The sandbox always runs in a fresh network namespace that has only a loopback interface, so
// nothing inside it has a route anywhere. Every allowed connection is made by the jail
// supervisor, outside the sandbox, after it has checked the name against [Rules], resolved the
// name itself and checked every resolved address. It then dials exactly the address it checked,
// never the name, so a second DNS answer (rebinding) cannot change the target.
//
// # Modes
//
//   - none: the child brings loopback up with [LoopbackUp]; nothing else.
//   - proxy: the supervisor opens listeners inside the sandbox's namespace with [Listen] and
//     serves an HTTP proxy ([Proxy.ServeHTTP]) and a SOCKS5 proxy ([Proxy.ServeSOCKS5]) on them;
//     [ProxyEnv] gives the variables that point the command's tools at them.
//   - transparent: as proxy, and [Transparent] answers DNS inside the sandbox with a loopback
//     address per allowed name, on which jail listens and forwards to the checked real address.
//     Names that are not allowed get NXDOMAIN. Nothing listens for other UDP, so it goes nowhere.
//   - host: not handled here; the caller simply does not create a network namespace.
//
// # Audit and approval
//
// Every decision is reported to [Config.Audit] as an [Event]. A name that no rule allows or
// denies may be put to [Config.Approve]; approval never bypasses the address checks.
package netns
