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

// TestRunAndExplainAgree loads one policy file (and an untrusted project
// file that tries to widen it) through `jail policy explain` and `jail run`,
// and checks that the run enforces what explain prints, under the same
// policy hash.
func TestRunAndExplainAgree(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		cfg := r.dir(t, "jail-it-cfg-")
		r.writeFile(t, filepath.Join(ws, "secret.txt"), "SECRET-IN-WORKSPACE")
		r.writeFile(t, filepath.Join(ws, "notes", "a.txt"), "keep")
		file := filepath.Join(cfg, "policy.toml")
		r.writeFile(t, file, fmt.Sprintf(`[sandbox]
hide = [%q]
protected = ["notes", ".git/hooks"]
env = ["PATH", "HOME", "KEEPME"]
[limits]
timeout = "20s"
[seccomp]
deny = ["uname"]
`, filepath.Join(ws, "secret.txt")))
		r.writeFile(t, filepath.Join(ws, ".jail", "policy.toml"), "[sandbox]\nrw = [\"/etc\"]\n")
		env := []string{"XDG_CONFIG_HOME=" + cfg, "KEEPME=kept", "DROPME=dropped"}

		ex := r.jail(t, call{dir: ws, env: env, args: []string{"policy", "explain", "--policy", file, "--json", "-w", ws}})
		mustExit(t, ex, 0)
		var explained struct {
			Hash        string `json:"policy_hash"`
			Confinement struct {
				Hide      []string `json:"hide"`
				Protected []string `json:"protected"`
				RW        []string `json:"rw"`
				Timeout   string   `json:"timeout"`
			} `json:"confinement"`
		}
		if err := json.Unmarshal([]byte(ex.stdout), &explained); err != nil {
			t.Fatalf("explain --json: %v\n%s", err, ex.stdout)
		}
		if !strings.Contains(ex.stderr, "sandbox.rw") || len(explained.Confinement.RW) != 0 {
			t.Fatalf("explain did not ignore and report the project file's widening: %s %+v", ex.stderr, explained.Confinement)
		}

		out := filepath.Join(cfg, "result.json")
		os.WriteFile(out, nil, 0o666)
		r.own(t, out)
		res := r.jail(t, call{dir: ws, env: env, args: []string{"run", "--policy", file, "--json", "--json-out", out, "--", "/bin/sh", "-c", `
cat secret.txt; echo
echo x > notes/a.txt && echo WROTE-PROTECTED
touch /etc/jail-widened && echo WROTE-ETC
uname >/dev/null 2>&1 && echo UNAME-RAN
echo "keep=$KEEPME drop=$DROPME"
exit 0`}})
		mustExit(t, res, 0)
		if !strings.Contains(res.stderr, "sandbox.rw") {
			t.Errorf("run did not report the ignored widening: %s", res.stderr)
		}
		for _, bad := range []string{"SECRET-IN-WORKSPACE", "WROTE-PROTECTED", "WROTE-ETC", "UNAME-RAN", "drop=dropped"} {
			if strings.Contains(res.stdout, bad) {
				t.Errorf("the run did not enforce the policy explain printed (%s):\n%s", bad, res.stdout)
			}
		}
		if !strings.Contains(res.stdout, "keep=kept") {
			t.Errorf("env pass-list not applied: %s", res.stdout)
		}
		b, _ := os.ReadFile(out)
		var result struct {
			Hash string `json:"policy_sha256"`
		}
		if err := json.Unmarshal(b, &result); err != nil || result.Hash == "" || result.Hash != explained.Hash {
			t.Fatalf("policy hash differs: run %q (%v), explain %q", result.Hash, err, explained.Hash)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "notes", "a.txt")); string(b) != "keep" {
			t.Fatal("protected file changed on the host")
		}

		// A policy that does not load never runs anything.
		bad := filepath.Join(cfg, "bad.toml")
		r.writeFile(t, bad, "[limits]\ntimeout = \"soon\"\n")
		res = r.jail(t, call{dir: ws, env: env, args: []string{"run", "--policy", bad, "--", "/bin/sh", "-c", "echo RAN"}})
		if res.code != 2 || strings.Contains(res.stdout, "RAN") || !strings.Contains(res.stderr, "bad.toml:2") {
			t.Fatalf("bad policy: exit %d stdout %q stderr %q", res.code, res.stdout, res.stderr)
		}
	})
}

// TestWorkspaceReadOnly: sandbox.workspace_ro (and the sandboxed access
// level, which sets it) mounts the workspace read-only for jail run.
func TestWorkspaceReadOnly(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		cfg := r.dir(t, "jail-it-cfg-")
		r.writeFile(t, filepath.Join(ws, "keep.txt"), "original")
		for name, body := range map[string]string{
			"key":   "[sandbox]\nworkspace_ro = true\n[audit]\nenabled = false\n",
			"level": "[access]\nlevel = \"sandboxed\"\n[audit]\nenabled = false\n",
		} {
			file := filepath.Join(cfg, name+".toml")
			r.writeFile(t, file, body)
			res := r.jail(t, call{dir: ws, args: []string{"run", "--policy", file, "--", "/bin/sh", "-c",
				"cat keep.txt; echo; echo changed > keep.txt && echo WROTE; touch new && echo CREATED; exit 0"}})
			mustExit(t, res, 0)
			if !strings.Contains(res.stdout, "original") || strings.Contains(res.stdout, "WROTE") || strings.Contains(res.stdout, "CREATED") {
				t.Errorf("%s: the workspace was writable or unreadable:\n%s%s", name, res.stdout, res.stderr)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "keep.txt")); string(b) != "original" {
				t.Fatalf("%s: keep.txt changed on the host: %q", name, b)
			}
			if _, err := os.Stat(filepath.Join(ws, "new")); err == nil {
				t.Fatalf("%s: a file was created in the workspace", name)
			}
		}
	})
}
