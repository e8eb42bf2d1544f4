//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// jailCommand matches a jail command line in a code block: jail and one of
// its commands at the start (after a "$ " prompt), after a pipe, or after
// another program's "--" (claude mcp add jail -- jail mcp ...). A line
// such as "jail run: ..." is jail's output, not a command.
var jailCommand = regexp.MustCompile(`(?:^(?:\$ )?|\| |-- )(jail (?:run|check|clean|policy|tool|serve|mcp|version)(?: .*)?)$`)

// readmeExamples returns the jail commands of the code blocks of README.md
// and docs/*.md, as printed (a trailing "# comment" cut), with whatever
// feeds them through a pipe. The inspector's line (npx ... --cli jail mcp
// ...) mixes its own flags with jail's; TestMCPInspector runs it.
func readmeExamples(t *testing.T) (examples []string, blocks map[string]string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	blocks = map[string]string{}
	for _, f := range append([]string{filepath.Join("..", "README.md")}, files...) {
		examples = append(examples, docExamples(t, f, blocks)...)
	}
	if len(examples) < 5 {
		t.Fatalf("found %d examples in README.md and docs: the extraction is broken", len(examples))
	}
	return examples, blocks
}

// docExamples returns the jail commands of one file's code blocks, and adds
// the blocks that name themselves to blocks.
func docExamples(t *testing.T, file string, blocks map[string]string) (examples []string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	in, name := false, ""
	var block strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			if in && name != "" {
				blocks[name] = block.String()
			}
			in, name = !in, ""
			block.Reset()
			continue
		}
		if !in {
			continue
		}
		// A block that names itself ("# ci.toml: ...") is a file an
		// example uses.
		if block.Len() == 0 {
			if f, _, ok := strings.Cut(strings.TrimPrefix(line, "# "), ":"); ok && strings.HasPrefix(line, "# ") && !strings.Contains(f, " ") {
				name = f
			}
		}
		block.WriteString(line + "\n")
		cmd, _, _ := strings.Cut(line, " # ") // the comment column
		cmd = strings.TrimSpace(cmd)
		m := jailCommand.FindStringSubmatch(cmd)
		if m == nil {
			continue
		}
		if pre, _, piped := strings.Cut(strings.TrimPrefix(cmd, "$ "), "| jail "); piped {
			m[1] = pre + "| " + m[1]
		}
		examples = append(examples, m[1])
	}
	return examples
}

// TestREADMEExamples runs every jail command README.md and docs/*.md show,
// as printed, against the built binary, as root and as an unprivileged
// user, in a project with the files the examples name (go.mod, a Makefile
// with a test target, the README's own ci.toml; /path/to/project and DIR
// are that project), under the default policy (XDG_CONFIG_HOME is empty)
// and with jail's homes and state in directories of the test's own (the
// examples include jail clean --all). jail must not refuse any (exit 2, or
// 125): an example that fails under the default policy teaches the wrong
// command (jail policy explain --agent claude did). The exit status of the
// command run inside is its own; a third-party program that is not
// installed here (claude) exits 127 and is reported.
func TestREADMEExamples(t *testing.T) {
	examples, blocks := readmeExamples(t)
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-readme-")
		r.writeFile(t, filepath.Join(ws, "go.mod"), "module example.com/readme\n\ngo 1.26\n")
		r.writeFile(t, filepath.Join(ws, "Makefile"), "test:\n\t@echo tests pass\n")
		for name, body := range blocks {
			r.writeFile(t, filepath.Join(ws, name), body)
		}
		bin := r.dir(t, "jail-it-readme-bin-")
		if err := os.Symlink(suite.bin, filepath.Join(bin, "jail")); err != nil {
			t.Fatal(err)
		}
		xdg := r.dir(t, "jail-it-readme-xdg-")
		for _, d := range []string{"config", "data", "state"} {
			if err := os.Mkdir(filepath.Join(xdg, d), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		r.own(t, xdg)
		for _, ex := range examples {
			line := strings.ReplaceAll(ex, "/path/to/project", ws)
			line = strings.ReplaceAll(line, "-w DIR", "-w "+ws)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			cmd := exec.CommandContext(ctx, "/bin/sh", "-c", line)
			cmd.Dir = ws
			r.prepare(cmd, "PATH="+bin+":/usr/local/bin:/usr/bin:/bin", "XDG_CONFIG_HOME="+filepath.Join(xdg, "config"),
				"XDG_DATA_HOME="+filepath.Join(xdg, "data"), "XDG_STATE_HOME="+filepath.Join(xdg, "state"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			timedOut := ctx.Err() != nil
			cancel()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			switch {
			case timedOut:
				t.Errorf("%s: did not finish within 60s\n%s", line, &stderr)
			case code == 127 && strings.Contains(stderr.String(), "exec ") && strings.Contains(stderr.String(), "no such file"):
				t.Logf("%s: its command is not installed here (127): %s", line, strings.TrimSpace(stderr.String()))
			case code == 2 || code >= 125:
				t.Errorf("README example %q: exit %d\n%s", ex, code, &stderr)
			}
		}
	})
}
