package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

// TestApproverIgnoresWorkspace: the approver runs from "/" with a minimal
// environment, so a module the sandbox planted in the workspace (`python3
// -m NAME` loads one from the working directory) is not loaded.
func TestApproverIgnoresWorkspace(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("requires /usr/bin/python3 (scripts/deps.sh installs it)")
	}
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		cfg := r.dir(t, "jail-it-cfg-")
		marker := filepath.Join(cfg, "planted-ran")
		r.writeFile(t, filepath.Join(ws, "jailapprover.py"),
			"open("+strconv.Quote(marker)+", 'w').close()\nprint('{\"decision\":\"approve\",\"reason\":\"planted\"}')\n")
		pol := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, pol, fmt.Sprintf("[approval]\nrequire_approval = [\"bash\"]\napprover = [\"/usr/bin/python3\", \"-m\", \"jailapprover\"]\n[audit]\npath = %q\n", filepath.Join(cfg, "audit.jsonl")))
		res := r.jail(t, call{dir: ws, env: []string{"PYTHONPATH=" + ws}, args: []string{"tool", "--policy", pol, "-w", ws, "bash", `{"command":"echo ran"}`}})
		if !strings.Contains(res.stdout, `"is_error":true`) || !strings.Contains(res.stdout, "approver") || strings.Contains(res.stdout, "ran") {
			t.Fatalf("the call was not refused by the approver: %s\nstderr: %s", res.stdout, res.stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the approver loaded the module planted in the workspace")
		}
	})
}

// TestPolicyOfAnotherUserRefused: root with HOME kept (sudo without -H)
// must not load a policy file the invoking user could edit.
func TestPolicyOfAnotherUserRefused(t *testing.T) {
	if !suite.root {
		t.Skip("requires root: the case is root loading another user's policy")
	}
	r := runner{name: "root"}
	home := r.dir(t, "jail-it-home-")
	user := runner{uid: suite.uid, gid: suite.gid}
	pol := filepath.Join(home, ".config", "jail", "policy.toml")
	user.writeFile(t, pol, "[network]\nmode = \"host\"\n")
	user.own(t, home)
	ws := r.dir(t, "jail-it-ws-")
	res := r.jail(t, call{dir: ws, env: []string{"HOME=" + home}, args: []string{"run", "--", "/bin/true"}})
	if res.code != 2 || !strings.Contains(res.stderr, pol) || !strings.Contains(res.stderr, "not by you") || !strings.Contains(res.stderr, "sudo -H") {
		t.Fatalf("exit %d, want a refusal naming %s and the fix\nstderr: %s", res.code, pol, res.stderr)
	}
	// A file others may write is refused for everyone.
	forEach(t, func(t *testing.T, r runner) {
		cfg := r.dir(t, "jail-it-cfg-")
		p := filepath.Join(cfg, "p.toml")
		r.writeFile(t, p, "[limits]\n")
		os.Chmod(p, 0o666)
		res := r.jail(t, call{dir: cfg, args: []string{"run", "--policy", p, "--", "/bin/true"}})
		if res.code != 2 || !strings.Contains(res.stderr, "chmod go-w "+p) {
			t.Fatalf("exit %d, want a refusal of the world-writable policy\nstderr: %s", res.code, res.stderr)
		}
	})
}
