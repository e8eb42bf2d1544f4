//go:build linux

package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestToolAlwaysReachesGrantsFile: answering "always" at jail tool's
// terminal prompt saves the grant to approval.grants_file, so the same
// call later passes with nobody to ask; without a grants file the prompt
// does not offer "always".
func TestToolAlwaysReachesGrantsFile(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		cfg := r.dir(t, "jail-it-cfg-")
		grants := filepath.Join(cfg, "grants.json")
		pol := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, pol, "[approval]\ngrants_file = \""+grants+"\"\nask_timeout = \"30s\"\n[audit]\nenabled = false\n")
		bare := filepath.Join(cfg, "bare.toml")
		r.writeFile(t, bare, "[approval]\nask_timeout = \"30s\"\n[audit]\nenabled = false\n")
		args := `{"command":"echo granted > out.txt"}`
		onTTY := func(policy, answer string) string {
			p, slave := openPTY(t, r.uid, r.gid)
			cmd := exec.Command(suite.bin, "tool", "--policy", policy, "-w", ws, "bash", args)
			cmd.Dir = ws
			r.prepare(cmd)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			r.credential(cmd)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			p.expect(t, "allow? [y]es")
			p.send(answer + "\n")
			p.expect(t, `"is_error":false`)
			if code := waitExit(t, cmd); code != 0 {
				t.Fatalf("jail tool exited %d", code)
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.out.String()
		}
		noTTY := func(policy string) string {
			cmd := exec.Command(suite.bin, "tool", "--policy", policy, "-w", ws, "bash", args)
			cmd.Dir = ws
			r.prepare(cmd)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal
			r.credential(cmd)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("jail tool: %v\n%s", err, &stderr)
			}
			return stdout.String()
		}
		if out := noTTY(pol); !strings.Contains(out, "no one to ask") {
			t.Fatalf("before any answer, a call with nobody to ask: %s", out)
		}
		if out := onTTY(bare, "y"); strings.Contains(out, "[a]lways") {
			t.Fatalf("always offered without a grants file:\n%s", out)
		}
		out := onTTY(pol, "a")
		if !strings.Contains(out, "[a]lways (saved to "+grants+")") {
			t.Fatalf("prompt or result:\n%s", out)
		}
		b, err := os.ReadFile(grants)
		var gs []struct{ Tool, Command string }
		if err != nil || json.Unmarshal(b, &gs) != nil || len(gs) != 1 || gs[0].Tool != "bash" || gs[0].Command != "echo granted > out.txt" {
			t.Fatalf("grants file after always: %v %s", err, b)
		}
		if st, _ := os.Stat(grants); st.Mode().Perm() != 0o600 {
			t.Fatalf("grants file mode %v", st.Mode())
		}
		// Later, with nobody to ask (no terminal): the saved grant passes.
		os.Remove(filepath.Join(ws, "out.txt"))
		if out := noTTY(pol); !strings.Contains(out, `"is_error":false`) {
			t.Fatalf("the saved grant did not pass the call: %s", out)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "out.txt")); string(b) != "granted\n" {
			t.Fatalf("the granted call did not run: %q", b)
		}
	})
}
