package policy

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// sandboxWritable is a sandbox's view: the workspace, the home, /tmp.
func sandboxWritable(dir string) bool {
	for _, w := range []string{"/work/p", "/home/alice", "/tmp", "/var/tmp"} {
		if within(dir, w) {
			return true
		}
	}
	return false
}

const basePath = "PATH=/usr/local/bin:/usr/bin:/bin"

// session is the state a session reports: its whole exported
// environment, the starting one's HOME and EDITOR kept unless env sets
// them.
func session(cwd string, env ...string) *Shell {
	full := slices.Clone(env)
	for _, kv := range []string{"HOME=/home/alice", "EDITOR=vim"} {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") }) {
			full = append(full, kv)
		}
	}
	return &Shell{Cwd: cwd, Env: full, Base: []string{basePath, "HOME=/home/alice", "EDITOR=vim"}, Writable: sandboxWritable}
}

// A variable of the starting environment the session unset is judged
// as one it set: without GIT_CONFIG_GLOBAL git reads the persistent
// home's ~/.config/git/config, which jail does not read.
func TestSessionUnsetJudged(t *testing.T) {
	g := testGuard(t, GuardConfig{})
	base := []string{basePath, "HOME=/home/alice", "GIT_CONFIG_GLOBAL=/home/alice/.config/git/jail.gitconfig", "LANG=C"}
	for _, c := range []struct {
		env  []string
		want bool
	}{
		{[]string{basePath, "HOME=/home/alice", "GIT_CONFIG_GLOBAL=/home/alice/.config/git/jail.gitconfig", "LANG=C"}, false},
		{[]string{basePath, "HOME=/home/alice", "GIT_CONFIG_GLOBAL=/home/alice/.config/git/jail.gitconfig"}, false}, // LANG
		{[]string{basePath, "HOME=/home/alice", "LANG=C"}, true},
		{[]string{basePath, "GIT_CONFIG_GLOBAL=/home/alice/.config/git/jail.gitconfig", "LANG=C"}, true},
	} {
		sh := &Shell{Cwd: "/work/p", Env: c.env, Base: base, Writable: sandboxWritable}
		res := g.CheckIn("git status", sh)
		run := slices.Contains(res.Actions, ActProcRun)
		if run != c.want {
			t.Errorf("env %v: actions %v (hits %+v), want process:run %v", c.env, res.Actions, res.Hits, c.want)
		}
	}
}

// A command is judged against the session it runs in, however its
// variables got there: what the previous call exported, sourced or
// forged on the state channel.
func TestGuardJudgesTheSession(t *testing.T) {
	g := testGuard(t, GuardConfig{})
	cases := []struct {
		cmd  string
		sh   *Shell
		want GuardLevel
		id   string
	}{
		{"tar xf a.tar", session("/work/p", basePath, "TAR_OPTIONS=-I./x"), GuardSoft, GuardDynamic},
		{"less README", session("/work/p", basePath, "LESSOPEN=|./x %s"), GuardSoft, GuardDynamic},
		{"cat README", session("/work/p", basePath, "BASH_ENV=/work/p/x"), GuardSoft, GuardDynamic},
		{"git log", session("/work/p", basePath, "GIT_PAGER=./x"), GuardSoft, GuardDynamic},
		{"ls", session("/work/p", "PATH=./bin:/usr/local/bin:/usr/bin:/bin"), GuardSoft, GuardDynamic},
		{"ls", session("/work/p", "PATH=/work/p/bin:/usr/bin:/bin"), GuardSoft, GuardDynamic},
		{"ls", session("/work/p", "PATH=/usr/bin:/bin:/tmp/x"), GuardSoft, GuardDynamic},
		{"ls", session("/work/p", "PATH=/proc/self/cwd/bin:/usr/bin"), GuardSoft, GuardDynamic},
		{"ls", session("/work/p", "PATH=/usr/bin::/bin"), GuardSoft, GuardDynamic},
		{"ls", session("/work/p"), GuardSoft, GuardDynamic}, // PATH unset
		{"xargs echo < f", session("/work/p", "PATH=./bin:/usr/bin"), GuardSoft, GuardDynamic},
		{"ls", session("/work/p", basePath, "IFS=/"), GuardSoft, GuardDynamic},
		// A variable of the session is a known value.
		{"$C", session("/work/p", basePath, "C=rm -rf /"), GuardHard, GuardRmRoot},
		{"cat $F", session("/work/p", basePath, "F=/etc/shadow"), GuardHard, GuardReadSecrets},
		// The session's HOME is what ~ means, its directory where * lies.
		{"rm -rf ~", session("/work/p", basePath, "HOME=/work/p/h"), GuardHard, GuardRmRoot},
		{"rm -rf *", session("/home/alice", basePath), GuardHard, GuardRmRoot},
		{"rm -rf ./*", session("/", basePath), GuardHard, GuardRmRoot},
		// Controls.
		{"rm -rf *", session("/work/p", basePath), GuardSoft, GuardRmRecursive},
		{"cd build && rm -rf *", session("/home/alice", basePath), GuardSoft, GuardRmRecursive},
		{"ls", session("/work/p", basePath, "HOME=/home/alice", "EDITOR=vim"), GuardAllow, ""},
		{"ls", session("/work/p", "PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin"), GuardAllow, ""},
		{"git log", session("/work/p", basePath, "GIT_PAGER=cat", "PAGER=", "GIT_EDITOR=true"), GuardAllow, ""},
		{"cd sub; echo hi", session("/work/p", "PATH=./bin:/usr/bin"), GuardAllow, ""},
		{"make test", session("/work/p", "PATH=./bin:/usr/bin"), GuardAllow, ""},
		{"ls", nil, GuardAllow, ""},
	}
	for _, c := range cases {
		r := g.CheckIn(c.cmd, c.sh)
		if r.Level != c.want || (c.id != "" && !hasHit(r, c.id, c.want)) {
			t.Errorf("%q in %+v: level %s, hits %+v; want %s %s", c.cmd, c.sh, r.Level, r.Hits, c.want, c.id)
		}
		if c.want == GuardSoft && slices.Equal(r.Actions, []Action{ActCodeRead}) {
			t.Errorf("%q in %+v: classified as a read only", c.cmd, c.sh)
		}
	}
}

