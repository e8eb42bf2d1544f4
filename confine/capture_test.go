package confine

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestCapture(t *testing.T) {
	cases := []struct {
		name      string
		limit     int
		writes    []string
		want      string
		truncated int
	}{
		{"empty", 5, nil, "", 0},
		{"under the limit", 5, []string{"abc"}, "abc", 0},
		{"exactly at the limit", 5, []string{"hello"}, "hello", 0},
		{"at the limit over several writes", 5, []string{"he", "", "llo"}, "hello", 0},
		{"one over", 5, []string{"hello!"}, "hello... [1 chars truncated]", 1},
		{"over across writes", 5, []string{"hel", "lo", " world"}, "hello... [6 chars truncated]", 6},
		{"limit zero keeps nothing", 0, []string{"abc"}, "... [3 chars truncated]", 3},
		{"multi-byte counted as characters", 3, []string{"日本語"}, "日本語", 0},
		{"multi-byte never split", 2, []string{"日本語です"}, "日本... [3 chars truncated]", 3},
		{"mixed widths", 4, []string{"aé€😀b"}, "aé€😀... [1 chars truncated]", 1},
		{"a character split across writes is kept whole", 1, []string{"\xc3", "\xa9", "x"}, "é... [1 chars truncated]", 1},
		{"a 4-byte character split across writes", 2, []string{"a\xf0\x9f", "\x98\x80", "\xf0\x9f\x98\x80"}, "a😀... [1 chars truncated]", 1},
		{"dropped character split across writes counts once", 1, []string{"a\xe2", "\x82\xac"}, "a... [1 chars truncated]", 1},
		{"after dropping, later writes only count", 1, []string{"ab", "c", "d"}, "a... [3 chars truncated]", 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cp := &Capture{Limit: c.limit}
			for _, w := range c.writes {
				n, err := cp.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", w, n, err, len(w))
				}
			}
			if got := cp.String(); got != c.want {
				t.Errorf("String() = %q, want %q", got, c.want)
			}
			if got := cp.Truncated(); got != c.truncated {
				t.Errorf("Truncated() = %d, want %d", got, c.truncated)
			}
		})
	}
}

// TestCaptureConcurrent writes from many goroutines at once (run with
// -race). Each Write is one 4-character chunk of one letter, and the limit
// is a multiple of 4, so the kept text must be whole chunks: a write never
// interleaves with another.
func TestCaptureConcurrent(t *testing.T) {
	const writers, perWriter, chunk, limit = 8, 200, 4, 400
	cp := &Capture{Limit: limit}
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(letter string) {
			defer wg.Done()
			b := []byte(strings.Repeat(letter, chunk))
			for i := 0; i < perWriter; i++ {
				cp.Write(b)
			}
		}(string(rune('a' + w)))
	}
	wg.Wait()
	total := writers * perWriter * chunk
	if got := cp.Truncated(); got != total-limit {
		t.Fatalf("Truncated() = %d, want %d", got, total-limit)
	}
	s := cp.String()
	marker := fmt.Sprintf("... [%d chars truncated]", total-limit)
	kept, ok := strings.CutSuffix(s, marker)
	if !ok {
		t.Fatalf("String() does not end with %q: %q", marker, s)
	}
	if len(kept) != limit {
		t.Fatalf("kept %d characters, want %d", len(kept), limit)
	}
	for i := 0; i < len(kept); i += chunk {
		if c := kept[i : i+chunk]; c != strings.Repeat(c[:1], chunk) {
			t.Fatalf("chunk at %d is %q: concurrent writes interleaved", i, c)
		}
	}
}

// TestCaptureBoundsInvalidUTF8: continuation bytes with no character to
// belong to must count too, or a flood of them is stored without limit.
func TestCaptureBoundsInvalidUTF8(t *testing.T) {
	c := &Capture{Limit: 10}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = 0x80
	}
	for range 8 {
		c.Write(chunk)
	}
	if len(c.buf) > 4*c.Limit {
		t.Fatalf("kept %d bytes of invalid UTF-8 under a limit of %d characters", len(c.buf), c.Limit)
	}
	if c.Truncated() < 1<<20 {
		t.Fatalf("counted only %d dropped characters of 8 MiB of continuation bytes", c.Truncated())
	}
	// Valid text is still counted by character: é is two bytes, one char.
	v := &Capture{Limit: 3}
	v.Write([]byte("ééééé"))
	if v.String() != "ééé... [2 chars truncated]" {
		t.Fatalf("valid UTF-8: %q", v.String())
	}
}
