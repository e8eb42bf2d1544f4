//go:build linux

package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
)

// bombScript holds memory above the sandbox's bound in one of the ways
// RLIMIT_DATA does not see, then waits to be ended. Each is bounded
// (300 MiB) so that a jail that fails to end it cannot hurt the machine.
const bombScript = `import os, sys, mmap, time
mode = sys.argv[1]
N = 300 << 20
chunk = b"x" * (1 << 20)
try:
    if mode == "shared":
        m = mmap.mmap(-1, N, flags=mmap.MAP_SHARED)
        for i in range(0, N, 4096): m[i] = 1
    elif mode == "memfd":
        fd = os.memfd_create("bomb")
        for i in range(N >> 20): os.write(fd, chunk)
    elif mode == "fallocate":
        fd = os.memfd_create("bomb")
        os.ftruncate(fd, N); os.posix_fallocate(fd, 0, N)
    elif mode in ("/tmp", "/dev/shm"):
        with open(mode + "/bomb", "wb") as f:
            for i in range(N >> 20): f.write(chunk); f.flush()
    elif mode == "processes":
        # Eight processes, each well under the bound (and RLIMIT_DATA).
        for k in range(8):
            if os.fork() == 0:
                a = bytearray(N // 8)
                for i in range(0, len(a), 4096): a[i] = 1
                time.sleep(1000); os._exit(0)
        os.wait()
        sys.exit(3)
    elif mode == "inodes":
        # Empty files: no block, a kernel inode and dentry each.
        for i in range(300000): open("/tmp/%d" % i, "w").close()
    elif mode == "pipes":
        # Sixteen processes, each with 400 pipes filled and kept.
        for k in range(16):
            if os.fork() == 0:
                keep = []
                for i in range(400):
                    r, w = os.pipe()
                    os.set_blocking(w, False)
                    try:
                        while True: os.write(w, chunk[:65536])
                    except BlockingIOError: pass
                    os.close(w); keep.append(r)
                time.sleep(1000); os._exit(0)
        os.wait()
        sys.exit(3)
    elif mode == "sockets":
        # Socket pairs whose send buffers SO_SNDBUF raised to wmem_max
        # (doubled: 8 MiB here), each filled and kept.
        import socket
        keep, held = [], 0
        while held < N:
            a, b = socket.socketpair()
            a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 20)
            b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
            a.setblocking(False)
            try:
                while held < N: held += a.send(chunk[:65536])
            except BlockingIOError: pass
            keep += [a, b]
except OSError as e:
    print("refused:", e, flush=True)
    sys.exit(4)
print("holding", flush=True)
time.sleep(1000)
`

// shmemKB is the machine's shared memory (Shmem of /proc/meminfo): tmpfs,
// memfd and shared anonymous pages, which a sandbox that is gone must not
// leave behind.
func shmemKB(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "Shmem: %d kB", &kb); err == nil {
			return kb
		}
	}
	t.Fatal("no Shmem in /proc/meminfo")
	return 0
}

