//go:build linux

package integration

// Runs at once in one workspace, and in nested workspaces (docs/git.md, "Several runs at
// once"): what one run's end does on the host tree (moving aside what appeared while it ran,
// reducing a repository, removing a placeholder) must never take away a mount another live
// run's sandbox holds. The kernel lets a rename in one mount namespace move a dentry that is
// a mountpoint in another, and that mount goes with it: the other sandbox would then write
// through the freed name onto the host. Judged on the host once both runs ended: the host's
// git and a direnv- or editor-style read of each protected name run nothing (a marker file
// stays absent), and the tree holds what the user made, with what the sandboxes made moved
// aside or reduced.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// background starts `jail` as r in the background, as r.jail runs it, and returns a function
// that waits for it.
func (r runner) background(t *testing.T, c call) (wait func() result) {
	t.Helper()
	mode := "JAIL_PLAN_CACHE=off"
	warmed := false
	if r.cached {
		mode = "JAIL_PLAN_CACHE=trace"
		warmed = r.warm(t, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	cmd := exec.CommandContext(ctx, suite.bin, c.args...)
	cmd.Dir = c.dir
	r.prepare(cmd, append(append([]string{}, c.env...), mode)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	return func() result {
		defer cancel()
		err := cmd.Wait()
		res := result{stdout: out.String(), stderr: errb.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			res.code = ee.ExitCode()
		}
		var trace []string
		res.stderr, trace = cutTrace(res.stderr)
		if warmed && !slices.Contains(trace, "jail: plan cache: used") {
			t.Errorf("jail %v: the plan stored by the warm-up run was not used: %q", c.args, trace)
		}
		return res
	}
}

// hostReads does, on the host, what direnv and an editor do with the protected names of
// dir: each regular file among .envrc, .vscode/tasks.json and .vscode/settings.json is run
// as a shell script (the payloads the tests plant write the marker when run).
func (r runner) hostReads(t *testing.T, dir string) {
	t.Helper()
	for _, f := range []string{".envrc", ".vscode/tasks.json", ".vscode/settings.json"} {
		p := filepath.Join(dir, f)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			cmd := exec.Command("/bin/sh", p)
			r.prepare(cmd)
			cmd.Run()
		}
	}
}

// namesIn lists dir on the host, without the tests' handshake files.
func namesIn(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".up-") && !strings.HasPrefix(e.Name(), ".go-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// overlap runs A in aws and B in bws so that B starts while A runs, A ends while B still
// runs, and B then runs bScript: aScript runs in A before it signals that it is up, mid
// on the host between A's start and B's. It returns both results.
func (r runner) overlap(t *testing.T, aws, bws, aScript, bScript string, mid func()) (a, b result) {
	t.Helper()
	return overlapAs(t, r, r, aws, bws, aScript, bScript, mid)
}

// overlapAs is overlap with A run as ra and B as rb.
func overlapAs(t *testing.T, ra, rb runner, aws, bws, aScript, bScript string, mid func()) (a, b result) {
	t.Helper()
	waitA := ra.background(t, call{dir: aws, args: []string{"run", "-w", aws, "--", "/bin/sh", "-c",
		aScript + "; touch .up-a; while [ ! -e .go-a ]; do sleep 0.05; done"}})
	waitFile(t, filepath.Join(aws, ".up-a"))
	if mid != nil {
		mid()
	}
	waitB := rb.background(t, call{dir: bws, args: []string{"run", "-w", bws, "--", "/bin/sh", "-c",
		"touch .up-b; while [ ! -e .go-b ]; do sleep 0.05; done; " + bScript}})
	waitFile(t, filepath.Join(bws, ".up-b"))
	ra.writeFile(t, filepath.Join(aws, ".go-a"), "")
	a = waitA()
	rb.writeFile(t, filepath.Join(bws, ".go-b"), "")
	b = waitB()
	return a, b
}

// TestRunEndKeepsOthersHoldsAcrossUsers: the placeholder case of TestRunEndKeepsOthersHolds
// with A and B of different users in one tree (root's run in the workspace and the user's in
// a subdirectory of it, and the other way round): the locks are the objects', so neither
// end takes the other's mounts away.
func TestRunEndKeepsOthersHoldsAcrossUsers(t *testing.T) {
	rs := runners(t)
	if len(rs) < 2 {
		t.Skip("requires root and an unprivileged user")
	}
	for _, pair := range [][2]runner{{rs[0], rs[1]}, {rs[1], rs[0]}} {
		ra, rb := pair[0], pair[1]
		t.Run(ra.name+"-then-"+rb.name, func(t *testing.T) {
			ws := rb.dir(t, "jail-it-ws-")
			os.Chmod(ws, 0o777)
			sub := filepath.Join(ws, "sub")
			rb.writeFile(t, filepath.Join(sub, "f"), "x\n")
			marker := filepath.Join(rb.dir(t, "jail-it-marker-"), "ran")
			payload := "echo ran >>" + marker
			a, b := overlapAs(t, ra, rb, ws, sub, "true",
				"echo '"+payload+"' >.envrc; mkdir -p .vscode; echo '"+payload+"' >.vscode/tasks.json; true", nil)
			mustExit(t, a, 0)
			mustExit(t, b, 0)
			rb.hostReads(t, sub)
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("B's .envrc or tasks.json reached the host and ran\nA: %s\nB: %s", a.stderr, b.stderr)
			}
			if got := namesIn(t, sub); !slices.Equal(got, []string{"f"}) {
				t.Fatalf("the subdirectory after both runs holds %v, want [f]\nA: %s\nB: %s", got, a.stderr, b.stderr)
			}
		})
	}
}

// TestRunEndKeepsOthersHolds: A ends while B holds each kind of protection, then B writes
// through the name: a placeholder (.envrc, .vscode) of B in a subdirectory workspace, a
// read-only bind of a protected directory that existed at B's launch (made by A's sandbox),
// the git view of a repository made on the host while A ran (B's workspace root, and a
// nested repository of B's workspace). Before the fix, A's end moved each aside and B's
// mount went with it: B's .envrc, tasks.json, hook and core.fsmonitor reached the host
// unreduced.
func TestRunEndKeepsOthersHolds(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		t.Run("placeholder", func(t *testing.T) {
			ws := r.dir(t, "jail-it-ws-")
			sub := filepath.Join(ws, "sub")
			r.writeFile(t, filepath.Join(sub, "f"), "x\n")
			marker := filepath.Join(r.dir(t, "jail-it-marker-"), "ran")
			payload := "echo ran >>" + marker
			a, b := r.overlap(t, ws, sub, "true",
				"echo '"+payload+"' >.envrc; mkdir -p .vscode; echo '"+payload+"' >.vscode/tasks.json; ls -A", nil)
			mustExit(t, a, 0)
			if !strings.Contains(a.stderr, "another live run") {
				t.Errorf("A's end did not say what it left to B:\n%s", a.stderr)
			}
			r.hostReads(t, sub)
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("B's .envrc or tasks.json reached the host and ran\nA: %s\nB: %s%s", a.stderr, b.stdout, b.stderr)
			}
			if got := namesIn(t, sub); !slices.Equal(got, []string{"f"}) {
				t.Fatalf("the subdirectory after both runs holds %v, want [f]\nA: %s\nB: %s%s", got, a.stderr, b.stdout, b.stderr)
			}
			if got := namesIn(t, ws); !slices.Equal(got, []string{"sub"}) {
				t.Fatalf("the workspace after both runs holds %v, want [sub]", got)
			}
		})
		t.Run("protected directory", func(t *testing.T) {
			ws := r.dir(t, "jail-it-ws-")
			pkg := filepath.Join(ws, "pkg")
			r.writeFile(t, filepath.Join(pkg, "f"), "x\n")
			marker := filepath.Join(r.dir(t, "jail-it-marker-"), "ran")
			payload := "echo ran >>" + marker
			// A's sandbox makes pkg/.vscode; B starts with it there (read-only in B).
			a, b := r.overlap(t, ws, ws, "mkdir pkg/.vscode && echo '"+payload+"' >pkg/.vscode/tasks.json || { touch .up-a; exit 3; }",
				"mkdir -p pkg/.vscode; echo '"+payload+"' >pkg/.vscode/settings.json; echo '"+payload+"' >pkg/.vscode/tasks.json; true", nil)
			mustExit(t, a, 0)
			mustExit(t, b, 0)
			r.hostReads(t, pkg)
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("a tasks.json or settings.json the sandboxes wrote stayed live and ran\nA: %s\nB: %s", a.stderr, b.stderr)
			}
			for _, n := range namesIn(t, pkg) {
				if n != "f" && !strings.HasPrefix(n, ".vscode.jail-") {
					t.Fatalf("pkg after both runs holds %s: %v\nA: %s\nB: %s", n, namesIn(t, pkg), a.stderr, b.stderr)
				}
			}
		})
		for _, nested := range []bool{false, true} {
			name := "git view of the workspace"
			if nested {
				name = "nested repository"
			}
			t.Run(name, func(t *testing.T) {
				needGit(t)
				ws := r.dir(t, "jail-it-ws-")
				sub := filepath.Join(ws, "sub")
				os.Mkdir(sub, 0o755)
				r.own(t, sub)
				marker := filepath.Join(r.dir(t, "jail-it-marker-"), "ran")
				bws, in := sub, "."
				if nested {
					bws, in = ws, "sub"
				}
				payload := filepath.Join(bws, ".payload")
				plant := "printf '#!/bin/sh\\necho ran >>" + marker + "\\n' >" + payload + "; chmod +x " + payload + "; mkdir -p " + in + "/.git/hooks; " +
					"cp " + payload + " " + in + "/.git/hooks/pre-commit; git -C " + in + " config core.fsmonitor " + payload + "; true"
				// The user makes sub a repository while A runs (A's end takes it for its
				// sandbox's and reduces it); B starts with it there and sees it as its git view.
				a, b := r.overlap(t, ws, bws, "true", plant, func() { r.gitRepo(t, sub) })
				mustExit(t, a, 0)
				mustExit(t, b, 0)
				r.judge(t, sub, marker)
				if out, err := r.hostGit(t, sub, "log", "--oneline"); err != nil || !strings.Contains(out, "first") {
					t.Fatalf("the repository lost its history: %v\n%s", err, out)
				}
			})
		}
	})
}

