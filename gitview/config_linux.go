//go:build linux

package gitview

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/gitstate"
	"golang.org/x/sys/unix"
)

// Besides its git directories, the host's git runs what core.hooksPath
// names and reads what include.path and includeIf.*.path name, from the
// repository's config and the user's and system's. When such a target
// lies in a tree the sandbox may write (the workspace, a --rw path), the
// sandbox could plant hooks there (husky's .husky/) or config keys that
// run programs: the view keeps each such target read-only in the sandbox.

// maxIncludeDepth bounds the include chain followed, as git's own limit
// (MAX_INCLUDE_DEPTH, 10) does.
const maxIncludeDepth = 10

// configTargets are the hooks directories and included config files the
// host's git would use in this workspace.
type configTargets struct {
	hooks, includes []string
	// programs are the paths the values of keys that run a program or
	// read a file git takes code from name (programKey): each word of
	// the value, as a path relative to the work tree, where git runs
	// them.
	programs []string
	// pathWords are the programs whose word has the shape of a path
	// (pathWord): held whether or not a file is there at launch.
	pathWords map[string]bool
}

// programKeys are the config keys whose value is a command the host's git
// runs (through the shell, in the work tree) or a file it reads drivers
// from; "*" matches any subsection. Each word of such a value may name a
// file of the work tree (core.fsmonitor = tools/fsmon, a filter's
// "sh scripts/clean.sh").
var programKeys = []string{
	"core.fsmonitor", "core.pager", "core.editor", "core.sshcommand", "core.askpass", "core.gitproxy",
	"core.alternaterefscommand", "core.attributesfile", "diff.external", "diff.*.command", "diff.*.textconv",
	"merge.*.driver", "filter.*.clean", "filter.*.smudge", "filter.*.process", "credential.helper",
	"credential.*.helper", "gpg.program", "gpg.*.program", "sequence.editor", "uploadpack.packobjectshook",
	"remote.*.uploadpack", "remote.*.receivepack", "interactive.difffilter", "web.browser", "browser.*.cmd",
	"browser.*.path", "man.*.cmd", "man.*.path", "difftool.*.cmd", "mergetool.*.cmd", "mergetool.*.path",
	"difftool.*.path", "pager.*", "alias.*", "sendemail.smtpserver", "sendemail.sendmailcmd", "sendemail.tocmd",
	"sendemail.cccmd", "sendemail.headercmd", "core.hookspath",
}

// programKey reports whether e is one of programKeys.
func programKey(e gitstate.Entry) bool {
	for _, k := range programKeys {
		sec, rest, _ := strings.Cut(k, ".")
		if sec != e.Section {
			continue
		}
		sub, name, two := strings.Cut(rest, ".")
		switch {
		case !two && !e.HasSub && rest == e.Name:
			return true
		case !two && rest == "*":
			return true // pager.<cmd>, alias.<name>: the name is the key's
		case two && e.HasSub && sub == "*" && name == e.Name:
			return true
		}
	}
	return false
}

// valueWords are the words of a command in a config value, split where a
// shell would split them and at = (--opt=path), quotes removed.
func valueWords(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool {
		return strings.ContainsRune(" \t\n'\"`;|&<>()=$!{}", r)
	})
}

// userConfigs are the config files the host's git reads before the
// repository's own, in its order: system, XDG, global.
func userConfigs(home, xdgConfig string) []string {
	files := []string{"/etc/gitconfig"}
	if filepath.IsAbs(xdgConfig) {
		files = append(files, filepath.Join(xdgConfig, "git", "config"))
	} else if filepath.IsAbs(home) {
		files = append(files, filepath.Join(home, ".config", "git", "config"))
	}
	if filepath.IsAbs(home) {
		files = append(files, filepath.Join(home, ".gitconfig"))
	}
	return files
}

// readTargets adds what the config file at path names (following its
// includes); repoFD, when not -1, is the repository's own config opened by
// descriptor. Each file read, or looked for, is a fact of the plan.
func (t *configTargets) read(path string, fd int, home, worktree string, depth int, facts *confine.Facts) {
	if depth > maxIncludeDepth {
		return
	}
	if fd < 0 {
		facts.File(path)
		f, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		defer unix.Close(f)
		fd = f
	}
	c, err := gitstate.ReadConfig(fd)
	if err != nil {
		return // git refuses such a file too, and reads nothing more from it
	}
	for _, v := range c.Values("core.hookspath") {
		if p := expand(v, home, worktree); p != "" {
			if filepath.Base(p) == "_" {
				// husky (v9): the hooks in .husky/_ are one script
				// that runs .husky/<hook>, the user's file one level
				// up: that directory, _ in it, is the hooks.
				p = filepath.Dir(p)
			}
			t.hooks = appendNew(t.hooks, p)
		}
	}
	for _, e := range c.Entries {
		if e.NoValue || !programKey(e) {
			continue
		}
		// An alias that does not begin with ! is a git command: its
		// words are arguments of git's, not programs or their files.
		shell := e.Section != "alias" || strings.HasPrefix(strings.TrimSpace(e.Value), "!")
		for i, w := range valueWords(e.Value) {
			if p := expand(w, home, worktree); p != "" {
				t.programs = appendNew(t.programs, p)
				if shell && pathWord(w, i) {
					if t.pathWords == nil {
						t.pathWords = map[string]bool{}
					}
					t.pathWords[p] = true
				}
			}
		}
	}
	for _, inc := range c.Includes {
		p := expand(inc.Path, home, filepath.Dir(path))
		if p == "" {
			continue
		}
		t.includes = appendNew(t.includes, p)
		t.read(p, -1, home, worktree, depth+1, facts)
	}
}

