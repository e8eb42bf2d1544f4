//go:build linux

package tools

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// The loopback relay: how the supervisor reaches a server a background process runs on its
// sandbox's loopback (the browser's http://localhost:PORT, docs/background.md), with no
// port of the host's and no privilege. A held bash sandbox's fd 3 is one end of a unix
// stream socket pair (StatePair): a foreground call writes its state there at exit, as it
// would into a pipe; a background call hands it to a relay (this binary's RelayCommand)
// started beside its command, and closes it for the command. Asked for a port, the relay
// connects to it inside the sandbox's network namespace and sends the connected socket back
// (SCM_RIGHTS); the supervisor checks that what it got is a TCP socket connected to that
// loopback port before it uses it.
//
//	supervisor ── [port: 2 bytes] ──▶ relay (in the sandbox)
//	           ◀── [status: 1 byte, with the fd when 0][length: 2 bytes][reason] ──

// RelayCommand is the hidden subcommand main dispatches to RelayMain.
const RelayCommand = "__loopback-relay"

// relayFD is the descriptor the relay's end of the pair has in a bash sandbox.
const relayFD = 3

// relayTimeout bounds one exchange with a relay (it may be stopped or gone).
const relayTimeout = 3 * time.Second

// StatePair makes a held bash sandbox's fd 3: a unix stream socket pair, the supervisor's end
// (non-blocking, for deadlines) and the sandbox's.
func StatePair() (supervisor, sandbox *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("the bash sandbox's state socket: %w", err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("the bash sandbox's state socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "bash-state"), os.NewFile(uintptr(fds[1]), "bash-state-sandbox"), nil
}

// reply is the relay's answer: status 0 with the socket, or 1 with the reason.
func reply(fd int, reason string) {
	if len(reason) > 1000 {
		reason = reason[:1000]
	}
	msg := []byte{1, byte(len(reason) >> 8), byte(len(reason))}
	msg = append(msg, reason...)
	var oob []byte
	if fd >= 0 {
		msg, oob = []byte{0, 0, 0}, unix.UnixRights(fd)
	}
	for len(msg) > 0 {
		n, err := unix.SendmsgN(relayFD, msg, oob, nil, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		msg, oob = msg[n:], nil
	}
}

// RelayMain serves connection requests on fd 4 until the supervisor's end closes. It runs
// inside a background process's sandbox, under all of its confinement.
func RelayMain() int {
	buf := make([]byte, 2)
	for {
		got := 0
		for got < 2 {
			n, err := unix.Read(relayFD, buf[got:])
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n == 0 {
				return 0
			}
			got += n
		}
		fd, err := relayConnect(int(binary.BigEndian.Uint16(buf)))
		if err != nil {
			reply(-1, err.Error())
			continue
		}
		reply(fd, "")
		unix.Close(fd)
	}
}

// relayConnect connects to port on the sandbox's loopback, IPv4 first, and returns the
// descriptor.
func relayConnect(port int) (int, error) {
	var last error
	for _, a := range []string{"127.0.0.1", "::1"} {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(a, strconv.Itoa(port)), 2*time.Second)
		if err != nil {
			last = err
			continue
		}
		f, err := c.(*net.TCPConn).File()
		c.Close()
		if err != nil {
			return -1, err
		}
		fd, err := unix.Dup(int(f.Fd()))
		f.Close()
		return fd, err
	}
	return -1, last
}

// relayDial asks the relay on sock (the supervisor's end) for a connection to port and
// returns it once checked: a TCP socket whose peer is loopback:port.
func relayDial(ctx context.Context, sock *os.File, port int) (net.Conn, error) {
	raw, err := sock.SyscallConn()
	if err != nil {
		return nil, err
	}
	dl := time.Now().Add(relayTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	sock.SetDeadline(dl)
	defer sock.SetDeadline(time.Time{})
	req := binary.BigEndian.AppendUint16(nil, uint16(port))
	if _, err := sock.Write(req); err != nil {
		return nil, fmt.Errorf("ask the relay: %w", err)
	}
	// The header's first byte carries the socket; then the reason's length and the reason.
	hdr := make([]byte, 3)
	oob := make([]byte, unix.CmsgSpace(4*4))
	var fds []int
	got := 0
	for got < len(hdr) {
		var n, oobn int
		var rerr error
		if err := raw.Read(func(fd uintptr) bool {
			n, oobn, _, _, rerr = unix.Recvmsg(int(fd), hdr[got:], oob, unix.MSG_CMSG_CLOEXEC)
			return !errors.Is(rerr, unix.EAGAIN)
		}); err != nil {
			rerr = err
		}
		if oobn > 0 {
			if cms, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, cm := range cms {
					if got, err := unix.ParseUnixRights(&cm); err == nil {
						fds = append(fds, got...)
					}
				}
			}
		}
		if rerr != nil || n == 0 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			if rerr == nil {
				rerr = errors.New("the relay is gone")
			}
			return nil, fmt.Errorf("the relay's answer: %w", rerr)
		}
		got += n
	}
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	if hdr[0] != 0 || len(fds) != 1 {
		closeAll()
		if hdr[0] == 1 {
			reason := make([]byte, int(hdr[1])<<8|int(hdr[2]))
			if _, err := io.ReadFull(sock, reason); err != nil {
				return nil, fmt.Errorf("the relay's answer: %w", err)
			}
			return nil, errors.New(string(reason))
		}
		return nil, errors.New("the relay's answer carried no socket")
	}
	fd := fds[0]
	if err := checkLoopback(fd, port); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "background-loopback")
	defer f.Close()
	return net.FileConn(f)
}

// checkLoopback refuses a descriptor that is not a TCP stream socket connected to port on a
// loopback address: the sandbox chose what it sent.
func checkLoopback(fd, port int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return errors.New("the relay sent something that is not a socket")
	}
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil || typ != unix.SOCK_STREAM {
		return errors.New("the relay sent a socket that is not a stream")
	}
	sa, err := unix.Getpeername(fd)
	if err != nil {
		return fmt.Errorf("the relay's socket has no peer: %w", err)
	}
	var ap netip.AddrPort
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		ap = netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		ap = netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port))
	default:
		return errors.New("the relay sent a socket that is not TCP over IP")
	}
	if !ap.Addr().Unmap().IsLoopback() || int(ap.Port()) != port {
		return fmt.Errorf("the relay's socket is connected to %s, not to loopback port %d", ap, port)
	}
	return nil
}
