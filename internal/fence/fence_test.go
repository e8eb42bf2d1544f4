package fence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	Imports      []string
	GoFiles      []string
	CgoFiles     []string
	TestGoFiles  []string
	XTestGoFiles []string
	Error        *struct{ Err string }
	// Excluded is set by goList: no file of the package builds here.
	Excluded bool `json:"-"`
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
		if p.Error != nil && strings.Contains(p.Error.Err, "build constraints exclude all Go files") {
			// A Linux-only package (integration) under another GOOS:
			// it exists (TestFencedPackagesExist), with nothing to fence here.
			p.Error, p.Excluded = nil, true
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s (a fence on a package that does not exist fails here)", p.ImportPath, p.Error.Err)
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
	// test fences the package's test binary (its test files' imports
	// too), for a package that is only tests (integration).
	test bool
	// internal are packages of the module (relative paths), forbidden
	// together with everything beneath them. Each must exist, or be in
	// notYet: a fence naming a package that was renamed away guards
	// nothing.
	internal []string
	// onlyInternal, when set, are the only packages of the module the
	// package may depend on.
	onlyInternal []string
	// external are import-path prefixes outside the module.
	external []string
	// importsOnly, when set, are the only non-standard import-path
	// prefixes the package may import directly.
	importsOnly []string
	why         string
}

var dockerAndBrowser = []string{
	"github.com/docker/", "github.com/moby/", "github.com/containerd/", "github.com/opencontainers/runc",
	"github.com/chromedp/", "github.com/go-rod/", "github.com/playwright-community/",
}

// notYet are packages the design names (DESIGN.md: Layout) that do not
// exist yet; fences forbid them ahead. One that appears must leave this
// list, so its fences are checked against the real package.
var notYet = []string{}

// commands are the module's programs and the test-only packages: no
// library may depend on them.
var commands = []string{"cmd", "integration", "internal/testutil", "bench"}

// wiring are the commands and the package that wires the libraries
// together for them (launch): no library may depend on either.
var wiring = append([]string{"launch"}, commands...)