// expand is a path from git's config as git makes it absolute: ~/ is the
// home, a relative path is relative to base. "" when it cannot be.
func expand(v, home, base string) string {
	switch {
	case v == "":
		return ""
	case v == "~" || strings.HasPrefix(v, "~/"):
		if !filepath.IsAbs(home) {
			return ""
		}
		return filepath.Join(home, strings.TrimPrefix(v, "~"))
	case strings.HasPrefix(v, "~"):
		return "" // ~user: another user's home, not a tree of this sandbox's
	case filepath.IsAbs(v):
		return filepath.Clean(v)
	default:
		return filepath.Join(base, v)
	}
}

// resolveLoose resolves p as far as it exists (every symlink on the way
// followed), keeping a missing tail as named.
func resolveLoose(p string) string {
	var tail []string
	for cur := p; ; cur = filepath.Dir(cur) {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{r}, tail...)...)
		} else if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENOTDIR) {
			return ""
		}
		if cur == "/" {
			return ""
		}
		tail = append([]string{filepath.Base(cur)}, tail...)
	}
}

// within reports whether p is root or beneath it.
func within(p, root string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

// guardTargets keeps the config targets of the host's git read-only
// where the sandbox could write them. In the workspace each is a
// protected path (confine's protect: read-only where it exists, every
// directory on the way pinned so .husky cannot be moved aside and
// rebuilt, and an empty placeholder directory at its first missing
// component, which goes when the run ends): a hooks directory, an
// include file and a program file, existing or not. In another writable
// tree (a --rw path without a view of its own) a hooks directory, and an
// include file that exists, are guarded (confine.Layout.Guarded), and a
// missing include file by its directory. A target in a --rw tree shown
// by a view of its own (Options.Shown) is that view's.
func (r *Run) guardTargets(t *configTargets) {
	ws := r.opt.Workspace
	writable := append([]string{ws}, r.opt.Writable...)
	if r.opt.ReadOnly {
		writable = r.opt.Writable
	}
	inGitDir := func(rp string) bool {
		if within(rp, filepath.Join(ws, ".git")) {
			return true
		}
		for _, g := range r.repos {
			if within(rp, filepath.Join(ws, g.Rel)) {
				return true // the view's already
			}
		}
		return false
	}
	place := func(p string, dir bool) {
		rp := resolveLoose(p)
		if rp == "" || inGitDir(rp) {
			return
		}
		if !r.opt.Tree {
			for _, s := range r.opt.Shown {
				if within(rp, s) {
					return // that tree's view holds it
				}
			}
		}
		for _, w := range writable {
			if !within(rp, w) {
				continue
			}
			switch {
			case w == ws:
				if rel, err := filepath.Rel(ws, rp); err == nil && rel != "." && !strings.HasPrefix(rel, "../") {
					r.protect = appendNew(r.protect, rel)
				}
			case dir:
				r.guardDirs = appendNew(r.guardDirs, rp)
			default:
				r.guardFiles = appendNew(r.guardFiles, rp)
			}
			return
		}
	}
	for _, h := range t.hooks {
		place(h, true)
	}
	for _, i := range t.includes {
		place(i, false)
	}
	// A program the host's git runs from the work tree is kept as it is.
	// A word with the shape of a path (pathWord: tools/fsmon, sh
	// clean.sh) is held whether or not it exists, so the sandbox cannot
	// make it either; another word that names no regular file is a word
	// of the command (a name looked up in PATH, an option), not a file,
	// and a directory is where it cds to. Whether such a word is a file
	// is a fact of the plan: a cached run made when it was not must not
	// leave it writable once it is.
	for _, p := range t.programs {
		rp := resolveLoose(p)
		if rp == "" || inGitDir(rp) || slices.ContainsFunc(t.hooks, func(h string) bool { return within(p, h) }) {
			continue // core.hooksPath's: held as a hooks directory above
		}
		for _, w := range writable {
			if within(rp, w) {
				r.opt.Facts.File(rp)
				var st unix.Stat_t
				err := unix.Stat(rp, &st)
				switch {
				case err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG:
					place(p, false)
				case err != nil && t.pathWords[p] && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)):
					place(p, false)
				}
				break
			}
		}
	}
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// Guarded are host paths outside the workspace the sandbox must not
// change (hooks directories and included config files in --rw trees):
// directories and files, for confine.Layout's Guarded and GuardedFiles.
func (r *Run) Guarded() (dirs, files []string) {
	if r == nil {
		return nil, nil
	}
	return r.guardDirs, r.guardFiles
}
