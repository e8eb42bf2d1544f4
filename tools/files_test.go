//go:build linux

package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jail-sandbox/jail/policy"
	"golang.org/x/sys/unix"
)

func TestRegistryMatchesCatalogue(t *testing.T) {
	f := newFixture(t)
	for _, tl := range f.reg.Tools() {
		var found bool
		for _, c := range policy.Catalogue() {
			if c.Name == tl.Name {
				found = true
				if c.Risk != tl.Risk {
					t.Errorf("%s: risk %s, catalogue %s", tl.Name, tl.Risk, c.Risk)
				}
				for _, cap := range c.Capabilities {
					if !strings.Contains(strings.Join(tl.Capabilities, ","), cap) {
						t.Errorf("%s: capabilities %v lack %s", tl.Name, tl.Capabilities, cap)
					}
				}
			}
		}
		if !found {
			t.Errorf("%s is not in policy.Catalogue", tl.Name)
		}
		if len(tl.Description) > MaxDescription {
			t.Errorf("%s: description of %d bytes", tl.Name, len(tl.Description))
		}
		var schema map[string]any
		if err := json.Unmarshal([]byte(tl.Schema), &schema); err != nil {
			t.Errorf("%s: schema: %v", tl.Name, err)
		}
	}
	// Stable order: the catalogue's.
	var names []string
	for _, tl := range f.reg.Tools() {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, ","); got != "read,ls,glob,grep,write,edit,bash,bash_output,bash_kill" {
		t.Errorf("order %s", got)
	}
}

func TestValidationNamesTheArgument(t *testing.T) {
	f := newFixture(t)
	mustErr(t, f.call("read", map[string]any{"path": 3}), "/path")
	mustErr(t, f.call("read", map[string]any{}), "path")
	mustErr(t, f.call("read", map[string]any{"path": "x", "limit": 0}), "/limit")
	mustErr(t, f.call("read", map[string]any{"path": "x", "bogus": 1}), "bogus")
	mustErr(t, f.call("grep", map[string]any{"pattern": "x", "output_mode": "lines"}), "/output_mode")
	tl, _ := f.reg.Lookup("read")
	if err := tl.Validate(json.RawMessage(`{"path":`)); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("truncated JSON: %v", err)
	}
	if _, err := NewRegistry(&Tool{Name: "x", Description: strings.Repeat("d", MaxDescription+1), Schema: "{}", run: readTool().run}); err == nil {
		t.Error("a long description was accepted")
	}
}

func TestRead(t *testing.T) {
	f := newFixture(t)
	var lines []string
	for i := 1; i <= 30; i++ {
		lines = append(lines, "line "+string(rune('a'+i%26)))
	}
	f.write("f.txt", strings.Join(lines, "\n")+"\n")
	r := mustOK(t, f.call("read", map[string]any{"path": "f.txt"}))
	if !strings.HasPrefix(r.Content, "     1\tline b\n") || r.Meta["total_lines"] != 30 {
		t.Fatalf("read: %q %v", r.Content[:40], r.Meta)
	}
	r = mustOK(t, f.call("read", map[string]any{"path": "f.txt", "offset": 5, "limit": 2}))
	if r.Content != "     5\tline f\n     6\tline g\n" || r.Meta["more"] != true {
		t.Fatalf("range: %q %v", r.Content, r.Meta)
	}
	f.write("bin", "ELF\x00\x01\x02")
	mustErr(t, f.call("read", map[string]any{"path": "bin"}), "binary")
	f.write("latin1.txt", "caf\xe9\r\nok\n")
	r = mustOK(t, f.call("read", map[string]any{"path": "latin1.txt"}))
	if r.Content != "     1\tcaf\uFFFD\n     2\tok\n" || r.Meta["invalid_utf8"] != true {
		t.Fatalf("non-UTF-8: %q %v", r.Content, r.Meta)
	}
	f.write("long.txt", strings.Repeat("x", maxLineChars+10)+"\n")
	r = mustOK(t, f.call("read", map[string]any{"path": "long.txt"}))
	if !strings.Contains(r.Content, "... [10 chars truncated]") {
		t.Fatalf("long line: %q", r.Content[len(r.Content)-40:])
	}
	mustErr(t, f.call("read", map[string]any{"path": "."}), "directory")
	mustErr(t, f.call("read", map[string]any{"path": "nope"}), "no such file")
	// The output cap cuts with the marker.
	f.write("big.txt", strings.Repeat("0123456789\n", 20000))
	r = mustOK(t, f.call("read", map[string]any{"path": "big.txt", "limit": 20000}))
	if !strings.Contains(r.Content, "chars truncated]") || len(r.Content) > 100100 {
		t.Fatalf("cap: %d chars, tail %q", len(r.Content), r.Content[len(r.Content)-40:])
	}
	f.write("empty.txt", "")
	r = mustOK(t, f.call("read", map[string]any{"path": "empty.txt"}))
	if r.Content != "" {
		t.Fatalf("empty: %q", r.Content)
	}
}

