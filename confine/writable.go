package confine

import (
	"path"
	"strings"
)

// CanWrite reports whether a sandbox made with the mounts ms can write, or
// create, the directory dir (an absolute path as the sandbox sees it): the
// deepest mount that shows dir decides. The sandbox's own root is read-only;
// a pin shows what its parent mount shows; /proc and /dev count as writable,
// since their links (/proc/self/cwd, /dev/fd/N) lead wherever the sandbox
// writes. The supervisor asks it of directories a sandbox named (a PATH entry
// of a session), to know whether a program found there may be the sandbox's.
func CanWrite(ms []Mount, dir string) bool {
	if !path.IsAbs(dir) {
		return true // relative to a working directory the sandbox chose
	}
	p := path.Clean(dir)
	for hops := 0; hops < 16; hops++ {
		var deepest *Mount
		for i := range ms {
			m := &ms[i]
			if m.Kind == Pin || !within(p, m.Dest) {
				continue
			}
			if deepest == nil || len(m.Dest) > len(deepest.Dest) {
				deepest = m
			}
		}
		if deepest == nil {
			return false
		}
		switch deepest.Kind {
		case Bind, Tmpfs, Overlay:
			return deepest.Writable
		case Proc, Dev:
			return true
		case Symlink:
			// /bin -> usr/bin: what the link leads to decides.
			target := deepest.Source
			if !path.IsAbs(target) {
				target = path.Join(path.Dir(deepest.Dest), target)
			}
			p = path.Join(target, strings.TrimPrefix(p, deepest.Dest))
			continue
		default: // Hide, Protect, File: read-only objects of jail's
			return false
		}
	}
	return true // a loop of links: say writable, the cautious answer
}
