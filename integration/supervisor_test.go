package integration

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The supervisor boundary (docs/supervisor.md): nothing jail does outside
// the sandbox trusts a path, a byte or a terminal the sandbox touched.

// TestFileToolsRefuseFIFO: a FIFO in the workspace is refused at once by
// the file tools instead of holding the worker until its deadline.
func TestFileToolsRefuseFIFO(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		fifo := filepath.Join(ws, "pipe")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		r.own(t, fifo)
		start := time.Now()
		res := r.jail(t, call{dir: ws, limit: 30 * time.Second, args: []string{"tool", "-w", ws, "read", `{"path":"pipe"}`}})
		if !strings.Contains(res.stdout, `"is_error":true`) || !strings.Contains(res.stdout, "not a regular file (a FIFO)") {
			t.Fatalf("read of a FIFO: %s\nstderr: %s", res.stdout, res.stderr)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("read of a FIFO took %s", took)
		}
	})
}
