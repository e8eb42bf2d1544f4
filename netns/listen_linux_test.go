package netns

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Roles the test binary can be re-run in. The parent sets envRole; TestMain dispatches on it
// before any test runs.
const (
	envRole        = "JAIL_NETNS_TEST_ROLE"
	roleSandbox    = "sandbox"    // in a new user+network namespace: talk to the parent's listeners
	roleNone       = "none"       // in a new user+network namespace: mode none, lo only
	roleSandboxFD  = "sandbox-fd" // as roleSandbox, but opens the sockets and passes them out
	roleSupervisor = "supervisor" // in a new user namespace only: rerun the Listen test there
)

func TestMain(m *testing.M) {
	switch os.Getenv(envRole) {
	case roleSandbox:
		os.Exit(sandboxChild())
	case roleNone:
		os.Exit(noneChild())
	case roleSandboxFD:
		os.Exit(sandboxFDChild())
	}
	os.Exit(m.Run())
}

// sandboxChild reads "tcpport udpport" from stdin, then, inside its own network namespace,
// sends "ping" over TCP and UDP to 127.0.0.1 and prints the TCP answer.
func sandboxChild() int {
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		fmt.Println("child: read ports:", err)
		return 1
	}
	var tcpPort, udpPort int
	if _, err := fmt.Sscan(line, &tcpPort, &udpPort); err != nil {
		fmt.Println("child: parse ports:", err)
		return 1
	}
	return talk(tcpPort, udpPort)
}

// sandboxFDChild opens a TCP and a UDP socket in its own namespace, passes them to the parent
// over the Unix socket on fd 3, then talks to them.
func sandboxFDChild() int {
	files, err := OpenSockets([]Socket{{"tcp", "127.0.0.1:0"}, {"udp", "127.0.0.1:0"}})
	if err != nil {
		fmt.Println("child:", err)
		return 1
	}
	ln, err := net.FileListener(files[0])
	if err != nil {
		fmt.Println("child:", err)
		return 1
	}
	pc, err := net.FilePacketConn(files[1])
	if err != nil {
		fmt.Println("child:", err)
		return 1
	}
	tcpPort, udpPort := ln.Addr().(*net.TCPAddr).Port, pc.LocalAddr().(*net.UDPAddr).Port
	ln.Close()
	pc.Close()
	c, err := net.FileConn(os.NewFile(3, "sync"))
	if err != nil {
		fmt.Println("child: sync socket:", err)
		return 1
	}
	if err := SendFiles(c.(*net.UnixConn), files); err != nil {
		fmt.Println("child:", err)
		return 1
	}
	for _, f := range files {
		f.Close() // the parent holds the sockets now; the command must not inherit them
	}
	return talk(tcpPort, udpPort)
}

// talk sends "ping" over UDP and TCP to 127.0.0.1 and prints the TCP answer.
func talk(tcpPort, udpPort int) int {
	u, err := net.Dial("udp", "127.0.0.1:"+strconv.Itoa(udpPort))
	if err != nil {
		fmt.Println("child: udp:", err)
		return 1
	}
	u.Write([]byte("udp-ping"))
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(tcpPort), 5*time.Second)
	if err != nil {
		fmt.Println("child: dial:", err)
		return 1
	}
	defer c.Close()
	io.WriteString(c, "ping\n")
	reply, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		fmt.Println("child: read:", err)
		return 1
	}
	fmt.Print("child got: " + reply)
	return 0
}

// noneChild is mode none: loopback is down in a new namespace until LoopbackUp, then works.
func noneChild() int {
	if c, err := net.DialTimeout("tcp", "127.0.0.1:9", time.Second); err == nil || !errors.Is(err, syscall.ENETUNREACH) {
		fmt.Println("before LoopbackUp: want ENETUNREACH, got", err)
		if c != nil {
			c.Close()
		}
		return 1
	}
	if err := LoopbackUp(); err != nil {
		fmt.Println(err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		fmt.Println("after LoopbackUp:", err)
		return 1
	}
	c.Close()
	// Loopback is all this namespace has: anything else has no route.
	if c, err := net.DialTimeout("tcp", "192.0.2.1:80", time.Second); err == nil || !errors.Is(err, syscall.ENETUNREACH) {
		fmt.Println("route outside: want ENETUNREACH, got", err)
		if c != nil {
			c.Close()
		}
		return 1
	}
	fmt.Println("none ok")
	return 0
}

// checkUserNS skips when this kernel or user cannot create user namespaces, with the reason
// (modelled on Go's own checkUserNS in syscall tests).
func checkUserNS(t *testing.T) {
	t.Helper()
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		t.Skip("user namespaces disabled: max_user_namespaces=0")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" && os.Geteuid() != 0 {
		t.Skip("unprivileged user namespaces disabled: kernel.unprivileged_userns_clone=0")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && strings.TrimSpace(string(b)) == "1" && os.Geteuid() != 0 {
		t.Skip("unprivileged user namespaces restricted by AppArmor: kernel.apparmor_restrict_unprivileged_userns=1")
	}
}

// Capability numbers (linux/capability.h) kept across the child's execve.
const (
	capNetAdmin = 12
	capSysAdmin = 21
)

// childCmd re-runs the test binary in role inside new namespaces (flags), as the current user
// with identity uid/gid maps. A non-root uid loses every capability at execve, even in its own
// new user namespace, so the capabilities the role needs are passed as ambient capabilities;
// a root caller (uid 0 inside too) keeps them anyway.
func childCmd(role string, flags uintptr, caps []uintptr, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envRole+"="+role)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  flags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		AmbientCaps: caps,
	}
	return cmd
}

