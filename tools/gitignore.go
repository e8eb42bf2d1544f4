//go:build linux

package tools

import (
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// ignoreRule is one line of a .gitignore file.
type ignoreRule struct {
	pattern  string // doublestar pattern
	negate   bool   // "!": re-include
	dirOnly  bool   // trailing "/": directories only
	anchored bool   // contains "/": relative to the file's directory, else any depth by name
}

// ignoreFile is one parsed .gitignore, with the directory it governs
// (relative to the walk's root, "" for the root itself).
type ignoreFile struct {
	base  string
	rules []ignoreRule
}

// parseIgnore reads .gitignore text as git documents it (gitignore(5)):
// comments, "!" negation, "\" escapes, trailing "/" for directories, a
// slash anywhere else anchoring the pattern to the file's directory.
// Patterns are matched with doublestar, whose "*", "?", "[...]" and "**"
// mean what git's do.
func parseIgnore(base string, text string) *ignoreFile {
	f := &ignoreFile{base: base}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		// Trailing spaces are ignored unless escaped with a backslash.
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
			line = line[:len(line)-1]
		}
		if line == "" || line[0] == '#' {
			continue
		}
		var r ignoreRule
		if line[0] == '!' {
			r.negate, line = true, line[1:]
		} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		if strings.Contains(line, "/") {
			r.anchored, line = true, strings.TrimPrefix(line, "/")
		}
		if !doublestar.ValidatePattern(line) {
			continue // git ignores what it cannot parse; so do we
		}
		r.pattern = line
		f.rules = append(f.rules, r)
	}
	return f
}

// match says whether rel (relative to the walk's root) is ignored by this
// file: decided is false when no rule matched, and the last matching rule
// wins, as in git.
func (f *ignoreFile) match(rel string, isDir bool) (ignored, decided bool) {
	sub := rel
	if f.base != "" {
		if !strings.HasPrefix(rel, f.base+"/") {
			return false, false
		}
		sub = rel[len(f.base)+1:]
	}
	name := path.Base(sub)
	for i := len(f.rules) - 1; i >= 0; i-- {
		r := f.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		var ok bool
		if r.anchored {
			ok, _ = doublestar.Match(r.pattern, sub)
		} else {
			ok, _ = doublestar.Match(r.pattern, name)
		}
		if ok {
			return !r.negate, true
		}
	}
	return false, false
}

// ignoreChain is the .gitignore files governing a directory, outermost
// first; the deepest file that decides wins.
type ignoreChain []*ignoreFile

func (c ignoreChain) ignored(rel string, isDir bool) bool {
	for i := len(c) - 1; i >= 0; i-- {
		if ig, ok := c[i].match(rel, isDir); ok {
			return ig
		}
	}
	return false
}
