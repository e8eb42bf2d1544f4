package gitcmd

import (
	"bytes"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitReads is what the real git reads of the config text data: its
// settings as `git config --list --null --file` prints them, or ok false
// when git refuses the file.
func gitReads(t testing.TB, data []byte) (sets []Setting, ok bool) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "config", "--list", "--null", "--file", f)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1"}
	out, err := cmd.Output()
	if err != nil {
		if _, exit := err.(*exec.ExitError); !exit {
			t.Fatalf("git config: %v", err)
		}
		return nil, false
	}
	for _, e := range bytes.Split(out, []byte{0}) {
		if len(e) == 0 {
			continue
		}
		k, v, hasV := strings.Cut(string(e), "\n")
		sets = append(sets, Setting{Key: k, Value: v, NoValue: !hasV})
	}
	return sets, true
}

// agree reports whether ParseConfig reads data as git does. Where git's C
// strings end at a NUL byte, ParseConfig refuses the file instead (the
// worse reading), which counts as agreeing.
func agree(t testing.TB, data []byte) {
	t.Helper()
	want, gitOK := gitReads(t, data)
	got, err := ParseConfig(data)
	switch {
	case err != nil && !gitOK:
	case err != nil && bytes.IndexByte(data, 0) >= 0:
	case err != nil:
		t.Errorf("%q: ParseConfig refuses it (%v), git reads %+v", data, err, want)
	case !gitOK:
		t.Errorf("%q: git refuses it, ParseConfig reads %+v", data, got)
	case !equalSettings(got, want):
		t.Errorf("%q: ParseConfig reads %+v, git %+v", data, got, want)
	}
}

func equalSettings(a, b []Setting) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func needGit(t testing.TB) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
}

// parseCases are the shapes git's parser treats in a way of its own.
var parseCases = []string{
	"[user]\n\tnote = foo\\\\\n[core]\n\tfsmonitor = x\n", // an escaped backslash does not continue the line
	"[core]\n\tfsmonitor = a\\\n[x]b\n",                   // an unescaped one does
	"[core]\n\tfsmonitor = \"a\\\\\"\n[x]\n",
	"[core]\n\tfsmonitor = \"a ; b\" ; c\n",
	"[core]\n\tfsmonitor = a   b\t c  \n",
	"[core]\n\tfsmonitor = \"a   b\"  \n",
	"[core]\n\tfsmonitor = a\\tb\\nc\\bd\\\"e\n",
	"[core]\n\tfsmonitor = a\\qb\n",
	"[core]\n\tfsmonitor = \"a\n",
	"[core]\n\tfsmonitor\n",
	"[core]\n\tfsmonitor ; x\n",
	"[core]fsmonitor=x\n",
	"[core] fsmonitor=x [x]\n",
	"[CORE]\n\tFSMonitor = x\n",
	"[Core.Sub]\n\tKey = x\n",
	"[remote \"Up\\\"s\\\\t\"]\n\turl = x\n",
	"[remote \"a\nb\"]\n\turl = x\n",
	"[remote \"a\"x]\n\turl = x\n",
	"[remote\t\"a\"]\n\turl = x\n",
	"[remote  \"a\"]\n\turl = x\n",
	"[remote \"a\" ]\n\turl = x\n",
	"[remote \"a\\\nb\"]\n\turl = x\n",
	"[a]\r\nb = c\r\n",
	"[a]\rb = c\r\n",
	"[a]\nb = c\\\r\nd\n",
	"\xef\xbb\xbf[a]\nb = c\n",
	"\xef\xbb[a]\nb = c\n",
	"\xef[a]\nb = c\n",
	"[a]\nb = c\n\xef\xbb\xbf[d]e\n",
	"# c\n; c\n[a] # c\nb = c # d\n",
	"[a]\n# b = c \\\nd = e\n",
	"[a]\nb = c ;\\\nd = e\n",
	"[]\nb = c\n",
	"[.]\nb = c\n",
	"[a.]\nb = c\n",
	"[a]\n0b = c\n",
	"[a]\nb-c-0 = d\n",
	"[a]\nb_c = d\n",
	"b = c\n",
	"[a]\nb = c",
	"[a]\nb = c\\",
	"[a]\nb",
	"[a",
	"[a]\nb = \"\"\n",
	"[a]\nb =\n",
	"[a]\nb = \"c\"d\"e\"\n",
	"[a]\nb = c\x00d\n",
	"[a]\n# c\x00d\nb = e\n",
	"[a]\nb = c\v\n",
	"[a]\nb = \fc\n",
	"[a]\n\vb = c\n",
	"[a]\nb\v= c\n",
	"[include]\n\tpath = x\n",
	"[a]\nb = \xc3\xa9\n",
	"[a \"\xc3\xa9\"]\nb = c\n",
}

// TestParseConfigAsGit pins ParseConfig to the real git's reading of the
// shapes above.
func TestParseConfigAsGit(t *testing.T) {
	needGit(t)
	for _, c := range parseCases {
		agree(t, []byte(c))
	}
}

// TestParseConfigRandomAsGit compares ParseConfig with git on text made
// of the pieces git's parser treats specially, in random order.
func TestParseConfigRandomAsGit(t *testing.T) {
	needGit(t)
	pieces := []string{"[", "]", "\"", "\\", "\n", "\r", "\r\n", " ", "\t", "#", ";", "=", ".", "-", "a", "B", "0",
		"core", "fsmonitor", "[core]", "[remote \"x\"]", " = ", "\\\\", "\\\"", "\\n", "\\\n", "\xef\xbb\xbf", "\v", "_"}
	n := 400
	if testing.Short() {
		n = 100
	}
	r := rand.New(rand.NewSource(13))
	for i := 0; i < n; i++ {
		var b strings.Builder
		if r.Intn(2) == 0 {
			b.WriteString("[a]\n")
		}
		for j := r.Intn(24); j >= 0; j-- {
			b.WriteString(pieces[r.Intn(len(pieces))])
		}
		agree(t, []byte(b.String()))
	}
}

// FuzzParseConfig compares ParseConfig with git on any text (go test
// -fuzz FuzzParseConfig ./gitcmd).
func FuzzParseConfig(f *testing.F) {
	needGit(f)
	for _, c := range parseCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		agree(t, data)
	})
}
