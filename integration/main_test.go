//go:build linux

// Package integration builds the jail binary once and attacks it as a user
// would: every escape class jail defends against is attempted for real, as
// root and as an unprivileged user, and judged by evidence on the host side
// (the canary file untouched, the listener silent, the host process alive).
package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testUser is the unprivileged account the suite runs jail as when it is
// started as root. It is created if missing.
const testUser = "jailtest"

// env is what TestMain prepared: the binary and the unprivileged identity.
type env struct {
	bin      string // world-executable jail binary
	root     bool   // the suite runs as root
	uid, gid int    // the unprivileged user's ids
}

var suite env

func TestMain(m *testing.M) {
	code, err := setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration setup:", err)
		os.Exit(1)
	}
	os.Exit(code(m))
}

func setup() (func(*testing.M) int, error) {
	dir, err := os.MkdirTemp("", "jail-it-bin-")
	if err != nil {
		return nil, err
	}
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "jail")
	build := exec.Command("go", "build", "-tags", "osusergo,netgo", "-ldflags", `-linkmode external -extldflags "-static"`, "-o", bin, "../cmd/jail")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build jail: %v\n%s", err, out)
	}
	suite.bin = bin
	suite.root = os.Geteuid() == 0
	if suite.root {
		if _, err := user.Lookup(testUser); err != nil {
			if out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/sh", testUser).CombinedOutput(); err != nil {
				return nil, fmt.Errorf("useradd %s: %v: %s", testUser, err, out)
			}
		}
		u, err := user.Lookup(testUser)
		if err != nil {
			return nil, err
		}
		// The desktop and browser tests run jailtest as a member of the docker group, as a
		// user of those tools would be (docs/container.md); other tests drop the group.
		// Only when it is not one yet: usermod rewrites /etc/group even then, and a change
		// under /etc makes every root run's plan afresh (docs/plan-cache.md), which each
		// suite started on the machine would do to the benchmarks running meanwhile.
		if g, err := user.LookupGroup("docker"); err == nil {
			if ids, _ := u.GroupIds(); !slices.Contains(ids, g.Gid) {
				if out, err := exec.Command("usermod", "-aG", "docker", testUser).CombinedOutput(); err != nil {
					return nil, fmt.Errorf("usermod -aG docker %s: %v: %s", testUser, err, out)
				}
			}
		}
		suite.uid, _ = strconv.Atoi(u.Uid)
		suite.gid, _ = strconv.Atoi(u.Gid)
	} else {
		suite.uid, suite.gid = os.Getuid(), os.Getgid()
	}
	return func(m *testing.M) int {
		defer os.RemoveAll(dir)
		code := m.Run()
		// The tests' workspaces are gone now; so go their persistent homes
		// (docs/home.md), which would otherwise pile up in the real homes.
		for _, r := range []runner{{name: "root"}, {name: "user", uid: suite.uid, gid: suite.gid}} {
			if r.uid == 0 && !suite.root {
				continue
			}
			cmd := exec.Command(bin, "clean", "--gone")
			cmd.Dir = "/"
			r.prepare(cmd)
			cmd.Run()
		}
		return code
	}, nil
}

// runner is one identity jail is run as, and the path `jail run` takes:
// planned by the Go supervisor, or repeated from the plan cache by the
// binary's constructor (cached).
type runner struct {
	name     string
	uid, gid int
	cached   bool
	// mustCache, on a cached runner, fails a `jail run` whose warm-up did
	// not store its plan: the case must take the plan cache's path
	// (set with requireCache() by tests whose workspaces the cache repeats,
	// such as a repository at the root).
	mustCache bool
	// groups are supplementary groups of an unprivileged runner (none unless a test sets
	// them: the Docker tests add the docker group).
	groups []uint32
}

// runners are root (when the suite is root) and the unprivileged user, so
// both the root path and the user-namespace path are attacked.
func runners(t *testing.T) []runner {
	var rs []runner
	if suite.root {
		rs = append(rs, runner{name: "root"})
	}
	return append(rs, runner{name: "user", uid: suite.uid, gid: suite.gid})
}

// forEach runs f once per identity.
func forEach(t *testing.T, f func(t *testing.T, r runner)) {
	for _, r := range runners(t) {
		t.Run(r.name, func(t *testing.T) { f(t, r) })
	}
}

// forEachPath runs f once per identity and launch path: every `jail run`
// of a cached runner first runs /bin/true with the same flags in the same
// directory, which stores the plan, and must then be repeated from the
// cache (docs/plan-cache.md). The escape tests attack both paths.
func forEachPath(t *testing.T, f func(t *testing.T, r runner)) {
	for _, r := range runners(t) {
		t.Run(r.name, func(t *testing.T) { f(t, r) })
		r.cached = true
		t.Run(r.name+"-cached", func(t *testing.T) { f(t, r) })
	}
}

// requireCache returns r, which requires every `jail run` of a cached runner
// to take the plan cache's path.
func (r runner) requireCache() runner {
	r.mustCache = true
	return r
}

// dir makes a fresh directory owned by r, readable by everyone.
func (r runner) dir(t *testing.T, pattern string) string {
	t.Helper()
	d, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	os.Chmod(d, 0o755)
	r.own(t, d)
	return d
}

