//go:build linux

package container

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// The tests run real containers on the engine scripts/dockerd.sh starts, from the base image
// make images builds. Without either they skip with the reason, except under
// JAIL_REQUIRE_DOCKER=1 (make test, CI), where they fail.

func TestMain(m *testing.M) {
	// Inside a container this test binary is jail's init (bound at BinaryPath), as the jail
	// binary is in production.
	if len(os.Args) > 1 && os.Args[1] == InitCommand {
		os.Exit(InitMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "__start-and-hang" {
		os.Exit(startAndHang())
	}
	os.Exit(m.Run())
}

func testImage() string {
	if v := os.Getenv("JAIL_BASE_IMAGE"); v != "" {
		return v
	}
	return "jail-base:bookworm"
}

// needEngine returns a connected engine, or skips (fails under JAIL_REQUIRE_DOCKER=1) with
// the reason.
func needEngine(t *testing.T) *Engine {
	t.Helper()
	e, err := Connect()
	if err == nil {
		err = e.ImageReady(context.Background(), testImage())
	}
	if err != nil {
		if os.Getenv("JAIL_REQUIRE_DOCKER") == "1" {
			t.Fatalf("JAIL_REQUIRE_DOCKER=1 and Docker is not usable: %v", err)
		}
		t.Skipf("requires a Docker engine with %s (scripts/dockerd.sh, make images): %v", testImage(), err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func testLimits() Limits {
	return Limits{Memory: 256 << 20, CPUs: 1, Pids: 128, TmpfsMax: 16 << 20}
}

func shSpec(script string) Spec {
	return Spec{Image: testImage(), Kind: "test", Cmd: []string{"/bin/sh", "-c", script}, Limits: testLimits(),
		Grace: time.Second, Env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}}
}

// run starts spec, writes in to its stdin and closes it, and returns its stdout and exit code.
func run(t *testing.T, e *Engine, spec Spec, in string) (string, int64, *Container) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := e.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var out []byte
	read := make(chan struct{})
	go func() {
		out, _ = io.ReadAll(c.Stdout())
		close(read)
	}()
	if in != "" {
		if _, err := io.WriteString(c, in); err != nil {
			t.Fatal(err)
		}
	}
	c.CloseStdin()
	select {
	case <-read:
	case <-ctx.Done():
		t.Fatalf("the container's output did not end: %v", ctx.Err())
	}
	return string(out), c.ExitCode(), c
}

func TestHardening(t *testing.T) {
	e := needEngine(t)
	script := `
id -u; id -g
grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status
ls /sys/class/net | tr '\n' ' '; echo
touch /etc/jail-probe 2>/dev/null && echo root-writable || echo root-readonly
touch /tmp/probe && echo tmp-writable
grep ' /tmp ' /proc/mounts
cat /proc/1/cmdline | tr '\0' ' '; echo
cat /proc/$$/cmdline | tr '\0' ' '; echo
ps -o pid= -o args= -p $PPID 2>/dev/null || cat /proc/$PPID/cmdline | tr '\0' ' '; echo
unshare -U -r true && echo userns-ok
`
	out, code, c := run(t, e, shSpec(script), "")
	if code != 0 {
		t.Fatalf("exit %d: %s\nstderr: %s", code, out, c.StderrTail())
	}
	want := []string{
		"CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2",
		"root-readonly", "tmp-writable", "noexec", "size=16384k", "userns-ok",
	}
	if os.Getuid() == 0 {
		want = append(want, "65534\n65534\n")
	} else {
		want = append(want, fmt.Sprintf("%d\n", os.Getuid()))
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("missing %q in:\n%s", w, out)
		}
	}
	// Only loopback: no interface to reach anything.
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "lo") && strings.TrimSpace(line) != "lo" {
			t.Errorf("network interfaces besides lo: %q", line)
		}
	}
	if !strings.Contains(out, BinaryPath+" "+InitCommand) {
		t.Errorf("jail's init is not the command's parent:\n%s", out)
	}

	// Docker's default profile alone: no user namespace.
	spec := shSpec("unshare -U -r true && echo userns-ok || echo userns-refused")
	spec.DefaultSeccomp = true
	if out, _, _ := run(t, e, spec, ""); !strings.Contains(out, "userns-refused") {
		t.Errorf("under Docker's default profile alone: %q", out)
	}
}

