package netns

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// maxHeaderBytes bounds a request's header block; a proxy that reads headers without a bound
// can be made to hold unbounded memory.
const maxHeaderBytes = 64 << 10

// DenyReasonHeader carries the reason of a refusal on the HTTP proxy's 403 answers.
const DenyReasonHeader = "X-Jail-Deny-Reason"

// ServeHTTP serves an HTTP forward proxy (absolute-form http:// requests and CONNECT tunnels)
// on ln until ctx is done. It takes ownership of ln, and returns only after every connection it
// accepted has been closed and its goroutine has ended.
func (p *Proxy) ServeHTTP(ctx context.Context, ln net.Listener) error {
	p.addSelf(ln.Addr())
	defer p.transport.CloseIdleConnections()
	return p.serve(ctx, ln, "http", p.handleHTTP)
}

// handleHTTP serves the requests of one client connection.
func (p *Proxy) handleHTTP(ctx context.Context, c net.Conn) {
	br := bufio.NewReaderSize(c, 32<<10)
	for ctx.Err() == nil {
		// Between requests the connection may sit idle only for IdleTimeout.
		c.SetReadDeadline(time.Now().Add(p.cfg.IdleTimeout))
		hdr, err := readHeaderBlock(br)
		if err != nil {
			if errors.Is(err, errHeaderTooLarge) {
				writeHTTPError(c, http.StatusRequestHeaderFieldsTooLarge, "request header too large")
			}
			return
		}
		c.SetReadDeadline(time.Time{})
		req, raw, err := parseRequest(hdr)
		if err != nil {
			writeHTTPError(c, http.StatusBadRequest, err.Error())
			return
		}
		if req.Method == http.MethodConnect {
			p.handleConnect(ctx, c, br, req, raw)
			return
		}
		if !p.forward(ctx, c, br, req, raw) {
			return
		}
	}
}

// readHeaderBlock reads the request line and headers up to and including the empty line,
// skipping blank lines before the request line as RFC 9112 section 2.2 allows.
func readHeaderBlock(br *bufio.Reader) ([]byte, error) {
	var buf bytes.Buffer
	for {
		line, err := br.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
		if buf.Len() == 0 && (string(line) == "\r\n" || string(line) == "\n") {
			continue
		}
		buf.Write(line)
		if buf.Len() > maxHeaderBytes {
			return nil, errHeaderTooLarge
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if string(line) == "\r\n" || string(line) == "\n" {
			return buf.Bytes(), nil
		}
	}
}

// parseRequest parses a header block. It returns the raw header fields too, because
// http.ReadRequest drops the Host header, which the proxy must compare with the target.
func parseRequest(hdr []byte) (*http.Request, textproto.MIMEHeader, error) {
	if bytes.IndexByte(hdr, 0) >= 0 {
		return nil, nil, errors.New("NUL byte in request header")
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(hdr)))
	if _, err := tp.ReadLine(); err != nil {
		return nil, nil, errors.New("malformed request line")
	}
	raw, err := tp.ReadMIMEHeader()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, errors.New("malformed request header")
	}
	if len(raw.Values("Host")) > 1 {
		return nil, nil, errors.New("more than one Host header")
	}
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(hdr)))
	if err != nil {
		return nil, nil, errors.New("malformed request")
	}
	// Request smuggling: a message framed two ways is read differently by different parsers.
	if raw.Get("Transfer-Encoding") != "" && raw.Get("Content-Length") != "" {
		return nil, nil, errors.New("both Transfer-Encoding and Content-Length")
	}
	if te := raw.Values("Transfer-Encoding"); len(te) > 0 && (len(te) > 1 || !strings.EqualFold(te[0], "chunked")) {
		return nil, nil, errors.New("unsupported Transfer-Encoding")
	}
	return req, raw, nil
}

// hostMatches reports whether a Host header value names the same host and port as the target;
// a Host without a port means the scheme's default port.
func hostMatches(hostHeader, targetHost string, targetPort, defaultPort int) bool {
	h, port := hostHeader, defaultPort
	if hh, ps, err := net.SplitHostPort(hostHeader); err == nil {
		pp, err := parsePort(ps)
		if err != nil {
			return false
		}
		h, port = hh, pp
	}
	nh, err := normalizeHost(h)
	if err != nil {
		return false
	}
	nt, err := normalizeHost(targetHost)
	if err != nil {
		return false
	}
	return nh == nt && port == targetPort
}

