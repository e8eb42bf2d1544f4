//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandsAsAShellRunsThem runs commands named with a slash and found
// through relative PATH entries: they are the working directory's, as in
// a shell started there (docs/commands.md).
func TestCommandsAsAShellRunsThem(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		script := func(rel, out string) {
			p := filepath.Join(ws, rel)
			r.writeFile(t, p, "#!/bin/sh\necho "+out+" \"$@\"\n")
			os.Chmod(p, 0o755)
		}
		script("gradlew", "GRADLE")
		script("bin/x", "BINX")
		script(".venv/bin/pytest", "PYTEST")
		script("node_modules/jest/bin/jest.js", "JEST")
		os.MkdirAll(filepath.Join(ws, "node_modules", ".bin"), 0o755)
		if err := os.Symlink("../jest/bin/jest.js", filepath.Join(ws, "node_modules", ".bin", "jest")); err != nil {
			t.Fatal(err)
		}
		r.own(t, ws)
		for _, c := range []struct {
			argv []string
			want string
		}{
			{[]string{"./gradlew", "test"}, "GRADLE test"},
			{[]string{"bin/x"}, "BINX"},
			{[]string{".venv/bin/pytest", "-q"}, "PYTEST -q"},
			{[]string{"node_modules/.bin/jest"}, "JEST"},
		} {
			res := r.jail(t, call{args: append([]string{"run", "--"}, c.argv...), dir: ws})
			mustExit(t, res, 0)
			if strings.TrimSpace(res.stdout) != c.want {
				t.Errorf("%v printed %q, want %q", c.argv, res.stdout, c.want)
			}
		}
		// Relative PATH entries (and an empty one, which means ".").
		res := r.jail(t, call{args: []string{"run", "--env", "PATH=bin:/usr/bin:/bin", "--", "x", "arg"}, dir: ws})
		mustExit(t, res, 0)
		if strings.TrimSpace(res.stdout) != "BINX arg" {
			t.Errorf("x through PATH=bin: %q, want BINX arg", res.stdout)
		}
		res = r.jail(t, call{args: []string{"run", "--env", "PATH=/usr/bin::/bin", "--", "gradlew"}, dir: ws})
		mustExit(t, res, 0)
		if strings.TrimSpace(res.stdout) != "GRADLE" {
			t.Errorf("gradlew through an empty PATH entry: %q, want GRADLE", res.stdout)
		}
		// In a subdirectory given with -w, relative names are its own.
		sub := filepath.Join(ws, "bin")
		res = r.jail(t, call{args: []string{"run", "-w", sub, "--", "./x"}, dir: ws})
		mustExit(t, res, 0)
		if strings.TrimSpace(res.stdout) != "BINX" {
			t.Errorf("-w %s -- ./x: %q, want BINX", sub, res.stdout)
		}
		// A missing one is still a shell's 127, naming the command.
		res = r.jail(t, call{args: []string{"run", "--", "./missing"}, dir: ws})
		mustExit(t, res, 127)
		if !strings.Contains(res.stderr, "./missing") {
			t.Errorf("a missing ./missing: stderr %q does not name it", res.stderr)
		}
	})
}

// TestSharedTmpWorkspaceRefused: a workspace that is the host's /tmp or
// /var/tmp (or contains one) would show other programs' sockets (tmux,
// ssh-agent, X11) to the sandbox; jail refuses it and says what to do.
func TestSharedTmpWorkspaceRefused(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		for _, ws := range []string{"/tmp", "/var/tmp", "/var"} {
			res := r.jail(t, call{args: []string{"run", "-w", ws, "--", "true"}, dir: "/"})
			mustExit(t, res, 2)
			if !strings.Contains(res.stderr, "shared temporary directory") || !strings.Contains(res.stderr, "-w") || strings.Contains(res.stderr, "list parents first") {
				t.Errorf("-w %s: %q, want a refusal that says why and names -w", ws, res.stderr)
			}
		}
	})
}

// TestPackageDatabases: dpkg and apt read the host's databases, which stay
// read-only, and /var/tmp is private to the run.
func TestPackageDatabases(t *testing.T) {
	for _, tool := range []string{"dpkg", "apt-cache"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("requires %s: not installed", tool)
		}
	}
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		marker := "jail-it-vartmp-" + filepath.Base(ws)
		res := r.sh(t, ws, `
dpkg -l dpkg | grep -q '^ii  *dpkg ' && echo DPKG-OK
apt-cache policy dpkg | grep -q 'Installed:' && echo APT-OK
touch /var/lib/dpkg/jail-it-probe 2>/dev/null && echo DPKG-WRITABLE
echo x > /var/tmp/`+marker+` && echo VARTMP-OK
exit 0`)
		mustExit(t, res, 0)
		for _, w := range []string{"DPKG-OK", "APT-OK", "VARTMP-OK"} {
			if !strings.Contains(res.stdout, w) {
				t.Errorf("missing %s:\n%s\n%s", w, res.stdout, res.stderr)
			}
		}
		if strings.Contains(res.stdout, "DPKG-WRITABLE") {
			t.Error("/var/lib/dpkg is writable inside")
		}
		os.Remove("/var/lib/dpkg/jail-it-probe")
		if _, err := os.Stat("/var/tmp/" + marker); err == nil {
			os.Remove("/var/tmp/" + marker)
			t.Error("a file written to /var/tmp inside appeared in the host's /var/tmp")
		}
	})
}

