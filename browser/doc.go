// Package browser is the browser_* tool category: Chromium in a Docker container with no
// network at all (package container), driven by chromedp over the DevTools pipe that the
// container's attached stdio carries, and online only through jail (docs/browser.md).
//
// # The pipe
//
// Chromium runs with --remote-debugging-pipe: it reads protocol messages on fd 3 and writes on
// fd 4. The container's command moves its stdin and stdout there, and the supervisor speaks
// to it with chromedp's pipe transport over the Engine API's attach stream. No port is
// published, and nothing connects to the container over TCP.
//
// # Egress
//
// Request interception is enabled on the browser's own DevTools session, so every request of
// every target (pages, popups, iframes, workers) is paused in the browser and handed to
// [Egress.Fetch], which fetches it in the supervisor under the network policy: the allowlist,
// jail's own name resolution, private and metadata addresses refused (netns.Proxy.Dial), TLS
// verified for the URL's name, no redirect followed (the browser's next hop is paused and
// checked again), bodies and times bounded, each outcome recorded. What the supervisor cannot
// relay (WebSocket, any scheme but http and https) fails: the browser has no network of its
// own to fall back on.
//
// # The sandbox
//
// Chromium's own sandbox stays on: jail never passes --no-sandbox, the container's seccomp
// profile allows what its namespace sandbox needs, and [Launch] reads chrome://sandbox and
// refuses a browser whose renderers are not in it.
package browser
