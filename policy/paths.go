package policy

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// hasGlob reports whether p contains glob syntax.
func hasGlob(p string) bool { return strings.ContainsAny(p, "*?[") }

// ExpandGlobs expands absolute path patterns against root ("/" in production, a temporary
// directory in tests) and returns absolute paths as seen from root, sorted per pattern. A
// pattern without glob syntax is returned as is, existing or not: the confinement layer decides
// what a missing path means. "**" matches any number of directories, including none.
func ExpandGlobs(root string, patterns []string) ([]string, error) {
	var out []string
	for _, pat := range patterns {
		if !filepath.IsAbs(pat) {
			return nil, fmt.Errorf("glob: %q is not absolute", pat)
		}
		if !hasGlob(pat) {
			out = append(out, pat)
			continue
		}
		matches, err := glob(root, pat)
		if err != nil {
			return nil, fmt.Errorf("glob: expand %q: %w", pat, err)
		}
		out = append(out, matches...)
	}
	return out, nil
}

func glob(root, pat string) ([]string, error) {
	if !strings.Contains(pat, "**") {
		ms, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			return nil, err
		}
		for i, m := range ms {
			ms[i] = fromRoot(root, m)
		}
		return ms, nil
	}
	// Walk from the longest prefix without glob syntax, matching segment-wise with ** spanning.
	segs := strings.Split(strings.TrimPrefix(pat, "/"), "/")
	base := "/"
	i := 0
	for ; i < len(segs) && !hasGlob(segs[i]); i++ {
		base = filepath.Join(base, segs[i])
	}
	var out []string
	start := filepath.Join(root, base)
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start && os.IsNotExist(err) {
				return filepath.SkipAll
			}
			return nil // unreadable subtrees are skipped, not fatal
		}
		rel, _ := filepath.Rel(start, p)
		if rel == "." {
			return nil
		}
		if matchSegs(segs[i:], strings.Split(rel, "/")) {
			out = append(out, fromRoot(root, p))
		}
		return nil
	})
	return out, err
}

func matchSegs(pat, name []string) bool {
	if len(pat) == 0 {
		return len(name) == 0
	}
	if pat[0] == "**" {
		for k := 0; k <= len(name); k++ {
			if matchSegs(pat[1:], name[k:]) {
				return true
			}
		}
		return false
	}
	if len(name) == 0 {
		return false
	}
	ok, _ := filepath.Match(pat[0], name[0])
	return ok && matchSegs(pat[1:], name[1:])
}

func fromRoot(root, p string) string {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return filepath.Join("/", rel)
}

// Expand returns a copy of the sandbox with the globs in ro, rw and hide expanded against root
// and the protected patterns expanded inside the workspace (as absolute paths). Protected entries
// without glob syntax are kept even if missing, so the confinement layer can keep an agent from
// creating them.
func (s Sandbox) Expand(root string) (Sandbox, error) {
	var err error
	out := s
	if out.RO, err = ExpandGlobs(root, s.RO); err != nil {
		return Sandbox{}, err
	}
	if out.RW, err = ExpandGlobs(root, s.RW); err != nil {
		return Sandbox{}, err
	}
	if out.Hide, err = ExpandGlobs(root, s.Hide); err != nil {
		return Sandbox{}, err
	}
	// A glob in the last component only is left to the confinement layer, which lists that
	// directory by descriptor and records what matched for the plan cache; any other glob is
	// expanded here.
	out.Protected = nil
	for _, p := range s.Protected {
		abs := filepath.Join(s.Workspace, p)
		if !hasGlob(p) || lastGlobOnly(p) {
			out.Protected = append(out.Protected, abs)
			continue
		}
		matches, err := ExpandGlobs(root, []string{abs})
		if err != nil {
			return Sandbox{}, err
		}
		out.Protected = append(out.Protected, matches...)
	}
	return out, nil
}

// lastGlobOnly reports whether the glob syntax of p is in its last component only.
func lastGlobOnly(p string) bool {
	dir, base := filepath.Split(p)
	return hasGlob(base) && !hasGlob(dir)
}

// under reports whether p is base or inside it.
func under(p, base string) bool {
	return p == base || base == "/" || strings.HasPrefix(p, strings.TrimSuffix(base, "/")+"/")
}

func coveredBy(p string, bases ...[]string) bool {
	for _, list := range bases {
		for _, b := range list {
			if under(p, b) || (hasGlob(b) && globCovers(b, p)) {
				return true
			}
		}
	}
	return false
}

// globCovers: a path matched by (or below a match of) a glob base.
func globCovers(base, p string) bool {
	segs := strings.Split(p, "/")
	for k := len(segs); k > 0; k-- {
		if ok, _ := filepath.Match(base, strings.Join(segs[:k], "/")); ok {
			return true
		}
	}
	return false
}

// HasGlobs reports whether any path list of s holds a glob pattern whose matches depend on the
// file system at the time of the run and are not recorded as facts of the plan.
func (s Sandbox) HasGlobs() bool {
	for _, list := range [][]string{s.RO, s.RW, s.Hide} {
		for _, p := range list {
			if hasGlob(p) {
				return true
			}
		}
	}
	// The confinement layer expands a glob in a protected path's last component and records
	// its matches; only the others depend on more than the plan's facts.
	for _, p := range s.Protected {
		if hasGlob(p) && !lastGlobOnly(p) {
			return true
		}
	}
	return false
}
