//go:build linux

package confine

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Toolchains under $HOME (docs/commands.md, "Toolchains in the home").
// The home is an empty tmpfs inside the sandbox, yet the caller's PATH
// often names directories in it: ~/.local/bin, ~/.cargo/bin, ~/go/bin,
// pyenv's shims, nvm's versions. For each such PATH entry the tool's own
// tree (its tool root) is bound read-only, with the symlinks the entry and
// its commands resolve through; nothing else of the home is shown.

// sharedHomeDirs hold many tools' files: a tool root is the first
// directory below one of them (~/.local/share/mise), never the shared
// directory itself. Longest first.
var sharedHomeDirs = []string{".local/share", ".local/state", ".local", ".config", ".cache"}

// HomeSecrets are places in a home that a tool root may neither be, lie
// in, nor contain (relative to the home): keys and tokens, and jail's own
// state. A tool root that would contain one is not bound: its PATH entry
// stays hidden and jail says so when a command is not found there.
func HomeSecrets() []string {
	return []string{".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store", ".pki",
		".netrc", ".npmrc", ".pypirc", ".git-credentials", ".config/gh", ".config/gcloud", ".local/share/keyrings",
		".config/jail", ".cache/jail", ".local/share/jail", ".local/state/jail"}
}

// toolSecrets are files inside tool roots that hold credentials: hidden
// (covered by an empty file) where they exist.
func toolSecrets() []string {
	return []string{".cargo/credentials", ".cargo/credentials.toml", "go/pkg/mod/cache/download/sumdb", ".gem/credentials"}
}

// toolRoot is the tool's tree for a directory p under home: the first
// directory below the home, or below a shared directory of it. ok is
// false when p is the home or a shared directory itself, or when the root
// is, lies in or contains one of HomeSecrets.
func toolRoot(home, p string) (string, bool) {
	if !pathWithin(p, home) || p == home {
		return "", false
	}
	rel := strings.TrimPrefix(p, home+"/")
	base := ""
	for _, s := range sharedHomeDirs {
		if rel == s {
			return "", false
		}
		if strings.HasPrefix(rel, s+"/") {
			base, rel = s, strings.TrimPrefix(rel, s+"/")
			break
		}
	}
	first, _, _ := strings.Cut(rel, "/")
	root := filepath.Join(home, base, first)
	for _, s := range HomeSecrets() {
		sp := filepath.Join(home, s)
		if pathWithin(sp, root) || pathWithin(root, sp) {
			return "", false
		}
	}
	return root, true
}

