//go:build linux

package integration

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// home is r's passwd home, where a user's toolchains are installed.
func (r runner) home(t *testing.T) string {
	t.Helper()
	u, err := user.LookupId(strconv.Itoa(r.uid))
	if err != nil {
		t.Fatal(err)
	}
	return u.HomeDir
}

// hostRun runs argv on the host as r, in dir, with PATH set to path.
func (r runner) hostRun(t *testing.T, dir, path string, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	extra := []string{"PATH=" + path}
	// The machine's CA bundle, which the registry's TLS chain may need
	// (npm reads it from this variable only).
	if v, ok := os.LookupEnv("NODE_EXTRA_CA_CERTS"); ok {
		extra = append(extra, "NODE_EXTRA_CA_CERTS="+v)
	}
	r.prepare(cmd, extra...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
	return string(out)
}

// TestToolchainsInHome installs tools into the user's real home as a
// user would: a version manager whose current version is a symlink into
// its versions tree (with a python in it), a venv made on the host from
// that python, and a package from the npm registry with
// `npm install -g --prefix ~/.local`. Inside, each is found through PATH
// and runs; nothing else of the home is visible; a tool in a place jail
// hides gets a line naming the fix.
func TestToolchainsInHome(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		home := r.home(t)
		tag := strconv.FormatInt(time.Now().UnixNano(), 36)
		vm := filepath.Join(home, ".jail-it-vm-"+tag)
		secret := filepath.Join(home, ".jail-it-secret-"+tag)
		tool := filepath.Join(home, ".jail-it-tool-"+tag)
		t.Cleanup(func() { os.RemoveAll(vm); os.Remove(secret); os.Remove(tool) })
		r.writeFile(t, filepath.Join(vm, "versions", "1.0", "lib", "data"), "VM-DATA\n")
		r.writeFile(t, filepath.Join(vm, "versions", "1.0", "bin", "hello"), "#!/bin/sh\necho VM-HELLO; cat \"$(dirname \"$0\")/../lib/data\"\n")
		os.Chmod(filepath.Join(vm, "versions", "1.0", "bin", "hello"), 0o755)
		for _, l := range [][2]string{{"/usr/bin/python3", filepath.Join(vm, "versions", "1.0", "bin", "python3")}, {"versions/1.0", filepath.Join(vm, "current")}} {
			if err := os.Symlink(l[0], l[1]); err != nil {
				t.Fatal(err)
			}
			os.Lchown(l[1], r.uid, r.gid)
		}
		r.own(t, vm)
		// Files at the top of the home: written and given to r one by one
		// (writeFile would chown the whole home).
		for _, f := range [][2]string{{secret, "SECRET"}, {tool, "#!/bin/sh\necho TOOL\n"}} {
			if err := os.WriteFile(f[0], []byte(f[1]), 0o755); err != nil {
				t.Fatal(err)
			}
			os.Lchown(f[0], r.uid, r.gid)
		}

		ws := r.dir(t, "jail-it-tools-")
		vmPath := filepath.Join(vm, "current", "bin") + ":/usr/bin:/bin"
		// A venv made on the host by the version manager's python: its
		// interpreter is a symlink into the versions tree.
		r.hostRun(t, ws, vmPath, filepath.Join(vm, "current", "bin", "python3"), "-m", "venv", "--without-pip", ".venv")
		if l, _ := os.Readlink(filepath.Join(ws, ".venv", "bin", "python3")); !strings.HasPrefix(l, vm) {
			t.Fatalf("the venv's python points to %q, not into the versions tree", l)
		}

		res := r.jail(t, call{args: []string{"run", "--", "/bin/sh", "-c", `hello; .venv/bin/python3 -c 'import sys; print("PREFIX", sys.prefix)'
cat ` + secret + ` 2>/dev/null && echo SECRET-VISIBLE
ls -A "$HOME"
touch ` + filepath.Join(vm, "current", "bin", "new") + ` 2>/dev/null && echo TREE-WRITABLE
exit 0`}, dir: ws, env: []string{"PATH=" + vmPath}})
		mustExit(t, res, 0)
		for _, want := range []string{"VM-HELLO\nVM-DATA\n", "PREFIX " + filepath.Join(ws, ".venv") + "\n"} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("missing %q:\n%s\n%s", want, res.stdout, res.stderr)
			}
		}
		for _, bad := range []string{"SECRET-VISIBLE", "TREE-WRITABLE", filepath.Base(secret), filepath.Base(tool)} {
			if strings.Contains(res.stdout, bad) {
				t.Errorf("%s inside:\n%s", bad, res.stdout)
			}
		}

		// Without the PATH entry the tree stays hidden, and the venv's
		// interpreter with it: the 127 says where it is and what to add.
		res = r.jail(t, call{args: []string{"run", "--", ".venv/bin/python3", "-V"}, dir: ws})
		mustExit(t, res, 127)
		if !strings.Contains(res.stderr, "hidden in the sandbox; add --ro "+filepath.Join(vm, "versions", "1.0", "bin")) &&
			!strings.Contains(res.stderr, "hidden in the sandbox; add --ro "+vm) {
			t.Errorf("no hint naming the versions tree:\n%s", res.stderr)
		}
		// A PATH entry that is the home itself is never bound: the tool
		// there is named, with the file to add.
		res = r.jail(t, call{args: []string{"run", "--", filepath.Base(tool)}, dir: ws, env: []string{"PATH=/usr/bin:/bin:" + home}})
		mustExit(t, res, 127)
		if want := "jail: " + filepath.Base(tool) + " is " + tool + ", hidden in the sandbox; add --ro " + tool; !strings.Contains(res.stderr, want) {
			t.Errorf("stderr %q lacks %q", res.stderr, want)
		}
	})
}

