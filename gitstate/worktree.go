package gitstate

import (
	"path"
	"strings"
)

// Two files of the work tree are read by the host's git itself and name
// programs or repositories it acts on: .gitattributes assigns filter,
// diff and merge drivers (the host's config defines what each runs: a
// sandbox's commit can point the host's textconv or merge driver at any
// file; git-lfs, made for content others wrote, is the exception),
// and .gitmodules names the URLs the host's git submodule update clones
// from and how it updates; .lfsconfig names the server git-lfs sends the
// host's credentials to. Commits the sandbox made that bring one of
// these with such content are held like those that change a hook
// (Options.Hold); any other content of them is ordinary.

// TreeFileActs returns why the host's git would act on a work-tree file
// named p (a path relative to the work tree) with content b, or "" when
// it would not (any other name, or content that names nothing to run).
func TreeFileActs(p string, b []byte) string {
	switch path.Base(p) {
	case ".gitattributes":
		return attributesAct(b)
	case ".gitmodules":
		return submodulesAct(b)
	case ".lfsconfig":
		// git-lfs reads its server's URL (and so where the host's
		// credentials go) and its transfer agents from it.
		return ".lfsconfig sets where git-lfs sends the host's credentials and what it runs"
	}
	return ""
}

// attributesAct: an attribute line that sets a filter, diff or merge
// driver (filter=NAME, diff=NAME, merge=NAME), in a pattern line or a
// macro definition ([attr]NAME ...).
func attributesAct(b []byte) string {
	for _, line := range strings.Split(string(b), "\n") {
		for _, f := range strings.Fields(line) {
			for _, d := range []string{"filter=", "diff=", "merge="} {
				// git-lfs is made for content others wrote (what it
				// fetches from is .lfsconfig's, held itself).
				if strings.HasPrefix(f, d) && f != d+"lfs" {
					return ".gitattributes sets a " + strings.TrimSuffix(d, "=") + " driver, which runs what the host's config names for it"
				}
			}
		}
	}
	return ""
}

// submoduleKeys are the keys of .gitmodules that choose no program and no
// local repository.
var submoduleKeys = map[string]bool{"path": true, "url": true, "branch": true, "shallow": true, "ignore": true, "fetchrecursesubmodules": true}

// submodulesAct: a .gitmodules that git cannot parse, sets a key outside
// submoduleKeys (update = !command is ignored by today's git, but what a
// key does is the host git's version's business), or names a URL that
// is neither a network one remoteURL admits nor relative to the
// superproject's remote (./, ../).
func submodulesAct(b []byte) string {
	c, err := ParseConfig(b)
	if err != nil {
		return ".gitmodules does not parse"
	}
	for _, e := range c.Entries {
		if e.Section != "submodule" || !submoduleKeys[e.Name] {
			return ".gitmodules sets " + esc(e.Key())
		}
		if e.Name == "url" {
			v := e.Value
			rel := strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../")
			if !(rel && printable(v, 4096) && !strings.Contains(v, "::") && !strings.ContainsAny(v, " \\")) && !remoteURL(v) {
				return ".gitmodules names the URL " + esc(v) + ", which is not a network one"
			}
		}
	}
	return ""
}
