package gitcmd

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		line string // words separated by spaces; | stands for a space inside a word
		want Line
	}{
		{"", Line{}},
		{"status", Line{Sub: "status", Args: []string{}}},
		{"--version", Line{At: 1}},
		{"log --oneline -3", Line{Sub: "log", Args: []string{"--oneline", "-3"}}},
		{"-C /w push -f", Line{Sub: "push", Args: []string{"-f"}, At: 2, Dirs: []string{"/w"}}},
		{"-C a -C b status", Line{Sub: "status", Args: []string{}, At: 4, Dirs: []string{"a", "b"}}},
		{"-c user.name=x commit -m y", Line{Sub: "commit", Args: []string{"-m", "y"}, At: 2, Config: []string{"user.name=x"}}},
		{"-c core.bare push", Line{Sub: "push", Args: []string{}, At: 2, Config: []string{"core.bare"}}},
		// The value of -c is a word of its own even when it looks like a
		// sub-command or an option.
		{"-c push status", Line{Sub: "status", Args: []string{}, At: 2, Config: []string{"push"}}},
		{"--git-dir /g push", Line{Sub: "push", Args: []string{}, At: 2, GitDir: "/g"}},
		{"--git-dir=/g --work-tree=/w push", Line{Sub: "push", Args: []string{}, At: 2, GitDir: "/g", WorkTree: "/w"}},
		{"--namespace ns fetch", Line{Sub: "fetch", Args: []string{}, At: 2}},
		{"--config-env=core.pager=P log", Line{Sub: "log", Args: []string{}, At: 1, ConfigEnv: []string{"core.pager=P"}}},
		{"--config-env core.pager=P log", Line{Sub: "log", Args: []string{}, At: 2, ConfigEnv: []string{"core.pager=P"}}},
		// --exec-path=DIR is git's programs from DIR; alone, it takes no
		// value (git prints the path), and the next word is read on.
		{"--exec-path=/tmp/x push", Line{Sub: "push", Args: []string{}, At: 1, ExecPath: "/tmp/x"}},
		{"--exec-path push -f", Line{Sub: "push", Args: []string{"-f"}, At: 1}},
		{"--no-pager -p --bare --literal-pathspecs diff", Line{Sub: "diff", Args: []string{}, At: 4}},
		{"-C", Line{At: 1}},
		// Aliases the line defines: words, chains, shell commands, from
		// the environment, case-insensitive keys, the last one wins.
		{"-c alias.p=push|--force p origin", Line{Sub: "push", Args: []string{"--force", "origin"}, At: 2, Alias: "p", Config: []string{"alias.p=push --force"}}},
		{"-c Alias.P=push P", Line{Sub: "push", Args: []string{}, At: 2, Alias: "P", Config: []string{"Alias.P=push"}}},
		{"-c alias.p=log -c alias.p=push p", Line{Sub: "push", Args: []string{}, At: 4, Alias: "p", Config: []string{"alias.p=log", "alias.p=push"}}},
		{"-c alias.a=b -c alias.b=push|-f a x", Line{Sub: "push", Args: []string{"-f", "x"}, At: 4, Alias: "a", Config: []string{"alias.a=b", "alias.b=push -f"}}},
		{"-c alias.a=b -c alias.b=a a", Line{Sub: "a", Args: []string{}, At: 4, Alias: "a", Config: []string{"alias.a=b", "alias.b=a"}}},
		{"-c alias.x=!rm|-rf|~ x y", Line{Args: []string{"y"}, At: 2, Alias: "x", Shell: "rm -rf ~", Config: []string{"alias.x=!rm -rf ~"}}},
		{"-c alias.q=push|'a|b'|\"c\\\"d\" q", Line{Sub: "push", Args: []string{"a b", `c"d`}, At: 2, Alias: "q", Config: []string{`alias.q=push 'a b' "c\"d"`}}},
		{"--config-env alias.x=V x", Line{Args: []string{}, At: 2, Alias: "x", Dynamic: true, ConfigEnv: []string{"alias.x=V"}}},
		// An alias of one of git's own commands is expanded: git ignores
		// it, and reading it runs more.
		{"-c alias.status=push status", Line{Sub: "push", Args: []string{}, At: 2, Alias: "status", Config: []string{"alias.status=push"}}},
		// An alias of another name is not this sub-command's.
		{"-c alias.p=push status", Line{Sub: "status", Args: []string{}, At: 2, Config: []string{"alias.p=push"}}},
	} {
		var words []string
		if c.line != "" {
			for _, w := range strings.Split(c.line, " ") {
				words = append(words, strings.ReplaceAll(w, "|", " "))
			}
		}
		got := Parse(words)
		if got.Args == nil && c.want.Args != nil && len(c.want.Args) == 0 {
			got.Args = []string{}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Parse(%q)\n got %+v\nwant %+v", words, got, c.want)
		}
	}
}

func TestSplitCommandLine(t *testing.T) {
	for in, want := range map[string][]string{
		"":                   nil,
		"  push  -f ":        {"push", "-f"},
		`a 'b c' "d e" f\ g`: {"a", "b c", "d e", "f g"},
		`'it''s'`:            {"its"},
		`"a\"b" 'a\b'`:       {`a"b`, `a\b`},
		`"" x`:               {"", "x"},
	} {
		if got := SplitCommandLine(in); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitCommandLine(%q) = %q, want %q", in, got, want)
		}
	}
}
