package netns

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// SOCKS5 wire values (RFC 1928).
const (
	socksVersion      = 5
	socksNoAuth       = 0x00
	socksNoAcceptable = 0xff

	socksCmdConnect = 1
	socksCmdBind    = 2
	socksCmdUDP     = 3

	socksAtypIPv4   = 1
	socksAtypDomain = 3
	socksAtypIPv6   = 4

	socksSucceeded        = 0x00
	socksGeneralFailure   = 0x01
	socksNotAllowed       = 0x02 // "connection not allowed by ruleset"
	socksHostUnreachable  = 0x04
	socksConnRefused      = 0x05
	socksTTLExpired       = 0x06
	socksCmdNotSupported  = 0x07
	socksAtypNotSupported = 0x08
)

// ServeSOCKS5 serves a SOCKS5 proxy (no authentication, CONNECT only) on ln until ctx is done.
// BIND and UDP ASSOCIATE are answered with "command not supported": the sandbox gets no UDP
// path out and nothing may listen on its behalf. It takes ownership of ln and returns only
// after every connection it accepted has ended.
func (p *Proxy) ServeSOCKS5(ctx context.Context, ln net.Listener) error {
	p.addSelf(ln.Addr())
	return p.serve(ctx, ln, "socks5", p.handleSOCKS5)
}

func (p *Proxy) handleSOCKS5(ctx context.Context, c net.Conn) {
	// The handshake must finish within IdleTimeout; the tunnel has its own idle watchdog.
	c.SetDeadline(time.Now().Add(p.cfg.IdleTimeout))
	br := bufio.NewReaderSize(c, 512)
	var hello [2]byte
	if _, err := io.ReadFull(br, hello[:]); err != nil || hello[0] != socksVersion {
		return
	}
	methods := make([]byte, hello[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return
	}
	noAuth := false
	for _, m := range methods {
		noAuth = noAuth || m == socksNoAuth
	}
	if !noAuth {
		c.Write([]byte{socksVersion, socksNoAcceptable})
		return
	}
	if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return
	}

	var head [4]byte // VER CMD RSV ATYP
	if _, err := io.ReadFull(br, head[:]); err != nil || head[0] != socksVersion {
		return
	}
	var host string
	switch head[3] {
	case socksAtypIPv4:
		var a [4]byte
		if _, err := io.ReadFull(br, a[:]); err != nil {
			return
		}
		host = netip.AddrFrom4(a).String()
	case socksAtypIPv6:
		var a [16]byte
		if _, err := io.ReadFull(br, a[:]); err != nil {
			return
		}
		host = netip.AddrFrom16(a).String()
	case socksAtypDomain:
		n, err := br.ReadByte()
		if err != nil {
			return
		}
		name := make([]byte, n)
		if _, err := io.ReadFull(br, name); err != nil {
			return
		}
		host = string(name)
	default:
		socksReply(c, socksAtypNotSupported)
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return
	}
	port := int(binary.BigEndian.Uint16(pb[:]))

	switch head[1] {
	case socksCmdConnect:
	case socksCmdBind, socksCmdUDP:
		p.deny("socks5", host, port, netip.AddrPort{}, CauseProtocol, "SOCKS5 command "+strconv.Itoa(int(head[1]))+" not supported")
		socksReply(c, socksCmdNotSupported)
		return
	default:
		socksReply(c, socksCmdNotSupported)
		return
	}

	up, err := p.connect(ctx, "socks5", host, port)
	if err != nil {
		socksReply(c, socksErrorCode(err))
		return
	}
	defer up.Close()
	if err := socksReply(c, socksSucceeded); err != nil {
		return
	}
	c.SetDeadline(time.Time{})
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	p.pipe(ctx, c, up)
}

// socksReply answers a request. The bound address is always 0.0.0.0:0: the sandbox has no use
// for the supervisor's address and should not learn it.
func socksReply(c net.Conn, code byte) error {
	_, err := c.Write([]byte{socksVersion, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}

func socksErrorCode(err error) byte {
	var de *DenyError
	var ne net.Error
	switch {
	case errors.As(err, &de):
		return socksNotAllowed
	case errors.Is(err, syscall.ECONNREFUSED):
		return socksConnRefused
	case errors.As(err, &ne) && ne.Timeout():
		return socksTTLExpired
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return socksHostUnreachable
	}
	return socksGeneralFailure
}
