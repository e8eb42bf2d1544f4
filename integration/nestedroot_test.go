//go:build linux

package integration

// Protected names no walk of a run lists (docs/git.md, "The sweep" and "Several runs at
// once"; docs/workspace.md, "Below the workspace's root"): a nested run's root, which a run in
// a parent directory reaches below its walk's depth or in node_modules, and directories the
// sandbox makes under an old one below the walk's depth. Judged on the host once the runs
// ended: a direnv- or editor-style read of each protected name runs nothing (the marker stays
// absent), and what the sandbox put there is moved aside.

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestNestedRootReplaced: W runs in P/SUB while X, a run in P, renames W's placeholders (and,
// where the user had them, the user's .envrc and .vscode) away and writes its own there, as
// files or as symlinks to files and directories X made outside W. SUB is five levels down
// (below X's walk) or in node_modules (where X's sweep does not look). After both runs,
// nothing the host reads at W's protected names (following symlinks, as direnv and editors
// do) runs X's payload.
func TestNestedRootReplaced(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		for _, sub := range []string{"a/b/c/d/ws", "node_modules/ws"} {
			for _, had := range []bool{false, true} {
				for _, link := range []bool{false, true} {
					name := strings.ReplaceAll(sub, "/", "_") + map[bool]string{false: "-placeholders", true: "-users"}[had] + map[bool]string{false: "", true: "-symlinks"}[link]
					t.Run(name, func(t *testing.T) { nestedRootReplaced(t, r, sub, had, link) })
				}
			}
		}
	})
}

// hostReadsFollowing is hostReads through symlinks: direnv reads .envrc, and an editor
// .vscode, wherever the name leads.
func (r runner) hostReadsFollowing(t *testing.T, dir string) {
	t.Helper()
	for _, f := range []string{".envrc", ".vscode/tasks.json", ".vscode/settings.json"} {
		p := filepath.Join(dir, f)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			cmd := exec.Command("/bin/sh", p)
			r.prepare(cmd)
			cmd.Run()
		}
	}
}

func nestedRootReplaced(t *testing.T, r runner, sub string, had, link bool) {
	p := r.dir(t, "jail-it-ws-")
	mdir := r.dir(t, "jail-it-mark-")
	marker := filepath.Join(mdir, "MARK")
	w := filepath.Join(p, sub)
	r.writeFile(t, filepath.Join(w, "f"), "hi\n")
	if had {
		r.writeFile(t, filepath.Join(w, ".envrc"), "echo user\n")
		r.writeFile(t, filepath.Join(w, ".vscode", "tasks.json"), "echo user\n")
	}
	r.own(t, p)
	waitW := r.background(t, call{dir: w, args: []string{"run", "-w", w, "--", "/bin/sh", "-c",
		"touch .up-w; while [ ! -e .go-w ]; do sleep 0.05; done"}})
	waitFile(t, filepath.Join(w, ".up-w"))
	payload := "touch " + marker + "\n"
	script := `cd ` + w + ` || exit 9
mv .envrc .envrc.old 2>/dev/null; printf '` + payload + `' > .envrc || exit 3
mv .vscode .vs.old 2>/dev/null; mkdir -p .vscode && printf '` + payload + `' > .vscode/tasks.json || exit 4
echo ATTACKED`
	if link {
		// The payload lies outside W (in P, X's workspace): W's end sees only a symlink at
		// each name.
		script = `mkdir -p ` + p + `/evil/vs && printf '` + payload + `' > ` + p + `/evil/envrc && printf '` + payload + `' > ` + p + `/evil/vs/tasks.json || exit 2
cd ` + w + ` || exit 9
mv .envrc .envrc.old 2>/dev/null; ln -s ` + p + `/evil/envrc .envrc || exit 3
mv .vscode .vs.old 2>/dev/null; ln -s ../` + strings.Repeat("../", strings.Count(sub, "/")) + `evil/vs .vscode || exit 4
echo ATTACKED`
	}
	x := r.sh(t, p, script)
	r.writeFile(t, filepath.Join(w, ".go-w"), "")
	wres := waitW()
	if !strings.Contains(x.stdout, "ATTACKED") {
		t.Fatalf("the outer run could not replace the inner run's names, so nothing was attacked: %d\n%s\n%s", x.code, x.stdout, x.stderr)
	}
	r.hostReadsFollowing(t, w)
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the host's read of %s ran the outer sandbox's payload after both runs\nW: %s\nX: %s", w, wres.stderr, x.stderr)
	}
	for _, f := range []string{".envrc", ".vscode"} {
		if fi, err := os.Lstat(filepath.Join(w, f)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			t.Errorf("%s is still X's symlink after both runs\nW: %s\nX: %s", f, wres.stderr, x.stderr)
		}
	}
	for _, f := range []string{".envrc", ".vscode/tasks.json"} {
		if b, err := os.ReadFile(filepath.Join(w, f)); err == nil && strings.Contains(string(b), marker) {
			t.Errorf("%s holds the outer sandbox's %q after both runs\nW: %s\nX: %s", f, b, wres.stderr, x.stderr)
		}
	}
	if !strings.Contains(wres.stderr+x.stderr, "moved aside") {
		t.Errorf("no line names what was moved aside\nW: %s\nX: %s", wres.stderr, x.stderr)
	}
}

