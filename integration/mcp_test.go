//go:build linux

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// inspectorPackage is the third-party MCP client: an implementation jail's
// authors did not write, driven in its CLI mode.
const inspectorPackage = "@modelcontextprotocol/inspector"

// installInspector installs the MCP Inspector with npm into a fresh
// directory every runner can read and returns its CLI. A machine without
// npm or without a reachable registry skips, saying which.
func installInspector(t *testing.T) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("requires npm (scripts/deps.sh installs nodejs and npm): not on PATH")
	}
	dir, err := os.MkdirTemp("", "jail-it-inspector-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755) // the unprivileged runner executes it too
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error", inspectorPackage)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		reg, _ := exec.Command(npm, "config", "get", "registry").Output()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		t.Skipf("cannot install %s from %s (npm install: %v): %s", inspectorPackage, strings.TrimSpace(string(reg)), err, lines[len(lines)-1])
	}
	cli := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("npm installed %s without its mcp-inspector command: %v", inspectorPackage, err)
	}
	return cli
}

// inspect runs the Inspector's CLI as r against `jail mcp -w ws ARGS`, with
// the inspector's own flags after, and decodes its JSON output.
func (r runner) inspect(t *testing.T, cli, ws string, jailArgs []string, method ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--cli", suite.bin, "mcp", "-w", ws}, jailArgs...)
	args = append(args, method...)
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Dir = ws
	r.prepare(cmd)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("mcp-inspector %v: %v\nstdout: %s\nstderr: %s", method, err, out.String(), errb.String())
	}
	var res map[string]any
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("mcp-inspector %v printed no JSON: %v\nstdout: %s\nstderr: %s", method, err, out.String(), errb.String())
	}
	return res
}

// resultText joins a tools/call result's text blocks.
func resultText(res map[string]any) string {
	var b strings.Builder
	content, _ := res["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok && m["type"] == "text" {
			s, _ := m["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// TestMCPInspector drives jail mcp with the MCP Inspector's CLI (installed
// from the npm registry), as root and as a user: the tool list with its
// hints, calls that read, write and run inside the sandbox, an escape
// attempt, and a tool the policy denies.
func TestMCPInspector(t *testing.T) {
	cli := installInspector(t)
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-mcp-")
		cfg := r.dir(t, "jail-it-mcpcfg-")
		r.writeFile(t, filepath.Join(ws, "hello.txt"), "hello from the host\n")
		pol, audit := r.toolPolicy(t, cfg, "[agents.coder]\nrole = \"build\"\n[agents.reader]\nrole = \"build\"\ndenies = [\"bash\", \"write\", \"edit\"]\n")
		coder := []string{"--policy", pol, "--agent", "coder"}

		list := r.inspect(t, cli, ws, coder, "--method", "tools/list")
		tools := map[string]map[string]any{}
		for _, x := range list["tools"].([]any) {
			tl := x.(map[string]any)
			tools[tl["name"].(string)] = tl
		}
		for _, name := range []string{"read", "ls", "glob", "grep", "write", "edit", "bash"} {
			if tools[name] == nil {
				t.Fatalf("tools/list lacks %s: %v", name, list)
			}
		}
		if ann, _ := tools["read"]["annotations"].(map[string]any); ann["readOnlyHint"] != true || tools["read"]["title"] == "" {
			t.Fatalf("read declaration: %v", tools["read"])
		}
		if ann, _ := tools["bash"]["annotations"].(map[string]any); ann["destructiveHint"] != true || ann["readOnlyHint"] != false {
			t.Fatalf("bash declaration: %v", tools["bash"])
		}

		res := r.inspect(t, cli, ws, coder, "--method", "tools/call", "--tool-name", "read", "--tool-arg", "path=hello.txt")
		if res["isError"] == true || !strings.Contains(resultText(res), "hello from the host") {
			t.Fatalf("read: %v", res)
		}
		res = r.inspect(t, cli, ws, coder, "--method", "tools/call", "--tool-name", "bash", "--tool-arg", "command=echo made > made.txt; id -u; hostname")
		if res["isError"] == true || !strings.Contains(resultText(res), "jail") {
			t.Fatalf("bash: %v", res)
		}
		st, err := os.Stat(filepath.Join(ws, "made.txt"))
		if err != nil || st.Sys().(*syscall.Stat_t).Uid != uint32(r.uid) {
			t.Fatalf("bash's file on the host: %v %v", st, err)
		}
		res = r.inspect(t, cli, ws, coder, "--method", "tools/call", "--tool-name", "read", "--tool-arg", "path=../../../../etc/passwd")
		if res["isError"] != true || !strings.Contains(resultText(res), "outside the workspace") {
			t.Fatalf("escape: %v", res)
		}

		// The reader agent: bash is not listed, and calling it anyway is
		// an error result with the policy's reason.
		reader := []string{"--policy", pol, "--agent", "reader"}
		list = r.inspect(t, cli, ws, reader, "--method", "tools/list")
		for _, x := range list["tools"].([]any) {
			if name := x.(map[string]any)["name"]; name == "bash" || name == "write" {
				t.Fatalf("reader lists %s", name)
			}
		}
		res = r.inspect(t, cli, ws, reader, "--method", "tools/call", "--tool-name", "bash", "--tool-arg", "command=touch pwned")
		if res["isError"] != true || !strings.Contains(resultText(res), "denied") {
			t.Fatalf("denied bash: %v", res)
		}
		if _, err := os.Stat(filepath.Join(ws, "pwned")); err == nil {
			t.Fatal("a denied bash call ran")
		}
		b, _ := os.ReadFile(audit)
		if !bytes.Contains(b, []byte(`"denied"`)) || !bytes.Contains(b, []byte(`"coder"`)) {
			t.Fatalf("audit log lacks the calls: %s", b)
		}
	})
}