// TestTTYNamed: on a terminal, `tty` inside names the device (jail's pty,
// as /dev/pts/N, the name its descriptor has; /dev/console is it too), and
// no other pty of the host is there: the sandbox's devpts is its own.
func TestTTYNamed(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		p, cmd := startOnTTY(t, r, ws, "/bin/sh", "-c", `n=$(tty) && [ "$n" = "$(readlink /proc/self/fd/0)" ] && echo "TTY-OK ${n#/dev/pts/}"; ls /dev/pts | tr '\n' ' '; echo; stat -c 'DEV %t:%T' /dev/console "$(tty)"`)
		p.expect(t, "TTY-OK ")
		p.mu.Lock()
		head := p.out.String()
		p.mu.Unlock()
		n := strings.Fields(head[strings.Index(head, "TTY-OK ")+len("TTY-OK "):])[0]
		// Only the terminal's own node and ptmx.
		p.expect(t, n+" ptmx \r\n")
		// A pty slave (major 136 = 0x88), the same node both times.
		p.expect(t, "DEV 88:")
		if code := waitExit(t, cmd); code != 0 {
			t.Fatalf("exit %d", code)
		}
		p.mu.Lock()
		out := p.out.String()
		p.mu.Unlock()
		if i := strings.Index(out, "DEV "); i < 0 || !strings.HasPrefix(strings.TrimSpace(out[i:]), strings.Split(strings.TrimSpace(out[i:]), "\r\n")[0]) {
			t.Errorf("/dev/console is not the terminal's pty:\n%s", out)
		}
	})
}

// TestTracingOptIn: with --allow-ptrace (or [seccomp] allow_ptrace), strace
// and gdb trace the command's own processes and an LSan build reports its
// leak; jail's pid 1 stays out of reach (neither attachable nor readable
// through /proc/1/mem). Without it, tracing is refused.
func TestTracingOptIn(t *testing.T) {
	for _, tool := range []string{"strace", "gdb", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("requires %s: not installed", tool)
		}
	}
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-trace-")
		r.writeFile(t, filepath.Join(ws, "leak.c"), "#include <stdlib.h>\nint main(void){void *p = malloc(77); p = 0; return 0;}\n")
		build := exec.Command("gcc", "-fsanitize=address", "-g", "-o", filepath.Join(ws, "leak"), filepath.Join(ws, "leak.c"))
		if out, err := build.CombinedOutput(); err != nil {
			t.Skipf("requires gcc with AddressSanitizer: %v %s", err, out)
		}
		r.own(t, ws)
		script := `
strace -f -o /dev/null /bin/true && echo STRACE-OK
gdb -batch -ex run --args /bin/true 2>&1 | grep -q 'exited normally' && echo GDB-OK
./leak 2>&1 | grep -q 'detected memory leaks' && echo LSAN-OK
strace -p 1 -o /dev/null 2>&1 | grep -q 'Operation not permitted' && echo PID1-REFUSED
head -c1 /proc/1/mem >/dev/null 2>&1 || echo PID1-MEM-REFUSED
exit 0`
		for _, mode := range []string{"flag", "policy"} {
			args := []string{"run", "--allow-ptrace", "--", "/bin/sh", "-c", script}
			if mode == "policy" {
				pol := filepath.Join(r.dir(t, "jail-it-trace-pol-"), "policy.toml")
				r.writeFile(t, pol, "[seccomp]\nallow_ptrace = true\n")
				args = []string{"run", "--policy", pol, "--", "/bin/sh", "-c", script}
			}
			res := r.jail(t, call{args: args, dir: ws})
			mustExit(t, res, 0)
			for _, want := range []string{"STRACE-OK", "GDB-OK", "LSAN-OK", "PID1-REFUSED", "PID1-MEM-REFUSED"} {
				if !strings.Contains(res.stdout, want) {
					t.Errorf("%s: missing %s:\n%s\n%s", mode, want, res.stdout, res.stderr)
				}
			}
		}
		// Without it, tracing is refused as before (EPERM), and jail says
		// once, on its own stderr, how to allow it. A project policy
		// cannot allow it.
		r.writeFile(t, filepath.Join(ws, ".jail", "policy.toml"), "[seccomp]\nallow_ptrace = true\n")
		res := r.jail(t, call{args: []string{"run", "--", "/bin/sh", "-c", "strace -o /dev/null /bin/true 2>&1; strace -o /dev/null /bin/true 2>&1; echo STRACE-$?"}, dir: ws})
		mustExit(t, res, 0)
		if strings.Contains(res.stdout, "STRACE-0") || !strings.Contains(res.stdout, "Operation not permitted") {
			t.Errorf("strace without the opt-in:\n%s\n%s", res.stdout, res.stderr)
		}
		if n := strings.Count(res.stderr, "jail: ptrace refused"); n != 1 || !strings.Contains(res.stderr, "--allow-ptrace or [seccomp] allow_ptrace = true") {
			t.Errorf("want one line naming the opt-in on stderr, got %d:\n%s", n, res.stderr)
		}
		if !strings.Contains(res.stderr, "seccomp.allow_ptrace") {
			t.Errorf("the project policy's allow_ptrace was not reported as ignored:\n%s", res.stderr)
		}
	})
}