// TestDeepNewDirProtectedNames: a/b/c/d/e/f exists at launch (below the walk's depth); the
// sandbox makes a/b/c/d/e/f/g/h and writes .claude/settings.json, .vscode/tasks.json and .envrc
// there, and .vscode/tasks.json in the old a/b/c/d/e/f. After the run each is moved aside, in a
// plain directory and in a repository.
func TestDeepNewDirProtectedNames(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		for _, repo := range []bool{false, true} {
			t.Run(map[bool]string{false: "plain", true: "repo"}[repo], func(t *testing.T) {
				ws := r.dir(t, "jail-it-ws-")
				mdir := r.dir(t, "jail-it-mark-")
				marker := filepath.Join(mdir, "MARK")
				if err := os.MkdirAll(filepath.Join(ws, "a/b/c/d/e/f"), 0o755); err != nil {
					t.Fatal(err)
				}
				r.writeFile(t, filepath.Join(ws, "a/b/c/d/e/f/keep"), "old\n")
				r.own(t, ws)
				if repo {
					r.gitRepo(t, ws)
				}
				payload := "touch " + marker + "\n"
				res := r.sh(t, ws, `set -e
mkdir -p a/b/c/d/e/f/g/h && cd a/b/c/d/e/f/g/h
mkdir .claude .vscode
printf '`+payload+`' > .claude/settings.json
printf '`+payload+`' > .vscode/tasks.json
printf '`+payload+`' > .envrc
cd ../.. && mkdir .vscode && printf '`+payload+`' > .vscode/tasks.json
echo WROTE`)
				mustExit(t, res, 0)
				if !strings.Contains(res.stdout, "WROTE") {
					t.Fatalf("the sandbox wrote nothing: %s\n%s", res.stdout, res.stderr)
				}
				for _, d := range []string{"a/b/c/d/e/f/g/h", "a/b/c/d/e/f"} {
					r.hostReads(t, filepath.Join(ws, d))
					if b, err := os.ReadFile(filepath.Join(ws, d, ".claude", "settings.json")); err == nil {
						t.Errorf("%s/.claude/settings.json is live after the run: %q\n%s", d, b, res.stderr)
					}
				}
				if _, err := os.Stat(marker); err == nil {
					t.Errorf("the host's read ran the sandbox's payload after the run:\n%s", res.stderr)
				}
				for _, f := range []string{"a/b/c/d/e/f/g/h/.envrc", "a/b/c/d/e/f/g/h/.vscode", "a/b/c/d/e/f/g/h/.claude", "a/b/c/d/e/f/.vscode"} {
					if _, err := os.Lstat(filepath.Join(ws, f)); err == nil {
						t.Errorf("%s stays after the run:\n%s", f, res.stderr)
					}
				}
				if !strings.Contains(res.stderr, "moved aside") {
					t.Errorf("no line names what was moved aside:\n%s", res.stderr)
				}
				if b, err := os.ReadFile(filepath.Join(ws, "a/b/c/d/e/f/keep")); err != nil || string(b) != "old\n" {
					t.Errorf("the user's file in the old directory: %q %v", b, err)
				}
			})
		}
	})
}

