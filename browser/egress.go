package browser

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/jail-sandbox/jail/netns"
)

// Egress fetches, in the supervisor, every request the pages of a browser make (docs/browser.md,
// "Egress"). The browser itself has no network at all; each request it would make is paused,
// handed to Fetch, and answered with what the supervisor fetched or failed with the reason.
// Fetch follows no redirect: a 3xx goes back to the page as it came, and the browser's request
// for the next hop is paused and checked again like the first.
type Egress struct {
	// Dial connects to host:port after every check of the network policy (netns.Proxy.Dial:
	// the allowlist, jail's own lookup, private and metadata addresses refused, audited). A
	// refusal is a *netns.DenyError. Required.
	Dial func(ctx context.Context, proto, host string, port int) (net.Conn, error)
	// Local connects to port on the loopback of the session's background processes (a dev
	// server an agent started with bash's run_in_background). Nil refuses localhost: nothing
	// on the host's own loopback is ever reachable.
	Local func(ctx context.Context, port int) (net.Conn, error)
	// MaxBody bounds a response body; a larger one fails the request. Zero means
	// DefaultMaxBody.
	MaxBody int64
	// Timeout bounds one request, from the dial to the last byte of the body. Zero means
	// DefaultTimeout.
	Timeout time.Duration
	// RootCAs are the certificates TLS trusts. Nil means the system's.
	RootCAs *x509.CertPool
	// Record receives every request's outcome, fetched or refused (the browser_network log
	// and the audit); nil records nothing. It is called from concurrent goroutines.
	Record func(Entry)

	once   sync.Once
	client *http.Client
}

// Defaults of an Egress.
const (
	// DefaultMaxBody holds a large bundle or image; with maxInFlight requests at once, it
	// bounds what one browser makes the supervisor hold (256 MiB).
	DefaultMaxBody = 16 << 20
	DefaultTimeout = 30 * time.Second
)

// Request is one request a page made, as the browser paused it.
type Request struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte
	// Kind is the browser's resource type (Document, Script, XHR, Image, ...).
	Kind string
}

// Response is what the page gets: the status, headers (every value kept apart, so each
// Set-Cookie stays one) and the whole body, decoded.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Refusal is a request that failed, why, and the network error the page sees.
type Refusal struct {
	Reason network.ErrorReason
	Why    string
}

func (r *Refusal) Error() string { return r.Why }

// Entry is one request's outcome, for the browser_network log and the audit.
type Entry struct {
	Time     time.Time     `json:"time"`
	Method   string        `json:"method"`
	URL      string        `json:"url"`
	Kind     string        `json:"kind,omitempty"`
	Status   int           `json:"status,omitempty"`
	Refused  string        `json:"refused,omitempty"`
	Bytes    int64         `json:"bytes"`
	Duration time.Duration `json:"duration_ns"`
}

func (e *Egress) init() {
	e.once.Do(func() {
		if e.MaxBody <= 0 {
			e.MaxBody = DefaultMaxBody
		}
		if e.Timeout <= 0 {
			e.Timeout = DefaultTimeout
		}
		tr := &http.Transport{
			Proxy: nil, // never a proxy from the environment: Dial is the only way out
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				host, p, err := net.SplitHostPort(addr)
				if err != nil {
					return nil, err
				}
				port, err := strconv.Atoi(p)
				if err != nil {
					return nil, err
				}
				if isLocal(host) {
					if e.Local == nil {
						return nil, &Refusal{network.ErrorReasonBlockedByClient, "localhost reaches only a server this session started with bash's run_in_background, and this browser has none"}
					}
					return e.Local(ctx, port)
				}
				return e.Dial(ctx, "browser", host, port)
			},
			// TLS is verified against RootCAs for the URL's own name; the browser's
			// certificate decisions play no part, since it never sees the connection.
			TLSClientConfig:       &tls.Config{RootCAs: e.RootCAs, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2:     true,
			MaxIdleConnsPerHost:   6,
			IdleConnTimeout:       90 * time.Second,
			ResponseHeaderTimeout: e.Timeout,
			TLSHandshakeTimeout:   10 * time.Second,
		}
		e.client = &http.Client{
			Transport: tr,
			// Each hop is the browser's own next request, paused and checked again.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			// Cookies are the browser's: they arrive in the request's headers, and
			// Set-Cookie goes back to it.
			Jar: nil,
		}
	})
}

