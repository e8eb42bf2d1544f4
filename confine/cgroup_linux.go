//go:build linux

package confine

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Limits bound the sandbox's memory and process count. Zero means no limit.
type Limits struct {
	MemoryBytes int64
	Pids        int64
}

// LimitMethod says which kernel mechanism enforces Limits.
type LimitMethod string

// The methods, best first. RLimit is the fallback where jail cannot create
// a cgroup; it is weaker (see limitsFallback) and jail says so.
const (
	LimitNone    LimitMethod = "none"
	LimitCgroup2 LimitMethod = "cgroup2"
	LimitCgroup1 LimitMethod = "cgroup1"
	LimitRLimit  LimitMethod = "rlimit"
)

// cgroup is a child cgroup jail created for one sandbox.
type cgroup struct {
	method LimitMethod
	dirs   []string // created directories, removed by cleanup
	fd     int      // cgroup2 directory, for CLONE_INTO_CGROUP; -1 if none
	why    string   // why a better method was not usable
}

// newCgroup creates the best limit container jail may create here. It does
// not fail when no cgroup is usable: the caller falls back to rlimits and
// reports cg.why.
func newCgroup(l Limits, name string) *cgroup {
	cg := &cgroup{method: LimitNone, fd: -1}
	if l.MemoryBytes == 0 && l.Pids == 0 {
		return cg
	}
	var whys []string
	if err := cg.tryV2(l, name); err == nil {
		return cg
	} else {
		whys = append(whys, "cgroup v2: "+err.Error())
	}
	if err := cg.tryV1(l, name); err == nil {
		return cg
	} else {
		whys = append(whys, "cgroup v1: "+err.Error())
	}
	cg.method = LimitRLimit
	cg.why = strings.Join(whys, "; ")
	return cg
}

// ownCgroupV2 finds this process's cgroup v2 directory.
func ownCgroupV2() (string, error) {
	mnt, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(mnt, p), nil
		}
	}
	return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
}

func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ... mountpoint ... - fstype source options
		fields := strings.Fields(sc.Text())
		for i, fl := range fields {
			if fl == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4], nil
			}
		}
	}
	return "", errors.New("no cgroup2 file system mounted")
}

// tryV2 needs the memory and pids controllers already enabled for the
// children of jail's own cgroup (a delegated subtree): enabling them itself
// would move jail's own process, which it must not do behind the user's
// back.
func (cg *cgroup) tryV2(l Limits, name string) error {
	own, err := ownCgroupV2()
	if err != nil {
		return err
	}
	ctl, err := os.ReadFile(filepath.Join(own, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	have := strings.Fields(string(ctl))
	for _, want := range needControllers(l) {
		if !contains(have, want) {
			return fmt.Errorf("controller %q is not delegated to %s (cgroup.subtree_control has %q)", want, own, strings.TrimSpace(string(ctl)))
		}
	}
	dir := filepath.Join(own, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	cg.dirs = append(cg.dirs, dir)
	if err := cg.write(dir, "memory.max", l.MemoryBytes); err != nil {
		cg.cleanup()
		return err
	}
	if err := cg.write(dir, "memory.swap.max", zeroIfSet(l.MemoryBytes)); err != nil && !errors.Is(err, os.ErrNotExist) {
		cg.cleanup()
		return err
	}
	if err := cg.write(dir, "pids.max", l.Pids); err != nil {
		cg.cleanup()
		return err
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		cg.cleanup()
		return err
	}
	cg.fd = fd
	cg.method = LimitCgroup2
	return nil
}

// tryV1 uses the legacy memory and pids hierarchies, writable by root.
func (cg *cgroup) tryV1(l Limits, name string) error {
	type ctl struct {
		hier, file string
		val        int64
	}
	var ctls []ctl
	if l.MemoryBytes > 0 {
		ctls = append(ctls, ctl{"memory", "memory.limit_in_bytes", l.MemoryBytes})
	}
	if l.Pids > 0 {
		ctls = append(ctls, ctl{"pids", "pids.max", l.Pids})
	}
	for _, c := range ctls {
		base := filepath.Join("/sys/fs/cgroup", c.hier)
		var st unix.Statfs_t
		if err := unix.Statfs(base, &st); err != nil || st.Type != unix.CGROUP_SUPER_MAGIC {
			cg.cleanup()
			return fmt.Errorf("no v1 %s hierarchy at %s", c.hier, base)
		}
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			cg.cleanup()
			return err
		}
		cg.dirs = append(cg.dirs, dir)
		if err := cg.write(dir, c.file, c.val); err != nil {
			cg.cleanup()
			return err
		}
		if c.hier == "memory" {
			// Without this the limit only pushes pages to swap.
			_ = cg.write(dir, "memory.memsw.limit_in_bytes", c.val)
		}
	}
	cg.method = LimitCgroup1
	return nil
}

func needControllers(l Limits) []string {
	var c []string
	if l.MemoryBytes > 0 {
		c = append(c, "memory")
	}
	if l.Pids > 0 {
		c = append(c, "pids")
	}
	return c
}

func zeroIfSet(v int64) int64 {
	if v > 0 {
		return -2 // written as 0
	}
	return 0
}

func (cg *cgroup) write(dir, file string, v int64) error {
	if v == 0 {
		return nil
	}
	s := strconv.FormatInt(v, 10)
	if v == -2 {
		s = "0"
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(s), 0); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// attach moves pid into a v1 cgroup (v2 uses CLONE_INTO_CGROUP at clone).
func (cg *cgroup) attach(pid int) error {
	if cg.method != LimitCgroup1 {
		return nil
	}
	for _, d := range cg.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("attach to %s: %w", d, err)
		}
	}
	return nil
}

// cleanup removes the cgroups; the sandbox's processes are gone by then
// (pid 1 exited), so the directories are empty.
func (cg *cgroup) cleanup() {
	if cg.fd >= 0 {
		unix.Close(cg.fd)
		cg.fd = -1
	}
	for i := len(cg.dirs) - 1; i >= 0; i-- {
		os.Remove(cg.dirs[i])
	}
	cg.dirs = nil
}

// rlimitsFor is the fallback where no cgroup can be made. RLIMIT_DATA
// bounds the heap and private mappings of each process (not the sum of the
// tree, and not file mappings); RLIMIT_NPROC bounds the processes of the
// uid, which does not bind a caller that is root. Both are weaker than a
// cgroup, which is why jail reports the method it used.
func rlimitsFor(l Limits) []RLimit {
	var r []RLimit
	if l.MemoryBytes > 0 {
		r = append(r, RLimit{Resource: unix.RLIMIT_DATA, Cur: uint64(l.MemoryBytes), Max: uint64(l.MemoryBytes)})
	}
	if l.Pids > 0 {
		r = append(r, RLimit{Resource: unix.RLIMIT_NPROC, Cur: uint64(l.Pids), Max: uint64(l.Pids)})
	}
	return r
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// MemTotal is the machine's memory in bytes (MemTotal of /proc/meminfo),
// or 0 when it cannot be read. The default tmpfs sizes are fractions of
// it; a change needs a memory hotplug, and a reboot changes the boot id
// the plan cache checks.
func MemTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}