// TestMemoryBombs: with --memory 64M, a sandbox that holds 300 MiB as shared
// anonymous memory, a memfd written or fallocated and never mapped, a tmpfs
// file, a tmpfs full of empty files, or eight processes each under the bound,
// or pipes filled and kept by sixteen processes, or socket pairs whose send
// buffers SO_SNDBUF raised to wmem_max, filled, ends with jail in control
// on both launch paths and both methods: with a cgroup (root here: v1) the
// kernel kills in it; with rlimits (unprivileged here) jail's census ends
// it. The result says the memory limit was hit, nothing of the bomb is left
// on the host, and its shared memory is freed.
func TestMemoryBombs(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		for _, mode := range []string{"shared", "memfd", "fallocate", "/tmp", "/dev/shm", "inodes", "processes", "pipes", "sockets"} {
			t.Run(strings.ReplaceAll(mode, "/", "_"), func(t *testing.T) {
				// A workspace of its own: the run a bomb ended before may
				// still be going when the next starts (its pid 1 freeing
				// 300 MiB under load), which sends that one off the cache.
				ws := r.dir(t, "jail-it-ws-")
				before := shmemKB(t)
				marker := fmt.Sprintf("jail-bomb-%d", time.Now().UnixNano())
				res := r.jail(t, call{dir: ws, limit: 90 * time.Second, args: []string{"run", "--memory", "64M", "--json",
					"--", "python3", "-c", bombScript, mode, marker}})
				rlimit := strings.Contains(res.stderr, `"limits":"rlimit"`)
				switch {
				case strings.Contains(res.stdout, "holding") && !rlimit:
					// With rlimits the bomb may hold it until the next
					// census (docs/limits.md), then it is ended.
					t.Fatalf("%s: 300M held under a 64M cgroup (exit %d)\n%s", mode, res.code, res.stderr)
				// A file the bomb was creating when jail ended the sandbox may fail with
				// ENOSYS first: the open waits on pid 1's seccomp listener (the create
				// hint), which goes with pid 1 an instant before the SIGKILL reaches the
				// bomb. The end itself is checked below.
				case strings.Contains(res.stdout, "refused:") && (mode == "/tmp" || mode == "/dev/shm" || mode == "inodes") &&
					!(rlimit && strings.Contains(res.stderr, `"memory_ended":true`)):
					// The tmpfs is no larger than the bound: ENOSPC first
					// (or, in a cgroup, its inodes refused: ENOMEM).
					if !strings.Contains(res.stdout, "No space left") && !(mode == "inodes" && !rlimit && strings.Contains(res.stdout, "Cannot allocate memory")) {
						t.Fatalf("%s: %s", mode, res.stdout)
					}
				case !strings.Contains(res.stderr, `"oom_killed":true`):
					t.Fatalf("%s: the result does not say the memory limit was hit (exit %d)\nstdout: %s\nstderr: %s", mode, res.code, res.stdout, res.stderr)
				case rlimit && (res.code != 137 || !strings.Contains(res.stderr, `"memory_ended":true`) ||
					!strings.Contains(res.stderr, "above its limit (64M): jail ended it (--memory, [limits] memory)")):
					t.Fatalf("%s: with rlimits jail did not end the sandbox, or did not say so (exit %d)\n%s", mode, res.code, res.stderr)
				case !rlimit && !strings.Contains(res.stderr, "jail: the sandbox hit its memory limit (64M)"):
					t.Fatalf("%s: no message naming the limit:\n%s", mode, res.stderr)
				}
				if pids := testutil.Processes(marker); len(pids) > 0 {
					t.Fatalf("%s: processes of the bomb outlived jail: %v", mode, pids)
				}
				// Shared memory is the host's until the last holder is gone.
				var after int64
				if !testutil.Eventually(10*time.Second, func() bool { after = shmemKB(t); return after < before+150<<10 }) {
					t.Fatalf("%s: the host's shared memory grew from %d kB to %d kB and stayed", mode, before, after)
				}
			})
		}
	})
}

// threadBomb starts threads until it cannot, and keeps trying.
const threadBomb = `import threading, time, sys
def f(): time.sleep(1000)
while True:
    try: threading.Thread(target=f, daemon=True).start()
    except RuntimeError: time.sleep(0.01)
`

// TestThreadBomb: a bomb of threads is held at the task limit and ended there,
// as a fork bomb is, on both methods (with rlimits RLIMIT_NPROC counts the
// threads and the census counts them too; a cgroup's pids.current has
// them), with no timeout.
func TestThreadBomb(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		marker := fmt.Sprintf("jail-threads-%d", time.Now().UnixNano())
		res := r.jail(t, call{dir: ws, limit: 90 * time.Second, args: []string{"run", "--pids", "64", "--json",
			"--", "python3", "-c", threadBomb, marker}})
		if res.code != 137 || !strings.Contains(res.stderr, `"pids_limited":true,"pids_ended":true`) ||
			!strings.Contains(res.stderr, "jail: the sandbox stayed at its process limit (64) for 10s") {
			t.Fatalf("thread bomb: exit %d, or the result does not say jail ended it at the limit\n%s", res.code, tail(res.stderr))
		}
		if pids := testutil.Processes(marker); len(pids) > 0 {
			t.Fatalf("the bomb outlived jail: %v", pids)
		}
	})
}