func TestInspectedConfig(t *testing.T) {
	e := needEngine(t)
	ctx := context.Background()
	c, err := e.Start(ctx, shSpec("read x"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go io.Copy(io.Discard, c.Stdout())
	in, err := e.cli.ContainerInspect(ctx, c.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := in.Container.HostConfig
	cfg := in.Container.Config
	checks := []struct {
		what string
		ok   bool
	}{
		{"network none", h.NetworkMode == "none"},
		{"no port bindings", len(h.PortBindings) == 0 && len(cfg.ExposedPorts) == 0},
		{"cap drop ALL", len(h.CapDrop) == 1 && h.CapDrop[0] == "ALL" && len(h.CapAdd) == 0},
		{"read-only root", h.ReadonlyRootfs},
		{"not privileged", !h.Privileged},
		// jail's init is pid 1 itself (InitMain says why Docker's is not used).
		{"no Docker init", h.Init == nil || !*h.Init},
		{"memory", h.Memory == 256<<20 && h.MemorySwap == 256<<20},
		{"cpus", h.NanoCPUs == 1e9},
		{"pids", h.PidsLimit != nil && *h.PidsLimit == 128},
		{"auto remove", h.AutoRemove},
		{"no log driver", h.LogConfig.Type == "none"},
		{"stdin once", cfg.StdinOnce && cfg.OpenStdin},
		{"label", cfg.Labels[LabelManaged] == "1" && cfg.Labels[LabelOwner] == fmt.Sprint(os.Getuid()) && cfg.Labels[LabelSupervisor] == e.self.String()},
		{"non-root user", cfg.User != "" && !strings.HasPrefix(cfg.User, "0:")},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("%s: not so (host config %+v, config %+v)", ch.what, h, cfg)
		}
	}
	var nnp, seccomp bool
	for _, o := range h.SecurityOpt {
		nnp = nnp || o == "no-new-privileges:true"
		seccomp = seccomp || strings.HasPrefix(o, "seccomp=")
	}
	if !nnp || !seccomp {
		t.Errorf("security options %v: want no-new-privileges and jail's seccomp profile", h.SecurityOpt)
	}
}

// TestStdinEndsContainer: a command that ignores its stdin still ends, and the container
// goes, once the supervisor's stdin closes: jail's init kills it after the grace.
func TestStdinEndsContainer(t *testing.T) {
	e := needEngine(t)
	c, err := e.Start(context.Background(), shSpec("trap '' TERM HUP; sleep 600"))
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, c.Stdout())
	start := time.Now()
	c.CloseStdin()
	select {
	case <-c.Exited():
	case <-time.After(20 * time.Second):
		t.Fatal("the container still runs 20 s after its stdin closed")
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("ended after %v, before the 1 s grace", took)
	}
	if !strings.Contains(c.StderrTail(), "did not exit within") {
		t.Errorf("stderr %q: want init's kill notice", c.StderrTail())
	}
	waitGone(t, e, c.ID, 20*time.Second)
}

// startAndHang is the helper of TestKilledSupervisor: it starts a container whose command
// ignores stdin and signals, prints its id, and waits to be killed.
func startAndHang() int {
	e, err := Connect()
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	spec := shSpec("trap '' TERM HUP INT; sleep 600")
	spec.Grace = 2 * time.Second
	c, err := e.Start(context.Background(), spec)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	go io.Copy(io.Discard, c.Stdout())
	fmt.Println("id", c.ID)
	select {}
}

// TestKilledSupervisor: kill -9 of the process that holds a container leaves no container
// once the grace has passed.
func TestKilledSupervisor(t *testing.T) {
	e := needEngine(t)
	cmd := exec.Command(os.Args[0], "__start-and-hang")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "id ") {
		cmd.Process.Kill()
		t.Fatalf("helper: %q %v", line, err)
	}
	id := strings.TrimSpace(strings.TrimPrefix(line, "id "))
	if _, err := e.cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{}); err != nil {
		t.Fatalf("the container is not there while its supervisor runs: %v", err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed := time.Now()
	waitGone(t, e, id, 30*time.Second)
	t.Logf("container gone %v after kill -9 of its supervisor (grace 2 s)", time.Since(killed).Round(100*time.Millisecond))
}

func waitGone(t *testing.T, e *Engine, id string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		_, err := e.cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
		if err != nil && strings.Contains(strings.ToLower(err.Error()), "no such container") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %.12s still exists %v later (inspect: %v)", id, within, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestRemoveOrphans: a container of jail's whose supervisor is gone is removed; one whose
// supervisor runs is kept.
func TestRemoveOrphans(t *testing.T) {
	e := needEngine(t)
	dead := &Engine{cli: e.cli, Logger: e.Logger,
		self: supervisor{boot: e.self.boot, pid: e.self.pid, start: e.self.start + 1}}
	ctx := context.Background()
	orphan, err := dead.Start(ctx, shSpec("read x"))
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, orphan.Stdout())
	defer orphan.Close()
	live, err := e.Start(ctx, shSpec("read x"))
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, live.Stdout())
	defer live.Close()
	n, err := e.RemoveOrphans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n < 1 {
		t.Errorf("removed %d orphans, want at least 1", n)
	}
	waitGone(t, e, orphan.ID, 20*time.Second)
	if _, err := e.cli.ContainerInspect(ctx, live.ID, client.ContainerInspectOptions{}); err != nil {
		t.Errorf("the live supervisor's container was removed: %v", err)
	}
}

