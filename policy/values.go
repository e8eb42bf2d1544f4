package policy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bytes is a size in bytes. In TOML it is a plain integer of bytes or a string with a binary
// suffix: "1024K", "512M", "2G", "1T" (powers of 1024; a trailing "B" or "iB" is accepted).
type Bytes int64

// ParseBytes parses a size strictly: no fractions, no negative numbers, no unknown suffixes.
func ParseBytes(s string) (Bytes, error) {
	const accepted = `accepted: bytes as an integer, or a number with K, M, G or T (e.g. "512M")`
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "iB"), "B")
	if t == "" {
		return 0, fmt.Errorf("invalid size %q (%s)", s, accepted)
	}
	mult := int64(1)
	switch t[len(t)-1] {
	case 'K', 'k':
		mult = 1 << 10
	case 'M', 'm':
		mult = 1 << 20
	case 'G', 'g':
		mult = 1 << 30
	case 'T', 't':
		mult = 1 << 40
	}
	if mult != 1 {
		t = t[:len(t)-1]
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || t[0] == '+' {
		return 0, fmt.Errorf("invalid size %q (%s)", s, accepted)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q overflows", s)
	}
	return Bytes(n * mult), nil
}

// UnmarshalText is called by the TOML decoder, which turns integers into their decimal text.
func (b *Bytes) UnmarshalText(text []byte) error {
	v, err := ParseBytes(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// String prints the largest exact binary unit, so a size round-trips through the file.
func (b Bytes) String() string {
	n := int64(b)
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// Approx is b for a person: exact where a unit divides it (String), else
// to one decimal of the largest unit it reaches (11.8G, not 12341792K).
func (b Bytes) Approx() string {
	n := int64(b)
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.size {
			if n%u.size == 0 {
				return strconv.FormatInt(n/u.size, 10) + u.suffix
			}
			return strconv.FormatFloat(float64(n)/float64(u.size), 'f', 1, 64) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// MarshalText keeps sizes readable in JSON and in the canonical hash encoding.
func (b Bytes) MarshalText() ([]byte, error) { return []byte(b.String()), nil }