var fences = []fence{
	{pkg: "confine", internal: append([]string{"policy", "tools", "netns", "gitstate", "gitview", "agent", "home", "container", "browser", "desktop"}, wiring...), external: dockerAndBrowser,
		why: "confine carries out a Spec; deciding (policy), tools, git state and the network supervisor are built on it, not in it"},
	{pkg: "policy", internal: append([]string{"confine", "netns", "tools", "gitstate", "gitview", "agent", "home", "container", "browser", "desktop"}, wiring...), external: dockerAndBrowser,
		importsOnly: []string{"github.com/BurntSushi/toml", "mvdan.cc/sh/v3/", "github.com/jail-sandbox/jail/gitcmd", "github.com/jail-sandbox/jail/termtext"},
		why:         "policy decides and never confines; it must build anywhere, without Docker or a browser (it reads TOML, parses shell, reads git's command line (gitcmd) and escapes text for a terminal (termtext), nothing else)"},
	{pkg: "netns", internal: append([]string{"policy", "confine", "tools", "gitstate", "gitview", "agent", "home", "container", "browser", "desktop"}, wiring...), external: dockerAndBrowser,
		why: "netns is the network supervisor; the caller wires it to a sandbox and to the policy"},
	{pkg: "tools", internal: append([]string{"netns", "gitstate", "gitview", "agent", "container", "browser", "desktop"}, wiring...), external: dockerAndBrowser,
		why: "tools is the tool contract, the registry and the confined worker; the network, git adoption and the Docker-backed categories are wired to it by launch"},
	{pkg: "gitstate", internal: append([]string{"tools", "gitview", "agent", "container", "browser", "desktop"}, wiring...), external: dockerAndBrowser,
		why: "gitstate reads and adopts git state by descriptor for any front end; it must not reach the tools, the commands or Docker"},
	{pkg: "gitview", internal: append([]string{"tools", "netns", "agent", "container", "browser", "desktop"}, wiring...), external: dockerAndBrowser,
		why: "gitview lays out a sandbox's git directories (confine) and adopts their changes (gitstate); the tools, the network and the commands are built beside it"},
	{pkg: "agent", internal: append([]string{"tools", "netns", "gitstate", "gitview", "container", "browser", "desktop"}, wiring...), external: dockerAndBrowser,
		why: "agent applies a profile (policy) to a run's layout (confine) and home; the tools, the network and git are wired beside it by launch"},
	{pkg: "home", internal: append([]string{"policy", "tools", "netns", "gitstate", "gitview", "agent", "container", "browser", "desktop"}, wiring...), external: dockerAndBrowser,
		why: "home keeps the persistent homes by descriptor for whoever asks; it decides nothing (policy) and builds on no front end"},
	{pkg: "launch", internal: commands,
		why: "launch wires policy, confine, netns, gitview, home, agent and tools into sandboxes for the commands; it is a library of theirs, not one of them"},
	{pkg: "container", internal: append([]string{"confine", "policy", "tools", "netns", "gitstate", "gitview", "agent", "home", "browser", "desktop"}, wiring...),
		external: []string{"github.com/chromedp/", "github.com/go-rod/", "github.com/playwright-community/"},
		why:      "container is the Docker layer the browser and desktop categories share; it takes plain values from them and knows no policy, tool or browser"},
	{pkg: "browser", internal: append([]string{"gitstate", "gitview", "agent", "home", "desktop"}, wiring...),
		why: "browser drives Chromium in its container (container) and fetches for it under the network policy (netns); it runs no sandbox of its own and is wired to the servers by launch"},
	{pkg: "desktop", internal: append([]string{"netns", "gitstate", "gitview", "agent", "home", "browser"}, wiring...),
		external: []string{"github.com/chromedp/", "github.com/go-rod/", "github.com/playwright-community/"},
		why:      "desktop is a tool category on the container layer (its tools run in the supervisor); the network, git and the browser are not its business, and the wiring builds it"},
	{pkg: "gitcmd", onlyInternal: []string{}, importsOnly: []string{},
		why: "gitcmd reads git's command line for the guard, the action classifier and the git view alike; a leaf, so each of them may use it"},
	{pkg: "termtext", onlyInternal: []string{}, importsOnly: []string{},
		why: "termtext is the one escaping function for text the sandbox chose that jail prints; a leaf, so every package that prints may use it"},
	{pkg: "internal/testutil", onlyInternal: []string{},
		why: "the tests' shared helpers import nothing of the module, so any package's tests may use them"},
	{pkg: "integration", test: true, onlyInternal: []string{"internal/testutil"},
		why: "the integration tests drive the built binary as a user would; importing the packages would test something else"},
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
		if f.onlyInternal != nil && (d == module || strings.HasPrefix(d, module+"/")) && d != module+"/"+f.pkg {
			forbidden = forbidden || !slices.Contains(f.onlyInternal, strings.TrimPrefix(d, module+"/"))
		}
		if forbidden {
			bad = append(bad, d)
		}
	}
	return bad
}