// TestCleanSkipsLiveHome: jail clean does not remove the persistent home of a sandbox that
// is running; it names the live run, and removes the home once the run has ended.
func TestCleanSkipsLiveHome(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		r.cleanAfter(t, ws)
		wait := r.background(t, call{dir: ws, args: []string{"run", "-w", ws, "--", "/bin/sh", "-c",
			`echo kept >"$HOME/entry"; touch .up-a; while [ ! -e .go-a ]; do sleep 0.05; done; cat "$HOME/entry"`}})
		waitFile(t, filepath.Join(ws, ".up-a"))
		h := r.sandboxHomes(t)[ws]
		if h == "" {
			t.Fatalf("no persistent home for %s", ws)
		}
		res := r.jail(t, call{dir: ws, args: []string{"clean", "-w", ws}})
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "skipped") || !strings.Contains(res.stdout, "in use by a live run (pid ") || !strings.Contains(res.stdout, "jail run") {
			t.Fatalf("jail clean of a live run's home:\n%s%s", res.stdout, res.stderr)
		}
		if _, err := os.Stat(filepath.Join(h, "entry")); err != nil {
			t.Fatalf("jail clean removed a live run's home: %v", err)
		}
		r.writeFile(t, filepath.Join(ws, ".go-a"), "")
		a := wait()
		mustExit(t, a, 0)
		if strings.TrimSpace(a.stdout) != "kept" {
			t.Fatalf("the run lost its home while it ran: %q %s", a.stdout, a.stderr)
		}
		res = r.jail(t, call{dir: ws, args: []string{"clean", "-w", ws}})
		mustExit(t, res, 0)
		if _, err := os.Lstat(h); !os.IsNotExist(err) {
			t.Fatalf("jail clean after the run left %s: %v\n%s", h, err, res.stdout)
		}
	})
}