// TestRWRepositoryProtected: a --rw tree that is a repository gets the workspace's git
// protection (docs/git.md, "--rw trees"): the sandbox's hooks, core.fsmonitor, a repository it
// makes below the tree's root and its editor files there never run on the host, .git cannot be
// moved aside, and its commit reaches the host. A --rw repository that holds the workspace
// cannot have a view of its own and is named at launch, on every run.
func TestRWRepositoryProtected(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		other := r.dir(t, "jail-it-ws-")
		repo := r.dir(t, "jail-it-rw-")
		r.writeFile(t, filepath.Join(repo, ".envrc"), "echo user\n")
		r.writeFile(t, filepath.Join(repo, ".vscode", "tasks.json"), "{}\n")
		r.own(t, repo)
		r.gitRepo(t, repo)
		before := namesIn(t, repo)
		marker, mk := r.marker(t, other)
		pay := other + "/.payload"
		res := r.jail(t, call{dir: other, args: []string{"run", "-w", other, "--rw", repo, "--", "/bin/sh", "-c", mk + `
cd ` + repo + ` || exit 9
git -c user.name=s -c user.email=s@example.com commit -q --allow-empty -m inside || exit 4
for h in pre-commit post-checkout post-commit; do cp ` + pay + ` .git/hooks/$h; done
git config core.fsmonitor ` + pay + `
git config core.hooksPath ` + other + `
mv .git .g 2>/dev/null && echo MOVED
printf '` + "echo ran >>" + marker + `\n' > .envrc 2>/dev/null && echo ENVRC
printf '{}' > .vscode/tasks.json 2>/dev/null && echo TASKS
mkdir .claude 2>/dev/null && echo CLAUDE
git init -q sub && git -C sub config core.fsmonitor ` + pay + ` && cp ` + pay + ` sub/.git/hooks/post-checkout
echo DONE`}})
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "DONE") {
			t.Fatalf("the sandbox did not run its script: %s\n%s", res.stdout, res.stderr)
		}
		for _, w := range []string{"MOVED", "ENVRC", "TASKS", "CLAUDE"} {
			if strings.Contains(res.stdout, w) {
				t.Errorf("the sandbox could %s in the --rw repository:\n%s\n%s", w, res.stdout, res.stderr)
			}
		}
		if strings.Contains(res.stderr, "is a git repository") {
			t.Errorf("a --rw repository with a view of its own is named as unprotected:\n%s", res.stderr)
		}
		r.judge(t, repo, marker)
		noHooks(t, filepath.Join(repo, ".git"))
		for _, d := range []string{repo, filepath.Join(repo, "sub")} {
			if out, err := r.hostGit(t, d, "status"); err != nil {
				t.Errorf("host git status in %s: %v\n%s", d, err, out)
			}
		}
		planted(t, marker, "the host's git in the --rw repository and its new subdirectory repository")
		if out, err := r.hostGit(t, repo, "log", "--format=%s", "main"); err != nil || !strings.Contains(out, "inside") {
			t.Errorf("the commit made inside the --rw repository did not reach the host: %v\n%s\n%s", err, out, res.stderr)
		}
		if b, err := os.ReadFile(filepath.Join(repo, ".envrc")); err != nil || string(b) != "echo user\n" {
			t.Errorf(".envrc of the --rw repository changed: %q %v", b, err)
		}
		after := slices.DeleteFunc(namesIn(t, repo), func(n string) bool { return n == "sub" || n == "file.txt" })
		before = slices.DeleteFunc(before, func(n string) bool { return n == "file.txt" })
		if !slices.Equal(before, after) {
			t.Errorf("the --rw repository's root changed: %v before, %v after\n%s", before, after, res.stderr)
		}

		// A --rw repository that holds the workspace is named, with its protected names and the
		// way to protect it.
		outer := r.dir(t, "jail-it-rw-")
		r.writeFile(t, filepath.Join(outer, ".envrc"), "echo user\n")
		r.writeFile(t, filepath.Join(outer, ".vscode", "tasks.json"), "{}\n")
		inner := filepath.Join(outer, "inner")
		r.writeFile(t, filepath.Join(inner, "f"), "x\n")
		r.own(t, outer)
		r.gitRepo(t, outer)
		for i := 0; i < 2; i++ {
			res := r.jail(t, call{dir: inner, args: []string{"run", "-w", inner, "--rw", outer, "--", "/bin/true"}})
			mustExit(t, res, 0)
			if !strings.Contains(res.stderr, "WARNING: --rw "+outer+" is a git repository") || !strings.Contains(res.stderr, ".envrc, .vscode") ||
				!strings.Contains(res.stderr, "jail run -w "+outer) {
				t.Errorf("run %d: no line names the --rw repository and the way to protect it:\n%s", i, res.stderr)
			}
		}
		// Nor one that holds the caller's home (its sweep would reach the persistent homes).
		dots := r.dir(t, "jail-it-rw-")
		r.writeFile(t, filepath.Join(dots, "home", ".profile"), "\n")
		r.own(t, dots)
		r.gitRepo(t, dots)
		res = r.jail(t, call{dir: other, env: []string{"HOME=" + filepath.Join(dots, "home")}, args: []string{"run", "-w", other, "--rw", dots, "--", "/bin/sh", "-c", "ls -A " + dots}})
		mustExit(t, res, 0)
		if !strings.Contains(res.stderr, "WARNING: --rw "+dots+" is a git repository") || strings.Contains(res.stdout, ".envrc") {
			t.Errorf("a --rw repository that holds the home got a view of its own, or was not named:\n%s\n%s", res.stdout, res.stderr)
		}
		// A --rw tree that is no repository says nothing of the kind.
		plain := r.dir(t, "jail-it-rw-")
		res = r.jail(t, call{dir: other, args: []string{"run", "-w", other, "--rw", plain, "--", "/bin/true"}})
		mustExit(t, res, 0)
		if strings.Contains(res.stderr, "is a git repository") {
			t.Errorf("a plain --rw tree is named as a repository:\n%s", res.stderr)
		}
	})
}