func startChild(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			t.Skipf("cannot create user and network namespaces: %v", err)
		}
		t.Fatal(err)
	}
}

func TestLoopbackUpModeNone(t *testing.T) {
	checkUserNS(t)
	cmd := childCmd(roleNone, syscall.CLONE_NEWUSER|syscall.CLONE_NEWNET, []uintptr{capNetAdmin})
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	startChild(t, cmd)
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "none ok") {
		t.Fatalf("child: %v: %s", err, out.String())
	}
}

func TestListenInChildNamespace(t *testing.T) {
	checkUserNS(t)
	cmd := childCmd(roleSandbox, syscall.CLONE_NEWUSER|syscall.CLONE_NEWNET, nil)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	startChild(t, cmd)
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()

	ln, err := Listen(cmd.Process.Pid, "tcp", "127.0.0.1:0")
	if errors.Is(err, ErrNeedPrivilege) && os.Getenv(envRole) != roleSupervisor {
		// An unprivileged supervisor in the initial user namespace cannot setns (the kernel
		// wants CAP_SYS_ADMIN in the caller's own user namespace too). Run this test again
		// as a supervisor that sits in a user namespace of its own, which is how an
		// unprivileged jail gets that capability.
		t.Logf("Listen as uid %d: %v; rerunning inside a user namespace", os.Getuid(), err)
		sup := childCmd(roleSupervisor, syscall.CLONE_NEWUSER, []uintptr{capSysAdmin}, "-test.run=^TestListenInChildNamespace$", "-test.v")
		var sout strings.Builder
		sup.Stdout, sup.Stderr = &sout, &sout
		startChild(t, sup)
		if err := sup.Wait(); err != nil || !strings.Contains(sout.String(), "--- PASS: TestListenInChildNamespace") {
			t.Fatalf("supervisor in a user namespace: %v\n%s", err, sout.String())
		}
		t.Log("passed as a supervisor in its own user namespace")
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pc, err := ListenPacket(cmd.Process.Pid, "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	tcpPort, udpPort := portOf(t, ln.Addr()), portOf(t, pc.LocalAddr())

	// Nothing in this (the supervisor's) namespace answers on that port: the socket lives in
	// the child's namespace only. A dial here is refused, or (if some host service happens
	// to own the same port number) never shows up on ln.
	c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
	if err == nil {
		c.Close()
		tl := ln.(*net.TCPListener)
		tl.SetDeadline(time.Now().Add(300 * time.Millisecond))
		if c, err := tl.Accept(); err == nil {
			c.Close()
			t.Fatal("listener reachable from the supervisor's namespace")
		}
		tl.SetDeadline(time.Time{})
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial from the supervisor's namespace: %v, want connection refused", err)
	}

	served := make(chan error, 1)
	go func() { // ends after one connection, or when ln is closed by the deferred Close
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil {
			_, err = io.WriteString(c, "pong to "+line)
		}
		served <- err
	}()
	fmt.Fprintf(stdin, "%d %d\n", tcpPort, udpPort)
	pc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	n, _, err := pc.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "udp-ping" {
		t.Fatalf("udp: %q %v (child: %s)", buf[:n], err, out.String())
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("child never connected: %s", out.String())
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "child got: pong to ping") {
		t.Fatalf("child: %v: %s", err, out.String())
	}
}

// TestPassSocketsFromChild is the path for an unprivileged supervisor: the child opens the
// sockets in its namespace and passes them out; the supervisor serves them.
func TestPassSocketsFromChild(t *testing.T) {
	checkUserNS(t)
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "sync"), os.NewFile(uintptr(fds[1]), "sync-child")
	defer mine.Close()
	cmd := childCmd(roleSandboxFD, syscall.CLONE_NEWUSER|syscall.CLONE_NEWNET, []uintptr{capNetAdmin})
	cmd.ExtraFiles = []*os.File{theirs}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	startChild(t, cmd)
	theirs.Close()
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	c, err := net.FileConn(mine)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	files, err := ReceiveFiles(c.(*net.UnixConn))
	if err != nil {
		t.Fatalf("%v (child: %s)", err, out.String())
	}
	if len(files) != 2 {
		t.Fatalf("got %d files", len(files))
	}
	ln, err := net.FileListener(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pc, err := net.FilePacketConn(files[1])
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	for _, f := range files {
		f.Close()
	}
	pc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	if n, _, err := pc.ReadFrom(buf); err != nil || string(buf[:n]) != "udp-ping" {
		t.Fatalf("udp: %q %v (child: %s)", buf[:n], err, out.String())
	}
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
	conn, err := ln.Accept()
	if err != nil {
		t.Fatalf("accept: %v (child: %s)", err, out.String())
	}
	line, _ := bufio.NewReader(conn).ReadString('\n')
	io.WriteString(conn, "pong to "+line)
	conn.Close()
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "child got: pong to ping") {
		t.Fatalf("child: %v: %s", err, out.String())
	}
	if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		c.Close()
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(300 * time.Millisecond))
		if c, err := ln.Accept(); err == nil {
			c.Close()
			t.Fatal("passed listener reachable from the supervisor's namespace")
		}
	}
}