func TestLogRecord(t *testing.T) {
	e := needEngine(t)
	var mu sync.Mutex
	var recs []LogRecord
	e.Audit = func(r LogRecord) {
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
	}
	for _, raw := range []bool{false, true} {
		e.RawLogs, e.LogBytes = raw, 64
		spec := shSpec(`cat; for i in $(seq 1 50); do echo "line $i of stderr" >&2; done; exit 3`)
		spec.IDs = Correlation{Agent: "a1", Session: "s1", Task: "t1", Request: "r1"}
		out, code, c := run(t, e, spec, "")
		c.Serving(Correlation{Agent: "a1", Session: "s1", Task: "t1", Request: "r2"})
		if out != "" || code != 3 {
			t.Fatalf("out %q code %d", out, code)
		}
		c.Close()
	}
	// The first run wrote nothing to stdin: add a run that echoes stdin to stdout.
	e.RawLogs = false
	out, _, c := run(t, e, shSpec("cat"), "hello\n")
	c.Close()
	if out != "hello\n" {
		t.Errorf("stdout %q, want the stdin echoed", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3: %+v", len(recs), recs)
	}
	for i, r := range recs[:2] {
		b, _ := json.Marshal(r)
		if r.Type != "container" || r.Agent != "a1" || r.Session != "s1" || r.Task != "t1" || strings.Join(r.Requests, ",") != "r1,r2" ||
			r.ExitCode != 3 || r.End != "exited" || r.StderrLines != 50 || r.StderrBytes < 500 {
			t.Errorf("record %d: %s", i, b)
		}
		raw := i == 1
		if (r.Stderr != "") != raw {
			t.Errorf("record %d (raw_logs %v): stderr %q", i, raw, r.Stderr)
		}
		if raw && (len(r.Stderr) != 64 || !strings.HasSuffix(r.Stderr, "line 50 of stderr\n") || r.StderrCut != r.StderrBytes-64) {
			t.Errorf("raw record: stderr %q cut %d of %d", r.Stderr, r.StderrCut, r.StderrBytes)
		}
	}
	if recs[2].StdoutBytes != 6 {
		t.Errorf("stdout bytes %d, want 6", recs[2].StdoutBytes)
	}
}

func TestUnavailable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	e, err := Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	err = e.Ping(context.Background())
	var ue *UnavailableError
	if !errors.As(err, &ue) {
		t.Fatalf("got %v, want an UnavailableError", err)
	}
	for _, w := range []string{"Docker is not reachable at unix:///nonexistent/docker.sock", "scripts/dockerd.sh", "every other tool works"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
	if _, err := e.Start(context.Background(), shSpec("true")); !errors.As(err, &ue) {
		t.Errorf("Start: %v, want an UnavailableError", err)
	}
}

func TestSeccompProfile(t *testing.T) {
	p, err := SeccompProfile()
	if err != nil {
		t.Fatal(err)
	}
	type rules struct {
		DefaultAction string `json:"defaultAction"`
		Syscalls      []struct {
			Names    []string `json:"names"`
			Action   string   `json:"action"`
			Args     []any    `json:"args"`
			Includes struct {
				Caps []string `json:"caps"`
			} `json:"includes"`
		} `json:"syscalls"`
	}
	// unconditional is what a container with no capability may call whatever the arguments.
	unconditional := func(b []byte) map[string]bool {
		var prof rules
		if err := json.Unmarshal(b, &prof); err != nil {
			t.Fatal(err)
		}
		if prof.DefaultAction != "SCMP_ACT_ERRNO" {
			t.Errorf("default action %s", prof.DefaultAction)
		}
		allowed := map[string]bool{}
		for _, s := range prof.Syscalls {
			if s.Action == "SCMP_ACT_ALLOW" && len(s.Args) == 0 && len(s.Includes.Caps) == 0 {
				for _, n := range s.Names {
					allowed[n] = true
				}
			}
		}
		return allowed
	}
	got, base := unconditional([]byte(p)), unconditional(dockerDefault)
	want := map[string]bool{}
	for n := range base {
		want[n] = true
	}
	for _, a := range SeccompAdditions() {
		for _, n := range a.Names {
			if base[n] {
				t.Errorf("%s is in Docker's default already", n)
			}
			want[n] = true
		}
	}
	for n := range got {
		if !want[n] {
			t.Errorf("%s is allowed beyond Docker's default and the additions", n)
		}
	}
	for n := range want {
		if !got[n] {
			t.Errorf("%s is not allowed", n)
		}
	}
	for _, n := range []string{"mount", "bpf", "setns", "pivot_root", "keyctl", "perf_event_open", "open_by_handle_at"} {
		if got[n] {
			t.Errorf("%s is allowed unconditionally", n)
		}
	}
}

// TestNegotiatedVersion: the client speaks the engine's API version (1.41 for Debian 12's
// Docker 20.10), not its own newest.
func TestNegotiatedVersion(t *testing.T) {
	e := needEngine(t)
	v, err := e.cli.ServerVersion(context.Background(), client.ServerVersionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.cli.ClientVersion(); got != v.APIVersion && got != client.MaxAPIVersion {
		t.Errorf("client speaks API %s to an engine of API %s", got, v.APIVersion)
	}
	t.Logf("engine %s, API %s, client speaks %s", v.Version, v.APIVersion, e.cli.ClientVersion())
}
