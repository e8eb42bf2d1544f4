//go:build !linux

package netns

import (
	"errors"
	"net"
)

// errNotLinux is returned off Linux: network namespaces are a Linux feature.
var errNotLinux = errors.New("netns: network namespaces need Linux")

// Listen is not available off Linux.
func Listen(pid int, network, address string) (net.Listener, error) { return nil, errNotLinux }

// ListenPacket is not available off Linux.
func ListenPacket(pid int, network, address string) (net.PacketConn, error) {
	return nil, errNotLinux
}

// LoopbackUp is not available off Linux.
func LoopbackUp() error { return errNotLinux }