// TestRunEndSwapRace: while run A ends, a second sandbox (started before sub/.vscode existed,
// so it has no mount there) swaps sub/.vscode, which A's sandbox made with a payload and run B
// holds read-only, with a decoy directory, with renameat2(RENAME_EXCHANGE) in a loop; then B
// writes sub/.vscode/tasks.json through the name. Whatever the swaps did to B's mount and to
// A's claim of the name, once every run has ended no .vscode stands in sub and nothing runs
// on the host: B's end takes an object at a name it found at launch for new when it is not the
// one it found, and A's end left what B held to B.
func TestRunEndSwapRace(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		sub := filepath.Join(ws, "sub")
		r.writeFile(t, filepath.Join(sub, "decoy", "readme"), "decoy\n")
		r.own(t, ws)
		marker := filepath.Join(r.dir(t, "jail-it-marker-"), "ran")
		payload := "echo ran >>" + marker
		waitC := r.attacker(t, ws, "touch .up-c; while [ ! -e .go-c ]; do sleep 0.05; done", "sub/.vscode", "sub/decoy", 3)
		waitFile(t, filepath.Join(ws, ".up-c"))
		waitA := r.background(t, call{dir: ws, args: []string{"run", "-w", ws, "--", "/bin/sh", "-c",
			"mkdir sub/.vscode && echo '" + payload + "' >sub/.vscode/tasks.json || { touch .up-a; exit 3; }; touch .up-a; while [ ! -e .go-a ]; do sleep 0.05; done"}})
		waitFile(t, filepath.Join(ws, ".up-a"))
		waitB := r.background(t, call{dir: ws, args: []string{"run", "-w", ws, "--", "/bin/sh", "-c",
			"touch .up-b; while [ ! -e .go-b ]; do sleep 0.05; done; for i in 1 2 3 4 5 6 7 8 9 10; do mkdir -p sub/.vscode 2>/dev/null; echo '" +
				payload + "' >sub/.vscode/tasks.json 2>/dev/null; echo '" + payload + "' >sub/.vscode/settings.json 2>/dev/null; sleep 0.02; done; true"}})
		waitFile(t, filepath.Join(ws, ".up-b"))
		r.writeFile(t, filepath.Join(ws, ".go-c"), "")
		time.Sleep(500 * time.Millisecond)
		r.writeFile(t, filepath.Join(ws, ".go-a"), "")
		a := waitA()
		out := waitC()
		if !strings.Contains(out, "swaps") {
			t.Fatalf("the attacker did not run: %s", out)
		}
		r.writeFile(t, filepath.Join(ws, ".go-b"), "")
		b := waitB()
		mustExit(t, a, 0)
		mustExit(t, b, 0)
		r.hostReads(t, sub)
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("a tasks.json or settings.json the sandboxes wrote stayed at sub/.vscode and ran\nA: %s\nB: %s\nC: %s", a.stderr, b.stderr, out)
		}
		if _, err := os.Lstat(filepath.Join(sub, ".vscode")); err == nil {
			t.Fatalf("sub/.vscode stands after every run ended: %v\nA: %s\nB: %s\nC: %s", namesIn(t, sub), a.stderr, b.stderr, out)
		}
		t.Logf("A: %sB: %sC: %s", a.stderr, b.stderr, out)
	})
}
