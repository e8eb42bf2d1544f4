package netns

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/proxy"
)

const benchSize = 100 << 20

// BenchmarkProxyThroughput downloads 100 MB from a loopback origin directly and through each
// proxy path; compare the MB/s columns.
//
//	go test -run '^$' -bench ProxyThroughput -benchtime 3x ./netns/
func BenchmarkProxyThroughput(b *testing.B) {
	e := newLoopbackEnv(b, func(c *Config) { c.IdleTimeout = time.Minute })
	path := "/bytes?n=" + strconv.Itoa(benchSize)
	socks, err := proxy.SOCKS5("tcp", e.socksAddr, nil, proxy.Direct)
	if err != nil {
		b.Fatal(err)
	}
	httpProxy := http.ProxyURL(&url.URL{Scheme: "http", Host: e.httpAddr})
	cases := []struct {
		name string
		tr   *http.Transport
		url  string
	}{
		{"direct", &http.Transport{}, e.url("127.0.0.1", e.originPort, path)},
		{"http", &http.Transport{Proxy: httpProxy}, e.url("web.jail.test", e.originPort, path)},
		{"connect", &http.Transport{Proxy: httpProxy, TLSClientConfig: e.tlsConfig()},
			"https://secure.jail.test:" + strconv.Itoa(e.tlsPort) + path},
		{"direct-tls", &http.Transport{TLSClientConfig: e.tlsConfig()}, "https://127.0.0.1:" + strconv.Itoa(e.tlsPort) + path},
		{"socks5", &http.Transport{DialContext: socks.(proxy.ContextDialer).DialContext}, e.url("web.jail.test", e.originPort, path)},
	}
	buf := make([]byte, copyBufSize)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			defer c.tr.CloseIdleConnections()
			cl := &http.Client{Transport: c.tr}
			b.SetBytes(benchSize)
			for b.Loop() {
				resp, err := cl.Get(c.url)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.CopyBuffer(io.Discard, resp.Body, buf)
				resp.Body.Close()
				if err != nil || n != benchSize {
					b.Fatalf("read %d bytes: %v", n, err)
				}
			}
		})
	}
}

// BenchmarkProxyLatency is one small request on a new connection, directly and through CONNECT
// (name check, DNS lookup, dial, tunnel); the difference is the latency the proxy adds.
func BenchmarkProxyLatency(b *testing.B) {
	e := newLoopbackEnv(b, nil)
	httpProxy := http.ProxyURL(&url.URL{Scheme: "http", Host: e.httpAddr})
	for _, c := range []struct {
		name string
		tr   *http.Transport
		url  string
	}{
		{"direct", &http.Transport{DisableKeepAlives: true}, e.url("127.0.0.1", e.originPort, "/hello")},
		{"http", &http.Transport{DisableKeepAlives: true, Proxy: httpProxy}, e.url("web.jail.test", e.originPort, "/hello")},
	} {
		b.Run(c.name, func(b *testing.B) {
			cl := &http.Client{Transport: c.tr}
			for b.Loop() {
				resp, err := cl.Get(c.url)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
