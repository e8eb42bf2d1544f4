package netns

import (
	"net"

	"golang.org/x/sys/unix"
)

// tcpActivity returns a number that grows whenever c receives data or has data acknowledged
// (TCP_INFO), or 0 if c is not a TCP socket.
func tcpActivity(c net.Conn) uint64 {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return 0
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return 0
	}
	var a uint64
	rc.Control(func(fd uintptr) {
		if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			a = info.Bytes_received + info.Bytes_acked
		}
	})
	return a
}
