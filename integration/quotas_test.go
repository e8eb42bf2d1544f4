//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
)

// TestUserQuotasShared: a sandbox takes every inotify instance it can get and holds them;
// meanwhile a process of the same user on the host still gets one (the user's editor, `tail
// -f`), since the sandbox's user namespace has half of the user's quota. The sandbox's count
// is at most that half. Root and unprivileged, both launch paths.
func TestUserQuotasShared(t *testing.T) {
	needPrograms(t, "python3")
	b, err := os.ReadFile("/proc/sys/user/max_inotify_instances")
	if err != nil {
		t.Skipf("requires /proc/sys/user/max_inotify_instances: %v", err)
	}
	max, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		script := `
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
fds = []
while len(fds) < 100000:
    fd = libc.inotify_init()
    if fd < 0:
        break
    fds.append(fd)
with open("COUNT.tmp", "w") as f:
    f.write(str(len(fds)))
os.rename("COUNT.tmp", "COUNT")
for _ in range(600):
    if os.path.exists("GO"):
        break
    time.sleep(0.05)
`
		wait := r.background(t, call{dir: ws, args: []string{"run", "-w", ws, "--", "python3", "-c", script}})
		count := filepath.Join(ws, "COUNT")
		if !testutil.Eventually(30*time.Second, func() bool { _, err := os.Stat(count); return err == nil }) {
			os.WriteFile(filepath.Join(ws, "GO"), nil, 0o644)
			res := wait()
			t.Fatalf("the sandbox never counted its inotify instances: %+v", res)
		}
		// The host's side, as the same user, while the sandbox holds all it could get.
		host := exec.Command("/usr/bin/python3", "-c", "import ctypes; print(ctypes.CDLL(None).inotify_init())")
		r.prepare(host)
		out, herr := host.CombinedOutput()
		os.WriteFile(filepath.Join(ws, "GO"), nil, 0o644)
		res := wait()
		if res.code != 0 {
			t.Fatalf("the sandbox: %+v", res)
		}
		got, _ := os.ReadFile(count)
		n, _ := strconv.Atoi(string(got))
		if n < 1 || n > max/2 {
			t.Errorf("the sandbox held %d inotify instances; its share is at most %d of the user's %d", n, max/2, max)
		}
		if fd, err := strconv.Atoi(strings.TrimSpace(string(out))); herr != nil || err != nil || fd < 0 {
			t.Errorf("a host process of the user got no inotify instance while the sandbox held %d: %v %s", n, herr, out)
		}
	})
}
