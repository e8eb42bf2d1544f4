package gitstate

import (
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

type upperKind int

const (
	kindFile     upperKind = iota
	kindDir                // a directory (opaque or merged)
	kindWhiteout           // overlayfs whiteout: the name was deleted
	kindOther              // symlink, FIFO, socket, device, hard link, oversized: never read
)

type upperEntry struct {
	kind   upperKind
	opaque bool // a directory that hides the lower's (user. or trusted.overlay.opaque)
	size   int64
	used   bool // consumed by some adoption step (or already reported)
}

// upperTree is the listing of an overlay upper directory: every name the
// sandbox created, changed or deleted, by its path relative to the git
// directory.
type upperTree struct {
	fd        int
	entries   map[string]*upperEntry
	truncated string // why the listing stopped early ("" when complete)
	limits    Limits
	bytesRead int64
}

// walkUpper lists the upper directory beneath fd. Anything that is not a
// regular file with one link, a directory or a whiteout is recorded as
// kindOther and reported as dropped: it is never opened, let alone
// followed.
func walkUpper(fd int, limits Limits, rep *Report) *upperTree {
	t := &upperTree{fd: fd, entries: map[string]*upperEntry{}, limits: limits}
	var walk func(dirfd int, prefix string, depth int)
	walk = func(dirfd int, prefix string, depth int) {
		if t.truncated != "" {
			return
		}
		if depth > limits.Depth {
			t.truncated = fmt.Sprintf("directories nested deeper than %d", limits.Depth)
			return
		}
		ents, err := readDir(dirfd, limits.Entries)
		if err != nil {
			t.truncated = fmt.Sprintf("listing %s: %v", esc(prefix), err)
			return
		}
		for _, e := range ents {
			if len(t.entries) >= limits.Entries {
				t.truncated = fmt.Sprintf("more than %d names", limits.Entries)
				return
			}
			rel := e.Name
			if prefix != "" {
				rel = prefix + "/" + e.Name
			}
			var st unix.Stat_t
			if err := unix.Fstatat(dirfd, e.Name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				t.entries[rel] = &upperEntry{kind: kindOther, used: true}
				rep.dropped("%s: cannot stat: %v", esc(rel), err)
				continue
			}
			ent := &upperEntry{size: st.Size}
			t.entries[rel] = ent
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				ent.kind = kindDir
				sub, err := openDir(dirfd, e.Name)
				if err != nil {
					ent.kind, ent.used = kindOther, true
					rep.dropped("%s: cannot open: %v", esc(rel), err)
					continue
				}
				ent.opaque = xattr(sub, "user.overlay.opaque") == "y" || xattr(sub, "trusted.overlay.opaque") == "y"
				walk(sub, rel, depth+1)
				unix.Close(sub)
			case unix.S_IFREG:
				switch {
				case st.Nlink != 1:
					ent.kind, ent.used = kindOther, true
					rep.dropped("%s: hard-linked file (%d links), not read", esc(rel), st.Nlink)
				case st.Size > limits.FileBytes:
					ent.kind, ent.used = kindOther, true
					rep.dropped("%s: %d bytes, over the limit of %d", esc(rel), st.Size, limits.FileBytes)
				default:
					ent.kind = kindFile
				}
			case unix.S_IFCHR:
				if st.Rdev == 0 {
					ent.kind = kindWhiteout
					continue
				}
				fallthrough
			default:
				ent.kind, ent.used = kindOther, true
				rep.dropped("%s: %s, not adopted", esc(rel), fileType(st.Mode))
			}
		}
	}
	walk(fd, "", 0)
	return t
}

func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return "symbolic link"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	}
	return "special file"
}

func (t *upperTree) get(rel string) *upperEntry { return t.entries[rel] }

