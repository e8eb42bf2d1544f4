//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClassifierScriptPrograms attacks the action classifier through
// jail tool bash: with code:read auto-approved, sed, awk and find calls
// that write files or run commands are not auto-approved (no file they
// name appears on the host), while a plain read runs. With bash
// auto-approved, the hard guards still refuse rm -rf of the home inside
// awk's system() and sed's e, and tar of ~/.ssh.
func TestClassifierScriptPrograms(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		cfg := r.dir(t, "jail-it-cfg-")
		home := r.dir(t, "jail-it-home-")
		r.writeFile(t, filepath.Join(ws, "f.txt"), "hello x\n")
		r.writeFile(t, filepath.Join(home, ".ssh", "id_ed25519"), "SSH-KEY")
		r.writeFile(t, filepath.Join(home, "canary"), "alive")
		read := filepath.Join(cfg, "read.toml")
		r.writeFile(t, read, fmt.Sprintf("[approval]\nauto_approve = [\"code:read\"]\n[audit]\npath = %q\n", filepath.Join(cfg, "audit.jsonl")))
		bash := filepath.Join(cfg, "bash.toml")
		r.writeFile(t, bash, fmt.Sprintf("[approval]\nauto_approve = [\"bash\"]\n[audit]\npath = %q\n", filepath.Join(cfg, "audit.jsonl")))
		tool := func(pol, cmd string) result {
			b, _ := json.Marshal(map[string]string{"command": cmd})
			return r.jail(t, call{dir: ws, env: []string{"HOME=" + home}, args: []string{"tool", "--policy", pol, "-w", ws, "bash", string(b)}})
		}
		for _, c := range []struct{ cmd, made string }{
			{`sed -n "1e touch pwn1" f.txt`, "pwn1"},
			{`sed 's/hello/touch pwn2/e' f.txt`, "pwn2"},
			{`sed -n 'w pwn3' f.txt`, "pwn3"},
			{`sed 's/x/y/w pwn9' f.txt`, "pwn9"},
			{`awk 'BEGIN{system("touch pwn4")}'`, "pwn4"},
			{`awk '{print > "pwn5"}' f.txt`, "pwn5"},
			{`find . -fprint pwn6`, "pwn6"},
			{`sed --in-place=bak s/x/y/ f.txt`, "f.txtbak"},
			{`sed -Ei.orig s/x/y/ f.txt`, "f.txt.orig"},
		} {
			res := tool(read, c.cmd)
			if !strings.Contains(res.stdout, `"is_error":true`) {
				t.Errorf("%q was auto-approved as a read: %s\nstderr: %s", c.cmd, res.stdout, res.stderr)
			}
			if _, err := os.Lstat(filepath.Join(ws, c.made)); err == nil {
				t.Errorf("%q made %s on the host", c.cmd, c.made)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(b) != "hello x\n" {
			t.Errorf("f.txt was rewritten: %q", b)
		}
		res := tool(read, `sed -n 1p f.txt; awk '{print $2}' f.txt`)
		if strings.Contains(res.stdout, `"is_error":true`) || !strings.Contains(res.stdout, "hello x") {
			t.Errorf("a plain sed/awk read did not run: %s\nstderr: %s", res.stdout, res.stderr)
		}
		for _, cmd := range []string{`awk 'BEGIN{system("rm -rf " ENVIRON["HOME"])}'`, `sed -n "1e rm -rf ~" f.txt`, `tar c ~/.ssh`} {
			res := tool(bash, cmd)
			if !strings.Contains(res.stdout, `"is_error":true`) || strings.Contains(res.stdout, "SSH-KEY") {
				t.Errorf("%q ran with bash auto-approved: %s\nstderr: %s", cmd, res.stdout, res.stderr)
			}
		}
		if _, err := os.Stat(filepath.Join(home, "canary")); err != nil {
			t.Errorf("the home lost its files: %v", err)
		}
	})
}
