//go:build !linux

package netns

import (
	"errors"
	"net"
	"os"
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

// OpenSockets is not available off Linux.
func OpenSockets(specs []Socket) ([]*os.File, error) { return nil, errNotLinux }

// SendFiles is not available off Linux.
func SendFiles(uc *net.UnixConn, files []*os.File) error { return errNotLinux }

// ReceiveFiles is not available off Linux.
func ReceiveFiles(uc *net.UnixConn) ([]*os.File, error) { return nil, errNotLinux }