// toolPaths returns the mounts that make the caller's PATH entries under
// the home usable inside: each tool root read-only and executable (and,
// for ~/.local/bin, the user prefix's ~/.local/lib, where pip --user and
// npm --prefix ~/.local keep what their commands load), the roots that
// the entries' and their commands' symlinks resolve into, and those
// symlinks themselves where they lie in the home's tmpfs outside every
// root. ms are the mounts so far: an entry another mount already shows
// (the workspace, a --ro) needs nothing.
func (l *Layout) toolPaths(home string, ms []Mount) []Mount {
	var roots []string
	links := map[string]string{}
	shown := func(p string) bool {
		for _, m := range ms {
			if m.Dest != home && pathWithin(p, m.Dest) && pathWithin(m.Dest, home) && m.Kind == Bind {
				return true
			}
		}
		return false
	}
	inRoots := func(p string) bool {
		return slices.ContainsFunc(roots, func(r string) bool { return pathWithin(p, r) })
	}
	addRoot := func(p string) {
		r, ok := toolRoot(home, p)
		if !ok || inRoots(r) || shown(r) {
			return
		}
		// Recorded whatever it is: a root made later (~/.rustup after
		// ~/.cargo/bin) must make the plan be made again.
		var st unix.Stat_t
		if err := unix.Lstat(r, &st); err != nil {
			if !errors.Is(err, unix.ENOENT) {
				l.Facts.Unsure()
			}
			st.Mode = 0
		}
		l.Facts.fileType(r, st.Mode)
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return
		}
		roots = slices.DeleteFunc(roots, func(o string) bool { return pathWithin(o, r) })
		roots = append(roots, r)
	}
	// follow resolves p, recording every symlink met as a fact. The
	// symlinks met in the home are returned, not yet shown: each must
	// exist inside too (as a symlink of the tmpfs or inside a root), but
	// only once the caller accepts where they lead.
	follow := func(p string) (string, map[string]string, bool) {
		r, objs, err := resolveWalk(p)
		met := map[string]string{}
		for _, o := range objs {
			t, lerr := os.Readlink(o)
			if lerr != nil {
				l.Facts.Unsure()
				continue
			}
			l.Facts.fileType(o, unix.S_IFLNK)
			l.Facts.link(o, t)
			if pathWithin(o, home) {
				met[o] = t
			}
		}
		resolved := resolvedOrNone(p)
		l.Facts.realpath(p, resolved)
		return r, met, err == nil && resolved == r
	}
	accept := func(met map[string]string) {
		for o, t := range met {
			links[o] = t
		}
	}
	// Files and package directories that command symlinks lead to across
	// tool roots: bound alone, never their root.
	var singles []Mount
	seen := map[string]bool{}
	for _, d := range l.Path {
		if !filepath.IsAbs(d) {
			continue // the working directory's: the workspace shows it
		}
		d = filepath.Clean(d)
		if !pathWithin(d, home) || d == home || shown(d) || seen[d] {
			continue
		}
		seen[d] = true
		r, met, ok := follow(d)
		if !ok {
			continue
		}
		var st unix.Stat_t
		if err := unix.Stat(r, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		if !pathWithin(r, home) {
			continue // a system directory shows itself; anything else stays hidden
		}
		root, ok := toolRoot(home, r)
		if !ok {
			continue
		}
		if own, _ := toolRoot(home, d); own != root {
			// The entry leads into another tool root (~/bin ->
			// dotfiles/bin). A sandbox that can write where the entry
			// lies (a workspace's bin, a venv) could point it anywhere,
			// so this is followed only through symlinks the user made at
			// a tool root's own name, never through one a workspace may
			// hold, and only to a place not private to the user; and
			// then only that directory is shown, not its root.
			if !crossOK(home, root, met) || !public(l.Facts, home, r) {
				continue
			}
			accept(met)
			show := r
			if pkg := filepath.Dir(r); filepath.Base(r) == "bin" && pkg != root && public(l.Facts, home, pkg) {
				show = pkg // a version's tree (~/vmbin -> .vm/current/bin)
			}
			var sst unix.Stat_t
			if unix.Stat(show, &sst) == nil {
				l.Facts.dir(show, &sst)
				singles = append(singles, Mount{Kind: Bind, Source: show, Dest: show, Exec: true})
			}
			continue
		}
		accept(met)
		addRoot(r)
		if r == filepath.Join(home, ".local", "bin") {
			addRoot(filepath.Join(home, ".local", "lib"))
		}
		if pathWithin(r, filepath.Join(home, ".cargo")) {
			// rustup's proxies (cargo, rustc) run the toolchains it
			// keeps in ~/.rustup.
			addRoot(filepath.Join(home, ".rustup"))
		}
		// Commands that are symlinks out of the entry (npm's
		// ~/.local/bin/claude -> ../lib/node_modules/...): their targets'
		// roots. The directory's identity is a fact, so a command added
		// or removed later makes the plan be made again.
		l.Facts.File(r)
		ents, err := os.ReadDir(r)
		if err != nil {
			l.Facts.Unsure()
			continue
		}
		for _, e := range ents {
			if e.Type()&os.ModeSymlink == 0 {
				continue
			}
			// A link to a name in the same directory (rustup's proxies,
			// python3 -> python3.12) leads nowhere new, and the
			// directory's identity covers it: a link is replaced, never
			// changed in place.
			if t, err := os.Readlink(filepath.Join(r, e.Name())); err == nil && !strings.Contains(t, "/") {
				continue
			}
			c := filepath.Join(r, e.Name())
			t, met, ok := follow(c)
			if !ok || !pathWithin(t, home) {
				continue
			}
			if tr, ok := toolRoot(home, t); !ok || tr != root && !tied(home, root, tr) {
				// Out of the entry's tool root: the link may be a
				// sandbox's (docs/commands.md, "Command symlinks"), so it
				// never brings a root, only the executable it names or
				// its package, and only when neither is private.
				if m, ok := l.crossTarget(home, t, r == root); ok {
					accept(met)
					singles = append(singles, m)
				}
				continue
			}
			accept(met)
			addRoot(t)
		}
	}
	var out []Mount
	slices.Sort(roots)
	for _, r := range roots {
		out = append(out, Mount{Kind: Bind, Source: r, Dest: r, Exec: true})
		for _, s := range toolSecrets() {
			if sp := filepath.Join(home, s); pathWithin(sp, r) {
				out = append(out, Mount{Kind: Hide, Dest: sp})
			}
		}
	}
	seenSingle := map[string]bool{}
	for _, m := range singles {
		if !inRoots(m.Dest) && !shown(m.Dest) && !seenSingle[m.Dest] {
			seenSingle[m.Dest] = true
			out = append(out, m)
		}
	}
	var names []string
	for o := range links {
		names = append(names, o)
	}
	slices.Sort(names)
	for _, o := range names {
		// A symlink inside a root or another mount exists there already.
		if !inRoots(o) && !shown(o) && !slices.ContainsFunc(names, func(p string) bool { return p != o && pathWithin(o, p) }) {
			out = append(out, Mount{Kind: Symlink, Source: links[o], Dest: o})
		}
	}
	return out
}

// tied reports whether the tool root tr is one the entry's root brings
// with it anyway: ~/.local/bin's ~/.local/lib, ~/.cargo's ~/.rustup.
func tied(home, root, tr string) bool {
	return root == filepath.Join(home, ".local", "bin") && tr == filepath.Join(home, ".local", "lib") ||
		root == filepath.Join(home, ".cargo") && tr == filepath.Join(home, ".rustup")
}

