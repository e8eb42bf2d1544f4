package gitstate

import (
	"strings"
	"testing"
)

func TestTreeFileActs(t *testing.T) {
	for _, c := range []struct {
		path, content string
		acts          bool
	}{
		{".gitattributes", "*.txt text eol=lf\n*.png binary\n*.c -diff\n", false},
		{"sub/.gitattributes", "*.txt filter=x\n", true},
		{".gitattributes", "[attr]m diff=pwn\n*.a m\n", true},
		{".gitattributes", "*.x merge=ours\n", true},
		{".gitmodules", "[submodule \"a\"]\n\tpath = a\n\turl = https://example.com/a.git\n\tbranch = main\n", false},
		{".gitmodules", "[submodule \"a\"]\n\tpath = a\n\turl = ../a.git\n", false},
		{".gitmodules", "[submodule \"a\"]\n\tpath = a\n\turl = /tmp/planted\n", true},
		{".gitmodules", "[submodule \"a\"]\n\tpath = a\n\turl = ext::sh -c id\n", true},
		{".gitmodules", "[submodule \"a\"]\n\tupdate = !id\n", true},
		{".gitmodules", "[core]\n\tfsmonitor = x\n", true},
		{".gitmodules", "[broken\n", true},
		{"README", "filter=x", false},
		{".gitattributes", "*.bin filter=lfs diff=lfs merge=lfs -text\n", false},
		{"a/.lfsconfig", "[lfs]\n\turl = https://evil.example/\n", true},
	} {
		if got := TreeFileActs(c.path, []byte(c.content)) != ""; got != c.acts {
			t.Errorf("TreeFileActs(%q, %q) = %v, want %v", c.path, c.content, got, c.acts)
		}
	}
}

// A ref Hold names paths for stays where it was, the sandbox's value is
// kept under refs/jail/, and an index staging a path Protected names is
// not adopted; an ordinary ref beside it moves.
func TestHoldAndProtected(t *testing.T) {
	r := newRepo(t)
	base := r.take()
	before := r.rev("main")
	o := r.overlay()
	o.run(`git checkout -q -b side && echo x > x && git add x && git commit -qm side && git checkout -q main &&
		echo hook > .hook && git add .hook && git commit -qm hook && echo y > .hook2 && git add .hook2`)
	var asked [][]string
	rep := o.adopt(base, Options{RunID: "h",
		Hold: func(ids []string) ([]string, error) {
			asked = append(asked, ids)
			if out := r.git("show", "--format=", "--name-only", ids[0]); strings.Contains(out, ".hook") {
				return []string{".hook"}, nil
			}
			return nil, nil
		},
		Protected: func(p, oid string) bool { return strings.HasPrefix(p, ".hook") }})
	if r.rev("main") != before {
		t.Errorf("main moved to the sandbox's commit: %+v", rep)
	}
	if r.rev("refs/jail/h/heads/main") == "" || len(rep.Held) != 1 || !strings.Contains(rep.Held[0], "(.hook)") {
		t.Errorf("the held ref is not kept and named: %+v", rep)
	}
	if r.rev("side") == "" {
		t.Errorf("the ordinary branch was not adopted: %+v", rep)
	}
	if len(asked) != 2 {
		t.Errorf("Hold asked %d times, want once per moved ref: %v", len(asked), asked)
	}
	if !strings.Contains(rep.Summary(), "held 1") {
		t.Errorf("summary: %s", rep.Summary())
	}
}
