// Package termtext makes text the sandbox chose safe to print on a
// person's terminal: jail's own messages on its stderr embed paths, host
// names, ref names, URLs, commands and tool names that a sandboxed program
// picked, and a terminal acts on some bytes (ESC starts a sequence that
// can set the clipboard with OSC 52, retitle the window or redraw the
// screen; CR and BS overwrite what was printed; a newline starts a line
// that looks like jail's own).
//
// Escape is the one function every such string goes through before jail
// prints it; Fprintf applies it to each argument of a message. What it
// writes is visible and unambiguous: every byte that is not printable
// text becomes an escape, and a backslash itself is doubled, so the
// printed form reads back to exactly one string.
package termtext

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with what a terminal could act on written as an escape:
//
//   - C0 controls (newline, tab, CR and ESC included) and DEL as \xNN;
//   - the C1 controls U+0080-U+009F (CSI and OSC for some terminals) as \uNNNN;
//   - a byte that is not part of valid UTF-8 as \xNN;
//   - Unicode format characters (bidirectional overrides and isolates,
//     zero-width characters) and the line and paragraph separators as
//     \uNNNN: they reorder or hide what is shown ("Trojan Source");
//   - a backslash as \\, so that an escape in the output always stands for
//     one byte or character of s, never for text s spelled out.
//
// Every other character is kept, so ordinary non-ASCII names stay readable.
func Escape(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether a valid non-ASCII character must be escaped.
func unsafeRune(r rune) bool {
	return r >= 0x80 && r <= 0x9f || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Cf, r)
}

// clean reports whether Escape would return s unchanged (the common case:
// printable ASCII without a backslash).
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// Args returns args with every string, error, fmt.Stringer and []string
// escaped (Escape), and every other value as it was, for a message whose
// format jail wrote and whose values the sandbox may have chosen.
func Args(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = Escape(v)
		case error:
			out[i] = Escape(v.Error())
		case fmt.Stringer:
			out[i] = Escape(v.String())
		case []string:
			e := make([]string, len(v))
			for j, s := range v {
				e[j] = Escape(s)
			}
			out[i] = e
		default:
			out[i] = a
		}
	}
	return out
}

// Fprintf is fmt.Fprintf with every argument escaped (Args): the format is
// jail's own text, its newlines kept; nothing an argument holds can end the
// line, start a control sequence or pass for another message.
func Fprintf(w io.Writer, format string, args ...any) (int, error) {
	return fmt.Fprintf(w, format, Args(args)...)
}

// Sprintf is fmt.Sprintf with every argument escaped (Args).
func Sprintf(format string, args ...any) string {
	return fmt.Sprintf(format, Args(args)...)
}

// Fprintln is fmt.Fprintln with every argument escaped (Args).
func Fprintln(w io.Writer, args ...any) (int, error) {
	return fmt.Fprintln(w, Args(args)...)
}

// Join escapes each element of items and joins them with sep.
func Join(items []string, sep string) string {
	e := make([]string, len(items))
	for i, s := range items {
		e[i] = Escape(s)
	}
	return strings.Join(e, sep)
}

// Line returns a line another part of jail already escaped (the sandbox's
// init escapes the names in its notices to printable ASCII, in C) as it is
// when it is printable ASCII, and escaped (Escape) when it holds anything
// else: a line that reaches the terminal is inert either way, and one that
// was escaped once is not escaped twice.
func Line(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return Escape(s)
		}
	}
	return s
}
