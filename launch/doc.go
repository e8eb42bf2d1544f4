// Package launch turns what a caller asked for (a command line's options
// and the effective policy) into sandboxes: the policy becomes a
// [confine.Layout], an environment pass-list and seccomp options (Apply);
// the persistent home and the agent profile are wired into them
// (ApplyHome); jail's own files are guarded from every sandbox. Start
// starts one sandbox from a layout (the git view, the environment, the
// seccomp filter compiled while the child creates its namespaces), and
// PlanCache stores a `jail run` whose plan can be replayed without Go
// (docs/plan-cache.md). Net is the supervisor's side of the proxy and
// transparent network modes: the egress proxy, its sockets, its audit.
// NewToolServer gives jail serve, mcp and tool their tools.Server, whose
// workers and bash calls are sandboxes made by Start; Run is `jail run`
// once its flags are parsed.
//
// Why a package of its own: this is the one place that knows every other
// package (policy, confine, netns, gitview, home, agent, tools) and how
// their values meet; none of them may import another's concern (the
// fences of internal/fence). The commands in cmd/jail parse flags and call
// this package; jail run, jail tool, jail serve and jail mcp get their
// sandboxes from the same functions, so a run and a tool call are
// confined alike.
package launch