func TestWrite(t *testing.T) {
	f := newFixture(t)
	r := mustOK(t, f.call("write", map[string]any{"path": "a/b/c.txt", "content": "hello\n"}))
	if f.read("a/b/c.txt") != "hello\n" || r.Meta["created"] != true {
		t.Fatalf("write: %v", r)
	}
	p := f.write("script.sh", "old")
	os.Chmod(p, 0o751)
	mustOK(t, f.call("write", map[string]any{"path": "script.sh", "content": "new"}))
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o751 || f.read("script.sh") != "new" {
		t.Fatalf("mode %v content %q", st.Mode(), f.read("script.sh"))
	}
	// No temporary file is left behind.
	ents, _ := os.ReadDir(f.dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Fatalf("left %s", e.Name())
		}
	}
	os.Symlink("script.sh", filepath.Join(f.dir, "alias"))
	mustErr(t, f.call("write", map[string]any{"path": "alias", "content": "x"}), "symlink")
	mustErr(t, f.call("write", map[string]any{"path": "a", "content": "x"}), "not a regular file")
	mustErr(t, f.call("write", map[string]any{"path": "../x", "content": "x"}), "outside")
	// A file in the way of a parent directory.
	mustErr(t, f.call("write", map[string]any{"path": "script.sh/x", "content": "x"}), "not a directory")
}

