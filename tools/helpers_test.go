//go:build linux

package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fixture is a workspace in a temporary directory with the core tools.
type fixture struct {
	t    *testing.T
	dir  string
	ws   *Workspace
	reg  *Registry
	bash sync.Mutex
	sess Session
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	reg, err := NewRegistry(Core(Options{BashMaxTimeout: time.Minute})...)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, dir: dir, ws: ws, reg: reg}
}

// call validates args and runs the tool in this process, as a worker does.
func (f *fixture) call(tool string, args any) Result {
	f.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		f.t.Fatal(err)
	}
	tl, ok := f.reg.Lookup(tool)
	if !ok {
		f.t.Fatalf("no tool %s", tool)
	}
	if err := tl.Validate(raw); err != nil {
		return errorf("%v", err)
	}
	timeout := tl.Timeout
	if tool == "bash" {
		timeout = BashTimeout(raw, time.Minute)
	}
	res, sess := runCall(context.Background(), f.reg, f.ws, &f.bash, workerRequest{ID: 1, Tool: tool, Args: raw, TimeoutMS: timeout.Milliseconds(), Session: &f.sess})
	if sess != nil {
		f.sess = *sess
	}
	return res
}

func (f *fixture) write(rel, content string) string {
	f.t.Helper()
	p := filepath.Join(f.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) read(rel string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, rel))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func mustOK(t *testing.T, r Result) Result {
	t.Helper()
	if r.IsError {
		t.Fatalf("unexpected error result: %s", r.Content)
	}
	return r
}

func mustErr(t *testing.T, r Result, want string) Result {
	t.Helper()
	if !r.IsError || !contains(r.Content, want) {
		t.Fatalf("want an error result containing %q, got is_error=%v %q", want, r.IsError, r.Content)
	}
	return r
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
