//go:build linux && cgo

package confine

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"math/rand"
	"testing"
)

// TestFastHMAC: the plan cache's C HMAC-SHA-256 (jail_hmac_sha256), with
// and without the CPU's SHA extensions, is crypto/hmac's, for lengths
// around every block boundary and an entry's size.
func TestFastHMAC(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	key := make([]byte, 32)
	rng.Read(key)
	for _, n := range append([]int{25000, 1 << 20}, func() []int {
		var ns []int
		for i := range 200 {
			ns = append(ns, i)
		}
		return ns
	}()...) {
		msg := make([]byte, n)
		rng.Read(msg)
		m := hmac.New(sha256.New, key)
		m.Write(msg)
		want := m.Sum(nil)
		for _, portable := range []bool{false, true} {
			if got := fastHMAC(key, msg, portable); !bytes.Equal(got, want) {
				t.Fatalf("%d bytes (portable %v): C %x, Go %x", n, portable, got, want)
			}
		}
	}
}
