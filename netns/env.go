package netns

import (
	"net"
	"strings"
)

// ProxyEnv returns the environment variables ("NAME=value") that point a command's tools at
// the HTTP proxy on httpAddr and the SOCKS5 proxy on socksAddr (both "ip:port" as seen inside
// the sandbox). Both spellings are set because tools disagree: curl reads only lower-case
// http_proxy (upper case is ignored since httpoxy), most others read upper case first.
// ALL_PROXY uses socks5h:// so the proxy, not the sandbox (which has no DNS), resolves names.
// NO_PROXY keeps the sandbox's own loopback direct: servers the command starts are local to it.
func ProxyEnv(httpAddr, socksAddr string) []string {
	httpURL := "http://" + httpAddr
	socksURL := "socks5h://" + socksAddr
	noProxy := "localhost,127.0.0.1,::1"
	env := []string{
		"HTTP_PROXY=" + httpURL,
		"http_proxy=" + httpURL,
		"HTTPS_PROXY=" + httpURL,
		"https_proxy=" + httpURL,
		"ALL_PROXY=" + socksURL,
		"all_proxy=" + socksURL,
		"NO_PROXY=" + noProxy,
		"no_proxy=" + noProxy,
		// npm and pnpm read their config from npm_config_*; yarn 2+ from YARN_*.
		"npm_config_proxy=" + httpURL,
		"npm_config_https_proxy=" + httpURL,
		"YARN_HTTP_PROXY=" + httpURL,
		"YARN_HTTPS_PROXY=" + httpURL,
		// pip reads HTTPS_PROXY too, but PIP_PROXY wins over a pip.conf that says otherwise.
		"PIP_PROXY=" + httpURL,
		"CARGO_HTTP_PROXY=" + httpURL,
		// Node.js 24+ makes fetch and http honour the variables only when asked to.
		"NODE_USE_ENV_PROXY=1",
		// rsync's daemon protocol tunnels through an HTTP CONNECT proxy given as host:port.
		"RSYNC_PROXY=" + httpAddr,
	}
	// The JVM ignores the variables; its system properties are the only portable way in.
	if host, port, err := net.SplitHostPort(httpAddr); err == nil {
		props := []string{
			"-Dhttp.proxyHost=" + host, "-Dhttp.proxyPort=" + port,
			"-Dhttps.proxyHost=" + host, "-Dhttps.proxyPort=" + port,
			"-Dhttp.nonProxyHosts=localhost|127.0.0.1|[::1]",
		}
		env = append(env, "JAVA_TOOL_OPTIONS="+strings.Join(props, " "))
	}
	return env
}

// OffNotice is the line jail prints when a command without network looks a name up (once per
// run; confine.OffDNS replaces "{name}" with the name).
const OffNotice = "jail: network: {name}: the network is off, so no name resolves (open it with --allow {name}, or --net proxy)"

// OffEnv returns the variables of a run without network. Every lookup fails at once there
// (confine.OffDNS), but npm retries every failed request twice, 10 and 60 seconds apart: with
// the network off for the whole run a retry cannot succeed, so it is turned off. npm also
// asks the registry whether a newer npm exists on every command (npm test, npm run build),
// which looked up registry.npmjs.org and printed the network-off line on runs that need no
// network: its update notifier is turned off too.
func OffEnv() []string {
	return []string{"npm_config_fetch_retries=0", "npm_config_update_notifier=false"}
}
