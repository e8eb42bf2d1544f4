package policy

import (
	"slices"
	"testing"
)

// TestEffectTables pins what the readers' tables make of their options
// and operands: a write or a program run is seen wherever it is spelled
// (clustered, attached, --opt=value), an option a strict table does not
// list is a program run, and a write to an unknown destination beside
// git makes git's commands process:run.
func TestEffectTables(t *testing.T) {
	g := testGuard(t, GuardConfig{})
	for _, c := range []struct {
		cmd  string
		want []Action
	}{
		{"sort -n -k2,2 -t: f", []Action{ActCodeRead}},
		{"sort -o out f", []Action{ActCodeRead, ActCodeWrite}},
		{"sort -uoout f", []Action{ActCodeRead, ActCodeWrite}},
		{"sort --output=out f", []Action{ActCodeRead, ActCodeWrite}},
		{"sort -o .git/config f", []Action{ActCodeRead, ActCodeWrite, ActProcRun}},
		{"sort --compress-program=./x f", []Action{ActCodeRead, ActProcRun}},
		{"sort --compress-program ./x f", []Action{ActCodeRead, ActProcRun}},
		{"sort --frobnicate f", []Action{ActCodeRead, ActProcRun}},
		{"sort $OPT f", []Action{ActCodeRead, ActProcRun}},
		{"uniq -c in", []Action{ActCodeRead}},
		{"uniq in out", []Action{ActCodeRead, ActCodeWrite}},
		{"uniq -f 1 in out", []Action{ActCodeRead, ActCodeWrite}},
		{"uniq in .git/config", []Action{ActCodeRead, ActCodeWrite, ActProcRun}},
		{"xxd f", []Action{ActCodeRead}},
		{"xxd -c8 -g 2 f", []Action{ActCodeRead}},
		{"xxd -r h .git/config", []Action{ActCodeRead, ActCodeWrite, ActProcRun}},
		{"less -R f", []Action{ActCodeRead}},
		{"less -x4 -N f", []Action{ActCodeRead}},
		{"less -o log f", []Action{ActCodeRead, ActCodeWrite}},
		{"less --lesskey-src=k f", []Action{ActCodeRead, ActProcRun}},
		{"less -k k f", []Action{ActCodeRead, ActProcRun}},
		{"less '+!id' f", []Action{ActCodeRead, ActProcRun}},
		{"less +G f", []Action{ActCodeRead, ActProcRun}}, // +v runs the editor: any +command runs
		{"yq . f.yaml", []Action{ActCodeRead}},
		{"yq -y -i .a=1 f.yaml", []Action{ActCodeRead, ActCodeWrite}},
		{"yq -yi .a=1 f.yaml", []Action{ActCodeRead, ActCodeWrite}},
		{"jq -r .a f.json", []Action{ActCodeRead}},
		{"git grep -O hello", []Action{ActProcRun, ActVCSRead}},
		{"git grep -Ovim hello", []Action{ActProcRun, ActVCSRead}},
		{"git grep --open-files-in-pager=vim hello", []Action{ActProcRun, ActVCSRead}},
		{"git grep -n hello", []Action{ActVCSRead}},
		{"git diff --output=x HEAD", []Action{ActVCSRead, ActCodeWrite}},
		{"git log --output .git/config", []Action{ActVCSRead, ActCodeWrite, ActProcRun}},
		{"git format-patch -o .git/hooks HEAD~1", []Action{ActVCSCommit, ActCodeWrite, ActProcRun}},
		{"git init --template=tpl sub", []Action{ActProcRun, ActVCSCommit}},
		{"git -c trailer.x.cmd=./x commit --trailer x:1", []Action{ActProcRun, ActVCSCommit}},
		{"git -c gpg.ssh.defaultKeyCommand=./x commit -S", []Action{ActProcRun, ActVCSCommit}},
		{"git config --global init.templateDir ~/tpl", []Action{ActProcRun, ActVCSCommit}},
		{"tar xf a.tar", []Action{ActCodeWrite}},
		{"tar xf a.tar && git status", []Action{ActCodeWrite, ActVCSRead, ActProcRun}},
		{"tar cf a.tar src && git status", []Action{ActCodeWrite, ActVCSRead}},
		{"tar -xzf a.tgz; git status", []Action{ActCodeWrite, ActVCSRead, ActProcRun}},
		{"unzip -o a.zip && git status", []Action{ActCodeWrite, ActVCSRead, ActProcRun}},
		{"unzip -l a.zip && git status", []Action{ActCodeWrite, ActVCSRead}},
		{"cp -r st/. . && git status", []Action{ActCodeWrite, ActVCSRead, ActProcRun}},
		{"cp a b && git status", []Action{ActCodeWrite, ActVCSRead}},
		{"patch -p1 < p.diff && git status", []Action{ActCodeWrite, ActVCSRead, ActProcRun}},
		{`sed -n "w out" f && git status`, []Action{ActCodeWrite, ActVCSRead, ActProcRun}},
		{`sed -i s/a/b/ f && git commit -am x`, []Action{ActCodeWrite, ActVCSCommit}},
		{`awk '{print > "out"}' f && git status`, []Action{ActCodeWrite, ActVCSRead, ActProcRun}},
		{"kubectl get pods", []Action{ActCodeRead, ActProcRun}},
		{"sqlite3 :memory: 'SELECT 1'", []Action{ActDBRead, ActProcRun}},
	} {
		got := g.Check(c.cmd).Actions
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: got %v, want %v", c.cmd, got, c.want)
		}
	}
}

// TestSessionInGitDir: a session whose directory is in a git directory
// (cd .git in an earlier call) makes a relative write a write there.
func TestSessionInGitDir(t *testing.T) {
	g := testGuard(t, GuardConfig{})
	for _, c := range []struct {
		cwd  string
		want bool
	}{{"/work/p/.git", true}, {"/work/p/.git/hooks", true}, {"/work/p/src", false}} {
		got := g.CheckIn("printf x > hooks/pre-commit", session(c.cwd)).Actions
		if slices.Contains(got, ActProcRun) != c.want {
			t.Errorf("in %s: %v, want process:run %v", c.cwd, got, c.want)
		}
	}
}
