package gitstate

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// pseudoRefs are the one-level refs adopted from the top of a git
// directory. FETCH_HEAD is left out on purpose: its lines carry free text
// that git pull turns into a merge message, and the next fetch rewrites it
// anyway. The state directories of a rebase, a cherry-pick sequence or
// git am (rebase-merge/, rebase-apply/, sequencer/) are never adopted:
// their todo lists hold exec lines that git runs when the host continues.
var pseudoRefs = []string{"HEAD", "ORIG_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD"}

func isPseudoRef(name string) bool {
	for _, p := range pseudoRefs {
		if p == name {
			return true
		}
	}
	return false
}

// parseRefValue checks the content of a loose ref or one-level pseudo-ref
// file and returns it normalised: a hexadecimal object id of the
// repository's length, or "ref: refs/..." for a symbolic ref. MERGE_HEAD
// holds one object id a line. Anything else is refused: a strict reader
// is the point.
func parseRefValue(name string, data []byte, hexLen int) (string, error) {
	s := string(data)
	if name == "MERGE_HEAD" {
		lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
		if len(lines) == 0 || len(lines) > 64 {
			return "", errors.New("not 1 to 64 object ids")
		}
		for _, l := range lines {
			if !isHex(l, hexLen) {
				return "", fmt.Errorf("line %s is not an object id", esc(l))
			}
		}
		return strings.Join(lines, "\n"), nil
	}
	s = strings.TrimSuffix(s, "\n")
	if t, ok := strings.CutPrefix(s, "ref: "); ok {
		if name != "HEAD" && !strings.HasPrefix(name, "refs/") {
			return "", errors.New("symbolic value for a pseudo-ref")
		}
		if !validRefName(t) {
			return "", fmt.Errorf("symbolic ref to an invalid ref name %s", esc(t))
		}
		return s, nil
	}
	if !isHex(s, hexLen) {
		return "", fmt.Errorf("not an object id of %d hex digits nor \"ref: refs/...\"", hexLen)
	}
	return s, nil
}

// oids lists the object ids a ref value names (none for a symbolic ref).
func oids(value string) []string {
	if value == "" || strings.HasPrefix(value, "ref: ") {
		return nil
	}
	return strings.Split(value, "\n")
}

// packedRef is one entry of a packed-refs file.
type packedRef struct {
	Name, OID, Peeled string
}

// parsePackedRefs reads a packed-refs file strictly: its header (traits),
// "<oid> <name>" lines and "^<oid>" peel lines after a ref. A line that is
// none of these makes the whole file invalid.
func parsePackedRefs(data []byte, hexLen int) ([]packedRef, error) {
	var out []packedRef
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	} else if len(data) > 0 {
		return nil, errors.New("last line not terminated")
	}
	for i, b := range lines {
		l := string(b)
		switch {
		case i == 0 && strings.HasPrefix(l, "# pack-refs with:"):
		case strings.HasPrefix(l, "^"):
			if len(out) == 0 || out[len(out)-1].Peeled != "" || !isHex(l[1:], hexLen) {
				return nil, fmt.Errorf("line %d: bad peel line", i+1)
			}
			out[len(out)-1].Peeled = l[1:]
		default:
			oid, name, ok := strings.Cut(l, " ")
			if !ok || !isHex(oid, hexLen) || !validRefName(name) {
				return nil, fmt.Errorf("line %d: not \"<object id> <ref name>\": %s", i+1, esc(l))
			}
			out = append(out, packedRef{Name: name, OID: oid})
		}
	}
	return out, nil
}

// formatPackedRefs writes entries in git's sorted packed-refs format. Peel
// lines are kept only when every entry's peel was known to be complete, so
// the file never claims more than it holds; git peels on demand otherwise.
func formatPackedRefs(refs []packedRef, peeled bool) []byte {
	sort.Slice(refs, func(i, j int) bool { return refs[i].Name < refs[j].Name })
	var b bytes.Buffer
	if peeled {
		b.WriteString("# pack-refs with: peeled fully-peeled sorted \n")
	} else {
		b.WriteString("# pack-refs with: sorted \n")
	}
	for _, r := range refs {
		fmt.Fprintf(&b, "%s %s\n", r.OID, r.Name)
		if peeled && r.Peeled != "" {
			fmt.Fprintf(&b, "^%s\n", r.Peeled)
		}
	}
	return b.Bytes()
}

// dropPacked removes the entry name (and its peel line) from a packed-refs
// file's bytes, keeping every other byte as it was.
func dropPacked(data []byte, name string) ([]byte, bool) {
	var out bytes.Buffer
	found, skipPeel := false, false
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		if skipPeel && l[0] == '^' {
			skipPeel = false
			continue
		}
		skipPeel = false
		if _, n, ok := bytes.Cut(bytes.TrimSuffix(l, []byte("\n")), []byte(" ")); ok && l[0] != '#' && string(n) == name {
			found, skipPeel = true, true
			continue
		}
		out.Write(l)
	}
	return out.Bytes(), found
}
