package policy

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestProjectFileOnlyTightens(t *testing.T) {
	dir := t.TempDir()
	env := Env{Home: "/home/alice", Workspace: dir}
	user := writeFile(t, dir, "user.toml", `
[sandbox]
rw = ["/data"]
env = ["PATH", "HOME", "GOPATH"]
[limits]
timeout = "5m"
memory = "1G"
[network]
mode = "proxy"
allow = ["api.example.org", "*.example.net"]
[tools]
profile = "coding"
[agents.bot]
role = "build"
grants = ["web_fetch"]
[approval]
unattended_policy = "allow"
auto_approve = ["bash"]
`)
	project := writeFile(t, dir, ".jail/policy.toml", `
[sandbox]
workspace = "/"
ro = ["/data/sub", "/secret"]
rw = ["/etc"]
hide = ["/data/private"]
protected = ["Makefile"]
env = ["PATH", "AWS_SECRET_ACCESS_KEY"]
[sandbox.env_set]
LD_PRELOAD = "/x.so"
[limits]
timeout = "1h"
memory = "512M"
[network]
mode = "host"
allow = ["cdn.example.net", "evil.example.com"]
[tools]
profile = "full"
deny = ["edit"]
also_allow = ["web_fetch"]
[agents.bot]
role = "custom"
grants = ["web_fetch", "browser_navigate"]
denies = ["bash"]
[approval]
unattended_policy = "deny"
auto_approve = ["bash", "write"]
grants_file = "/tmp/g.json"
[guards]
disable = ["rm-root"]
soft = ["make deploy"]
[roles.root]
remit = ["fs.read"]
[audit]
enabled = false
path = "/tmp/elsewhere.jsonl"
`)
	p, ws, err := LoadLayered(user, project, env)
	if err != nil {
		t.Fatal(err)
	}
	// Tightening keys took effect.
	if p.Limits.Memory != 512<<20 || p.Limits.Timeout != 5*time.Minute {
		t.Errorf("limits %+v", p.Limits)
	}
	if !slices.Contains(p.Sandbox.RO, "/data/sub") || slices.Contains(p.Sandbox.RO, "/secret") || slices.Contains(p.Sandbox.RW, "/etc") {
		t.Errorf("ro %v rw %v", p.Sandbox.RO, p.Sandbox.RW)
	}
	if !slices.Contains(p.Sandbox.Hide, "/data/private") || !slices.Contains(p.Sandbox.Protected, "Makefile") {
		t.Errorf("hide %v protected %v", p.Sandbox.Hide, p.Sandbox.Protected)
	}
	if !slices.Equal(p.Sandbox.Env, []string{"PATH"}) || p.Sandbox.EnvSet["LD_PRELOAD"] != "" || p.Sandbox.Workspace != dir {
		t.Errorf("env %v env_set %v workspace %s", p.Sandbox.Env, p.Sandbox.EnvSet, p.Sandbox.Workspace)
	}
	if p.Network.Mode != NetProxy || !slices.Equal(p.Network.Allow, []string{"cdn.example.net"}) {
		t.Errorf("network %+v", p.Network)
	}
	if p.Tools.Profile != ProfileCoding || !slices.Contains(p.Tools.Deny, "edit") {
		t.Errorf("tools %+v", p.Tools)
	}
	a := p.Agents["bot"]
	if a.Role != "build" || !slices.Equal(a.Grants, []string{"web_fetch"}) || !slices.Contains(a.Denies, "bash") {
		t.Errorf("agent %+v", a)
	}
	if p.Approval.UnattendedPolicy != "deny" || !slices.Equal(p.Approval.AutoApprove, []string{"bash"}) || p.Approval.GrantsFile != "" {
		t.Errorf("approval %+v", p.Approval)
	}
	if len(p.Guards.Disable) != 0 || !slices.Contains(p.Guards.Soft, "make deploy") || len(p.Roles) != 0 || !*p.Audit.Enabled || strings.Contains(p.Audit.Path, "elsewhere") {
		t.Errorf("guards %+v roles %v audit %+v", p.Guards, p.Roles, p.Audit)
	}
	// Every widening was reported, by key, with the project file and a line.
	want := []string{"sandbox.workspace", "sandbox.ro", "sandbox.rw", "sandbox.env", "sandbox.env_set", "limits.timeout",
		"network.mode", "network.allow", "tools.profile", "agents.bot.role", "agents.bot.grants", "approval.auto_approve",
		"approval.grants_file", "guards.disable", "roles.root", "audit.path", "audit.enabled"}
	got := map[string]bool{}
	for _, w := range ws {
		got[w.Key] = true
		if w.File != project || w.Line == 0 || w.Reason == "" {
			t.Errorf("widening without place or reason: %+v", w)
		}
	}
	for _, k := range want {
		if !got[k] {
			t.Errorf("widening of %s not reported (got %v)", k, ws)
		}
	}
	for _, k := range []string{"limits.memory", "sandbox.hide", "tools.deny", "approval.unattended_policy"} {
		if got[k] {
			t.Errorf("tightening key %s reported as widening", k)
		}
	}
	// The effective toolset agrees: bash denied by the project, browser never granted.
	ts, _ := Resolve(p, Catalogue(), Subject{Agent: "bot"})
	if d, _ := ts.Lookup("bash"); d.Status != StatusDenied {
		t.Errorf("bash %+v", d)
	}
	if slices.Equal(p.Sources, []string{user, project}) == false {
		t.Errorf("sources %v", p.Sources)
	}
}

