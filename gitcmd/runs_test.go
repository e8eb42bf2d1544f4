package gitcmd

import (
	"reflect"
	"strings"
	"testing"
)

func TestCommandsAndPushes(t *testing.T) {
	for _, c := range []struct {
		line     string // words; | is a space inside a word
		shell    []string
		programs []string
		pushes   bool
		forced   bool
	}{
		{line: "status"},
		{line: "commit -m x"},
		{line: "push origin main", pushes: true},
		{line: "-c alias.x=push|origin|HEAD:refs/heads/p x", pushes: true},
		{line: "-c alias.x=push|--force x origin", pushes: true, forced: true},
		{line: "send-pack r.git HEAD:refs/heads/p", pushes: true},
		{line: "send-pack --force r.git HEAD", pushes: true, forced: true},
		{line: "send-pack r.git +HEAD:refs/heads/p", pushes: true, forced: true},
		{line: "http-push https://x/r.git main", pushes: true},
		{line: "remote-https origin https://x/r.git", pushes: true},
		{line: "svn dcommit", pushes: true},
		{line: "svn log"},
		// A sub-command git does not know: an alias from a config file,
		// or a git-NAME program.
		{line: "x", programs: []string{"git-x"}, pushes: true},
		{line: "rebase -x git|push|r.git|HEAD:refs/heads/p --root", shell: []string{"git push r.git HEAD:refs/heads/p"}},
		{line: "rebase --exec=make|test main", shell: []string{"make test"}},
		{line: "rebase -xmake main", shell: []string{"make"}},
		{line: "bisect run sh -c git|push", shell: []string{"sh -c git push"}},
		{line: "bisect start"},
		{line: "submodule --quiet foreach --recursive git push", shell: []string{"git push"}},
		{line: "filter-branch --tree-filter rm|-rf|~ HEAD", shell: []string{"rm -rf ~"}},
		{line: "difftool -x ./p.sh HEAD", shell: []string{"./p.sh"}, programs: []string{"difftool"}},
		{line: "clone -u ./evil /r x", shell: []string{"./evil"}},
		{line: "fetch --upload-pack=./evil /r", shell: []string{"./evil"}},
		{line: "fetch -u origin"},
		{line: "push --receive-pack=./evil /r main", shell: []string{"./evil"}, pushes: true},
		{line: "-c core.sshCommand=./p.sh fetch origin", shell: []string{"./p.sh"}},
		{line: "-c Core.Pager=less|-R log", shell: []string{"less -R"}},
		{line: "-c core.hooksPath=/tmp/h commit -m x", programs: []string{"-c core.hooksPath"}},
		{line: "-c credential.helper=!f()|{|cat;|};|f fetch", shell: []string{"f() { cat; }; f"}},
		{line: "-c protocol.ext.allow=always fetch ext::sh|-c|id", programs: []string{"-c protocol.ext.allow", "ext::sh -c id"}},
		{line: "-c remote.a.b.uploadpack=./x fetch a.b", shell: []string{"./x"}},
		{line: "-c user.name=x commit -m y"},
		{line: "--config-env=core.pager=P log", programs: []string{"--config-env core.pager"}},
		{line: "for-each-repo --config=maintenance.repo push", shell: []string{"git push"}},
		{line: "hook run pre-commit", programs: []string{"hook"}},
		{line: "clone -c core.sshCommand=./p.sh ssh://h/r x", shell: []string{"./p.sh"}},
		{line: "clone --config=core.hooksPath=/tmp/h https://h/r", programs: []string{"-c core.hooksPath"}},
		{line: "--exec-path=/tmp/x status", programs: []string{"--exec-path=/tmp/x"}},
	} {
		var words []string
		for _, w := range strings.Split(c.line, " ") {
			words = append(words, strings.ReplaceAll(w, "|", " "))
		}
		l := Parse(words)
		shell, programs := l.Commands()
		if !reflect.DeepEqual(shell, c.shell) || !reflect.DeepEqual(programs, c.programs) {
			t.Errorf("%q: Commands() = %q, %q; want %q, %q", c.line, shell, programs, c.shell, c.programs)
		}
		if l.Pushes() != c.pushes || l.Forced() != c.forced {
			t.Errorf("%q: Pushes() = %v, Forced() = %v; want %v, %v", c.line, l.Pushes(), l.Forced(), c.pushes, c.forced)
		}
	}
}
