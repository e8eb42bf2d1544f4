package netns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// Listen opens a listening socket inside the network namespace of process pid. network is
// "tcp", "tcp4" or "tcp6" and address an IP literal with port ("127.0.0.1:0"): a name would
// need a lookup, and a lookup may run on another thread in the wrong namespace. Loopback in
// that namespace is brought up first if it is down.
//
// The caller needs CAP_SYS_ADMIN over the target namespace (the owner of the sandbox's user
// namespace has it) and in its own user namespace; without the second the error wraps
// ErrNeedPrivilege.
func Listen(pid int, network, address string) (net.Listener, error) {
	if _, err := netip.ParseAddrPort(address); err != nil {
		return nil, fmt.Errorf("netns: listen %s: address must be ip:port: %w", address, err)
	}
	var ln net.Listener
	err := inNamespace(pid, func() error {
		var err error
		ln, err = net.Listen(network, address)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("netns: listen %s %s in pid %d: %w", network, address, pid, err)
	}
	return ln, nil
}

// ListenPacket is Listen for "udp", "udp4" and "udp6", for the DNS stub.
func ListenPacket(pid int, network, address string) (net.PacketConn, error) {
	if _, err := netip.ParseAddrPort(address); err != nil {
		return nil, fmt.Errorf("netns: listen %s: address must be ip:port: %w", address, err)
	}
	var pc net.PacketConn
	err := inNamespace(pid, func() error {
		var err error
		pc, err = net.ListenPacket(network, address)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("netns: listen %s %s in pid %d: %w", network, address, pid, err)
	}
	return pc, nil
}

// inNamespace runs fn on an OS thread that has joined pid's network namespace. A socket belongs
// to the namespace it was created in for its whole life, so the sockets fn makes stay in the
// sandbox after the thread goes back.
//
// The work runs in its own goroutine so the caller's thread is never touched; that goroutine
// does a few syscalls and ends before inNamespace returns. Since Go 1.10 the runtime never
// clones new threads from a locked thread, so the namespace cannot leak into other threads.
func inNamespace(pid int, fn func() error) error {
	target, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		return fmt.Errorf("open network namespace: %w", err)
	}
	defer target.Close()

	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// thread-self, not self: the namespace to come back to is this thread's.
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open own network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			if errors.Is(err, unix.EPERM) {
				err = fmt.Errorf("%w: %w", ErrNeedPrivilege, err)
			}
			errc <- fmt.Errorf("setns: %w", err)
			return
		}
		ferr := loopbackUp()
		if ferr == nil {
			ferr = fn()
		}
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Stay locked on purpose: a goroutine that exits while locked takes its thread
			// down with it. Unlocking would hand a thread still inside the sandbox's
			// namespace back to the scheduler, and any later socket the supervisor opens on
			// it (a dial to the real Internet, the audit sink) would silently be made inside
			// the sandbox instead.
			//
			// This is expected, not a fault, for a supervisor that runs in a user namespace
			// of its own but in the host's network namespace: it may enter the sandbox's
			// namespace (owned by its user namespace) but not return to the host's (owned
			// by the initial one). The sockets fn made are fine, so they are returned; the
			// cost is one OS thread per call.
			errc <- ferr
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// LoopbackUp brings the loopback interface of the calling thread's network namespace up. A
// new network namespace starts with lo down, so even 127.0.0.1 is unreachable until this runs.
// The sandbox child calls it for mode none (it has CAP_NET_ADMIN in its own namespaces before
// it drops capabilities); Listen calls it for the other modes. Call it from a thread locked
// with runtime.LockOSThread if the process has threads in other network namespaces.
func LoopbackUp() error {
	if err := loopbackUp(); err != nil {
		return fmt.Errorf("netns: bring lo up: %w", err)
	}
	return nil
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS: %w", err)
	}
	flags := ifr.Uint16()
	if flags&unix.IFF_UP != 0 {
		return nil
	}
	ifr.SetUint16(flags | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCSIFFLAGS: %w", err)
	}
	return nil
}

// OpenSockets opens each socket in the calling thread's network namespace, after bringing lo
// up, and returns their files in order. It is the child's half of the path for a supervisor
// that may not setns (unprivileged, in the initial user namespace): the sandbox's first
// process calls it before it drops its capabilities and execs the command, and hands the files
// to the supervisor with SendFiles. The supervisor turns them back into sockets with
// net.FileListener and net.FilePacketConn.
func OpenSockets(specs []Socket) ([]*os.File, error) {
	if err := LoopbackUp(); err != nil {
		return nil, err
	}
	var files []*os.File
	fail := func(err error) ([]*os.File, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	for _, s := range specs {
		if _, err := netip.ParseAddrPort(s.Address); err != nil {
			return fail(fmt.Errorf("netns: open %s: address must be ip:port: %w", s.Address, err))
		}
		var f *os.File
		var err error
		switch s.Network {
		case "tcp", "tcp4", "tcp6":
			var ln net.Listener
			if ln, err = net.Listen(s.Network, s.Address); err == nil {
				f, err = ln.(*net.TCPListener).File()
				ln.Close() // File dup'ed the descriptor
			}
		case "udp", "udp4", "udp6":
			var pc net.PacketConn
			if pc, err = net.ListenPacket(s.Network, s.Address); err == nil {
				f, err = pc.(*net.UDPConn).File()
				pc.Close()
			}
		default:
			err = fmt.Errorf("unsupported network %q", s.Network)
		}
		if err != nil {
			return fail(fmt.Errorf("netns: open %s %s: %w", s.Network, s.Address, err))
		}
		files = append(files, f)
	}
	return files, nil
}

// SendFiles passes files over a Unix socket in one SCM_RIGHTS message.
func SendFiles(uc *net.UnixConn, files []*os.File) error {
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	n, oobn, err := uc.WriteMsgUnix([]byte{byte(len(files))}, unix.UnixRights(fds...), nil)
	if err == nil && (n != 1 || oobn == 0) {
		err = errors.New("short write")
	}
	if err != nil {
		return fmt.Errorf("netns: send %d files: %w", len(files), err)
	}
	return nil
}

// ReceiveFiles receives the files one SendFiles call sent.
func ReceiveFiles(uc *net.UnixConn) ([]*os.File, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(255*4))
	n, oobn, flags, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("netns: receive files: %w", err)
	}
	if n != 1 || flags&unix.MSG_CTRUNC != 0 {
		return nil, errors.New("netns: receive files: truncated message")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, fmt.Errorf("netns: receive files: %w", err)
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			return nil, fmt.Errorf("netns: receive files: %w", err)
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "netns-socket"))
		}
	}
	if len(files) != int(buf[0]) {
		for _, f := range files {
			f.Close()
		}
		return nil, fmt.Errorf("netns: receive files: got %d, sender said %d", len(files), buf[0])
	}
	return files, nil
}