// read reads the regular file rel from the upper, at most max bytes,
// charging the total budget.
func (t *upperTree) read(rel string, max int64) ([]byte, error) {
	if max > t.limits.FileBytes {
		max = t.limits.FileBytes
	}
	if t.bytesRead+max > t.limits.Bytes {
		max = t.limits.Bytes - t.bytesRead
		if max <= 0 {
			return nil, fmt.Errorf("the total read limit of %d bytes is used up", t.limits.Bytes)
		}
	}
	data, _, err := readFile(t.fd, rel, max, true)
	t.bytesRead += int64(len(data))
	if err != nil {
		return nil, err
	}
	return data, nil
}

// hidden reports whether the upper hides the lower's file rel: a whiteout
// at rel or above it, an opaque directory above it, a directory at rel, or
// a non-directory above it.
func (t *upperTree) hidden(rel string) bool {
	parts := strings.Split(rel, "/")
	for i := 1; i <= len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		e := t.entries[p]
		if e == nil {
			continue
		}
		if i == len(parts) {
			return e.kind == kindWhiteout || e.kind == kindDir
		}
		if e.kind != kindDir || e.opaque {
			return true
		}
	}
	return false
}

// under lists the entries at or below prefix, sorted.
func (t *upperTree) under(prefix string) []string {
	var out []string
	for p := range t.entries {
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// rest reports every entry no step consumed. Directories are reported
// only when they are empty leaves (an emptied or new directory); their
// contents are reported one by one otherwise.
func (t *upperTree) rest(rep *Report) {
	var names []string
	parents := map[string]bool{} // directories with something in them
	for p, e := range t.entries {
		if !e.used {
			names = append(names, p)
		}
		if dir, _ := splitName(p); dir != "" {
			parents[dir] = true
		}
	}
	sort.Strings(names)
	for _, p := range names {
		e := t.entries[p]
		switch e.kind {
		case kindDir:
			if parents[p] || isKnownDir(p) {
				continue
			}
			rep.dropped("%s: new directory, not adopted", esc(p))
		case kindWhiteout:
			rep.dropped("%s: deletion not adopted (%s)", esc(p), notAdoptedWhy(p))
		default:
			rep.dropped("%s: not adopted (%s)", esc(p), notAdoptedWhy(p))
		}
	}
}

// isKnownDir is a directory git makes in every repository, whose
// emptiness says nothing.
func isKnownDir(p string) bool {
	switch p {
	case "refs", "refs/heads", "refs/tags", "refs/remotes", "logs", "logs/refs", "logs/refs/heads",
		"logs/refs/remotes", "objects", "branches", "info", "hooks":
		return true
	}
	return false
}

// notAdoptedWhy names the reason a path is never adopted.
func notAdoptedWhy(p string) string {
	top, _, _ := strings.Cut(p, "/")
	switch top {
	case "hooks":
		return "hooks are programs git runs"
	case "info":
		return "info/ is not adopted"
	case "objects":
		if p == "objects/info/alternates" || p == "objects/info/http-alternates" {
			return "alternates would point the host's git at objects elsewhere"
		}
		return "only new objects and packs are adopted, verified; the rest of objects/ is caches or the sandbox's own"
	case "rebase-merge", "rebase-apply", "sequencer":
		return "rebase and sequencer state can hold exec lines"
	case "worktrees":
		if strings.Count(p, "/") >= 2 {
			// Only a worktree the sandbox added is adopted whole
			// (adoptWorktrees); one of the host's keeps its own state.
			return "a linked worktree of the host's keeps its own index, HEAD and reflog; run git reset in it on the host to bring its index to the adopted commits"
		}
		return "it redirects git to other git directories or config"
	case "commondir", "gitdir", "config.worktree", "modules":
		return "it redirects git to other git directories or config"
	case "FETCH_HEAD":
		return "FETCH_HEAD is rewritten by the next fetch"
	case "shallow":
		return "the shallow list is not adopted into an existing repository"
	}
	if strings.HasPrefix(p, "sharedindex.") {
		return "a split index's shared entries are adopted inside the index, written whole"
	}
	if strings.HasSuffix(p, ".lock") {
		return "a lock file left by an interrupted git"
	}
	return "not on the list of adopted git state"
}