// TestNpmPrefixLocal installs a real package from the npm registry with
// `npm install -g --prefix ~/.local` (~/.local/bin/semver is a symlink to
// ../lib/node_modules/semver/bin/semver.js) and runs it inside.
func TestNpmPrefixLocal(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("requires npm: not installed")
	}
	for _, r := range runners(t) {
		home := r.home(t)
		local := filepath.Join(home, ".local")
		bin := filepath.Join(local, "bin", "semver")
		if _, err := os.Lstat(bin); err == nil {
			continue // installed already (by an earlier run)
		}
		made := []string{filepath.Join(local, "lib", "node_modules"), filepath.Join(local, "lib"), filepath.Join(local, "bin")}
		var fresh []string
		for _, d := range made {
			if _, err := os.Stat(d); err != nil {
				fresh = append(fresh, d)
			}
		}
		t.Cleanup(func() {
			os.Remove(bin)
			os.RemoveAll(filepath.Join(local, "lib", "node_modules", "semver"))
			for _, d := range fresh {
				os.Remove(d) // only if empty: another test may have put something there
			}
		})
		r.hostRun(t, home, "/usr/local/bin:/usr/bin:/bin", "npm", "install", "-g", "--prefix", local, "--no-audit", "--no-fund", "semver@7.6.0")
		if l, err := os.Readlink(bin); err != nil || !strings.Contains(l, "node_modules/semver") {
			t.Fatalf("npm made %s -> %q (%v), want a symlink into node_modules", bin, l, err)
		}
	}
	forEachPath(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-npm-")
		path := filepath.Join(r.home(t), ".local", "bin") + ":/usr/bin:/bin"
		res := r.jail(t, call{args: []string{"run", "--", "semver", "-i", "minor", "1.2.3"}, dir: ws, env: []string{"PATH=" + path}})
		mustExit(t, res, 0)
		if strings.TrimSpace(res.stdout) != "1.3.0" {
			t.Errorf("semver printed %q, want 1.3.0\n%s", res.stdout, res.stderr)
		}
	})
}

