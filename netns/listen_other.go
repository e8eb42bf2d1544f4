//go:build !linux

package netns

import (
	"net"
	"os"
)

// Listen is not available off Linux.
func Listen(pid int, network, address string) (net.Listener, error) { return nil, ErrNotLinux }

// ListenPacket is not available off Linux.
func ListenPacket(pid int, network, address string) (net.PacketConn, error) {
	return nil, ErrNotLinux
}

// LoopbackUp is not available off Linux.
func LoopbackUp() error { return ErrNotLinux }

// OpenSockets is not available off Linux.
func OpenSockets(specs []Socket) ([]*os.File, error) { return nil, ErrNotLinux }

// SendFiles is not available off Linux.
func SendFiles(uc *net.UnixConn, files []*os.File) error { return ErrNotLinux }

// ReceiveFiles is not available off Linux.
func ReceiveFiles(uc *net.UnixConn) ([]*os.File, error) { return nil, ErrNotLinux }
