//go:build linux

package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
)

// pyErrno runs a python3 snippet that performs one syscall attempt and
// prints "ok" or the errno name; inside the sandbox it must fail.
const pyPrelude = `import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def sc(*a):
    r = libc.syscall(*a)
    return "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()]
`

func TestFilesOutsideWorkspace(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		canary, content := r.canary(t)
		// A symlink planted in the workspace that points at the canary.
		os.Symlink(canary, filepath.Join(ws, "link"))
		os.Lchown(filepath.Join(ws, "link"), r.uid, r.gid)
		rel, _ := filepath.Rel(ws, canary)
		script := fmt.Sprintf(`
cat %[1]s && echo READ-ABS
cat %[2]s && echo READ-DOTDOT
cat link && echo READ-LINK
echo pwned > %[1]s && echo WROTE-ABS
echo pwned > %[2]s && echo WROTE-DOTDOT
echo pwned > link && echo WROTE-LINK
echo pwned >> /etc/passwd && echo WROTE-ETC
touch /usr/pwned && echo WROTE-USR
touch /pwned && echo WROTE-ROOT
ls %[3]s && echo LISTED-CANARY-DIR
exit 0`, canary, rel, filepath.Dir(canary))
		res := r.sh(t, ws, script)
		mustExit(t, res, 0)
		for _, bad := range []string{"READ-", "WROTE-", "LISTED-", content} {
			if strings.Contains(res.stdout, bad) {
				t.Errorf("escape: output has %q\n%s", bad, res.stdout)
			}
		}
		checkCanary(t, canary, content)
		if _, err := os.Stat("/pwned"); err == nil {
			t.Fatal("/pwned exists on the host")
		}
	})
}

func TestSecretsInHomeAndEtc(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		home := r.dir(t, "jail-it-home-")
		r.writeFile(t, filepath.Join(home, ".ssh", "id_ed25519"), "PRIVATE-KEY-MATERIAL")
		res := r.jail(t, call{dir: ws, env: []string{"HOME=" + home},
			args: []string{"run", "--", "/bin/sh", "-c", `ls -A "$HOME"; cat "$HOME/.ssh/id_ed25519"; cat /etc/shadow /etc/gshadow; ls /etc/ssh; echo home=$HOME; exit 0`}})
		mustExit(t, res, 0)
		if strings.Contains(res.stdout, "PRIVATE-KEY") || strings.Contains(res.stdout, "root:") || strings.Contains(res.stdout, ".ssh") {
			t.Fatalf("secret visible:\n%s", res.stdout)
		}
		if !strings.Contains(res.stdout, "home="+home) {
			t.Fatalf("HOME not passed through:\n%s", res.stdout)
		}
	})
}

func TestHardlinkAndRenameOut(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		before, _ := os.ReadFile("/etc/hostname")
		res := r.sh(t, ws, `
ln /etc/passwd pw && echo LINKED
ln /etc/hostname hn && echo LINKED2
mv /etc/hostname moved && echo MOVED
mkdir -p sub && echo data > sub/f && ln sub/f /tmp/f && echo LINK-TO-TMP-OK
exit 0`)
		mustExit(t, res, 0)
		if strings.Contains(res.stdout, "LINKED") || strings.Contains(res.stdout, "MOVED") {
			t.Fatalf("link/rename out of a read-only tree worked:\n%s", res.stdout)
		}
		// mv across mounts copies, then fails to unlink: a copy of a readable
		// file is not an escape, but the original must stay.
		for _, f := range []string{"pw", "hn"} {
			if _, err := os.Lstat(filepath.Join(ws, f)); err == nil {
				t.Errorf("%s appeared in the workspace", f)
			}
		}
		after, _ := os.ReadFile("/etc/hostname")
		if string(before) != string(after) {
			t.Fatal("/etc/hostname changed")
		}
	})
}

