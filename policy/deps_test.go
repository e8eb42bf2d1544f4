package policy

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportFence keeps policy free of confinement, Docker and browser code: it decides, it
// never confines, and it must build anywhere.
func TestImportFence(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	allowed := []string{"github.com/BurntSushi/toml", "mvdan.cc/sh/v3/"}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.Contains(strings.Split(p, "/")[0], ".") {
				continue // standard library
			}
			ok := false
			for _, a := range allowed {
				ok = ok || strings.HasPrefix(p, a)
			}
			if !ok {
				t.Errorf("%s imports %s; policy may import only the standard library, toml and mvdan.cc/sh", f, p)
			}
		}
	}
	b, _ := os.ReadFile("doc.go")
	if !strings.Contains(string(b), "// Package policy") {
		t.Error("package doc comment missing")
	}
}
