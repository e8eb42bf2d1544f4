package confine

import (
	"fmt"
	"sync"
)

// Capture keeps the first Limit characters written to it and counts the
// rest, so a command that floods its output costs bounded memory. It is
// safe for concurrent writers.
type Capture struct {
	Limit int

	mu      sync.Mutex
	buf     []byte
	kept    int // characters kept
	dropped int // characters counted but not kept
	cont    int // continuation bytes in a row so far
}

// isCharStart reports whether b begins a UTF-8 character (anything but a
// continuation byte), so characters are counted without decoding.
func isCharStart(b byte) bool { return b&0xC0 != 0x80 }

// newChar reports whether b begins a character to count: a start byte,
// or a continuation byte that cannot belong to the character before it
// (more than three in a row, which is not UTF-8). Every character is then
// at most four bytes, and Limit bounds the memory kept whatever the input.
func (c *Capture) newChar(b byte) bool {
	if isCharStart(b) {
		c.cont = 0
		return true
	}
	if c.cont++; c.cont > 3 {
		c.cont = 1
		return true
	}
	return false
}

// Write never fails: output beyond the limit is counted, not stored.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := 0
	for ; i < len(p) && c.dropped == 0; i++ {
		if c.newChar(p[i]) {
			if c.kept >= c.Limit {
				c.dropped++
				i++
				break
			}
			c.kept++
		}
		c.buf = append(c.buf, p[i])
	}
	for ; i < len(p); i++ {
		if c.newChar(p[i]) {
			c.dropped++
		}
	}
	return len(p), nil
}

// String is the kept text, followed by the marker
// "... [N chars truncated]" when anything was dropped.
func (c *Capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped == 0 {
		return string(c.buf)
	}
	return fmt.Sprintf("%s... [%d chars truncated]", c.buf, c.dropped)
}

// Bytes is a copy of the kept bytes, without the truncation marker: the
// exact output when it is not valid UTF-8.
func (c *Capture) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf...)
}

// Truncated is the number of characters dropped.
func (c *Capture) Truncated() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped
}
