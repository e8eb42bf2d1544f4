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
			errc <- fmt.Errorf("setns back to the supervisor namespace: %w", err)
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
