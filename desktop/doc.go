// Package desktop is the desktop tool category: a virtual X desktop in a Docker container
// that an agent sees (desktop_screenshot) and operates (desktop_click, desktop_type, ...)
// for GUI deliverables, with the app under test launched from the workspace
// (desktop_launch). The container (package container) has no network at all and the
// category's hardening; X listens only inside it, on a unix socket in the container's /tmp.
//
// # Where code runs
//
// The tools run in the supervisor (tools.Tool.Host): they talk to a driver inside the
// container over its attached stdio, JSON lines (protocol.go). The driver ([DriverMain]) is
// the jail binary itself, bound read-only into the container: it starts Xvfb, runs apps,
// and drives them with xdotool; screenshots are xwd dumps it turns into PNG. Nothing
// inside the container is trusted: the app under test runs with the driver's uid, so the
// supervisor bounds every line, matches every id, and decodes and checks every screenshot
// (a whole PNG, of the advertised size) before it saves one by descriptor under the
// workspace's .jail/desktop/screenshots (container.SaveArtifact) or returns it.
//
// # State
//
// The desktop is stateful: with [docker] lifecycle "agent" (the default) one container per
// agent keeps Xvfb and the app alive between calls, until idle_grace passes. A call on a
// desktop whose app has died fails with "app not running", the exit status and the app's
// last output, never with a stale screenshot.
package desktop
