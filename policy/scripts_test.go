package policy

import (
	"slices"
	"testing"
)

// TestClassifyScriptPrograms: sed, awk and find are code:read only when every argument shape is
// read-only; the reviewer's reproducers that wrote files or ran commands under code:read are
// code:write or process:run, and the commands sed's e and awk's system() run meet the hard
// guards.
func TestClassifyScriptPrograms(t *testing.T) {
	g := testGuard(t, GuardConfig{})
	read := []Action{ActCodeRead}
	for _, c := range []struct {
		cmd  string
		want []Action
	}{
		{`sed -n "1e touch pwn1" f.txt`, []Action{ActProcRun, ActCodeWrite}},
		{`sed 's/hello/touch pwn2/e' f.txt`, []Action{ActProcRun, ActCodeWrite}},
		{`sed -n 'w pwn3' f.txt`, []Action{ActCodeWrite}},
		{`sed 's/x/y/w pwn9' f.txt`, []Action{ActCodeWrite}},
		{`awk 'BEGIN{system("touch pwn4")}'`, []Action{ActProcRun, ActCodeWrite}},
		{`awk '{print > "pwn5"}' f.txt`, []Action{ActCodeWrite}},
		{`find . -fprint pwn6`, []Action{ActCodeRead, ActCodeWrite}},
		{`sed --in-place=bak s/a/b/ f.txt`, []Action{ActCodeWrite}},
		{`sed -Ei s/a/b/ f.txt`, []Action{ActCodeWrite}},
		{`sed -f script.sed f.txt`, []Action{ActProcRun}},
		{`sed --unknown s/a/b/ f.txt`, []Action{ActProcRun}},
		{`awk -f prog.awk f.txt`, []Action{ActProcRun}},
		{`awk '{ "date" | getline d; print d }' f.txt`, []Action{ActProcRun}},
		{`awk '{print | "sort"}' f.txt`, []Action{ActProcRun, ActCodeRead}},
		{`awk '$1 > 5' f.txt`, []Action{ActCodeWrite}}, // the stricter reading of >
		// Read-only shapes stay code:read.
		{`sed -n '1,10p' f.txt`, read},
		{`sed -n -e '/^func /p' -e '$=' f.txt`, read},
		{`sed 's/a/b/g; s|x|y|2' f.txt`, read},
		{`sed -nE '/start/,/end/{p;q}' f.txt`, read},
		{`sed '3r other.txt' f.txt`, read},
		{`awk '{print $1}' f.txt`, read},
		{`awk -F: -v OFS=, '{n[$1]++} END{for (k in n) print k, n[k]}' /etc/group`, read},
		{`find . -name '*.go' -print`, read},
	} {
		if got := g.Check(c.cmd).Actions; !slices.Equal(got, c.want) {
			t.Errorf("%q: got %v, want %v", c.cmd, got, c.want)
		}
	}
	// With bash auto-approved, these must still stop at the hard guards.
	for _, c := range []struct{ cmd, id string }{
		{`awk 'BEGIN{system("rm -rf " ENVIRON["HOME"])}'`, GuardRmRoot},
		{`sed -n "1e rm -rf ~" f.txt`, GuardRmRoot},
		{`sed 's/.*/rm -rf \//e' f.txt`, GuardRmRoot},
		{`awk 'BEGIN{print | "rm -rf /"}'`, GuardRmRoot},
		{`tar c ~/.ssh`, GuardReadSecrets},
		{`tar -czf /tmp/k.tgz -C ~ .ssh`, GuardReadSecrets},
		{`tar --directory=/etc/ssh -cf x.tar .`, GuardReadSecrets},
		{`zip -r k.zip ~/.ssh`, GuardReadSecrets},
		{`cp -r ~/.ssh /tmp/k`, GuardReadSecrets},
		{`rsync -a /root/.ssh/ /tmp/k`, GuardReadSecrets},
		{`base64 ~/.ssh/id_ed25519`, GuardReadSecrets},
		{`xxd /etc/shadow`, GuardReadSecrets},
		{`od -c /etc/ssh/ssh_host_ed25519_key`, GuardReadSecrets},
		{`tar cf all.tar /`, GuardReadSecrets},
	} {
		if r := g.Check(c.cmd); r.Level != GuardHard || !slices.ContainsFunc(r.Hits, func(h GuardHit) bool { return h.ID == c.id }) {
			t.Errorf("%q: level %v hits %+v, want hard %s", c.cmd, r.Level, r.Hits, c.id)
		}
	}
	// Names, destinations and extraction are not reads of a secret.
	for _, cmd := range []string{`ls ~`, `du -sh ~`, `grep / notes.txt`, `cp notes.txt ~`, `tar xf a.tar -C /`, `tar -tf a.tar /`, `find / -name x`} {
		if r := g.Check(cmd); slices.ContainsFunc(r.Hits, func(h GuardHit) bool { return h.ID == GuardReadSecrets }) {
			t.Errorf("%q: hits %+v, want no %s", cmd, r.Hits, GuardReadSecrets)
		}
	}
	// Code-executing sed and awk are a soft hit even when nothing in them is known to be harmful.
	for _, cmd := range []string{`sed -n "1e touch pwn1" f.txt`, `awk 'BEGIN{system("touch pwn4")}'`} {
		if r := g.Check(cmd); !slices.ContainsFunc(r.Hits, func(h GuardHit) bool { return h.ID == GuardInline }) {
			t.Errorf("%q: hits %+v, want %s", cmd, r.Hits, GuardInline)
		}
	}
}
