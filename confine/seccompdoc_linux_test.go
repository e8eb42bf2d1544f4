//go:build linux

package confine

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/seccomp.md from the rule table")

// seccompDoc renders the deny-list as the table in docs/seccomp.md, so the
// document is the code's own list.
func seccompDoc() string {
	var b strings.Builder
	b.WriteString("# The default seccomp filter\n\n")
	b.WriteString("Generated from `confine/seccomp_rules.go` by `go test ./confine -run TestSeccompDoc -update-docs`;\n")
	b.WriteString("a test fails when this file and the code disagree.\n\n")
	b.WriteString("Everything not listed is allowed. Denied calls fail with the errno shown (EPERM unless\n")
	b.WriteString("noted), never by killing the process. Calls made through a secondary ABI (i386 `int 0x80`,\n")
	b.WriteString("x32) are refused as a whole with EPERM. A second, hand-assembled program allows only the\n")
	b.WriteString("socket families unix, inet, inet6 and netlink (EAFNOSUPPORT otherwise) and the personality\n")
	b.WriteString("values 0, 0x8, 0x40000, 0x40008 and the query 0xffffffff (EPERM otherwise), comparing the\n")
	b.WriteString("low 32 bits as the kernel does. `[seccomp] deny` adds calls; `[seccomp] allow` removes a\n")
	b.WriteString("default rule by name.\n\n")
	b.WriteString("| calls | when | errno | why |\n|---|---|---|---|\n")
	for _, r := range defaultDenyRules() {
		when := "always"
		if len(r.Conds) > 0 {
			var cs []string
			for _, c := range r.Conds {
				switch c.Op {
				case opNE:
					cs = append(cs, fmt.Sprintf("arg%d != %#x", c.Arg, c.Value))
				default:
					cs = append(cs, fmt.Sprintf("arg%d & %#x == %#x", c.Arg, c.Mask, c.Value))
				}
			}
			when = strings.Join(cs, " and ")
		}
		errno := "EPERM"
		if r.Errno != 0 {
			errno = strings.ToUpper(errnoName(r.Errno))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", strings.Join(r.Names, ", "), when, errno, r.Why)
	}
	return b.String()
}

func errnoName(e interface{ Error() string }) string {
	switch e.Error() {
	case "function not implemented":
		return "enosys"
	case "address family not supported by protocol":
		return "eafnosupport"
	}
	return e.Error()
}

func TestSeccompDoc(t *testing.T) {
	want := seccompDoc()
	const path = "../docs/seccomp.md"
	if *updateDocs {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf("docs/seccomp.md is out of date: run go test ./confine -run TestSeccompDoc -update-docs")
	}
}
