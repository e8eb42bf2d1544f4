package fence

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pkg is the part of `go list -json` output the fences read.
type pkg struct {
	ImportPath   string
	Name         string
	Dir          string
	Doc          string
	Deps         []string
	GoFiles      []string
	CgoFiles     []string
	TestGoFiles  []string
	XTestGoFiles []string
	Error        *struct{ Err string }
}

// goList runs `go list -e -json` with extra environment and decodes the
// stream of package objects.
func goList(t *testing.T, env []string, args ...string) []pkg {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("requires the go command on PATH (go test puts GOROOT/bin there): %v", err)
	}
	cmd := exec.Command(goCmd, append([]string{"list", "-e", "-json"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func modulePath(t *testing.T) string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("requires the go command on PATH (go test puts GOROOT/bin there): %v", err)
	}
	out, err := exec.Command(goCmd, "list", "-m", "-f", "{{.Path}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// fence says what one package of the module must not depend on, directly
// or through anything it imports.
type fence struct {
	pkg string // relative to the module
	// internal are packages of the module (relative paths), forbidden
	// together with everything beneath them.
	internal []string
	// external are import-path prefixes outside the module.
	external []string
	why      string
}

var dockerAndBrowser = []string{
	"github.com/docker/", "github.com/moby/", "github.com/containerd/", "github.com/opencontainers/runc",
	"github.com/chromedp/", "github.com/go-rod/", "github.com/playwright-community/",
}

var fences = []fence{
	{pkg: "confine", internal: []string{"policy", "tools", "browser", "desktop", "netns"},
		why: "confine carries out a Spec; deciding (policy), tools and the network supervisor are built on it, not in it"},
	{pkg: "policy", internal: []string{"confine", "netns", "tools", "browser", "desktop"}, external: dockerAndBrowser,
		why: "policy decides and never confines; it must build anywhere, without Docker or a browser"},
	{pkg: "netns", internal: []string{"policy", "confine"},
		why: "netns is the network supervisor; the caller wires it to a sandbox"},
}

// violations lists the deps of pkg that f forbids.
func (f fence) violations(module string, deps []string) []string {
	var bad []string
	for _, d := range deps {
		forbidden := false
		for _, in := range f.internal {
			p := module + "/" + in
			forbidden = forbidden || d == p || strings.HasPrefix(d, p+"/")
		}
		for _, ex := range f.external {
			forbidden = forbidden || strings.HasPrefix(d, ex) || d == strings.TrimSuffix(ex, "/")
		}
		if forbidden {
			bad = append(bad, d)
		}
	}
	return bad
}

// TestFenceCheck makes sure the check itself can fail.
func TestFenceCheck(t *testing.T) {
	const mod = "example.com/jail"
	f := fence{internal: []string{"policy", "tools"}, external: []string{"github.com/docker/", "github.com/chromedp/"}}
	deps := []string{
		"fmt", "golang.org/x/sys/unix",
		mod + "/policy",                   // forbidden
		mod + "/tools/shell",              // beneath a forbidden package
		mod + "/policyx",                  // shares a prefix only
		"github.com/docker/docker/client", // forbidden prefix
		"github.com/chromedp",             // the prefix's own root
		"github.com/dockerx/y",            // shares a prefix only
		"example.com/jail2/policy",        // another module
	}
	got := f.violations(mod, deps)
	want := []string{mod + "/policy", mod + "/tools/shell", "github.com/docker/docker/client", "github.com/chromedp"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("violations:\n got %q\nwant %q", got, want)
	}
}

// buildConfigs are the configurations the fences must hold in: build tags
// and cgo change which files, and so which imports, a package has.
var buildConfigs = [][]string{
	{"GOOS=linux", "CGO_ENABLED=1"},
	{"GOOS=linux", "CGO_ENABLED=0"},
	{"GOOS=darwin", "CGO_ENABLED=0"},
}

func TestDependencyFences(t *testing.T) {
	mod := modulePath(t)
	var args []string
	for _, f := range fences {
		args = append(args, mod+"/"+f.pkg)
	}
	for _, cfg := range buildConfigs {
		pkgs := goList(t, cfg, args...)
		if len(pkgs) != len(fences) {
			t.Fatalf("%v: go list returned %d packages for %d fences", cfg, len(pkgs), len(fences))
		}
		for i, f := range fences {
			p := pkgs[i]
			if p.ImportPath != mod+"/"+f.pkg {
				t.Fatalf("%v: go list returned %s in place of %s", cfg, p.ImportPath, f.pkg)
			}
			if len(p.Deps) == 0 {
				t.Errorf("%v: %s has no dependencies at all: go list did not see it", cfg, f.pkg)
			}
			for _, d := range f.violations(mod, p.Deps) {
				t.Errorf("%v: %s depends on %s: %s", cfg, f.pkg, d, f.why)
			}
		}
	}
}

// TestPackageDocs: every package of the module has exactly one doc
// comment, and it starts the way go doc expects ("Package name ..." or,
// for a command, "Command name ...").
func TestPackageDocs(t *testing.T) {
	mod := modulePath(t)
	pkgs := goList(t, []string{"GOOS=linux", "CGO_ENABLED=1"}, mod+"/...")
	if len(pkgs) < 2 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		files := append(append([]string{}, p.GoFiles...), p.CgoFiles...)
		if len(files) == 0 {
			// A test-only package (integration) documents itself in a
			// test file.
			files = append(files, p.TestGoFiles...)
		}
		var docs []string
		for _, f := range files {
			af, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, f), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if af.Doc != nil {
				docs = append(docs, f)
				if p.Doc == "" {
					p.Doc = af.Doc.Text()
				}
			}
		}
		want := "Package " + p.Name + " "
		if p.Name == "main" {
			want = "Command " + filepath.Base(p.ImportPath) + " "
		}
		switch {
		case len(docs) == 0:
			t.Errorf("%s has no package doc comment", p.ImportPath)
		case len(docs) > 1:
			t.Errorf("%s has %d package doc comments (%s); keep one, in doc.go", p.ImportPath, len(docs), strings.Join(docs, ", "))
		case !strings.HasPrefix(p.Doc, want):
			t.Errorf("%s: doc comment starts %q, want %q", p.ImportPath, firstLine(p.Doc), want+"...")
		}
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