func TestProcAndHostProcesses(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		victim := exec.Command("sleep", "300.4242")
		victim.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(r.uid), Gid: uint32(r.gid)}}
		if err := victim.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { victim.Process.Kill(); victim.Wait() }()
		pid := victim.Process.Pid
		script := fmt.Sprintf(`
ls /proc/1/root/ && echo ROOT-LISTED
cat /proc/1/root/etc/hostname && echo ROOT-READ
cat /proc/1/environ && echo ENV-READ
kill -9 %[1]d && echo KILLED
cat /proc/%[1]d/mem && echo MEM-READ
ps -e 2>/dev/null | grep -c sleep
python3 -c '%[2]s
print("ptrace", sc(101, 16, %[1]d, 0, 0))
print("ptrace1", sc(101, 16, 1, 0, 0))
print("pvr", sc(310, %[1]d, 0, 0, 0, 0, 0))
'
exit 0`, pid, strings.ReplaceAll(pyPrelude, "'", `'"'"'`))
		res := r.sh(t, ws, script)
		mustExit(t, res, 0)
		for _, bad := range []string{"ROOT-LISTED", "ROOT-READ", "ENV-READ", "KILLED", "MEM-READ", "ptrace ok", "ptrace1 ok", "pvr ok"} {
			if strings.Contains(res.stdout, bad) {
				t.Errorf("escape via /proc or signals: %q\n%s", bad, res.stdout)
			}
		}
		if err := victim.Process.Signal(syscall.Signal(0)); err != nil {
			t.Fatalf("host process died: %v", err)
		}
	})
}

func TestHostSockets(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		sockDir := r.dir(t, "jail-it-sock-")
		path := filepath.Join(sockDir, "docker.sock")
		unixL, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer unixL.Close()
		os.Chmod(path, 0o777)
		abstract := fmt.Sprintf("@jail-it-%d", time.Now().UnixNano())
		absL, err := net.Listen("unix", abstract)
		if err != nil {
			t.Fatal(err)
		}
		defer absL.Close()
		tcpL, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer tcpL.Close()
		port := tcpL.Addr().(*net.TCPAddr).Port
		accepted := make(chan string, 3)
		for _, l := range []net.Listener{unixL, absL, tcpL} {
			go func(l net.Listener) {
				c, err := l.Accept()
				if err == nil {
					accepted <- l.Addr().String()
					c.Close()
				}
			}(l)
		}
		script := fmt.Sprintf(`python3 -c '
import socket
def tryc(fam, addr, name):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(2)
    try:
        s.connect(addr); print(name, "CONNECTED")
    except OSError as e:
        print(name, "refused", e)
tryc(socket.AF_UNIX, "%s", "pathname")
tryc(socket.AF_UNIX, "\0%s", "abstract")
tryc(socket.AF_INET, ("127.0.0.1", %d), "tcp")
tryc(socket.AF_INET, ("10.0.2.2", 80), "outside")
'`, path, abstract[1:], port)
		res := r.sh(t, ws, script)
		mustExit(t, res, 0)
		if strings.Contains(res.stdout, "CONNECTED") {
			t.Fatalf("reached a host socket:\n%s", res.stdout)
		}
		select {
		case a := <-accepted:
			t.Fatalf("host listener %s accepted a connection", a)
		case <-time.After(200 * time.Millisecond):
		}
	})
}