// TestNestedRootSwapRace: W runs in P/a/b/c/d/ws, below the walk of X, a run in P. X replaces
// the user's .envrc with a symlink to a payload outside the workspace and, while W ends,
// exchanges .envrc with a second symlink (to a directory outside) with
// renameat2(RENAME_EXCHANGE) in a loop. W's end claims and moves aside through the directory
// it holds, never following a link: what lies outside is untouched, and once both runs ended
// the host's read of .envrc (following links) runs nothing.
func TestNestedRootSwapRace(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		p := r.dir(t, "jail-it-ws-")
		out := r.dir(t, "jail-it-home-")
		mdir := r.dir(t, "jail-it-mark-")
		marker := filepath.Join(mdir, "MARK")
		payload := "touch " + marker + "\n"
		r.writeFile(t, filepath.Join(out, "envrc"), payload)
		r.writeFile(t, filepath.Join(out, "dir", "keep"), "CANARY\n")
		w := filepath.Join(p, "a/b/c/d/ws")
		r.writeFile(t, filepath.Join(w, ".envrc"), "echo user\n")
		r.own(t, p)
		waitW := r.background(t, call{dir: w, args: []string{"run", "-w", w, "--", "/bin/sh", "-c",
			"touch .up-w; while [ ! -e .go-w ]; do sleep 0.05; done"}})
		waitFile(t, filepath.Join(w, ".up-w"))
		wait := r.attacker(t, p, "cd "+w+" && mv .envrc .envrc.old && ln -s "+out+"/envrc .envrc && ln -s "+out+"/dir decoy && touch .up-x",
			".envrc", "decoy", 3, "--ro", out)
		waitFile(t, filepath.Join(w, ".up-x"))
		time.Sleep(300 * time.Millisecond)
		r.writeFile(t, filepath.Join(w, ".go-w"), "")
		wres := waitW()
		x := wait()
		if !strings.Contains(x, "swaps") {
			t.Fatalf("the attacker did not run: %s", x)
		}
		mustExit(t, wres, 0)
		if b, err := os.ReadFile(filepath.Join(out, "envrc")); err != nil || string(b) != payload {
			t.Errorf("jail changed or removed the file outside the workspace: %q %v\nW: %s\nX: %s", b, err, wres.stderr, x)
		}
		if b, err := os.ReadFile(filepath.Join(out, "dir", "keep")); err != nil || string(b) != "CANARY\n" {
			t.Errorf("jail changed or removed the directory outside the workspace: %q %v\nW: %s\nX: %s", b, err, wres.stderr, x)
		}
		r.hostReadsFollowing(t, w)
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the host's read of .envrc ran the payload after both runs: %v\nW: %s\nX: %s", namesIn(t, w), wres.stderr, x)
		}
		if b, err := os.ReadFile(filepath.Join(w, ".envrc.old")); err != nil || string(b) != "echo user\n" {
			t.Errorf("the user's .envrc (renamed by X) is gone: %q %v", b, err)
		}
	})
}

