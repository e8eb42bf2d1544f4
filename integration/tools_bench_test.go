//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// Benchmarks of one tool call's round trip, in one run: through a running
// `jail serve` (a warm worker in its sandbox), a fresh `jail run` per call,
// and a fresh bubblewrap per call. Each reports p50 and p99 latency and
// calls per second:
//
//	go test ./integration/ -run '^$' -bench 'Serve(Read|Bash)' -benchtime 2000x
func BenchmarkServeRead(b *testing.B) {
	ws := benchWorkspace(b)
	benchOps(b, ws, `{"path":"small.txt"}`, "read", []string{"/bin/cat", "small.txt"})
}

func BenchmarkServeBash(b *testing.B) {
	ws := benchWorkspace(b)
	benchOps(b, ws, `{"command":"true"}`, "bash", []string{"/bin/sh", "-c", "true"})
}

func benchWorkspace(b *testing.B) string {
	ws, _ := filepath.EvalSymlinks(b.TempDir())
	os.WriteFile(filepath.Join(ws, "small.txt"), []byte("a small file\nof two lines\n"), 0o644)
	return ws
}

func benchOps(b *testing.B, ws, args, tool string, argv []string) {
	pol := filepath.Join(b.TempDir(), "policy.toml")
	os.WriteFile(pol, []byte("[approval]\nauto_approve = [\"bash\"]\n[audit]\nenabled = false\n"), 0o644)
	// serve: calls back to back, the server's throughput; serve-paced: a
	// call every 20 ms, the latency a harness sees between a model's turns
	// (bash then finds its sandbox made ahead).
	for _, gap := range []time.Duration{0, 20 * time.Millisecond} {
		name := "serve"
		if gap > 0 {
			name = "serve-paced"
		}
		b.Run(name, func(b *testing.B) { benchServe(b, ws, pol, tool, args, gap) })
	}
	b.Run("jail-run", func(b *testing.B) {
		measure(b, 0, func(int) {
			cmd := exec.Command(suite.bin, append([]string{"run", "-w", ws, "--policy", pol, "--"}, argv...)...)
			cmd.Dir, cmd.Stdout = ws, io.Discard
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("bwrap", func(b *testing.B) {
		bw, err := exec.LookPath("bwrap")
		if err != nil {
			b.Skip("requires bwrap on PATH")
		}
		measure(b, 0, func(int) {
			cmd := exec.Command(bw, append([]string{"--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
				"--bind", ws, ws, "--chdir", ws, "--"}, argv...)...)
			cmd.Stdout = io.Discard
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// benchServe measures calls through one `jail serve`, gap apart.
func benchServe(b *testing.B, ws, pol, tool, args string, gap time.Duration) {
	cmd := exec.Command(suite.bin, "serve", "--policy", pol, "-w", ws, "--max-concurrency", "1")
	cmd.Dir, cmd.Stderr = ws, os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	call := func(i int) {
		fmt.Fprintf(in, `{"id":%d,"tool":%q,"args":%s}`+"\n", i, tool, args)
		if !sc.Scan() {
			b.Fatal("jail serve ended")
		}
		var r struct {
			Result struct {
				IsError bool   `json:"is_error"`
				Content string `json:"content"`
			} `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &r); r.Result.IsError {
			b.Fatalf("call failed: %s", sc.Bytes())
		}
	}
	for i := range 20 { // warm up
		call(i)
	}
	measure(b, gap, func(i int) { call(1000 + i) })
}

// measure runs op b.N times and reports the latency distribution.
func measure(b *testing.B, gap time.Duration, op func(i int)) {
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if gap > 0 {
			time.Sleep(gap)
		}
		t0 := time.Now()
		op(i)
		lat = append(lat, time.Since(t0))
	}
	total := time.Since(start)
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	if gap == 0 {
		b.ReportMetric(float64(b.N)/total.Seconds(), "calls/s")
	}
}