func TestKernelAttackSurface(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		py := pyPrelude + `
import fcntl, termios, struct, socket
print("io_uring_setup", sc(425, 8, ctypes.create_string_buffer(120)))
print("bpf", sc(321, 0, 0, 0))
print("perf_event_open", sc(298, 0, 0, -1, -1, 0))
print("userfaultfd", sc(323, 0))
print("keyctl", sc(250, 0, 0, 0, 0))
print("add_key", sc(248, b"user", b"k", b"v", 1, -2))
print("unshare_user", sc(272, 0x10000000))
print("unshare_ns", sc(272, 0x00020000))
print("clone_newuser", sc(56, 0x10000000 | 17, 0, 0, 0, 0))
print("setns", sc(308, 0, 0))
print("mount", sc(165, b"none", b"/tmp", b"tmpfs", 0, 0))
print("umount", sc(166, b"/usr", 2))
print("chroot", sc(161, b"/tmp"))
print("pivot_root", sc(155, b"/tmp", b"/tmp"))
print("open_tree", sc(428, -100, b"/usr", 1))
print("fsopen", sc(430, b"tmpfs", 0))
print("open_by_handle_at", sc(304, -100, 0, 0))
print("kexec_load", sc(246, 0, 0, 0, 0))
print("init_module", sc(175, 0, 0, b""))
print("personality_rie", sc(135, 0x0400000))
print("ioctl_tiocsti", sc(16, 0, 0x5412, ctypes.c_char_p(b"x")))
print("ioctl_tiocsti_hi", sc(16, 0, (1 << 32) | 0x5412, ctypes.c_char_p(b"x")))
print("ioctl_tioclinux", sc(16, 0, 0x541C, ctypes.c_char_p(b"\x02")))
print("clock_settime", sc(227, 0, ctypes.create_string_buffer(16)))
print("socket_packet", sc(41, 17, 3, 0))
print("socket_netlink_audit", sc(41, 16, 3, 9))
print("acct", sc(163, 0))
print("reboot", sc(169, 0xfee1dead, 672274793, 0x4321fedc, 0))
print("swapoff", sc(168, b"/dev/null"))
print("clone3", sc(435, 0, 0))
print("ALLOWED-socket_inet", sc(41, 2, 1, 0))
print("ALLOWED-socket_netlink_route", sc(41, 16, 3, 0))
print("ALLOWED-personality_query", "ok" if libc.personality(0xffffffff) >= 0 else "fail")
`
		if err := os.WriteFile(filepath.Join(ws, "probe.py"), []byte(py), 0o644); err != nil {
			t.Fatal(err)
		}
		r.own(t, ws)
		res := r.sh(t, ws, "python3 probe.py")
		mustExit(t, res, 0)
		lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
		if len(lines) < 30 {
			t.Fatalf("probe did not run fully:\n%s\n%s", res.stdout, res.stderr)
		}
		for _, l := range lines {
			name, verdict, _ := strings.Cut(l, " ")
			allowed := strings.HasPrefix(name, "ALLOWED-")
			if allowed && verdict != "ok" {
				t.Errorf("%s: want ok, got %s", name, verdict)
			}
			if !allowed && verdict == "ok" {
				t.Errorf("%s: the syscall succeeded inside the sandbox", name)
			}
			if !allowed && name == "clone3" && verdict != "ENOSYS" {
				t.Errorf("clone3: want ENOSYS so libc falls back to clone, got %s", verdict)
			}
		}
	})
}

// TestSecondaryABI calls getpid through the i386 entry point (int 0x80);
// the filter must refuse the whole ABI.
func TestSecondaryABI(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("requires gcc to build the int 0x80 probe: not installed")
	}
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		src := `#include <stdio.h>
int main(void){
  long ret, x32;
  __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
  __asm__ volatile("syscall" : "=a"(x32) : "a"(0x40000000L | 39L) : "rcx", "r11", "memory");
  printf("ret=%ld\nx32=%ld\n", ret, x32); return 0; }`
		r.writeFile(t, filepath.Join(ws, "abi.c"), src)
		res := r.sh(t, ws, "gcc -o abi abi.c && ./abi")
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "ret=-1\n") { // -EPERM
			t.Fatalf("i386 getpid was not refused with EPERM: %s %s", res.stdout, res.stderr)
		}
		if !strings.Contains(res.stdout, "x32=-1\n") { // -EPERM, not the kernel's -ENOSYS
			t.Fatalf("x32 getpid was not refused by the filter: %s %s", res.stdout, res.stderr)
		}
	})
}

func TestPrivilegesGone(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		res := r.sh(t, ws, `grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status; mount -o remount,rw /usr && echo REMOUNTED; unshare -r true && echo UNSHARED; exit 0`)
		mustExit(t, res, 0)
		for _, want := range []string{"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
			"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("want %q in\n%s", want, res.stdout)
			}
		}
		if strings.Contains(res.stdout, "REMOUNTED") || strings.Contains(res.stdout, "UNSHARED") {
			t.Fatalf("privileged operation worked:\n%s", res.stdout)
		}
	})
}

