package gitstate

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigAgainstGit parses tricky files with both this parser and the
// real git (git config --list), and wants the same keys and values.
func TestConfigAgainstGit(t *testing.T) {
	requireGit(t)
	cases := []string{
		"[core]\n\tbare = false\n",
		"[core] bare = true\n[user]name=a b\n",
		"[remote \"Or\\\\i\\\"gin\"]\n\turl = \"x;y\" # comment\n\tfetch = +refs/*:refs/* ; c\n",
		"[Section.SubSection]\nKey = v1\nkey=v2\n",
		"[a]\n\tk = \"  lead and trail  \"\n\tm = one \\\n two\n\tn = tab\\there\\nnl\n",
		"[a]\n\tflag\n\tempty =\n\tspaced   =   in  side   \n",
		"\xef\xbb\xbf[a]\r\n\tk = crlf\r\n",
		"; top\n# top\n[a \"b c\"]\n\tk = \"quoted # not comment\"\n",
		"[a.b \"c\"]\n\tk = v\n",
		"[a]k=1\n[a]k=2\n[A]K=3\n",
		"[a]\n\tk = x\"y\"z\n",
		"[include]\n\tpath = other\n[includeIf \"gitdir:/x/\"]\n\tpath = /y\n",
		"[a]\n\tk = v",
		"[a]\n\tk = \\\"\\\\\n",
		"[a]\n\tk = a\tb\n",
		"k = v\n[a]\nb=1\n",
		"[core \"hookspath\x00\"]\n\tx = /evil\n",
		"[a]\n\tk = va\x00lue\n",
		"# c\x00omment\n[a]k=1\n",
		"[a \"b\x00\"]\n\tk\n",
	}
	bad := []string{
		"[a\n", "[a]\n\tk = \"unterminated\n", "[a]\n\tk = \\q\n", "[a]\n\t1k = v\n",
		"[a \"b]\n", "[a]\n\tk # c\n", "[]\n", "[a b]\n", "[a]\n\tk = v\\", "[a]\n\tk\x00 = v\n", "[a] k = \"x\ny\"\n",
	}
	compareWithGit(t, append(cases, bad...))
}

// compareWithGit parses each source with git config --list and with
// ParseConfig and wants the same outcome: both refuse, or the same keys
// and values in the same order.
func compareWithGit(t *testing.T, srcs []string) {
	t.Helper()
	dir := t.TempDir()
	accepted := 0
	defer func() { t.Logf("%d of %d accepted by git", accepted, len(srcs)) }()
	for i, src := range srcs {
		f := filepath.Join(dir, "c")
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("git", "config", "--file", f, "--list", "--no-includes", "-z")
		cmd.Env = gitEnv(dir)
		out, gitErr := cmd.Output()
		c, err := ParseConfig([]byte(src))
		if (gitErr != nil) != (err != nil) {
			t.Errorf("case %d %q: git error %v, ours %v", i, src, gitErr, err)
			continue
		}
		if err != nil {
			continue
		}
		accepted++
		var ours []string
		for _, e := range c.Entries {
			if e.NoValue {
				ours = append(ours, e.Key())
			} else {
				ours = append(ours, e.Key()+"\n"+e.Value)
			}
		}
		got := strings.Join(ours, "\x00")
		if len(ours) > 0 {
			got += "\x00"
		}
		if got != string(out) {
			t.Errorf("case %d %q:\ngit:  %q\nours: %q", i, src, out, got)
		}
	}
}