// handleConnect opens a tunnel. Anything the client sent after the CONNECT header (a TLS
// ClientHello pipelined by an eager client) is still in br and is sent on first.
func (p *Proxy) handleConnect(ctx context.Context, c net.Conn, br *bufio.Reader, req *http.Request, raw textproto.MIMEHeader) {
	host, port, err := splitHostPort(req.RequestURI)
	if err != nil {
		p.audit(Event{Proto: "connect", Host: strconv.QuoteToASCII(req.RequestURI), Decision: Denied, Reason: "CONNECT target is not host:port"})
		writeHTTPError(c, http.StatusBadRequest, "CONNECT target must be host:port")
		return
	}
	if hh := raw.Get("Host"); hh != "" && !hostMatches(hh, host, port, port) {
		p.deny("connect", host, port, netip.AddrPort{}, CauseProtocol, "Host header disagrees with CONNECT target")
		writeHTTPError(c, http.StatusForbidden, "Host header disagrees with CONNECT target")
		return
	}
	up, err := p.connect(ctx, "connect", host, port)
	if err != nil {
		writeConnectError(c, err)
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	p.pipe(ctx, c, up)
}

func writeConnectError(c net.Conn, err error) {
	var de *DenyError
	if errors.As(err, &de) {
		writeHTTPError(c, http.StatusForbidden, de.Reason)
		return
	}
	writeHTTPError(c, http.StatusBadGateway, "connect failed: "+errReason(errors.Unwrap(err)))
}

// stripHopByHop removes the headers that describe one connection, not the message (RFC 9110
// section 7.6.1), including any the Connection header names; a proxy must not pass them on.
func stripHopByHop(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range []string{
		"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade",
	} {
		h.Del(name)
	}
}

// forward relays one plain-HTTP request and its response. It reports whether the client
// connection may carry another request.
func (p *Proxy) forward(ctx context.Context, c net.Conn, br *bufio.Reader, req *http.Request, raw textproto.MIMEHeader) bool {
	u := req.URL
	if u == nil || u.Host == "" || !u.IsAbs() {
		writeHTTPError(c, http.StatusBadRequest, "proxy requests need an absolute http:// URL")
		return false
	}
	if u.Scheme != "http" {
		writeHTTPError(c, http.StatusBadRequest, "only http:// is forwarded; use CONNECT for "+strconv.Quote(u.Scheme))
		return false
	}
	if u.User != nil {
		writeHTTPError(c, http.StatusBadRequest, "user information in proxy URLs is refused")
		return false
	}
	host, port := u.Hostname(), 80
	if ps := u.Port(); ps != "" {
		pp, err := parsePort(ps)
		if err != nil {
			writeHTTPError(c, http.StatusBadRequest, "bad port in URL")
			return false
		}
		port = pp
	}
	if hh := raw.Get("Host"); hh != "" && !hostMatches(hh, host, port, 80) {
		p.deny("http", host, port, netip.AddrPort{}, CauseProtocol, "Host header disagrees with request URL")
		writeHTTPError(c, http.StatusForbidden, "Host header disagrees with request URL")
		return false
	}
	// Refuse by name before touching the body, so a denied upload is never read.
	if _, err := p.authorize(ctx, "http", host, port); err != nil {
		writeConnectError(c, err)
		return false
	}

	var body io.Reader = http.NoBody
	switch {
	case len(req.TransferEncoding) > 0:
		body = httputil.NewChunkedReader(br)
	case req.ContentLength > 0:
		body = io.LimitReader(br, req.ContentLength)
	}
	if strings.EqualFold(raw.Get("Expect"), "100-continue") {
		io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
	}
	out := &http.Request{
		Method:        req.Method,
		URL:           u,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        req.Header.Clone(),
		Body:          io.NopCloser(body),
		ContentLength: req.ContentLength,
		Host:          u.Host,
	}
	if len(req.TransferEncoding) > 0 {
		out.ContentLength = -1
	}
	if out.ContentLength == 0 {
		out.Body = http.NoBody
	}
	stripHopByHop(out.Header)
	out.Header.Del("Expect")
	out = out.WithContext(ctx)

	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		writeConnectError(c, err)
		return false
	}
	defer resp.Body.Close()
	keep := !req.Close && !resp.Close && req.ProtoAtLeast(1, 1)
	stripHopByHop(resp.Header)
	resp.Close = !keep
	resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.1", 1, 1
	// Response.Write streams the body through its own framing (chunked when the length is
	// unknown), so nothing is buffered whole.
	bw := bufio.NewWriterSize(c, 32<<10)
	if err := resp.Write(bw); err != nil {
		return false
	}
	if err := bw.Flush(); err != nil {
		return false
	}
	// A body the client announced but the origin did not read must not be taken for the next
	// request.
	if _, err := io.Copy(io.Discard, body); err != nil {
		return false
	}
	return keep
}

// writeHTTPError answers with code and reason and asks the client to close.
func writeHTTPError(w io.Writer, code int, reason string) {
	reason = sanitizeReason(reason)
	msg := "jail: " + reason + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\n%s: %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), DenyReasonHeader, reason, len(msg), msg)
}

// sanitizeReason keeps a reason to printable ASCII so it cannot split a header.
func sanitizeReason(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < ' ' || c >= 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}
