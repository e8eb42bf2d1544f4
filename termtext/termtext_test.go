package termtext

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain/path.txt", "plain/path.txt"},
		{"caf\u00e9/\u65e5\u672c", "caf\u00e9/\u65e5\u672c"},
		{"x\x1b]52;c;ZWNobyBwd24K\x07y", `x\x1b]52;c;ZWNobyBwd24K\x07y`},
		{"a\nb\rc\td", `a\x0ab\x0dc\x09d`},
		{"del\x7f", `del\x7f`},
		{"csi\u009b2J", `csi\u009b2J`},
		{"bad\xff\xc3", `bad\xff\xc3`},
		{"rlo\u202etxt.exe", `rlo\u202etxt.exe`},
		{"zw\u200bsp", `zw\u200bsp`},
		{"ls\u2028", `ls\u2028`},
		{`back\x1b`, `back\\x1b`},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// The escaped form reads back to exactly the input, and holds nothing a
// terminal acts on: the form is unambiguous and inert.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"", "a\x1b[2J", `\x1b`, "\xc2\x9b", "\xff", "\u202e", "\ufffd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := Escape(s)
		if !utf8.ValidString(e) {
			t.Fatalf("Escape(%q) = %q is not valid UTF-8", s, e)
		}
		for _, r := range e {
			if r < 0x20 || r == 0x7f || unsafeRune(r) {
				t.Fatalf("Escape(%q) = %q holds %U", s, e, r)
			}
		}
		if back := unescape(t, e); back != s {
			t.Fatalf("Escape(%q) = %q reads back as %q", s, e, back)
		}
	})
}

func TestEscapeReadsBack(t *testing.T) {
	for _, s := range []string{`a\\x1b`, "a\\\x1b", "\u0085\\u0085"} {
		if back := unescape(t, Escape(s)); back != s {
			t.Errorf("%q reads back as %q", s, back)
		}
	}
}

// unescape reads Escape's output back.
func unescape(t *testing.T, e string) string {
	var b strings.Builder
	for i := 0; i < len(e); i++ {
		if e[i] != '\\' {
			b.WriteByte(e[i])
			continue
		}
		switch e[i+1] {
		case '\\':
			b.WriteByte('\\')
			i++
		case 'x':
			n, err := strconv.ParseUint(e[i+2:i+4], 16, 8)
			if err != nil {
				t.Fatalf("bad escape in %q", e)
			}
			b.WriteByte(byte(n))
			i += 3
		case 'u':
			n, err := strconv.ParseUint(e[i+2:i+6], 16, 32)
			if err != nil {
				t.Fatalf("bad escape in %q", e)
			}
			b.WriteRune(rune(n))
			i += 5
		default:
			t.Fatalf("unknown escape in %q", e)
		}
	}
	return b.String()
}

func TestFprintf(t *testing.T) {
	var b strings.Builder
	Fprintf(&b, "jail: %s: %v (%d)\n", "p\x1b]0;T\x07q", errors.New("open x\ny: denied"), 3)
	if want := "jail: p\\x1b]0;T\\x07q: open x\\x0ay: denied (3)\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	if got := Join([]string{"a\x1b", "b"}, ", "); got != `a\x1b, b` {
		t.Errorf("Join: %q", got)
	}
}