// TestConfigRewrite applies settings and checks git reads back the new
// values while every untouched byte stays.
func TestConfigRewrite(t *testing.T) {
	src := "# keep me\n[core]\n\tbare = false ; why\n[user] name = old\n[remote \"origin\"]\n\turl = https://a/b\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[x]\n\tz = 1\n"
	c, err := ParseConfig([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out := c.rewrite([]setting{
		{Key: keyID{Section: "user", Name: "name"}, Values: []string{"New Name"}},
		{Key: keyID{Section: "user", Name: "email"}, Values: []string{"n@example.com"}},
		{Key: keyID{Section: "remote", Subsection: "origin", HasSub: true, Name: "fetch"}},
		{Key: keyID{Section: "remote", Subsection: "up", HasSub: true, Name: "url"}, Values: []string{"git@h:x \"y\";#"}},
	})
	t.Logf("%s", out)
	for _, keep := range []string{"# keep me\n[core]\n\tbare = false ; why\n", "[x]\n\tz = 1\n", "\turl = https://a/b\n"} {
		if !strings.Contains(string(out), keep) {
			t.Errorf("lost %q", keep)
		}
	}
	c2, err := ParseConfig(out)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"user.name": "New Name", "user.email": "n@example.com", "remote.up.url": "git@h:x \"y\";#", "core.bare": "false"} {
		if v, _ := c2.Get(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	if v := c2.Values("remote.origin.fetch"); len(v) != 0 {
		t.Errorf("fetch not removed: %v", v)
	}
	requireGit(t)
	f := filepath.Join(t.TempDir(), "c")
	os.WriteFile(f, out, 0o644)
	cmd := exec.Command("git", "config", "--file", f, "remote.up.url")
	cmd.Env = gitEnv(t.TempDir())
	if got, err := cmd.Output(); err != nil || string(got) != "git@h:x \"y\";#\n" {
		t.Errorf("git reads %q, %v", got, err)
	}
}

func TestConfigVerdicts(t *testing.T) {
	ok := map[string]string{
		"user.email": "a@b.c", "remote.origin.url": "https://github.com/x/y.git",
		"remote.o2.pushurl": "git@github.com:x/y.git", "branch.main.rebase": "true",
		"branch.feature/x.merge": "refs/heads/feature/x", "init.defaultbranch": "trunk", "core.autocrlf": "input",
	}
	no := map[string]string{
		"remote.origin.url": "ext::sh -c touch% /tmp/x", "remote.a.url": "fd::3", "remote.b.url": "-oProxyCommand=x",
		"remote.c.url": "/tmp/planted", "remote.d.url": "file:///tmp/planted", "remote.e.url": "ssh://-oProxyCommand=x/y",
		"branch.main.rebase": "interactive", "core.fsmonitor": "x", "alias.st": "!x", "remote.f.url": "foo::bar",
		"remote.-x.url": "https://a/b", "user.name": "a\nb", "remote.g.url": "x@-h:p", "core.hookspath": ".husky",
	}
	check := func(key, v string) string {
		sec, sub, hasSub, name, _ := splitKey(key)
		return configVerdict(keyID{sec, sub, hasSub, name}, []string{v})
	}
	for k, v := range ok {
		if why := check(k, v); why != "" {
			t.Errorf("%s=%q refused: %s", k, v, why)
		}
	}
	for k, v := range no {
		if why := check(k, v); why == "" {
			t.Errorf("%s=%q adopted", k, v)
		}
	}
}

func TestAdoptConfig(t *testing.T) {
	r := newRepo(t)
	// A host config with comments and odd spacing, to be kept byte for byte.
	cfg := filepath.Join(r.gitdir(), "config")
	orig, _ := os.ReadFile(cfg)
	orig = append(orig, []byte("# the user's comment\n[custom]\n\tkeep = \"  spaced  \" ; note\n")...)
	os.WriteFile(cfg, orig, 0o600)
	os.Chmod(cfg, 0o600)
	r.git("remote", "add", "origin", "https://example.com/x.git")
	orig, _ = os.ReadFile(cfg)
	base := r.take()
	o := r.overlay()
	o.run(`git config user.email agent@example.com
git remote add up https://example.com/up.git
git config branch.main.remote origin
git config branch.main.merge refs/heads/main
git config custom.keep changed
git config core.fsmonitor 'touch /nonexistent/x'`)
	rep := o.adopt(base, Options{RunID: "c1"})
	for _, k := range []string{"config user.email", "config remote.up.url", "config remote.up.fetch", "config branch.main.remote", "config branch.main.merge"} {
		if !contains(rep.Applied, k) {
			t.Errorf("%s not applied: %+v", k, rep)
		}
	}
	for _, k := range []string{"config custom.keep: not on the list", "config core.fsmonitor: it can make git run"} {
		if !contains(rep.Dropped, k) {
			t.Errorf("%s not dropped: %v", k, rep.Dropped)
		}
	}
	got, _ := os.ReadFile(cfg)
	if !strings.HasPrefix(string(got), string(orig)) {
		t.Errorf("host config not kept byte for byte:\n%s", got)
	}
	if st, _ := os.Stat(cfg); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if v := strings.TrimSpace(r.git("config", "remote.origin.url")); v != "https://example.com/x.git" {
		t.Errorf("remote.origin.url = %q", v)
	}
	if _, err := r.tryGit("config", "core.fsmonitor"); err == nil {
		t.Error("core.fsmonitor reached the host")
	}
}

// TestConfigRandomAgainstGit compares with git on configs stitched from
// the syntax's sharp edges, line by line, so parity is checked beyond
// hand-picked cases.
func TestConfigRandomAgainstGit(t *testing.T) {
	requireGit(t)
	headers := []string{"[ \"x\"]", "[]", "[a]", "[A.b]", "[a \"B c\"]", "[a \"x\\\"y\\\\z\"]", "[core \"hooksPath\x00\"]", "[a-b.c.d]", "[a \"\"]", "[a.]", "[.a]", "[a  \"s\"]", "[a\t\"s\"]", "[a \"s\" ]"}
	keys := []string{"k", "Key", "k-1", "k1", "\tk", "  K", "k ", "1k", "k\x00"}
	vals := []string{"v", " v ", "\"  q  \"", "a\\\nb", "x # c", "x ; c", "\"#\"", "\\t\\n\\b\\\\\\\"", "\\q", "va\x00l", "\"open", "a\tb", "é", "\"a\"b\"c\"", "", "\\"}
	ends := []string{"\n", "\r\n", "\n", "", " # c\n", "\r"}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(l []string) string { return l[rng.IntN(len(l))] }
	var srcs []string
	for i := 0; i < 1000; i++ {
		var b strings.Builder
		for n := 1 + rng.IntN(6); n > 0; n-- {
			switch rng.IntN(6) {
			case 0:
				b.WriteString(pick(headers))
			case 1:
				b.WriteString(pick(keys))
			case 2:
				b.WriteString("# c" + pick(vals))
			default:
				b.WriteString(pick(keys) + pick([]string{"=", " = ", "\t=\t"}) + pick(vals))
			}
			b.WriteString(pick(ends))
		}
		src := b.String()
		if i%3 != 0 {
			src = pick(headers) + "\n" + src
		}
		srcs = append(srcs, src)
	}
	compareWithGit(t, srcs)
}

// TestRefusedRemoteLeftOutWhole: a remote whose URL is refused takes its
// other keys and the branch keys tracking it along; a remote with an
// adopted URL keeps its own.
func TestRefusedRemoteLeftOutWhole(t *testing.T) {
	k := func(sec, sub, name string) keyID {
		return keyID{Section: sec, Subsection: sub, HasSub: sub != "", Name: name}
	}
	changes := []setting{
		{k("remote", "origin", "url"), []string{"/tmp/src"}},
		{k("remote", "origin", "fetch"), []string{"+refs/heads/*:refs/remotes/origin/*"}},
		{k("branch", "main", "remote"), []string{"origin"}},
		{k("branch", "main", "merge"), []string{"refs/heads/main"}},
		{k("remote", "up", "url"), []string{"https://example.com/r.git"}},
		{k("remote", "up", "fetch"), []string{"+refs/heads/*:refs/remotes/up/*"}},
		{k("branch", "dev", "remote"), []string{"up"}},
		{k("branch", "dev", "merge"), []string{"refs/heads/dev"}},
	}
	v := configVerdicts(changes)
	for i, ch := range changes {
		left := v[i] != ""
		want := i < 4
		if left != want {
			t.Errorf("%s: left out %v (%q), want %v", ch.Key, left, v[i], want)
		}
	}
	if !strings.Contains(v[0], "git remote add origin URL") {
		t.Errorf("the URL's reason does not say what to do: %q", v[0])
	}
}

// TestLaunchRemoteKeepsHostURLs: the url, pushurl and push refspecs of a
// remote the host had at launch stay the host's; a new remote is adopted
// and named with its URL.
func TestLaunchRemoteKeepsHostURLs(t *testing.T) {
	r := newRepo(t)
	r.git("remote", "add", "origin", "https://example.com/x.git")
	base := r.take()
	o := r.overlay()
	o.run(`git config remote.origin.pushurl http://127.0.0.1:9/exfil.git && git config --add remote.origin.push '+refs/*:refs/*' &&
		git config remote.origin.url https://evil.example/x.git && git remote add other https://example.com/o.git`)
	rep := o.adopt(base, Options{RunID: "r"})
	if v := strings.TrimSpace(r.git("config", "remote.origin.url")); v != "https://example.com/x.git" {
		t.Errorf("remote.origin.url = %q", v)
	}
	for _, k := range []string{"remote.origin.pushurl", "remote.origin.push"} {
		if out, _ := r.tryGit("config", k); strings.TrimSpace(out) != "" {
			t.Errorf("%s adopted: %q", k, out)
		}
		if !contains(rep.Dropped, "config "+k+": remote origin existed at launch") {
			t.Errorf("%s not named as dropped: %+v", k, rep.Dropped)
		}
	}
	if !contains(rep.Applied, "config remote.other.url = https://example.com/o.git (a remote the sandbox added") {
		t.Errorf("the new remote is not named with its URL: %+v", rep.Applied)
	}
}

// TestAddedRemoteRoutesNothing: a remote the sandbox added is adopted, but
// no branch's remote or pushremote may name it, and it is left out when it
// would become the remote of a branch that names none (the only remote,
// or origin): the host's plain git push would go there.
func TestAddedRemoteRoutesNothing(t *testing.T) {
	for _, c := range []struct {
		name, host, sandbox string
		applied, dropped    []string
	}{
		{name: "pushremote", host: "git remote add origin https://example.com/x.git",
			sandbox: "git remote add fork https://evil.example/f.git && git config branch.main.pushremote fork && git config branch.dev.remote fork && git config branch.main.merge refs/heads/main",
			applied: []string{"config remote.fork.url", "config branch.main.merge"},
			dropped: []string{"config branch.main.pushremote: names remote fork, which the sandbox added", "config branch.dev.remote: names remote fork"}},
		{name: "pushdefault", host: "git remote add origin https://example.com/x.git",
			sandbox: "git remote add fork https://evil.example/f.git && git config remote.pushDefault fork",
			applied: []string{"config remote.fork.url"},
			dropped: []string{"config remote.pushdefault"}},
		{name: "only remote", host: "true",
			sandbox: "git remote add fork https://evil.example/f.git",
			dropped: []string{"config remote.fork.url: remote fork, which the sandbox added, would become the remote"}},
		{name: "origin beside another", host: "git remote add up https://example.com/u.git && git remote add up2 https://example.com/u2.git",
			sandbox: "git remote add origin https://evil.example/f.git",
			dropped: []string{"config remote.origin.url: remote origin, which the sandbox added, would become"}},
		{name: "second beside a lone non-origin", host: "git remote add up https://example.com/u.git",
			sandbox: "git remote add fork https://evil.example/f.git",
			dropped: []string{"config remote.fork.url: remote fork"}},
		{name: "host's own remote", host: "git remote add origin https://example.com/x.git && git remote add up https://example.com/u.git",
			sandbox: "git config branch.main.pushremote up",
			applied: []string{"config branch.main.pushremote"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRepo(t)
			sh := exec.Command("sh", "-c", c.host)
			sh.Dir, sh.Env = r.dir, gitEnv(r.home)
			if out, err := sh.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", c.host, err, out)
			}
			base := r.take()
			o := r.overlay()
			o.run(c.sandbox)
			rep := o.adopt(base, Options{RunID: "c1"})
			for _, k := range c.applied {
				if !contains(rep.Applied, k) {
					t.Errorf("%s not applied: %+v", k, rep)
				}
			}
			for _, k := range c.dropped {
				if !contains(rep.Dropped, k) {
					t.Errorf("%s not dropped: %+v", k, rep)
				}
			}
		})
	}
}