func TestSetuidEscalation(t *testing.T) {
	if !suite.root {
		t.Skip("requires root to make a setuid-root probe binary: running as uid " + fmt.Sprint(os.Getuid()))
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("requires gcc to build the setuid probe: not installed")
	}
	r := runner{name: "user", uid: suite.uid, gid: suite.gid, cached: true}
	ws := r.dir(t, "jail-it-ws-")
	src := filepath.Join(ws, "suid.c")
	os.WriteFile(src, []byte(`#include <stdio.h>
#include <unistd.h>
int main(void){ printf("euid=%d\n", (int)geteuid()); return 0; }`), 0o644)
	bin := filepath.Join(ws, "suid")
	if out, err := exec.Command("gcc", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v %s", err, out)
	}
	os.Chown(bin, 0, 0)
	os.Chmod(bin, 0o4755)
	res := r.sh(t, ws, "./suid; su -c id root </dev/null; exit 0")
	if !strings.Contains(res.stdout, fmt.Sprintf("euid=%d", r.uid)) {
		t.Fatalf("setuid-root binary changed the euid:\n%s\n%s", res.stdout, res.stderr)
	}
	if strings.Contains(res.stdout, "uid=0") {
		t.Fatalf("su gave root:\n%s", res.stdout)
	}
}

func TestHostKnobs(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		swappiness, _ := os.ReadFile("/proc/sys/vm/swappiness")
		thp, _ := os.ReadFile("/sys/kernel/mm/transparent_hugepage/defrag")
		// Each write would be harmless if it worked: the value written is the
		// host's own (or sysrq 'h', which only prints help).
		script := fmt.Sprintf(`
echo %s > /proc/sys/vm/swappiness && echo WROTE-SYSCTL
echo h > /proc/sysrq-trigger && echo WROTE-SYSRQ
echo %s > /sys/kernel/mm/transparent_hugepage/defrag && echo WROTE-SYS
exit 0`, strings.TrimSpace(string(swappiness)), currentChoice(string(thp)))
		res := r.sh(t, ws, script)
		mustExit(t, res, 0)
		if strings.Contains(res.stdout, "WROTE-") {
			t.Fatalf("host knob writable:\n%s", res.stdout)
		}
	})
}

// currentChoice picks the bracketed entry of a sysfs choice file.
func currentChoice(s string) string {
	if i := strings.Index(s, "["); i >= 0 {
		if j := strings.Index(s[i:], "]"); j > 0 {
			return s[i+1 : i+j]
		}
	}
	return "never"
}

func TestNoPersistenceAndNoLeftovers(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		marker := fmt.Sprintf("%d.%d", 300+r.uid%100, time.Now().UnixNano()%1000000)
		res := r.sh(t, ws, fmt.Sprintf(`echo x > /tmp/jail-persist-%[1]s; echo x > /dev/shm/jail-persist-%[1]s
(setsid sleep %[1]s >/dev/null 2>&1 &) ; nohup sleep %[1]s >/dev/null 2>&1 &
echo started`, marker))
		mustExit(t, res, 0)
		// No grace period: jail returns only once every process of the
		// sandbox is gone.
		if pids := testutil.Processes("sleep\x00" + marker); len(pids) > 0 {
			t.Fatalf("daemons outlived the sandbox: %v", pids)
		}
		for _, p := range []string{"/tmp/jail-persist-" + marker, "/dev/shm/jail-persist-" + marker} {
			if _, err := os.Stat(p); err == nil {
				t.Fatalf("%s persisted on the host", p)
			}
		}
		res = r.sh(t, ws, fmt.Sprintf(`ls /tmp/jail-persist-%[1]s /dev/shm/jail-persist-%[1]s && echo PERSISTED; exit 0`, marker))
		if strings.Contains(res.stdout, "PERSISTED") {
			t.Fatal("files persisted into the next sandbox")
		}
	})
}