// Close drops the kept connections.
func (e *Egress) Close() {
	e.init()
	e.client.CloseIdleConnections()
}

// isLocal reports whether host names this machine's loopback: localhost and its subdomains
// (which browsers resolve to loopback themselves) and loopback literals.
func isLocal(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil && a.Unmap().IsLoopback()
}

// hopHeaders are the request and response headers of one connection, never passed on.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// Fetch makes r under the policy and returns the response, or a *Refusal.
func (e *Egress) Fetch(ctx context.Context, r Request) (*Response, error) {
	e.init()
	start := time.Now()
	res, err := e.fetch(ctx, r)
	ent := Entry{Time: start, Method: r.Method, URL: r.URL, Kind: r.Kind, Duration: time.Since(start)}
	var ref *Refusal
	if err != nil {
		ref = refusal(err)
		ent.Refused = ref.Why
	} else {
		ent.Status, ent.Bytes = res.Status, int64(len(res.Body))
	}
	if e.Record != nil {
		e.Record(ent)
	}
	if ref != nil {
		return nil, ref
	}
	return res, nil
}

func (e *Egress) fetch(ctx context.Context, r Request) (*Response, error) {
	u, err := url.Parse(r.URL)
	if err != nil {
		return nil, &Refusal{network.ErrorReasonBlockedByClient, "not a URL jail can fetch: " + err.Error()}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		// WebSocket never reaches here (the browser has no network, so it fails on its
		// own); anything else paused that is not HTTP is refused, not relayed.
		return nil, &Refusal{network.ErrorReasonBlockedByClient, "scheme " + u.Scheme + ": jail relays only http and https"}
	}
	if u.User != nil {
		return nil, &Refusal{network.ErrorReasonBlockedByClient, "credentials in the URL are refused"}
	}
	ctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	var body io.Reader
	if len(r.Body) > 0 {
		body = strings.NewReader(string(r.Body))
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), body)
	if err != nil {
		return nil, &Refusal{network.ErrorReasonBlockedByClient, "request: " + err.Error()}
	}
	for k, vs := range r.Header {
		req.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	// The body the page gets is decoded here (Go asks for gzip and undoes it), so what the
	// browser is handed needs no Content-Encoding of its own.
	req.Header.Del("Accept-Encoding")
	req.Header.Del("Host")
	req.Host = ""
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, e.MaxBody+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > e.MaxBody {
		return nil, &Refusal{network.ErrorReasonBlockedByClient, fmt.Sprintf("response body over %d bytes: refused", e.MaxBody)}
	}
	h := resp.Header.Clone()
	for _, k := range append(hopHeaders, "Content-Length", "Content-Encoding") {
		h.Del(k)
	}
	return &Response{Status: resp.StatusCode, Header: h, Body: b}, nil
}

// refusal turns a fetch error into what the page sees and the reason jail gives.
func refusal(err error) *Refusal {
	var r *Refusal
	var deny *netns.DenyError
	var ue *url.Error
	switch {
	case errors.As(err, &r):
		return r
	case errors.As(err, &deny):
		return &Refusal{network.ErrorReasonBlockedByClient, "jail: network: " + deny.Host + ":" + strconv.Itoa(deny.Port) + ": " + deny.Reason}
	case errors.Is(err, context.DeadlineExceeded):
		return &Refusal{network.ErrorReasonTimedOut, "timed out"}
	case errors.As(err, &ue):
		var cert *tls.CertificateVerificationError
		if errors.As(err, &cert) {
			return &Refusal{network.ErrorReasonFailed, "TLS: " + cert.Error()}
		}
		return &Refusal{network.ErrorReasonFailed, ue.Err.Error()}
	}
	return &Refusal{network.ErrorReasonFailed, err.Error()}
}