// importViolations lists the direct imports of pkg outside the standard
// library that f.importsOnly does not allow.
func (f fence) importViolations(imports []string) []string {
	if f.importsOnly == nil {
		return nil
	}
	var bad []string
	for _, imp := range imports {
		if !strings.Contains(strings.Split(imp, "/")[0], ".") {
			continue // the standard library
		}
		if !slices.ContainsFunc(f.importsOnly, func(a string) bool { return strings.HasPrefix(imp, a) }) {
			bad = append(bad, imp)
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
	only := fence{pkg: "integration", onlyInternal: []string{"internal/testutil"}}
	got = only.violations(mod, []string{"fmt", mod + "/integration", mod + "/internal/testutil", mod + "/confine", "example.com/jail2/x"})
	if strings.Join(got, " ") != mod+"/confine" {
		t.Fatalf("onlyInternal violations: %q", got)
	}
	imp := fence{importsOnly: []string{"github.com/BurntSushi/toml", "mvdan.cc/sh/v3/"}}
	got = imp.importViolations([]string{"fmt", "net/http", "github.com/BurntSushi/toml", "mvdan.cc/sh/v3/syntax", "golang.org/x/sys/unix"})
	if strings.Join(got, " ") != "golang.org/x/sys/unix" {
		t.Fatalf("importsOnly violations: %q", got)
	}
}

// buildConfigs are the configurations the fences must hold in: build tags
// and cgo change which files, and so which imports, a package has.
var buildConfigs = [][]string{
	{"GOOS=linux", "CGO_ENABLED=1"},
	{"GOOS=linux", "CGO_ENABLED=0"},
	{"GOOS=darwin", "CGO_ENABLED=0"},
}

// TestFencedPackagesExist: every package a fence names, fenced or
// forbidden, exists in the module (or is in notYet, and then does not): a
// fence on a package that was renamed or removed would pass while
// guarding nothing.
func TestFencedPackagesExist(t *testing.T) {
	mod := modulePath(t)
	have := map[string]bool{}
	for _, p := range goList(t, []string{"GOOS=linux", "CGO_ENABLED=1"}, mod+"/...") {
		have[strings.TrimPrefix(p.ImportPath, mod+"/")] = true
	}
	exists := func(rel string) bool {
		for p := range have {
			if p == rel || strings.HasPrefix(p, rel+"/") {
				return true
			}
		}
		return false
	}
	for _, f := range fences {
		if !have[f.pkg] {
			t.Errorf("fence on %s: no such package in the module; fence what exists", f.pkg)
		}
		for _, in := range append(append([]string{}, f.internal...), f.onlyInternal...) {
			switch future := slices.Contains(notYet, in); {
			case future && exists(in):
				t.Errorf("%s exists now: remove it from notYet so the fences on it are checked", in)
			case !future && !exists(in):
				t.Errorf("fence on %s names %s, which is not a package of the module (renamed? add it to notYet if it is still to come)", f.pkg, in)
			}
		}
	}
}

func TestDependencyFences(t *testing.T) {
	mod := modulePath(t)
	for _, cfg := range buildConfigs {
		for _, f := range fences {
			args := []string{mod + "/" + f.pkg}
			want := mod + "/" + f.pkg
			if f.test {
				// The test binary's variant of the package, whose deps
				// include what its test files import.
				args = append([]string{"-test"}, args...)
				want = fmt.Sprintf("%s [%s.test]", want, want)
			}
			var p *pkg
			pkgs := goList(t, cfg, args...)
			for i := range pkgs {
				if pkgs[i].ImportPath == want || pkgs[i].Excluded && pkgs[i].ImportPath == mod+"/"+f.pkg {
					p = &pkgs[i]
				}
			}
			if p == nil {
				t.Errorf("%v: go list did not return %s (it returned %d packages): the fenced package does not exist", cfg, want, len(pkgs))
				continue
			}
			if p.Excluded {
				t.Logf("%v: %s has no files here", cfg, f.pkg)
				continue
			}
			if len(p.Imports) == 0 && !f.test {
				// Nothing imported under these build tags (a Linux-only
				// package is its doc comment elsewhere): nothing to fence.
				t.Logf("%v: %s imports nothing here", cfg, f.pkg)
				continue
			}
			if len(p.Deps) == 0 && !f.test {
				t.Errorf("%v: %s has no dependencies at all: go list did not see it", cfg, f.pkg)
			}
			for _, d := range f.violations(mod, p.Deps) {
				t.Errorf("%v: %s depends on %s: %s", cfg, f.pkg, d, f.why)
			}
			for _, d := range f.importViolations(p.Imports) {
				t.Errorf("%v: %s imports %s: %s", cfg, f.pkg, d, f.why)
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

// TestVetOtherSystems: the module type-checks, tests included, where the
// fences look beyond Linux (buildConfigs): a Linux-only package is its
// doc comment there, a platform file has its stub (cmd/jail says jail
// needs Linux). go list, which the fences read, does not type-check.
func TestVetOtherSystems(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("requires the go command on PATH (go test puts GOROOT/bin there): %v", err)
	}
	for _, cfg := range buildConfigs {
		if slices.Contains(cfg, "GOOS=linux") {
			continue // make test vets Linux
		}
		// Every package but the integration tests, which drive the Linux
		// binary and are Linux files one by one: a new test file there
		// without its tag breaks only the tests' own vet elsewhere.
		var pkgs []string
		for _, p := range goList(t, cfg, modulePath(t)+"/...") {
			if !strings.HasSuffix(p.ImportPath, "/integration") {
				pkgs = append(pkgs, p.ImportPath)
			}
		}
		cmd := exec.Command(goCmd, append([]string{"vet"}, pkgs...)...)
		cmd.Env = append(os.Environ(), cfg...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%v go vet: %v\n%s", cfg, err, out)
		}
	}
}