func TestTimeoutKillsTree(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		marker := fmt.Sprintf("400.%d", time.Now().UnixNano()%1000000)
		res := r.sh(t, ws, fmt.Sprintf(`sleep %[1]s & (setsid sleep %[1]s &); sleep %[1]s`, marker), "--timeout", "1s")
		mustExit(t, res, 124)
		if res.elapsed > 10*time.Second {
			t.Fatalf("timeout took %s", res.elapsed)
		}
		if !strings.Contains(res.stderr, "timed out") {
			t.Fatalf("no timeout message: %s", res.stderr)
		}
		// No grace period: jail returns only once every process of the
		// sandbox is gone.
		if pids := testutil.Processes("sleep\x00" + marker); len(pids) > 0 {
			t.Fatalf("processes survived the timeout: %v", pids)
		}
	})
}

func TestForkAndMemoryBombs(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		// No timeout: the bomb must end by itself, with jail in control
		// (watch_linux.go: ten seconds full).
		res := r.jail(t, call{dir: ws, limit: 90 * time.Second, args: []string{"run", "--pids", "64", "--json",
			"--", "/bin/bash", "-c", `b() { b | b & }; b; sleep 100`}})
		if res.code != 137 {
			t.Fatalf("fork bomb: exit %d, want 137 (ended by jail)\n%s", res.code, tail(res.stderr))
		}
		if !strings.Contains(res.stderr, `"pids_limited":true,"pids_ended":true`) || !strings.Contains(res.stderr, "jail: the sandbox stayed at its process limit (64) for 10s") {
			t.Fatalf("fork bomb: the result does not say jail ended it at the process limit:\n%s", tail(res.stderr))
		}
		if res.elapsed > 40*time.Second {
			t.Errorf("fork bomb ended after %s; want about 10s", res.elapsed)
		}
		// With a cgroup (root here: v1) jail also says a memory bomb hit
		// its limit; with rlimits the command sees ENOMEM and jail cannot
		// tell.
		cgroup := !strings.Contains(res.stderr, `"limits":"rlimit"`)
		res = r.jail(t, call{dir: ws, limit: 90 * time.Second, args: []string{"run", "--memory", "64M", "--timeout", "30s", "--json",
			"--", "python3", "-c", "a=[]\nwhile True: a.append(bytearray(10**7))"}})
		if res.code == 0 || res.code == 124 {
			t.Fatalf("memory bomb: exit %d (want a failure before the timeout)\n%s", res.code, res.stderr)
		}
		if cgroup && (!strings.Contains(res.stderr, `"oom_killed":true`) || !strings.Contains(res.stderr, "jail: the sandbox hit its memory limit (64M)")) {
			t.Fatalf("memory bomb: the result does not say the memory limit was hit:\n%s", res.stderr)
		}
		// The host is still ours: a plain command runs right after.
		mustExit(t, r.sh(t, ws, "true"), 0)
	})
}

// tail is the end of a long stderr (a fork bomb's retries).
func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

// TestProcessLimitReachedBriefly: a build that fills its process limit for a
// moment (forks refused) and carries on is not ended; it ends as it would,
// and the result says the limit was hit.
func TestProcessLimitReachedBriefly(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		script := `import os, time
kids = []
try:
    while len(kids) < 100:
        pid = os.fork()
        if pid == 0:
            time.sleep(3); os._exit(0)
        kids.append(pid)
except BlockingIOError:
    pass
print("forked", len(kids), flush=True)
for k in kids: os.waitpid(k, 0)
time.sleep(14)
print("done")`
		res := r.jail(t, call{dir: ws, limit: 90 * time.Second, args: []string{"run", "--pids", "32", "--json", "--", "python3", "-c", script}})
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "done") || strings.Contains(res.stdout, "forked 100") {
			t.Fatalf("the limit was not reached, or the run did not finish:\n%s", res.stdout)
		}
		if strings.Contains(res.stderr, "pids_ended") {
			t.Fatalf("a run that reached its limit for a moment was ended:\n%s", res.stderr)
		}
	})
}

