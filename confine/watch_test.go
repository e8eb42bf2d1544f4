//go:build linux

package confine

import (
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestWatchValuesMatchC ties the fork bomb watch's message to the one
// fast_linux.c prints.
func TestWatchValuesMatchC(t *testing.T) {
	src, err := os.ReadFile("fast_linux.c")
	if err != nil {
		t.Fatal(err)
	}
	// The values themselves are tied by TestSharedHeader (jail_linux.h).
	c := regexp.MustCompile(`"(jail: the sandbox stayed at its process limit \(%llu\) for %ds[^"]*)\\n"`).FindSubmatch(src)
	if c == nil {
		t.Fatal("the cached run's message is missing from fast_linux.c")
	}
	want := regexp.MustCompile(`%llu|%d`).ReplaceAllStringFunc(string(c[1]), func(v string) string {
		if v == "%llu" {
			return "64"
		}
		return strconv.Itoa(pidsBombTicks * int(watchInterval/time.Second))
	})
	if got := PidsEndedMessage(64); got != want {
		t.Errorf("Go prints %q, the cached run %q", got, want)
	}
}

// TestBombWatchRule: full for the whole window with a refusal ends the
// sandbox; a check below the limit starts the count again; full without a
// refused fork (a cgroup says) does not.
func TestBombWatchRule(t *testing.T) {
	dir := t.TempDir()
	cg := &cgroup{method: LimitCgroup2, dirs: []string{dir}}
	set := func(current, refused int) {
		os.WriteFile(dir+"/pids.current", []byte(strconv.Itoa(current)+"\n"), 0o644)
		os.WriteFile(dir+"/pids.events", []byte("max "+strconv.Itoa(refused)+"\n"), 0o644)
	}
	w := &bombWatch{cg: cg, pids: 64}
	set(64, 0)
	for i := 0; i < 2*pidsBombTicks; i++ {
		if w.tick(0) {
			t.Fatal("ended with no fork refused")
		}
	}
	set(10, 0)
	w.tick(0)
	refused := 1
	for i := 1; i <= 3*pidsBombTicks; i++ {
		set(64, refused)
		if i%pidsBombTicks == 0 {
			set(10, refused) // below the limit for one check
		}
		if w.tick(0) {
			t.Fatalf("ended at check %d though it fell below the limit every %d checks", i, pidsBombTicks)
		}
		refused++
	}
	ended := 0
	for i := 1; i <= pidsBombTicks; i++ {
		set(63, refused)
		if w.tick(0) {
			ended = i
			break
		}
	}
	if ended != pidsBombTicks {
		t.Fatalf("ended at check %d, want %d", ended, pidsBombTicks)
	}
}

// TestMemoryEndedMessageMatchesC ties the memory census's message to the
// one fast_linux.c prints.
func TestMemoryEndedMessageMatchesC(t *testing.T) {
	src, err := os.ReadFile("fast_linux.c")
	if err != nil {
		t.Fatal(err)
	}
	c := regexp.MustCompile(`"(jail: the sandbox held %lluM of memory[^"]*)\\n"`).FindSubmatch(src)
	if c == nil {
		t.Fatal("the cached run's message is missing from fast_linux.c")
	}
	vals := []string{"201", "64M", "3", "4", "5", "6", "7"}
	i := 0
	want := regexp.MustCompile(`%llu|%s`).ReplaceAllStringFunc(string(c[1]), func(string) string {
		i++
		return vals[i-1]
	})
	m := MemoryUse{Total: 200<<20 + 1, Anon: 3 << 20, Shmem: 4 << 20, FdShm: 5 << 20, Tmpfs: 6 << 20, Files: 7 << 20}
	if got := MemoryEndedMessage(64<<20, m); got != want {
		t.Errorf("Go prints %q, the cached run %q", got, want)
	}
}
