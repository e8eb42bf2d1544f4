package gitstate

import (
	"crypto/sha1"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"[core]\n\tbare = false\n\tfilemode\n",
		"[remote \"o\\\"r\"]\n\turl = \"a;b\" # c\n\tfetch = x \\\n y\n",
		"[a.B] k = v\r\n[c]k=\"  q  \"\n",
		"\xef\xbb\xbf; c\n[include]\npath = x\n[includeIf \"gitdir:a\"]\npath=y\n",
		"[a]\n\tk = \\t\\n\\b\\\\\\\"",
		"[a \"\"]\n[b]\n",
	} {
		f.Add([]byte(s), "value")
	}
	f.Fuzz(func(t *testing.T, src []byte, value string) {
		c, err := ParseConfig(src)
		if err != nil {
			return
		}
		last := 0
		for _, e := range c.Entries {
			if e.start < last || e.end < e.start || e.end > len(src) {
				t.Fatalf("entry %s spans %d-%d after %d (len %d)", e.Key(), e.start, e.end, last, len(src))
			}
			last = e.end
		}
		// A rewrite changes exactly what it says and nothing else.
		if !printable(strings.NewReplacer("\t", "", "\n", "", "\b", "").Replace(value), 1<<20) {
			return
		}
		var set []setting
		if len(c.Entries) > 0 && c.Entries[0].id().writable() {
			set = append(set, setting{Key: c.Entries[0].id(), Values: []string{value}})
		}
		if len(c.Entries) > 1 && c.Entries[1].id() != c.Entries[0].id() && c.Entries[1].id().writable() {
			set = append(set, setting{Key: c.Entries[1].id()})
		}
		// A subsection cannot hold a newline (nor can a parsed one).
		sub := strings.ReplaceAll(value, "\n", "")
		set = append(set, setting{Key: keyID{Section: "new", Subsection: sub, HasSub: true, Name: "k"}, Values: []string{value, noValue}})
		out := c.rewrite(set)
		c2, err := ParseConfig(out)
		if err != nil {
			t.Fatalf("rewrite does not parse: %v\nin:  %q\nout: %q", err, src, out)
		}
		before, _ := c.valueMap()
		after, _ := c2.valueMap()
		changed := map[keyID]bool{}
		for _, s := range set {
			changed[s.Key] = true
			if !equalValues(after[s.Key], s.Values) {
				t.Fatalf("%s = %q, want %q\nin:  %q\nout: %q", s.Key, after[s.Key], s.Values, src, out)
			}
		}
		for k, v := range before {
			if !changed[k] && !equalValues(after[k], v) {
				t.Fatalf("untouched %s changed from %q to %q\nin:  %q\nout: %q", k, v, after[k], src, out)
			}
		}
		for k := range after {
			if _, ok := before[k]; !ok && !changed[k] {
				t.Fatalf("new key %s appeared\nin:  %q\nout: %q", k, src, out)
			}
		}
	})
}

// indexSeeds makes real index files with git: versions 2, 3 and 4.
func indexSeeds(f *testing.F) [][]byte {
	if _, err := exec.LookPath("git"); err != nil {
		return nil
	}
	dir := f.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, gitEnv(dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			f.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	run("init", "-q")
	for _, n := range []string{"a", "b/c", "b/d/e", "long/" + strings.Repeat("x", 100)} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(n)), 0o755)
		os.WriteFile(filepath.Join(dir, n), []byte(n), 0o644)
	}
	run("add", "-A")
	run("add", "-N", ".")
	var seeds [][]byte
	for _, v := range []string{"2", "3", "4"} {
		if v == "2" {
			continue // the intent-to-add entries need version 3
		}
		run("update-index", "--index-version", v)
		data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, data)
	}
	return seeds
}

// FuzzParseIndex mutates the body of real index files and fixes up the
// checksum, so the fuzzer explores the entry and extension parsers
// rather than the hash check.
func FuzzParseIndex(f *testing.F) {
	for _, s := range indexSeeds(f) {
		f.Add(s[:len(s)-20])
	}
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, body []byte) {
		sum := sha1.Sum(body)
		ix, err := ParseIndex(append(body, sum[:]...), 20)
		if err != nil {
			return
		}
		for i, e := range ix.Entries {
			if err := verifyIndexPath(e.Path, e.Mode); err != nil {
				t.Fatalf("accepted entry %q: %v", e.Path, err)
			}
			if i > 0 && ix.Entries[i-1].Path > e.Path {
				t.Fatalf("accepted out of order %q after %q", e.Path, ix.Entries[i-1].Path)
			}
		}
	})
}

// FuzzEwah feeds the EWAH bitmaps of a split index's link extension to
// their decoder: it never panics, loops without end or names a bit past
// its bound.
func FuzzEwah(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x05\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x15\x00\x00\x00\x00"))
	f.Add([]byte("\x00\x00\x01\x00\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff\xff\xff\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		bits, n, err := ewahBits(b, 1<<16)
		if err != nil {
			return
		}
		if n > len(b) {
			t.Fatalf("took %d of %d bytes", n, len(b))
		}
		for _, p := range bits {
			if p >= 1<<16 {
				t.Fatalf("bit %d past the bound", p)
			}
		}
	})
}
