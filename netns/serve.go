package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// serve accepts on ln until ctx is done, handing each connection to handle in its own
// goroutine. It owns ln and closes it. It returns only after every handler has returned; each
// handler's connection is closed when ctx is done, which is what bounds their lifetime.
func (p *Proxy) serve(ctx context.Context, ln net.Listener, proto string, handle func(context.Context, net.Conn)) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer ln.Close()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporaryAccept(err) {
				// Out of fds or similar: back off rather than spin, and keep serving.
				p.log.Warn("netns: accept", "proto", proto, "err", err)
				select {
				case <-time.After(50 * time.Millisecond):
					continue
				case <-ctx.Done():
					return nil
				}
			}
			return fmt.Errorf("netns: %s: accept: %w", proto, err)
		}
		select {
		case p.slots <- struct{}{}:
		default:
			p.audit(Event{Proto: proto, Decision: Denied, Reason: "connection limit reached"})
			c.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-p.slots }()
			defer c.Close()
			stopc := context.AfterFunc(ctx, func() { c.Close() })
			defer stopc()
			handle(ctx, c)
		}()
	}
}

// isTemporaryAccept reports accept errors that pass once load drops.
func isTemporaryAccept(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) ||
		errors.Is(err, syscall.ECONNABORTED)
}

// pipe copies between the sandbox side and the upstream side until both directions end, the
// connection is idle for IdleTimeout, or ctx is done. It returns when both copy goroutines
// have finished; the caller closes both connections. Nothing in here closes up itself (only
// its socket, closeRaw): up's Close reports the close event, and the byte counts are final
// only once both copies have ended, so the caller's Close after pipe is the one that reports.
func (p *Proxy) pipe(ctx context.Context, client net.Conn, up *trackedConn) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var last atomic.Int64 // unix nanoseconds of the last byte moved in either direction
	last.Store(time.Now().UnixNano())

	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		p.copyHalf(client, up, up, &up.in, &last) // upstream -> sandbox
	}()
	go func() {
		defer wg.Done()
		p.copyHalf(up, client, up, &up.out, &last) // sandbox -> upstream
	}()

	// The watchdog lives until both copies end: done closes when wg finishes.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	idle := p.cfg.IdleTimeout
	tick := time.NewTicker(min(idle/4+time.Millisecond, time.Second))
	var seen uint64
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			client.Close()
			closeRaw(up)
			<-done
			return
		case now := <-tick.C:
			// Spliced bytes never pass through this process, so the kernel's per-socket
			// counters are what tells a slow transfer from an idle one.
			if a := tcpActivity(client) + tcpActivity(up.Conn); a != seen {
				seen = a
				last.Store(now.UnixNano())
			}
			if now.Sub(time.Unix(0, last.Load())) > idle {
				up.setReason("idle timeout")
				client.Close()
				closeRaw(up)
				<-done
				return
			}
		}
	}
}

// spliceChunk is how much one splice round moves before the byte limit and activity are
// brought up to date.
const spliceChunk = 1 << 20

// copyHalf copies src to dst, adding the bytes to count, then passes EOF on with a half-close
// so request/response protocols finish cleanly. Between two TCP sockets it lets the kernel
// splice (io.CopyN into a *net.TCPConn), which keeps the bytes out of this process; otherwise
// it copies through a large buffer.
func (p *Proxy) copyHalf(dst, src net.Conn, up *trackedConn, count *atomic.Int64, last *atomic.Int64) {
	dtcp, dok := unwrapTCP(dst)
	stcp, sok := unwrapTCP(src)
	if !dok || !sok {
		p.copyBuffered(dst, src, last)
		return
	}
	for {
		chunk := int64(spliceChunk)
		if up.limit > 0 {
			rem := up.limit - up.in.Load() - up.out.Load()
			if rem <= 0 {
				up.setReason("byte limit reached")
				closeRaw(dst)
				closeRaw(src)
				return
			}
			chunk = min(chunk, rem)
		}
		n, err := io.CopyN(dtcp, stcp, chunk)
		count.Add(n)
		if n > 0 {
			last.Store(time.Now().UnixNano())
		}
		if err == io.EOF {
			dtcp.CloseWrite()
			return
		}
		if err != nil {
			closeRaw(dst)
			closeRaw(src)
			return
		}
	}
}

// closeRaw closes c's socket. For the upstream side that is the socket under the trackedConn,
// so the close event waits for the caller's Close, after both copies have counted.
func closeRaw(c net.Conn) {
	if t, ok := c.(*trackedConn); ok {
		t.Conn.Close()
		return
	}
	c.Close()
}

func unwrapTCP(c net.Conn) (*net.TCPConn, bool) {
	if t, ok := c.(*trackedConn); ok {
		c = t.Conn
	}
	tc, ok := c.(*net.TCPConn)
	return tc, ok
}

// copyBuffered is copyHalf for connections that cannot splice; dst or src counts the bytes
// (trackedConn).
func (p *Proxy) copyBuffered(dst, src net.Conn, last *atomic.Int64) {
	bp := p.bufs.Get().(*[]byte)
	defer p.bufs.Put(bp)
	buf := *bp
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			if _, werr := dst.Write(buf[:n]); werr != nil {
				closeRaw(src)
				return
			}
		}
		if rerr != nil {
			if rerr == io.EOF {
				if cw, ok := dst.(interface{ CloseWrite() error }); ok {
					cw.CloseWrite()
					return
				}
			}
			closeRaw(dst)
			closeRaw(src)
			return
		}
	}
}
