package policy

import "testing"

func TestHashStable(t *testing.T) {
	a := mustLoad(t, `
[sandbox]
ro = ["/usr", "/opt"]
[network]
mode = "proxy"
allow = ["a.example.org", "b.example.org"]
[limits]
timeout = "30s"
`)
	b := mustLoad(t, `# same policy, other order and spelling
[limits]
timeout   = "30s"

[network]
allow = [ "b.example.org",
          "a.example.org" ]
mode = "proxy"

[sandbox]
ro = ["/opt", "/usr/"]
`)
	if a.Hash() != b.Hash() {
		t.Error("key order, whitespace and list order change the hash")
	}
	c := mustLoad(t, "[sandbox]\nro = [\"/usr\", \"/opt\"]\n[network]\nmode = \"proxy\"\nallow = [\"a.example.org\", \"b.example.org\"]\n[limits]\ntimeout = \"31s\"\n")
	if a.Hash() == c.Hash() {
		t.Error("a different timeout has the same hash")
	}
	if len(a.Hash()) != 64 {
		t.Errorf("hash %q", a.Hash())
	}
	// The default policy and an empty file are the same policy.
	if mustLoad(t, "").Hash() != Default(Env{Home: "/home/alice", Workspace: "/w"}).Hash() {
		t.Error("empty file differs from the default")
	}
}
