package gitstate

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// gitEnv is a minimal environment for the real git: no system or global
// config, a fixed identity.
func gitEnv(home string) []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"LC_ALL=C",
		// No detached background gc racing the test's clean-up.
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=gc.auto", "GIT_CONFIG_VALUE_0=0",
	}
}

func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("requires the git binary on PATH")
	}
}

// testRepo is a repository made with the real git in a temporary
// directory, and the host-side environment to run git in it.
type testRepo struct {
	t    *testing.T
	dir  string // work tree
	home string
}

func newRepo(t *testing.T, initArgs ...string) *testRepo {
	t.Helper()
	requireGit(t)
	root := t.TempDir()
	r := &testRepo{t: t, dir: filepath.Join(root, "repo"), home: filepath.Join(root, "home")}
	for _, d := range []string{r.dir, r.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.git(append([]string{"init", "-q", "-b", "main"}, initArgs...)...)
	r.write("README", "hello\n")
	r.git("add", "README")
	r.git("commit", "-q", "-m", "first")
	return r
}

func (r *testRepo) gitdir() string { return filepath.Join(r.dir, ".git") }

func (r *testRepo) write(name, content string) {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// git runs the real git on the host side and returns its stdout; a
// failure fails the test.
func (r *testRepo) git(args ...string) string {
	r.t.Helper()
	out, err := r.tryGit(args...)
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (r *testRepo) tryGit(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = gitEnv(r.home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String() + errb.String(), err
	}
	return out.String(), nil
}

func (r *testRepo) rev(ref string) string {
	r.t.Helper()
	out, _ := r.tryGit("rev-parse", "--verify", "-q", ref)
	return strings.TrimSpace(out)
}

// openDirFD opens a directory as a held descriptor for the test's life.
func openDirFD(t *testing.T, path string) int {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// overlay is a sandbox's view of a repository's git directory the way jail
// gives it: an overlayfs with the host's .git as the read-only lower, a
// private upper (objects/ included). Each run is a
// real mount in a fresh user and mount namespace (unshare -Urm), with
// userxattr as an unprivileged jail mounts it.
type overlay struct {
	r     *testRepo
	upper string
	work  string
}

func (r *testRepo) overlay() *overlay {
	r.t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		r.t.Skip("requires unshare (util-linux)")
	}
	root := r.t.TempDir()
	o := &overlay{r: r, upper: filepath.Join(root, "upper"), work: filepath.Join(root, "work")}
	for _, d := range []string{o.upper, o.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			r.t.Fatal(err)
		}
	}
	return o
}

// run runs a shell script inside the sandbox view, in the work tree.
func (o *overlay) run(script string) string {
	o.r.t.Helper()
	out, err := o.tryRun(script)
	if err != nil {
		o.r.t.Fatalf("sandbox script: %v\n%s\nscript:\n%s", err, out, script)
	}
	return out
}

func (o *overlay) tryRun(script string) (string, error) {
	g := o.r.gitdir()
	setup := fmt.Sprintf(`set -e
mount -t overlay overlay -o lowerdir=%[1]q,upperdir=%[2]q,workdir=%[3]q,userxattr %[1]q
cd %[4]q
`, g, o.upper, o.work, o.r.dir)
	cmd := exec.Command("unshare", "-Urm", "sh", "-c", setup+script)
	cmd.Env = gitEnv(o.r.home)
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "mount:") && strings.Contains(string(out), "overlay") {
		o.r.t.Skipf("overlayfs in a user namespace is unavailable here: %s", out)
	}
	return string(out), err
}

// adopt runs Adopt for this overlay against base.
func (o *overlay) adopt(base *Snapshot, opt Options) *Report {
	o.r.t.Helper()
	gfd := openDirFD(o.r.t, o.r.gitdir())
	ufd := openDirFD(o.r.t, o.upper)
	rep, err := Adopt(gfd, ufd, base, opt)
	if err != nil {
		o.r.t.Fatalf("Adopt: %v", err)
	}
	o.r.t.Logf("report: %s", rep.Summary())
	return rep
}

func (r *testRepo) take() *Snapshot {
	r.t.Helper()
	s, err := Take(openDirFD(r.t, r.gitdir()))
	if err != nil {
		r.t.Fatalf("Take: %v", err)
	}
	return s
}

func (r *testRepo) fsck() {
	r.t.Helper()
	r.git("fsck", "--strict", "--no-progress")
}

func contains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
