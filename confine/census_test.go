//go:build linux && cgo

package confine

import (
	"os"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
)

// censusScript holds 8 MiB in /tmp, a 16 MiB memfd written and never
// mapped, 4 MiB of shared anonymous memory and 10 threads.
const censusScript = `import os, mmap, threading, time
open("/tmp/f", "wb").write(b"x" * (8 << 20))
fd = os.memfd_create("m"); os.write(fd, b"y" * (16 << 20))
m = mmap.mmap(-1, 4 << 20, flags=mmap.MAP_SHARED)
for i in range(0, 4 << 20, 4096): m[i] = 1
for i in range(10): threading.Thread(target=time.sleep, args=(100,), daemon=True).start()
print("ready", flush=True)
time.sleep(100)
`

// TestCensusCounts: the census of a running sandbox sees its threads, its
// tmpfs file, its memfd (held by a descriptor only) and its shared memory,
// quick and precise.
func TestCensusCounts(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("requires python3")
	}
	out, err := os.CreateTemp("", "census")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	c := startSandbox(t, out, "/usr/bin/python3", "-c", censusScript)
	defer func() { c.Signal(os.Kill); c.Wait() }()
	st := newCensusState()
	defer st.close()
	var got census
	ok := testutil.Eventually(20*time.Second, func() bool {
		got, _ = st.take(c.Pid(), censusTasks|censusMemory, 0)
		return got.Tasks >= 11 && got.FdShm >= 16<<20 && got.Tmpfs >= 8<<20 && got.Shmem >= 4<<20
	})
	if !ok {
		o, _ := os.ReadFile(out.Name())
		t.Fatalf("census: %+v\noutput: %s", got, o)
	}
	p, ok := st.take(c.Pid(), censusMemory|censusPrecise, 0)
	if !ok || !p.Precise || p.Total > got.Total || p.FdShm < 16<<20 || p.Shmem < 4<<20-(64<<10) {
		t.Fatalf("precise census %+v after quick %+v", p, got)
	}
}

// BenchmarkCensus is one quick census of a sandbox of 50 processes: what
// the rlimit fallback costs the supervisor every memWatchInterval.
func BenchmarkCensus(b *testing.B) {
	t := &testing.T{}
	c := startSandbox(t, nil, "/bin/sh", "-c", "for i in $(seq 50); do sleep 100 & done; wait")
	defer func() { c.Signal(os.Kill); c.Wait() }()
	st := newCensusState()
	defer st.close()
	testutil.Eventually(10*time.Second, func() bool { cs, _ := st.take(c.Pid(), censusTasks, 0); return cs.Processes >= 52 })
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st.take(c.Pid(), censusTasks|censusMemory, 0)
	}
}