// crossOK reports whether the symlinks met resolving a PATH entry may
// lead it into the other tool root dest: each lies at a tool root's own
// name in the home (~/bin, ~/.local/bin), a place outside every workspace
// below the home, or inside dest itself (a version manager's current
// link), never inside another root (~/proj/bin, ~/proj/.venv/bin), where
// a sandbox working in that directory could have made it.
func crossOK(home, dest string, met map[string]string) bool {
	for o := range met {
		if r, ok := toolRoot(home, o); !ok || r != o && r != dest {
			return false
		}
	}
	return true
}

// public reports whether p and every directory between the home and p
// are readable by others than the user (not umask-private, 0700/0600):
// what a link across tool roots may show. The modes are facts of the
// plan (a chmod changes a file's ctime).
func public(f *Facts, home, p string) bool {
	for q := p; q != home && pathWithin(q, home); q = filepath.Dir(q) {
		f.File(q)
		var st unix.Stat_t
		if unix.Stat(q, &st) != nil {
			return false
		}
		need := uint32(0o004)
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			need = 0o005
		}
		if st.Mode&need != need {
			return false
		}
	}
	return true
}

// crossTarget is the mount for the target t of a command symlink that
// leads out of its entry's tool root: an executable regular file, and
// not private, shown alone, or its package directory (the directory above
// a bin directory holding it: a venv, an npm package, a Python version)
// when that lies strictly inside t's tool root and is not private either,
// and the link's entry is userMade: a tool root itself (~/.local/bin,
// ~/bin), which no workspace below the home can be.
func (l *Layout) crossTarget(home, t string, userMade bool) (Mount, bool) {
	var st unix.Stat_t
	if err := unix.Stat(t, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 {
		l.Facts.File(t)
		return Mount{}, false
	}
	if !public(l.Facts, home, t) {
		return Mount{}, false
	}
	root, _ := toolRoot(home, t)
	if bin := filepath.Dir(t); userMade && filepath.Base(bin) == "bin" {
		if pkg := filepath.Dir(bin); pkg != root && pathWithin(pkg, root) && public(l.Facts, home, pkg) {
			var pst unix.Stat_t
			if unix.Stat(pkg, &pst) == nil {
				l.Facts.dir(pkg, &pst)
				return Mount{Kind: Bind, Source: pkg, Dest: pkg, Exec: true}, true
			}
		}
	}
	return Mount{Kind: Bind, Source: t, Dest: t, Exec: true}, true
}

// HiddenCommand explains a command that was not found inside: where the
// host has it, given the command's PATH and working directory, when the
// sandbox (its mounts ms) does not show that place. It returns the host
// path and what to bind read-only (--ro) to show it: the directory that
// holds the hidden part, or the file itself when that directory is the
// home, one of its shared directories or a secret place. ok is false when
// the host has no such command either, or the sandbox shows it.
func HiddenCommand(name string, path []string, dir, home string, ms []Mount) (found, bind string, ok bool) {
	var candidates []string
	if strings.Contains(name, "/") {
		candidates = []string{name}
	} else {
		for _, d := range path {
			if d == "" {
				d = "."
			}
			candidates = append(candidates, filepath.Join(d, name))
		}
	}
	for _, c := range candidates {
		if !filepath.IsAbs(c) {
			c = filepath.Join(dir, c)
		}
		c = filepath.Clean(c)
		var st unix.Stat_t
		if unix.Stat(c, &st) != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR || unix.Access(c, unix.X_OK) != nil {
			continue
		}
		// The first place on the way that no mount shows: the command
		// itself, or where a symlink on its path leads.
		for _, p := range append([]string{c}, resolveChain(c)...) {
			if !visible(ms, p) {
				bind := filepath.Dir(p)
				if _, ok := toolRoot(home, bind); pathWithin(bind, home) && !ok {
					bind = p
				}
				return c, bind, true
			}
		}
		return "", "", false // the sandbox shows it: not a hidden command
	}
	return "", "", false
}

// resolveChain is every path a lookup of p passes through: the targets of
// the symlinks on its way, and its real path.
func resolveChain(p string) []string {
	r, objs, err := resolveWalk(p)
	var out []string
	for _, o := range objs {
		if t, err := os.Readlink(o); err == nil {
			if !filepath.IsAbs(t) {
				t = filepath.Join(filepath.Dir(o), t)
			}
			out = append(out, filepath.Clean(t))
		}
	}
	if err == nil {
		out = append(out, r)
	}
	return out
}

// visible reports whether the sandbox shows the host path p at its own
// name: the deepest mount covering it binds the host tree there.
func visible(ms []Mount, p string) bool {
	var best Mount
	found := false
	for _, m := range ms {
		if pathWithin(p, m.Dest) && (!found || len(m.Dest) >= len(best.Dest)) {
			best, found = m, true
		}
	}
	return found && best.Kind == Bind && pathWithin(p, best.Source) && best.Source == best.Dest
}