func TestLayeredMissingFilesAndInvalidProject(t *testing.T) {
	dir := t.TempDir()
	env := Env{Home: "/home/alice", Workspace: dir}
	p, ws, err := LoadLayered(dir+"/nope.toml", dir+"/nope2.toml", env)
	if err != nil || len(ws) != 0 || p.Hash() != Default(env).Hash() {
		t.Fatalf("missing files must give the default: %v %v", err, ws)
	}
	bad := writeFile(t, dir, "bad.toml", "[tools]\nprofile = 3\n")
	if _, _, err := LoadLayered("", bad, env); err == nil {
		t.Error("an invalid project file must be an error, not ignored")
	}
	// An explicit --policy must exist.
	if _, _, err := LoadEffective(dir+"/nope.toml", env); err == nil {
		t.Error("missing explicit policy accepted")
	}
	// A project allow list made only of widenings must not fall back to the whole profile.
	user := writeFile(t, dir, "u.toml", "[tools]\nprofile = \"minimal\"\n")
	proj := writeFile(t, dir, "p.toml", "[tools]\nallow = [\"bash\"]\n")
	p, _, err = LoadLayered(user, proj, env)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := Resolve(p, Catalogue(), Subject{})
	if len(ts.Granted) != 0 {
		t.Errorf("emptied allow list granted %v", names(ts.Granted))
	}
}

func TestHostCovered(t *testing.T) {
	allow := []string{"api.example.org", "*.example.net", "x.example.com:443"}
	for h, want := range map[string]bool{"api.example.org": true, "a.example.net": true, "*.b.example.net": true,
		"example.net": false, "x.example.com:443": true, "x.example.com": false, "evil.org": false} {
		if got := hostCovered(h, allow); got != want {
			t.Errorf("hostCovered(%q) = %v", h, got)
		}
	}
	if !prefixCovered("10.1.2.0/24", []string{"10.0.0.0/8"}) || prefixCovered("10.0.0.0/8", []string{"10.1.0.0/16"}) {
		t.Error("prefixCovered")
	}
	for _, h := range []string{"*.co.uk", "*.github.io", "*", "*.dev", "bad_host", "a.b:99999"} {
		if checkAllowHost(h) == nil {
			t.Errorf("checkAllowHost(%q) accepted", h)
		}
	}
	for _, h := range []string{"*.example.co.uk", "10.0.0.1", "[::1]:8080", "api.openai.com:443"} {
		if err := checkAllowHost(h); err != nil {
			t.Errorf("checkAllowHost(%q): %v", h, err)
		}
	}
}

// TestProjectFileCannotAskForHosts: [network] ask opens the network to
// approvals, so only the user file may turn it on; a project file may turn
// it off.
func TestProjectFileCannotAskForHosts(t *testing.T) {
	dir := t.TempDir()
	env := Env{Home: "/home/alice", Workspace: dir}
	off := writeFile(t, dir, "off.toml", "[network]\nmode = \"proxy\"\n")
	on := writeFile(t, dir, "on.toml", "[network]\nmode = \"proxy\"\nask = true\n")
	askProj := writeFile(t, dir, "ask.toml", "[network]\nask = true\n")
	quietProj := writeFile(t, dir, "quiet.toml", "[network]\nask = false\n")

	p, ws, err := LoadLayered(off, askProj, env)
	if err != nil {
		t.Fatal(err)
	}
	if p.Network.Ask || len(ws) != 1 || ws[0].Key != "network.ask" {
		t.Errorf("a project file turned ask on: ask=%v widenings=%v", p.Network.Ask, ws)
	}
	p, ws, err = LoadLayered(on, quietProj, env)
	if err != nil {
		t.Fatal(err)
	}
	if p.Network.Ask || len(ws) != 0 {
		t.Errorf("a project file could not turn ask off: ask=%v widenings=%v", p.Network.Ask, ws)
	}
}

