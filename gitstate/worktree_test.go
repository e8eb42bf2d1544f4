package gitstate

import "testing"

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