// TestGitConfigLayered: the user's git config is visible read-only, so a
// commit inside carries the user's identity and aliases work; `git config
// --global` writes the sandbox's own global config, over the user's
// values, and the host files stay as they were.
func TestGitConfigLayered(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("requires git: not installed")
	}
	forEachPath(t, func(t *testing.T, r runner) {
		home, err := os.MkdirTemp("/var/tmp", "jail-it-home-") // not in /tmp, whose private copy would hide it anyway
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(home) })
		const user = "[user]\n\tname = Jail Tester\n\temail = tester@example.com\n"
		const xdg = "[alias]\n\tst = status\n"
		r.writeFile(t, filepath.Join(home, ".gitconfig"), user)
		r.writeFile(t, filepath.Join(home, ".config", "git", "config"), xdg)
		r.own(t, home)
		ws := r.dir(t, "jail-it-git-")
		r.hostRun(t, ws, "/usr/bin:/bin", "git", "init", "-q", ".")
		res := r.jail(t, call{args: []string{"run", "--", "/bin/sh", "-c", `
git config user.name
git config --global core.editor jail-editor && git config --global core.editor
git config --global user.name 'Inside Name' && git config user.name
git -c user.name='Jail Tester' commit -q --allow-empty -m inside && git log -1 --format='%an <%ae>'
git st -s >/dev/null && echo ALIAS-OK
echo '[core]' >> ~/.gitconfig 2>/dev/null && echo HOST-WRITABLE
exit 0`}, dir: ws, env: []string{"HOME=" + home}})
		mustExit(t, res, 0)
		want := "Jail Tester\njail-editor\nInside Name\nJail Tester <tester@example.com>\nALIAS-OK\n"
		if res.stdout != want {
			t.Errorf("inside:\n%s\nwant:\n%s\nstderr: %s", res.stdout, want, res.stderr)
		}
		for f, content := range map[string]string{".gitconfig": user, ".config/git/config": xdg} {
			if b, _ := os.ReadFile(filepath.Join(home, f)); string(b) != content {
				t.Errorf("host %s changed: %q", f, b)
			}
		}
		if _, err := os.Lstat(filepath.Join(home, ".config", "git", "jail.gitconfig")); err == nil {
			t.Error("the sandbox-side global config appeared in the host's home")
		}
	})
}

// TestToolchainsKeepSecretsHidden attacks the PATH rule: a PATH entry that
// is a symlink into ~/.ssh, the home itself, a command that is a symlink
// to a key, and credentials inside a tool root. None of the secrets is
// readable inside; the tool next to the credentials still runs.
func TestToolchainsKeepSecretsHidden(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		home, err := os.MkdirTemp("/var/tmp", "jail-it-home-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(home) })
		r.writeFile(t, filepath.Join(home, ".ssh", "id_ed25519"), "SSH-KEY")
		r.writeFile(t, filepath.Join(home, ".cargo", "credentials.toml"), "CARGO-TOKEN")
		r.writeFile(t, filepath.Join(home, ".cargo", "bin", "cargo-tool"), "#!/bin/sh\necho CARGO-TOOL\n")
		os.Chmod(filepath.Join(home, ".cargo", "bin", "cargo-tool"), 0o755)
		r.writeFile(t, filepath.Join(home, "notes.txt"), "NOTES")
		os.MkdirAll(filepath.Join(home, ".local", "bin"), 0o755)
		for _, l := range [][2]string{{".ssh", filepath.Join(home, "bin")}, {"../../.ssh/id_ed25519", filepath.Join(home, ".local", "bin", "key")}} {
			if err := os.Symlink(l[0], l[1]); err != nil {
				t.Fatal(err)
			}
		}
		r.own(t, home)
		ws := r.dir(t, "jail-it-secrets-")
		path := strings.Join([]string{filepath.Join(home, "bin"), filepath.Join(home, ".local", "bin"), filepath.Join(home, ".cargo", "bin"), home, "/usr/bin", "/bin"}, ":")
		res := r.jail(t, call{args: []string{"run", "--", "/bin/sh", "-c", `
cargo-tool
for f in "$HOME/.ssh/id_ed25519" "$HOME/bin/id_ed25519" "$HOME/.local/bin/key" "$HOME/notes.txt"; do cat "$f" 2>/dev/null; done
cat "$HOME/.cargo/credentials.toml" 2>/dev/null
exit 0`}, dir: ws, env: []string{"HOME=" + home, "PATH=" + path}})
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, "CARGO-TOOL") {
			t.Errorf("the tool in ~/.cargo/bin did not run:\n%s\n%s", res.stdout, res.stderr)
		}
		for _, secret := range []string{"SSH-KEY", "CARGO-TOKEN", "NOTES"} {
			if strings.Contains(res.stdout, secret) {
				t.Errorf("%s readable inside:\n%s", secret, res.stdout)
			}
		}
	})
}

