package gitstate

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// newRepoElsewhere runs script (git init or clone, commits, planted
// state) in a private directory standing in for the sandbox's, and returns
// that directory's .git and the host workspace with an empty .git.
func adoptNewFrom(t *testing.T, script string, opt Options) (*testRepo, *Report, string) {
	t.Helper()
	requireGit(t)
	root := t.TempDir()
	priv := filepath.Join(root, "private")
	host := &testRepo{t: t, dir: filepath.Join(root, "ws"), home: filepath.Join(root, "home")}
	for _, d := range []string{priv, host.home, filepath.Join(host.dir, ".git")} {
		os.MkdirAll(d, 0o755)
	}
	cmd := exec.Command("sh", "-c", "set -e\n"+script)
	cmd.Dir, cmd.Env = priv, append(gitEnv(host.home), "M="+filepath.Join(root, "markers"))
	os.MkdirAll(filepath.Join(root, "markers"), 0o755)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	// What the planted programs did inside the "sandbox" does not count.
	os.RemoveAll(filepath.Join(root, "markers"))
	os.MkdirAll(filepath.Join(root, "markers"), 0o755)
	rep, err := AdoptNew(openDirFD(t, host.gitdir()), openDirFD(t, filepath.Join(priv, ".git")), opt)
	if err != nil {
		t.Fatalf("AdoptNew: %v", err)
	}
	t.Logf("report: %s", rep.Summary())
	return host, rep, filepath.Join(root, "markers")
}

func TestAdoptNewInitAndCommit(t *testing.T) {
	host, rep, markers := adoptNewFrom(t, `git init -q -b trunk
git config user.email agent@example.com
git config core.fsmonitor 'touch $M/fsmonitor; false'
git config alias.st '!touch $M/alias'
git config core.hooksPath hooksdir
mkdir hooksdir && printf '#!/bin/sh\ntouch $M/hookspath\n' > hooksdir/pre-commit && chmod +x hooksdir/pre-commit
echo one > a && git add a && git commit -q -m one --no-verify
echo two > b && git add b && git commit -q -m two --no-verify
git branch side HEAD~1
git tag -a -m tag v1
git pack-refs --all
git checkout -q -b work
printf '#!/bin/sh\ntouch $M/hook\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit
echo '*' > .git/info/exclude
cp a b hooksdir/pre-commit "$OLDPWD" 2>/dev/null || true`, Options{})
	// The work tree is the user's; the test copies the private one's files
	// to stand for it.
	for _, f := range []string{"a", "b"} {
		host.write(f, map[string]string{"a": "one\n", "b": "two\n"}[f])
	}
	os.MkdirAll(filepath.Join(host.dir, "hooksdir"), 0o755)
	os.WriteFile(filepath.Join(host.dir, "hooksdir/pre-commit"), []byte("#!/bin/sh\ntouch "+markers+"/hookspath\n"), 0o755)
	if got := host.git("log", "--format=%s", "trunk"); got != "two\none\n" {
		t.Fatalf("host log: %q", got)
	}
	if got := strings.TrimSpace(host.git("symbolic-ref", "HEAD")); got != "refs/heads/work" {
		t.Errorf("HEAD = %q", got)
	}
	if host.rev("v1^{commit}") != host.rev("trunk") || host.rev("side") != host.rev("trunk~1") {
		t.Errorf("tag or packed branch wrong")
	}
	if got := host.git("status", "--porcelain"); got != "?? hooksdir/\n" {
		t.Errorf("status: %q (the index should be adopted)", got)
	}
	if v := strings.TrimSpace(host.git("config", "user.email")); v != "agent@example.com" {
		t.Errorf("user.email = %q", v)
	}
	for _, want := range []string{"core.fsmonitor", "alias.st", "core.hookspath", "hooks/pre-commit", "info/exclude"} {
		if !contains(rep.Dropped, want) {
			t.Errorf("%s not dropped", want)
		}
	}
	host.fsck()
	host.tryGit("st")
	host.write("c", "c")
	host.git("add", "c")
	host.git("commit", "-q", "-m", "host")
	ents, _ := os.ReadDir(markers)
	for _, e := range ents {
		t.Errorf("planted %s ran on the host", e.Name())
	}
	cfg, _ := os.ReadFile(filepath.Join(host.gitdir(), "config"))
	t.Logf("config:\n%s", cfg)
	if _, err := os.Stat(filepath.Join(host.gitdir(), "hooks")); err == nil {
		t.Error("hooks/ exists on the host")
	}
}

func TestAdoptNewClone(t *testing.T) {
	src := newRepo(t)
	for i := 0; i < 3; i++ {
		src.write("f", strings.Repeat("x", i))
		src.git("add", "f")
		src.git("commit", "-qm", "c")
	}
	src.git("tag", "t1")
	url := "file://" + src.dir
	host, rep, _ := adoptNewFrom(t, `git clone -q --no-local `+url+` . && git clone -q --depth 1 `+url+` ../shallow`, Options{})
	if host.rev("main") != src.rev("main") || host.rev("t1") != src.rev("t1") || host.rev("origin/main") != src.rev("main") {
		t.Fatalf("refs differ: %+v", rep)
	}
	if !contains(rep.Dropped, "config remote.origin.url") {
		t.Errorf("a file:// remote adopted: %+v", rep)
	}
	host.fsck()
}

func TestAdoptNewSHA256AndShallow(t *testing.T) {
	src := newRepo(t, "--object-format=sha256")
	src.write("f", "1")
	src.git("add", "f")
	src.git("commit", "-qm", "2")
	host, rep, _ := adoptNewFrom(t, `git clone -q --depth 1 file://`+src.dir+` .`, Options{})
	if got := strings.TrimSpace(host.git("rev-parse", "--show-object-format")); got != "sha256" {
		t.Fatalf("object format %q: %+v", got, rep)
	}
	if !contains(rep.Applied, "shallow") || host.rev("main") != src.rev("main") {
		t.Fatalf("shallow clone not adopted: %+v", rep)
	}
	if got := host.git("log", "--format=%s"); got != "2\n" {
		t.Errorf("log: %q", got)
	}
	host.fsck()
}

func TestAdoptNewRefusesNonEmpty(t *testing.T) {
	r := newRepo(t)
	src := t.TempDir()
	if _, err := AdoptNew(openDirFD(t, r.gitdir()), openDirFD(t, src), Options{}); err == nil {
		t.Fatal("adopted into a non-empty git directory")
	}
}