// TestNestedRootReplacedHeld: W1 runs in P/node_modules/ws (where X's sweep does not look); X, a run in P, replaces the user's
// .envrc there with a symlink to its payload; W2 then starts in ws (it takes the symlink for the
// user's) and outlasts W1. W1's end cannot move the symlink aside while W2 holds the workspace,
// so it leaves it to the last run out: once every run ended, the host's read of .envrc
// (following links) runs nothing.
func TestNestedRootReplacedHeld(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		p := r.dir(t, "jail-it-ws-")
		mdir := r.dir(t, "jail-it-mark-")
		marker := filepath.Join(mdir, "MARK")
		w := filepath.Join(p, "node_modules/ws")
		r.writeFile(t, filepath.Join(w, ".envrc"), "echo user\n")
		r.writeFile(t, filepath.Join(p, "evil"), "touch "+marker+"\n")
		r.own(t, p)
		wait1 := r.background(t, call{dir: w, args: []string{"run", "-w", w, "--", "/bin/sh", "-c",
			"touch .up-1; while [ ! -e .go-1 ]; do sleep 0.05; done"}})
		waitFile(t, filepath.Join(w, ".up-1"))
		x := r.sh(t, p, "cd "+w+" && mv .envrc .envrc.old && ln -s "+p+"/evil .envrc && echo ATTACKED")
		if !strings.Contains(x.stdout, "ATTACKED") {
			t.Fatalf("the outer run could not replace .envrc: %d\n%s\n%s", x.code, x.stdout, x.stderr)
		}
		wait2 := r.background(t, call{dir: w, env: []string{"JAIL_PLAN_CACHE=off"}, args: []string{"run", "-w", w, "--", "/bin/sh", "-c",
			"touch .up-2; while [ ! -e .go-2 ]; do sleep 0.05; done"}})
		waitFile(t, filepath.Join(w, ".up-2"))
		r.writeFile(t, filepath.Join(w, ".go-1"), "")
		res1 := wait1()
		r.writeFile(t, filepath.Join(w, ".go-2"), "")
		res2 := wait2()
		mustExit(t, res1, 0)
		mustExit(t, res2, 0)
		t.Logf("W1: %s\nW2: %s\nX: %s", res1.stderr, res2.stderr, x.stderr)
		r.hostReadsFollowing(t, w)
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the host's read of .envrc ran the payload after every run ended: %v\nW1: %s\nW2: %s", namesIn(t, w), res1.stderr, res2.stderr)
		}
		if fi, err := os.Lstat(filepath.Join(w, ".envrc")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			t.Errorf(".envrc is still the outer sandbox's symlink after every run ended\nW1: %s\nW2: %s", res1.stderr, res2.stderr)
		}
	})
}