// own gives path (recursively) to r.
func (r runner) own(t *testing.T, path string) {
	t.Helper()
	filepath.Walk(path, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			os.Lchown(p, r.uid, r.gid)
		}
		return nil
	})
}

// writeFile creates a file owned by r.
func (r runner) writeFile(t *testing.T, path, content string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	r.own(t, filepath.Dir(path))
}

// result is one finished jail invocation.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// call describes one invocation of the binary.
type call struct {
	args  []string
	dir   string
	env   []string // added to a minimal environment
	stdin string
	limit time.Duration // the test's own bound; default 60s
}

// prepare makes cmd run as r with a minimal, explicit environment (the
// identity's own HOME) plus extra.
func (r runner) prepare(cmd *exec.Cmd, extra ...string) {
	home := "/root"
	if r.uid != 0 {
		if u, err := user.LookupId(strconv.Itoa(r.uid)); err == nil {
			home = u.HomeDir
		}
	}
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "LANG=C.UTF-8"}, extra...)
	r.credential(cmd)
}

// credential makes cmd run as r (when r is not the suite's own identity).
func (r runner) credential(cmd *exec.Cmd) {
	if r.uid != os.Geteuid() {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(r.uid), Gid: uint32(r.gid), Groups: append([]uint32{}, r.groups...)}
	}
}

// jail runs the binary as r and returns what happened. The environment is
// minimal and explicit so a test sees exactly what it passes.
func (r runner) jail(t *testing.T, c call) result {
	t.Helper()
	if c.limit == 0 {
		c.limit = 60 * time.Second
	}
	// A test that sets JAIL_PLAN_CACHE itself takes the path it chose.
	isRun := len(c.args) > 0 && c.args[0] == "run" && !slices.ContainsFunc(c.env, func(e string) bool {
		return strings.HasPrefix(e, "JAIL_PLAN_CACHE=")
	})
	warmed := false
	if isRun && r.cached {
		warmed = r.warm(t, c)
		if !warmed && r.mustCache {
			t.Fatalf("jail %v: the warm-up run's plan was not stored: this case must take the plan cache's path (JAIL_PLAN_CACHE=trace says why)", c.args)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, suite.bin, c.args...)
	cmd.Dir = c.dir
	extra := c.env
	if isRun {
		mode := "JAIL_PLAN_CACHE=off"
		if r.cached {
			mode = "JAIL_PLAN_CACHE=trace"
		}
		extra = append(append([]string{}, c.env...), mode)
	}
	r.prepare(cmd, extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = strings.NewReader(c.stdin)
	start := time.Now()
	err := cmd.Run()
	res := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("jail %v did not finish within %s (the test's bound)\nstderr: %s", c.args, c.limit, res.stderr)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run jail: %v", err)
	}
	if isRun && r.cached {
		var trace []string
		res.stderr, trace = cutTrace(res.stderr)
		if warmed && !slices.Contains(trace, "jail: plan cache: used") {
			t.Fatalf("jail %v: the plan stored by the warm-up run was not used: %q", c.args, trace)
		}
	}
	return res
}

// warm runs /bin/true with c's flags, directory and environment, which
// stores the plan when the run can be cached, and reports whether it was.
func (r runner) warm(t *testing.T, c call) bool {
	t.Helper()
	i := slices.Index(c.args, "--")
	if i < 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, suite.bin, append(slices.Clone(c.args[:i+1]), "/bin/true")...)
	cmd.Dir = c.dir
	r.prepare(cmd, append(append([]string{}, c.env...), "JAIL_PLAN_CACHE=trace")...)
	out, err := cmd.CombinedOutput()
	return err == nil && (strings.Contains(string(out), "jail: plan cache: stored") || strings.Contains(string(out), "jail: plan cache: used"))
}

// cutTrace removes the plan cache's trace lines from stderr.
func cutTrace(stderr string) (rest string, trace []string) {
	var keep []string
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if strings.HasPrefix(l, "jail: plan cache: ") {
			trace = append(trace, strings.TrimSuffix(l, "\n"))
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, ""), trace
}

// sh runs a shell script inside the default sandbox with ws as workspace.
func (r runner) sh(t *testing.T, ws, script string, extra ...string) result {
	t.Helper()
	args := append([]string{"run", "-w", ws}, extra...)
	args = append(args, "--", "/bin/sh", "-c", script)
	return r.jail(t, call{args: args, dir: ws})
}

// mustExit fails the test unless res ended with code.
func mustExit(t *testing.T, res result, code int) {
	t.Helper()
	if res.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", res.code, code, res.stdout, res.stderr)
	}
}

// canary creates a secret file outside any workspace, owned by r, and
// returns its path; a test checks it is unchanged afterwards.
func (r runner) canary(t *testing.T) (path, content string) {
	t.Helper()
	d := r.dir(t, "jail-it-canary-")
	path = filepath.Join(d, "canary")
	content = "CANARY-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	r.writeFile(t, path, content)
	return path, content
}

func checkCanary(t *testing.T, path, content string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != content {
		t.Fatalf("host canary %s changed: %q, %v", path, b, err)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("host canary directory gained entries: %v", ents)
	}
}