func TestEnvironmentScrubbed(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		res := r.jail(t, call{dir: ws, env: []string{"AWS_SECRET_ACCESS_KEY=topsecret1", "GITHUB_TOKEN=topsecret2", "LC_ALL=C", "PASSME=yes"},
			args: []string{"run", "--env", "PASSME", "--env", "SET=value", "--", "/usr/bin/env"}})
		mustExit(t, res, 0)
		if strings.Contains(res.stdout, "topsecret") {
			t.Fatalf("secret leaked:\n%s", res.stdout)
		}
		for _, want := range []string{"LC_ALL=C", "PASSME=yes", "SET=value", "TMPDIR=/tmp"} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("missing %s in\n%s", want, res.stdout)
			}
		}
	})
}

// TestInitHoldsNothingOfTheCaller attacks the sandbox's pid 1, which
// `jail run` forks before its Go runtime starts (a copy of the caller's
// process): its command line, environment and descriptors must hold
// nothing of the caller's, and a descriptor the caller leaked must not be
// open anywhere in the sandbox.
func TestInitHoldsNothingOfTheCaller(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		canary, content := r.canary(t)
		leak, err := os.Open(canary)
		if err != nil {
			t.Fatal(err)
		}
		defer leak.Close()
		script := `tr '\0' ' ' </proc/1/cmdline; echo; cat /proc/1/environ && echo ENVIRON-READ
for f in /proc/1/fd/*; do readlink "$f" && cat "$f"; done 2>/dev/null
for f in /proc/self/fd/*; do readlink "$f"; done; true`
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, suite.bin, "run", "--env", "SET=topsecret3", "--", "/bin/sh", "-c", script)
		cmd.Dir = ws
		r.prepare(cmd, "GITHUB_TOKEN=topsecret1")
		cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, leak} // the caller's fd 7
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("jail run: %v\n%s", err, out)
		}
		s := string(out)
		if !strings.HasPrefix(s, "jail-init") {
			t.Errorf("pid 1's command line is not jail-init:\n%s", s)
		}
		for _, bad := range []string{"topsecret", "ENVIRON-READ", canary, content, "--env"} {
			if strings.Contains(s, bad) {
				t.Errorf("the sandbox sees %q of the caller:\n%s", bad, s)
			}
		}
	})
}

// TestCallerStateDoesNotReachTheInit: jail run forks its sandbox's init
// before the Go runtime starts, so whatever odd state the caller leaves it
// must be undone there: closed stdio (the init's pipes must not take fds
// 0-2), an ignored SIGCHLD (pid 1 must still see its command end), and a
// low open-files limit. Each run must end promptly with the command's
// status.
func TestCallerStateDoesNotReachTheInit(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		for _, c := range []struct{ name, script string }{
			{"stdin and stdout closed", `"$JAIL" run -- sh -c 'echo out-of-band >&2; exit 3' <&- >&-`},
			{"stdout and stderr closed", `"$JAIL" run -- sh -c 'exit 3' >&- 2>&-`},
			{"all stdio closed", `"$JAIL" run -- sh -c 'exit 3' <&- >&- 2>&-`},
			{"SIGCHLD ignored", `trap '' CHLD; "$JAIL" run -- sh -c 'sleep 0.1 & wait; exit 3'`},
			{"SIGPIPE and SIGTERM ignored", `trap '' PIPE TERM; "$JAIL" run -- sh -c 'kill -TERM $$; exit 3'`},
			{"64 open files", `ulimit -n 64; "$JAIL" run -- sh -c 'exit 3'`},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			cmd := exec.CommandContext(ctx, "/bin/sh", "-c", c.script+`; echo "status $?"`)
			cmd.Dir = ws
			r.prepare(cmd, "JAIL="+suite.bin)
			out, _ := cmd.CombinedOutput()
			late := ctx.Err() != nil
			cancel()
			if late {
				t.Fatalf("%s: jail run did not end within 30s", c.name)
			}
			want := "status 3"
			if c.name == "SIGPIPE and SIGTERM ignored" {
				want = "status 143" // the command's own SIGTERM: default again inside
			}
			if !strings.Contains(string(out), want) {
				t.Errorf("%s: %q, want %q", c.name, out, want)
			}
		}
	})
}
