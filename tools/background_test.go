//go:build linux

package tools

import (
	"strings"
	"testing"
)

// TestBgBufKeepsTheTail: a background process's stream keeps the last
// bgKeep bytes, counts what scrolled past unread, hands out at most the
// asked number of bytes cut at a character boundary, and resumes where
// the last read stopped.
func TestBgBufKeepsTheTail(t *testing.T) {
	var b bgBuf
	b.Write([]byte("héllo\n"))
	s, lost, left := b.next(2) // "h" and the first byte of "é": cut before é
	if s != "h" || lost != 0 || left != 6 {
		t.Fatalf("next(2) = %q, %d lost, %d left", s, lost, left)
	}
	s, _, left = b.next(100)
	if s != "éllo\n" || left != 0 {
		t.Fatalf("next(100) = %q, %d left", s, left)
	}
	if s, _, _ := b.next(100); s != "" {
		t.Fatalf("nothing new, got %q", s)
	}
	b.Write([]byte(strings.Repeat("a", bgKeep)))
	b.Write([]byte("tail"))
	s, lost, left = b.next(bgKeep + 10)
	if lost != 4 || left != 0 || len(s) != bgKeep || !strings.HasSuffix(s, "tail") || len(b.buf) > bgKeep {
		t.Fatalf("after overflow: %d bytes, %d lost, %d left, %d kept", len(s), lost, left, len(b.buf))
	}
	b.Write([]byte(strings.Repeat("b", 3*bgKeep)))
	if _, lost, _ := b.next(1); lost != 2*bgKeep || len(b.buf) != bgKeep {
		t.Fatalf("one huge write: %d lost, %d kept", lost, len(b.buf))
	}
}
