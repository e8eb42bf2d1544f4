//go:build linux

package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/internal/testutil"
)

// ownCgroupV1 is the test process's cgroup directory in a v1 hierarchy.
func ownCgroupV1(t *testing.T, hier string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.SplitN(line, ":", 3); len(f) == 3 && f[1] == hier {
			return filepath.Join("/sys/fs/cgroup", hier, f[2])
		}
	}
	t.Skipf("requires a cgroup v1 %s hierarchy (not in /proc/self/cgroup)", hier)
	return ""
}

// TestLimitsFollowTheCallersCgroup: the sandbox's cgroups are made beneath the
// caller's own (a CI job's limits bind it too), wherever the caller is now, on
// both launch paths: a plan stored in one cgroup and replayed in another must
// not use the old place, nor the old method when the new place allows a better
// one (a subtree delegated to the user: rlimits then, cgroup v1 now). The
// caller's cgroup allows 40 processes; the sandbox's own bound is the default
// 4096; 60 background sleeps must fail to fork.
func TestLimitsFollowTheCallersCgroup(t *testing.T) {
	if !suite.root {
		t.Skip("requires root to make the caller's cgroups")
	}
	mem, pids := ownCgroupV1(t, "memory"), ownCgroupV1(t, "pids")
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		name := fmt.Sprintf("jail-it-caller-%d-%s", os.Getpid(), r.name)
		var dirs []string
		for _, base := range []string{mem, pids} {
			d := filepath.Join(base, name)
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Skipf("cannot make a cgroup beneath %s: %v", base, err)
			}
			dirs = append(dirs, d)
			t.Cleanup(func() {
				// What jail left (a cached run's cgroup goes with the
				// next run) and the caller's cgroup itself.
				testutil.Eventually(10*time.Second, func() bool {
					subs, _ := filepath.Glob(filepath.Join(d, "jail-*"))
					for _, s := range subs {
						os.Remove(s)
					}
					err := os.Remove(d)
					return err == nil || os.IsNotExist(err)
				})
			})
			// Delegated to the unprivileged user as a v1 subtree is.
			for _, f := range []string{"", "cgroup.procs", "tasks"} {
				os.Chown(filepath.Join(d, f), r.uid, r.gid)
			}
		}
		if err := os.WriteFile(filepath.Join(dirs[1], "pids.max"), []byte("40"), 0); err != nil {
			t.Fatal(err)
		}
		script := `i=0; while [ $i -lt 60 ]; do sleep 2 & i=$((i+1)); done; wait`
		run := func(inside bool) result {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			args := []string{"-c", `exec "$@"`, "sh", suite.bin, "run", "--json", "--", "/bin/sh", "-c", script}
			if inside {
				args[1] = fmt.Sprintf(`echo $$ >%s/cgroup.procs && echo $$ >%s/cgroup.procs && exec "$@"`, dirs[0], dirs[1])
			}
			cmd := exec.CommandContext(ctx, "/bin/sh", args...)
			cmd.Dir = ws
			r.prepare(cmd, "JAIL_PLAN_CACHE=trace")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("jail did not finish: %s", errb.String())
			}
			res := result{stdout: out.String(), stderr: errb.String()}
			if ee, ok := err.(*exec.ExitError); ok {
				res.code = ee.ExitCode()
			}
			return res
		}
		// Outside: the plan is stored, then replayed; the sleeps fork.
		for range 2 {
			mustExit(t, run(false), 0)
		}
		res := run(true)
		if res.code == 0 || !strings.Contains(res.stderr, "fork") {
			t.Fatalf("in a cgroup of 40 processes, 60 forked (the sandbox's cgroup is not beneath the caller's): exit %d\n%s", res.code, res.stderr)
		}
		if !strings.Contains(res.stderr, `"limits":"cgroup1"`) {
			t.Errorf("a cgroup v1 subtree the caller may write is not used:\n%s", res.stderr)
		}
		if r.uid != 0 && !strings.Contains(res.stderr, "jail: plan cache: not used: the limits would be enforced another way now") {
			t.Errorf("the stored plan's rlimits were replayed where a cgroup can be made:\n%s", res.stderr)
		}
		// And the plan made there is replayed there.
		res = run(true)
		if res.code == 0 || !strings.Contains(res.stderr, "jail: plan cache: used") {
			t.Errorf("the plan made in the caller's cgroup is not replayed there (or the sleeps forked): exit %d\n%s", res.code, res.stderr)
		}
	})
}
