//go:build linux && cgo

package confine

import (
	"crypto/hmac"
	"crypto/sha256"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// goEnviron is what os.Environ gives a process started with envp: the
// later of two NAME=VALUE entries of one NAME is dropped, entries without
// "=" are kept (syscall.copyenv). The plan cache's run reads envp itself,
// so jail_build_env must apply the same rule (go_duplicate).
func goEnviron(envp []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range envp {
		if name, _, ok := strings.Cut(e, "="); ok {
			if seen[name] {
				continue
			}
			seen[name] = true
		}
		out = append(out, e)
	}
	return out
}

// TestBuildEnvTwins: the cached run's environment (jail_build_env) is the
// one BuildEnv makes from the same caller, pass-list and extras, on hand
// cases and on random ones.
func TestBuildEnvTwins(t *testing.T) {
	type envCase struct{ caller, pass, extra []string }
	cases := []envCase{
		{nil, nil, nil},
		{[]string{"PATH=/opt/bin", "HOME=/h", "LANG=C"}, []string{"PATH", "LANG"}, nil},
		{[]string{"A=1", "A=2", "B", "LC_ALL=x", "LC_CTYPE=y"}, []string{"A", "B", "LC_*"}, []string{"A", "C=3", "B"}},
		{[]string{"TMPDIR=/t", "X=a=b"}, []string{"*"}, []string{"X", "PATH=/p", "X=c"}},
		{[]string{"E="}, []string{"E"}, []string{"E", "MISSING"}},
	}
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"A", "B", "PATH", "TMPDIR", "LC_ALL", "LC_X", "HOME", "Z"}
	pick := func(n int, f func() string) []string {
		var s []string
		for range r.IntN(n) {
			s = append(s, f())
		}
		return s
	}
	entry := func() string {
		name := names[r.IntN(len(names))]
		switch r.IntN(4) {
		case 0:
			return name
		case 1:
			return name + "="
		}
		return name + "=" + string(rune('a'+r.IntN(26))) + "=" + name
	}
	for range 2000 {
		pass := pick(5, func() string {
			if r.IntN(4) == 0 {
				return names[r.IntN(len(names))][:1] + "*"
			}
			return names[r.IntN(len(names))]
		})
		cases = append(cases, envCase{pick(8, entry), pass, pick(5, entry)})
	}
	for _, c := range cases {
		want, err := BuildEnv(goEnviron(c.caller), c.pass, c.extra)
		if err != nil {
			continue // refused before any cached run exists
		}
		if got := cBuildEnv(c.caller, c.pass, c.extra); !slices.Equal(got, want) {
			t.Fatalf("caller %q pass %q extra %q:\n C  %q\n Go %q", c.caller, c.pass, c.extra, got, want)
		}
	}
}

// TestHMACTwin: the cached run authenticates an entry as crypto/hmac does.
func TestHMACTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 300 {
		var key [32]byte
		for i := range key {
			key[i] = byte(r.Uint32())
		}
		msg := make([]byte, n*7%1000)
		for i := range msg {
			msg[i] = byte(r.Uint32())
		}
		m := hmac.New(sha256.New, key[:])
		m.Write(msg)
		if got := cHMAC(key, msg); !hmac.Equal(got[:], m.Sum(nil)) {
			t.Fatalf("%d bytes: C %x, Go %x", len(msg), got, m.Sum(nil))
		}
	}
}

// TestCacheNameTwin: the cached run looks for the entry the Go supervisor
// stored.
func TestCacheNameTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		uid := r.IntN(1 << 20)
		cwd := "/" + strings.Repeat(string(rune('a'+r.IntN(26))), r.IntN(40))
		var args []string
		for range r.IntN(6) {
			args = append(args, strings.Repeat("x-", r.IntN(5))+"é")
		}
		if got, want := cCacheName(uid, cwd, args), planCacheName(uid, cwd, args); got != want {
			t.Fatalf("uid %d cwd %q args %q: C %s, Go %s", uid, cwd, args, got, want)
		}
	}
}
