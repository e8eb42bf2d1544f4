package policy

import (
	"context"
	"slices"
	"testing"
)

// A rebinding of a command name must not let the guard or the classifier
// read a later use of that name as what the name usually means.
func TestGuardSeesRebinding(t *testing.T) {
	g := testGuard(t, GuardConfig{})
	cases := []struct {
		cmd  string
		want GuardLevel
		id   string
	}{
		{`alias cat='rm -rf'; cat ~`, GuardHard, GuardRmRoot},
		{"alias cat='rm -rf'\ncat /", GuardHard, GuardRmRoot},
		{`alias ls="rm -rf"; ls ~ /`, GuardHard, GuardRmRoot},
		{`cat() { rm -rf "$@"; }; cat ~`, GuardSoft, GuardDynamic},
		{`function cat { echo; }; cat README`, GuardSoft, GuardDynamic},
		{`for i in 1 2; do cat ~; cat() { rm -rf "$@"; }; done`, GuardSoft, GuardDynamic},
		{`PATH=./bin:$PATH; cat README`, GuardSoft, GuardDynamic},
		{`export PATH=/tmp/x; cat README`, GuardSoft, GuardDynamic},
		{`PATH=./bin cat README`, GuardSoft, GuardDynamic},
		{`env PATH=./bin cat README`, GuardSoft, GuardDynamic},
		{`. ./env.sh; cat README`, GuardSoft, GuardDynamic},
		{`source venv/bin/activate && ls`, GuardSoft, GuardDynamic},
		{`BASH_ENV=./x bash -c 'cat README'`, GuardSoft, GuardDynamic},
		{`eval "$CMD"; cat README`, GuardSoft, GuardDynamic},
		{`eval "alias cat='rm -rf'"; cat ~`, GuardHard, GuardRmRoot},
		{`hash -p ./evil cat; cat README`, GuardSoft, GuardDynamic},
		{`enable -n echo; echo hi`, GuardSoft, GuardDynamic},
		{`enable -f ./x.so cat; ls`, GuardSoft, GuardDynamic},
		{`export -f cat; cat README`, GuardSoft, GuardDynamic},
		{`declare -fx cat; cat README`, GuardSoft, GuardDynamic},
		{`command cat README; alias cat=x`, GuardSoft, GuardDynamic},
		{`trap 'rm -rf ~' EXIT; true`, GuardHard, GuardRmRoot},
		{`sh -c "alias cat='rm -rf'
cat ~"`, GuardHard, GuardRmRoot},
		// Controls: no rebinding, nothing changes.
		{`cat ~/notes.txt && ls -la`, GuardAllow, ""},
		{`alias`, GuardAllow, ""},
		{`echo PATH=x`, GuardAllow, ""},
	}
	for _, c := range cases {
		r := g.Check(c.cmd)
		if r.Level != c.want || (c.id != "" && !hasHit(r, c.id, c.want)) {
			t.Errorf("%q: level %s, hits %+v; want %s %s", c.cmd, r.Level, r.Hits, c.want, c.id)
		}
		if c.want != GuardAllow && slices.Equal(r.Actions, []Action{ActCodeRead}) {
			t.Errorf("%q: classified as a read only", c.cmd)
		}
	}
}

// The gate no longer auto-approves an aliased "read" as one.
func TestGateRebindingNotAutoApproved(t *testing.T) {
	g := gate(t, "[approval]\nauto_approve = [\"code:read\"]\n", nil)
	d := g.Check(context.Background(), bashCall(`alias cat='rm -rf'; cat ~`))
	if d.Allowed {
		t.Fatalf("allowed: %+v", d)
	}
	d = g.Check(context.Background(), bashCall(`cat() { rm -rf "$@"; }; cat ~`))
	if d.Allowed || !slices.Contains(d.Actions, ActProcRun) {
		t.Fatalf("a function shadowing cat: %+v", d)
	}
	if d := g.Check(context.Background(), bashCall(`cat README`)); !d.Allowed {
		t.Fatalf("a plain read was refused: %+v", d)
	}
}
