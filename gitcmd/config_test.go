package gitcmd

import (
	"strings"
	"testing"
)

// TestProgramSetting pins what a config file's text must name for git's
// commands to count as running a program, whatever the spelling.
func TestProgramSetting(t *testing.T) {
	keep := []string{"/home/u/.gitconfig"}
	for _, c := range []struct {
		text, want string
	}{
		{"[user]\n\tname = a\n\temail = a@b\n", ""},
		{"[include]\n\tpath = \"/home/u/.gitconfig\"\n[user]\n\tname = x\n", ""},
		{"[core]\n\tfsmonitor = \"git push; false\"\n", "core.fsmonitor"},
		{"[CORE]\n\tFSMonitor = x\n", "core.fsmonitor"},
		{"[core]fsmonitor=x\n", "core.fsmonitor"},
		{"[core]\n\tpager = less\n", "core.pager"},
		{"[include]\n\tpath = ~/evil\n", "include.path"},
		{"[includeIf \"gitdir:/\"]\n\tpath = /tmp/x\n", "includeif.gitdir:/.path"},
		{"[alias]\n\tst = !git push\n", "alias.st"},
		{"[alias]\n\tst = status\n", ""},
		{"[remote \"o\"]\n\tuploadpack = ./p\n", "remote.o.uploadpack"},
		{"[core]\n\tfsmonitor\n", "core.fsmonitor"},
		{"fsmonitor = x\n", ""}, // git reads a key before any section as "fsmonitor"
		{"[user]\n\tnote = foo\\\\\n[core]\n\tfsmonitor = x\n", "core.fsmonitor"},
		{"[core]\n\tfsmonitor = \\\n\tx\n", "core.fsmonitor"},
		{"[core]\n\tfsmonitor = \"x\n", "unreadable"},
		{"[core]\n\tfsmonitor = \\q\n", "unreadable"},
		{"[core\n", "unreadable"},
		{"# [core] fsmonitor = x\n[user]\n\tname = a ; fsmonitor\n", ""},
	} {
		got := ProgramSetting([]byte(c.text), keep)
		if c.want == "" && got != "" || c.want != "" && !strings.HasPrefix(got, c.want) {
			t.Errorf("%q: got %q, want %q...", c.text, got, c.want)
		}
	}
}
