package netns

// Socket names a socket for OpenSockets: network "tcp", "tcp4", "tcp6" (a listener) or "udp",
// "udp4", "udp6" (a packet socket), and an ip:port address.
type Socket struct {
	Network string
	Address string
}