// A path the sandbox can write is the sandbox's program, whatever its
// name says; a system path and a name whose reading runs code anyway are
// read as before.
func TestGuardProgramPaths(t *testing.T) {
	g := testGuard(t, GuardConfig{})
	for _, c := range []struct {
		cmd  string
		want []Action
	}{
		{"./bin/cat README", []Action{ActProcRun}},
		{"/tmp/ls", []Action{ActProcRun}},
		{"/work/p/bin/git status", []Action{ActProcRun}},
		{"/usr/bin/cat README", []Action{ActCodeRead}},
		{"./gradlew test", []Action{ActTestRun}},
		{"cat README", []Action{ActCodeRead}},
	} {
		r := g.CheckIn(c.cmd, session("/work/p", basePath))
		if !slices.Equal(r.Actions, c.want) {
			t.Errorf("%q: actions %v, want %v (hits %+v)", c.cmd, r.Actions, c.want, r.Hits)
		}
	}
}

// In the gate: a harmless-looking call in a forged session is asked
// about, with the session's reason, and an exact grant of the same text
// does not apply to it.
func TestGateSessionNotAutoApproved(t *testing.T) {
	g := gate(t, "[approval]\nauto_approve = [\"code:read\", \"code:write\"]\n", nil)
	g.Grants = []Grant{{Tool: "bash", Command: "tar xf a.tar"}}
	c := bashCall("tar xf a.tar")
	if d := g.Check(context.Background(), c); !d.Allowed {
		t.Fatalf("tar xf with no session was refused: %+v", d)
	}
	c.Shell = session("/work/p", basePath, "TAR_OPTIONS=--to-command=./x")
	d := g.Check(context.Background(), c)
	if d.Allowed || !strings.Contains(d.Reason, "TAR_OPTIONS") {
		t.Fatalf("tar xf in a session setting TAR_OPTIONS: %+v", d)
	}
	c = bashCall("ls")
	c.Shell = session("/work/p", "PATH=./bin:/usr/bin:/bin")
	if d := g.Check(context.Background(), c); d.Allowed || !strings.Contains(d.Reason, "./bin") {
		t.Fatalf("ls with ./bin in the session's PATH: %+v", d)
	}
}

// A command the guard cannot afford to read is refused, not read: deep
// nesting overflowed the supervisor's stack, and a long pipeline was told
// to the rules once per stage.
func TestGuardBoundedWork(t *testing.T) {
	g := testGuard(t, GuardConfig{})
	for _, c := range []string{strings.Repeat("(", 200000), "x=" + strings.Repeat("$((", 100000), strings.Repeat("{ ", 100000)} {
		if r := g.Check(c); r.Level != GuardHard || !hasHit(r, GuardUnparseable, GuardHard) {
			t.Errorf("%.10q... nested: %s %+v", c, r.Level, r.Hits)
		}
	}
	if r := g.Check(strings.Repeat("cat f | ", 5000) + "wc -l"); r.Level != GuardAllow {
		t.Errorf("a long pipeline of reads: %s %+v", r.Level, r.Hits)
	}
	if r := g.Check("echo '" + strings.Repeat("[", 10) + "' && jq '.a[0] | {b: (.c)}' f.json"); r.Level != GuardAllow {
		t.Errorf("ordinary brackets: %s %+v", r.Level, r.Hits)
	}
}

// BenchmarkGuardLongPipeline: a pipeline of 1000 stages is told to the
// rules once (it was told once per stage: a million stages).
func BenchmarkGuardLongPipeline(b *testing.B) {
	g := testGuard(b, GuardConfig{})
	cmd := strings.Repeat("cat f | ", 1000) + "wc -l"
	for b.Loop() {
		g.Check(cmd)
	}
}