// TestToolchainsPlantedLinks attacks the PATH rule from a sandbox: a run
// in one workspace under the home plants, in the workspace's bin and
// .venv/bin (PATH entries of a later run elsewhere, as direnv or an
// activated venv make them), a command symlink to a 0600 secret, one to
// a private directory, and replaces a PATH entry by a symlink to that
// directory. A later run in another workspace with those entries on PATH
// reads none of them. A real cross-root toolchain (~/.local/bin/tool ->
// a public version manager's bin, ~/bin -> dotfiles/bin) still runs, with
// only its package shown, not the rest of its root.
func TestToolchainsPlantedLinks(t *testing.T) {
	forEachPath(t, func(t *testing.T, r runner) {
		home, err := os.MkdirTemp("/var/tmp", "jail-it-home-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(home) })
		priv := filepath.Join(home, "Private")
		r.writeFile(t, filepath.Join(priv, "secret.txt"), "PRIVATE-SECRET")
		os.Chmod(filepath.Join(priv, "secret.txt"), 0o600)
		r.writeFile(t, filepath.Join(priv, "run.sh"), "#!/bin/sh\necho PRIVATE-RUN\n")
		os.Chmod(filepath.Join(priv, "run.sh"), 0o700)
		os.Chmod(priv, 0o700)
		// A real toolchain across roots: public, with its package.
		r.writeFile(t, filepath.Join(home, ".vm", "versions", "1", "bin", "vmtool"), "#!/bin/sh\ncat \"$(dirname \"$(readlink -f \"$0\")\")/../share/data\"\n")
		os.Chmod(filepath.Join(home, ".vm", "versions", "1", "bin", "vmtool"), 0o755)
		r.writeFile(t, filepath.Join(home, ".vm", "versions", "1", "share", "data"), "VM-DATA")
		r.writeFile(t, filepath.Join(home, ".vm", "notes"), "VM-ROOT-NOTES")
		r.writeFile(t, filepath.Join(home, "dotfiles", "bin", "dottool"), "#!/bin/sh\necho DOT-TOOL\n")
		os.Chmod(filepath.Join(home, "dotfiles", "bin", "dottool"), 0o755)
		r.writeFile(t, filepath.Join(home, "dotfiles", "private.env"), "DOT-SECRET")
		os.MkdirAll(filepath.Join(home, ".local", "bin"), 0o755)
		if err := os.Symlink("../../.vm/versions/1/bin/vmtool", filepath.Join(home, ".local", "bin", "vmtool")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("dotfiles/bin", filepath.Join(home, "bin")); err != nil {
			t.Fatal(err)
		}
		ws3, ws5 := filepath.Join(home, "ws3"), filepath.Join(home, "ws5")
		for _, d := range []string{filepath.Join(ws3, "bin"), filepath.Join(ws3, ".venv", "bin"), filepath.Join(ws3, "lib"), ws5} {
			os.MkdirAll(d, 0o755)
		}
		r.own(t, home)
		env := []string{"HOME=" + home}
		res := r.jail(t, call{args: []string{"run", "--", "/bin/sh", "-c", `
ln -s "$HOME/Private/secret.txt" bin/tool && ln -s "$HOME/Private/run.sh" bin/run && ln -s "$HOME/Private/secret.txt" .venv/bin/x &&
rmdir lib && ln -s "$HOME/Private" lib`}, dir: ws3, env: env})
		mustExit(t, res, 0)
		if tg, err := os.Readlink(filepath.Join(ws3, "bin", "tool")); err != nil || tg != filepath.Join(priv, "secret.txt") {
			t.Fatalf("the sandbox did not plant its link on the host: %q %v", tg, err)
		}
		path := strings.Join([]string{filepath.Join(ws3, "bin"), filepath.Join(ws3, ".venv", "bin"), filepath.Join(ws3, "lib"),
			filepath.Join(home, ".local", "bin"), filepath.Join(home, "bin"), "/usr/bin", "/bin"}, ":")
		res = r.jail(t, call{args: []string{"run", "--", "/bin/sh", "-c", `
vmtool; echo; dottool
cat "$HOME/Private/secret.txt" "$HOME/ws3/bin/tool" "$HOME/ws3/.venv/bin/x" "$HOME/ws3/lib/secret.txt" 2>/dev/null
"$HOME/Private/run.sh" 2>/dev/null; run 2>/dev/null
cat "$HOME/.vm/notes" "$HOME/dotfiles/private.env" 2>/dev/null
exit 0`}, dir: ws5, env: append(env, "PATH="+path)})
		mustExit(t, res, 0)
		for _, want := range []string{"VM-DATA", "DOT-TOOL"} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("the real toolchain lost %s:\n%s\n%s", want, res.stdout, res.stderr)
			}
		}
		for _, secret := range []string{"PRIVATE-SECRET", "PRIVATE-RUN", "VM-ROOT-NOTES", "DOT-SECRET"} {
			if strings.Contains(res.stdout, secret) {
				t.Errorf("%s readable inside:\n%s", secret, res.stdout)
			}
		}
	})
}