func TestEdit(t *testing.T) {
	f := newFixture(t)
	p := f.write("e.go", "a := 1\nb := 1\nc := 2\n")
	os.Chmod(p, 0o600)
	mustErr(t, f.call("edit", map[string]any{"path": "e.go", "old_string": ":= 1", "new_string": ":= 3"}), "matches 2 times")
	mustErr(t, f.call("edit", map[string]any{"path": "e.go", "old_string": "zzz", "new_string": "y"}), "not found")
	if f.read("e.go") != "a := 1\nb := 1\nc := 2\n" {
		t.Fatal("a refused edit changed the file")
	}
	r := mustOK(t, f.call("edit", map[string]any{"path": "e.go", "old_string": "c := 2", "new_string": "c := 4"}))
	if r.Meta["matches"] != 1 || f.read("e.go") != "a := 1\nb := 1\nc := 4\n" {
		t.Fatalf("edit: %v %q", r, f.read("e.go"))
	}
	r = mustOK(t, f.call("edit", map[string]any{"path": "e.go", "old_string": ":= 1", "new_string": ":= 5", "replace_all": true}))
	if r.Meta["matches"] != 2 || f.read("e.go") != "a := 5\nb := 5\nc := 4\n" {
		t.Fatalf("replace_all: %v", r)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	// Changed since read: refused with the hash.
	rd := mustOK(t, f.call("read", map[string]any{"path": "e.go"}))
	h := rd.Meta["sha256"].(string)
	f.write("e.go", "a := 5\nb := 5\nc := 4\n// changed\n")
	mustErr(t, f.call("edit", map[string]any{"path": "e.go", "old_string": "c := 4", "new_string": "c := 6", "expected_sha256": h}), "changed since it was read")
	rd = mustOK(t, f.call("read", map[string]any{"path": "e.go"}))
	mustOK(t, f.call("edit", map[string]any{"path": "e.go", "old_string": "c := 4", "new_string": "c := 6", "expected_sha256": rd.Meta["sha256"]}))
}

func TestLs(t *testing.T) {
	f := newFixture(t)
	f.write("b.txt", "12345")
	f.write("dir/x", "")
	f.write(".hidden", "")
	os.Symlink("b.txt", filepath.Join(f.dir, "l"))
	r := mustOK(t, f.call("ls", map[string]any{}))
	want := "d          -  dir/\nf          5  b.txt\nl          5  l -> b.txt\n"
	if r.Content != want {
		t.Fatalf("ls:\n%s\nwant\n%s", r.Content, want)
	}
	r = mustOK(t, f.call("ls", map[string]any{"all": true}))
	if !strings.Contains(r.Content, ".hidden") {
		t.Fatalf("ls all: %s", r.Content)
	}
	mustErr(t, f.call("ls", map[string]any{"path": "b.txt"}), "not a directory")
	mustErr(t, f.call("ls", map[string]any{"path": "/"}), "outside")
}

func TestGlob(t *testing.T) {
	f := newFixture(t)
	old := time.Now().Add(-time.Hour)
	for i, p := range []string{"a.go", "x/b.go", "x/y/c.go", "x/y/d.txt", ".git/e.go"} {
		fp := f.write(p, "")
		mt := old.Add(time.Duration(i) * time.Minute)
		os.Chtimes(fp, mt, mt)
	}
	r := mustOK(t, f.call("glob", map[string]any{"pattern": "**/*.go"}))
	if r.Content != "x/y/c.go\nx/b.go\na.go\n" {
		t.Fatalf("glob newest first:\n%s", r.Content)
	}
	r = mustOK(t, f.call("glob", map[string]any{"pattern": "*.go", "path": "x"}))
	if r.Content != "x/b.go\n" {
		t.Fatalf("glob in path: %q", r.Content)
	}
	r = mustOK(t, f.call("glob", map[string]any{"pattern": "**/*.{txt,go}", "path": "x/y"}))
	if r.Content != "x/y/d.txt\nx/y/c.go\n" {
		t.Fatalf("glob braces: %q", r.Content)
	}
	mustErr(t, f.call("glob", map[string]any{"pattern": "[", "path": "."}), "not a valid")
	mustErr(t, f.call("glob", map[string]any{"pattern": "*", "path": ".."}), "outside")
}

func TestGrep(t *testing.T) {
	f := newFixture(t)
	f.write("a.go", "package a\nfunc Foo() {}\n// foo\n")
	f.write("b/b.py", "def foo():\n    pass\n\nx = 1\nfoo()\n")
	f.write("ignored/c.go", "func Foo() {}\n")
	f.write("b/gen.go", "Foo\n")
	f.write("b/.gitignore", "gen.go\n")
	f.write(".gitignore", "ignored/\n*.log\n!keep.log\n")
	f.write("x.log", "Foo\n")
	f.write("keep.log", "Foo\n")
	f.write("bin.dat", "Foo\x00\x01")
	f.write(".hid/h.go", "Foo\n")

	r := mustOK(t, f.call("grep", map[string]any{"pattern": "Foo", "output_mode": "files_with_matches"}))
	if r.Content != "a.go\nkeep.log\n" {
		t.Fatalf("files (gitignore, binary, hidden):\n%s", r.Content)
	}
	r = mustOK(t, f.call("grep", map[string]any{"pattern": "foo", "ignore_case": true, "output_mode": "count"}))
	if r.Content != "a.go:2\nb/b.py:2\nkeep.log:1\n" {
		t.Fatalf("count:\n%s", r.Content)
	}
	r = mustOK(t, f.call("grep", map[string]any{"pattern": "^foo", "type": "py", "context": 1}))
	want := "b/b.py-4-x = 1\nb/b.py:5:foo()\n"
	if r.Content != want {
		t.Fatalf("context:\n%s\nwant\n%s", r.Content, want)
	}
	r = mustOK(t, f.call("grep", map[string]any{"pattern": "foo", "glob": "*.py", "before": 0, "after": 1}))
	want = "b/b.py:1:def foo():\nb/b.py-2-    pass\n--\nb/b.py:5:foo()\n"
	if r.Content != want {
		t.Fatalf("after:\n%s\nwant\n%s", r.Content, want)
	}
	r = mustOK(t, f.call("grep", map[string]any{"pattern": "Foo", "hidden": true, "output_mode": "files_with_matches"}))
	if !strings.Contains(r.Content, ".hid/h.go") {
		t.Fatalf("hidden: %s", r.Content)
	}
	r = mustOK(t, f.call("grep", map[string]any{"pattern": "Foo", "path": "a.go"}))
	if r.Content != "a.go:2:func Foo() {}\n" {
		t.Fatalf("single file: %q", r.Content)
	}
	r = mustOK(t, f.call("grep", map[string]any{"pattern": "nothing-here"}))
	if r.Content != "no matches\n" {
		t.Fatalf("no match: %q", r.Content)
	}
	mustErr(t, f.call("grep", map[string]any{"pattern": "(unclosed"}), "/pattern")
	r = mustOK(t, f.call("grep", map[string]any{"pattern": ".", "output_mode": "files_with_matches", "max_results": 1}))
	if !strings.Contains(r.Content, "max_results=1") {
		t.Fatalf("max_results: %q", r.Content)
	}
}

func TestGitignore(t *testing.T) {
	f := parseIgnore("", "# comment\n*.o\n/build\ndocs/*.html\n!important.o\nlogs/\n**/tmp/**\n\\#hash\nspace\\ \n")
	cases := []struct {
		path  string
		dir   bool
		want  bool
		known bool
	}{
		{"x.o", false, true, true}, {"a/b/x.o", false, true, true}, {"important.o", false, false, true},
		{"build", true, true, true}, {"a/build", true, false, false}, {"docs/x.html", false, true, true},
		{"a/docs/x.html", false, false, false}, {"logs", true, true, true}, {"logs", false, false, false},
		{"a/tmp/x", false, true, true}, {"#hash", false, true, true}, {"main.go", false, false, false},
	}
	for _, c := range cases {
		got, known := f.match(c.path, c.dir)
		if got != c.want || known != c.known {
			t.Errorf("%s (dir %v): ignored %v decided %v, want %v %v", c.path, c.dir, got, known, c.want, c.known)
		}
	}
	sub := parseIgnore("pkg", "*.gen\n")
	chain := ignoreChain{parseIgnore("", "*.gen\n!keep.gen\n"), sub}
	if !chain.ignored("pkg/keep.gen", false) || chain.ignored("keep.gen", false) || !chain.ignored("x.gen", false) {
		t.Error("deeper .gitignore must win over the outer one")
	}
}

// A FIFO or device in the workspace must not hold a file tool: each is
// refused at once as not a regular file, and grep and glob walk past it.
func TestFileToolsRefuseFIFOsAndDevices(t *testing.T) {
	f := newFixture(t)
	f.write("ok.txt", "needle\n")
	if err := unix.Mkfifo(filepath.Join(f.dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(f.dir, "zero")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(f.dir, ".gitignore"), nil, 0o644)
	start := time.Now()
	mustErr(t, f.call("read", map[string]any{"path": "fifo"}), "fifo: not a regular file (a FIFO)")
	mustErr(t, f.call("edit", map[string]any{"path": "fifo", "old_string": "a", "new_string": "b"}), "not a regular file (a FIFO)")
	// A symlink to a device outside the workspace is refused by the
	// resolution itself; /dev/zero is outside.
	mustErr(t, f.call("read", map[string]any{"path": "zero"}), "outside")
	mustErr(t, f.call("read", map[string]any{"path": "."}), "is a directory (use ls)")
	r := mustOK(t, f.call("grep", map[string]any{"pattern": "needle", "output_mode": "files_with_matches"}))
	if !contains(r.Content, "ok.txt") {
		t.Fatalf("grep: %q", r.Content)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the tools took %s: something blocked on the FIFO", took)
	}
}