// TestProjectFileCannotEnlargeShares: the defaults of [limits] memory and the tmpfs sizes are
// zero in the policy (a share of the machine's memory, applied at launch); a project file above
// what they come to is ignored with its key and file, one below them applies, and with the
// memory not known nothing of it applies.
func TestProjectFileCannotEnlargeShares(t *testing.T) {
	dir := t.TempDir()
	project := writeFile(t, dir, ".jail/policy.toml", `
[sandbox]
tmp = "100G"
shm = "1M"
home_tmp = "100G"
[limits]
memory = "100G"
`)
	const mem = 16 << 30
	p, ws, err := LoadLayered("", project, Env{Home: "/home/alice", Workspace: dir, MemTotal: mem})
	if err != nil {
		t.Fatal(err)
	}
	if p.Sandbox.Tmp != 0 || p.Sandbox.HomeTmp != 0 || p.Limits.Memory != 0 {
		t.Errorf("a project file enlarged a default share: tmp %v home_tmp %v memory %v", p.Sandbox.Tmp, p.Sandbox.HomeTmp, p.Limits.Memory)
	}
	if p.Sandbox.Shm != 1<<20 {
		t.Errorf("shm = %v, want the project's 1M (below 1/16 of 16G)", p.Sandbox.Shm)
	}
	var keys []string
	for _, w := range ws {
		keys = append(keys, w.Key)
		if w.File != project || !strings.Contains(w.Reason, "above the default") {
			t.Errorf("widening %v: want the file and the default named", w)
		}
	}
	slices.Sort(keys)
	if want := []string{"limits.memory", "sandbox.home_tmp", "sandbox.tmp"}; !slices.Equal(keys, want) {
		t.Errorf("widenings %q, want %q", keys, want)
	}
	p, ws, err = LoadLayered("", project, Env{Home: "/home/alice", Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	if p.Sandbox.Shm != 0 || len(ws) != 4 {
		t.Errorf("memory not known: shm %v, widenings %v; want nothing applied", p.Sandbox.Shm, ws)
	}
}

// TestWideningNamesTheFix: every ignored key says where the user allows it:
// their own policy file (the --policy file when given) and key, and the
// flag of jail run where there is one; a value is shown in its own unit
// (a duration as 30s, a count as a number, never as a size).
func TestWideningNamesTheFix(t *testing.T) {
	dir := t.TempDir()
	env := Env{Home: "/home/alice", Workspace: dir, MemTotal: 16 << 30}
	user := writeFile(t, dir, "user.toml", "[approval]\napprover_timeout = \"5s\"\nask_timeout = \"1m\"\n[limits]\ntimeout = \"5m\"\n")
	project := writeFile(t, dir, ".jail/policy.toml", `
[sandbox]
rw = ["/etc"]
env = ["TOKEN"]
[limits]
timeout = "1h"
pids = 99999
memory = "1T"
[network]
mode = "host"
allow = ["evil.example.com"]
[seccomp]
allow_ptrace = true
[approval]
approver_timeout = "30s"
ask_timeout = "10m"
[audit]
path = "/tmp/a.jsonl"
`)
	_, ws, err := LoadLayered(user, project, env)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"sandbox.rw":                {`add "/etc" to [sandbox] rw in ` + user, "--rw /etc"},
		"sandbox.env":               {`add "TOKEN" to [sandbox] env in ` + user, "--env TOKEN"},
		"limits.timeout":            {"1h0m0s is above the user policy's 5m0s", `set [limits] timeout = "1h0m0s" in ` + user, "--timeout 1h0m0s"},
		"limits.pids":               {"99999 is above the user policy's 4096", "set [limits] pids = 99999 in " + user, "--pids 99999"},
		"limits.memory":             {"1T is above the default, 1/2 of the machine's memory (8G)", "--memory 1T"},
		"network.mode":              {`set [network] mode = "host" in ` + user, "--net host"},
		"network.allow":             {`add "evil.example.com" to [network] allow in ` + user, "--allow evil.example.com"},
		"seccomp.allow_ptrace":      {"set [seccomp] allow_ptrace = true in " + user, "--allow-ptrace"},
		"approval.approver_timeout": {"30s is above the user policy's 5s", `set [approval] approver_timeout = "30s" in ` + user},
		"approval.ask_timeout":      {"10m0s is above the user policy's 1m0s"},
		"audit.path":                {"set [audit] path in " + user},
	}
	got := map[string]string{}
	for _, w := range ws {
		got[w.Key] = w.String()
	}
	for key, parts := range want {
		line, ok := got[key]
		if !ok {
			t.Errorf("%s: no widening reported (got %v)", key, ws)
			continue
		}
		if !strings.Contains(line, "; to allow it, ") {
			t.Errorf("%s: %q names no fix", key, line)
		}
		for _, p := range parts {
			if !strings.Contains(line, p) {
				t.Errorf("%s: %q lacks %q", key, line, p)
			}
		}
	}
	// With no user file, the fix names the file jail would read.
	_, ws, err = LoadLayered("", project, Env{Home: "/home/alice", Workspace: dir, XDGConfigHome: "/cfg"})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Key == "sandbox.rw" && !strings.Contains(w.Fix, "/cfg/jail/policy.toml") {
			t.Errorf("without a user file: %q does not name /cfg/jail/policy.toml", w.Fix)
		}
	}
}
