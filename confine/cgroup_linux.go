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
	// MemoryNoRLimit never applies MemoryBytes as RLIMIT_DATA: the
	// default bound, which must not break what reserves large writable
	// address space it never touches (AddressSanitizer's shadow memory,
	// some runtimes' heaps). With rlimits the census still holds the
	// sandbox to it (watch_linux.go), counting memory used, not reserved.
	MemoryNoRLimit bool
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
	method   LimitMethod
	limits   Limits
	dirs     []string // created directories, removed by cleanup
	fd       int      // cgroup2 directory, for CLONE_INTO_CGROUP; -1 if none
	why      string   // why a better method was not usable
	attached bool     // a process was moved in through cgroup.procs
}

// newCgroupAgain is the fallback of a cgroup that could not take the
// early child: rlimits, with the reason.
func newCgroupAgain(old *cgroup) *cgroup {
	return &cgroup{method: LimitRLimit, limits: old.limits, fd: -1, why: "cannot move the sandbox into its " + string(old.method) + " cgroup"}
}

// events reads whether the memory limit made the kernel kill a process
// (oom_kill in memory.events, or memory.oom_control on v1) and whether
// a fork failed at the process limit (max in pids.events), before the
// cgroup is removed.
func (cg *cgroup) events() (oom, pids bool) {
	count := eventCount
	for _, d := range cg.dirs {
		switch {
		case cg.method == LimitCgroup2:
			oom = oom || count(filepath.Join(d, "memory.events"), "oom_kill") > 0
			pids = pids || count(filepath.Join(d, "pids.events"), "max") > 0
		case strings.HasPrefix(d, "/sys/fs/cgroup/memory/"):
			oom = oom || count(filepath.Join(d, "memory.oom_control"), "oom_kill") > 0
		case strings.HasPrefix(d, "/sys/fs/cgroup/pids/"):
			pids = pids || count(filepath.Join(d, "pids.events"), "max") > 0
		}
	}
	return oom, pids
}

// eventCount reads the number after key in a cgroup's flat keyed file
// ("oom_kill 1" in memory.events), 0 when it is not there.
func eventCount(file, key string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// newCgroup creates the best limit container jail may create here. It does
// not fail when no cgroup is usable: the caller falls back to rlimits and
// reports cg.why.
func newCgroup(l Limits, name string) *cgroup {
	cg := &cgroup{method: LimitNone, limits: l, fd: -1}
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

// ownCgroupV1 is this process's cgroup in the v1 hierarchy of controller
// ("/" when /proc/self/cgroup does not list it).
func ownCgroupV1(controller string) string {
	b, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(b), "\n") {
		// ID:CONTROLLERS:PATH
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && contains(strings.Split(f[1], ","), controller) && strings.HasPrefix(f[2], "/") {
			return f[2]
		}
	}
	return "/"
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
		return mkdirError(own, err)
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
		root := filepath.Join("/sys/fs/cgroup", c.hier)
		var st unix.Statfs_t
		if err := unix.Statfs(root, &st); err != nil || st.Type != unix.CGROUP_SUPER_MAGIC {
			cg.cleanup()
			return fmt.Errorf("no v1 %s hierarchy at %s", c.hier, root)
		}
		// Beneath jail's own cgroup of the hierarchy, not at its root: the
		// limits of the cgroup the caller runs in (a CI job's) bind the
		// sandbox too, and a subtree delegated to the user serves.
		base := filepath.Join(root, ownCgroupV1(c.hier))
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			cg.cleanup()
			return mkdirError(base, err)
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

// mkdirError names the parent, not the cgroup's own name (which differs
// on every run): the note is part of the result, and a cached run prints
// the planned run's.
func mkdirError(parent string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("cannot create a cgroup in %s: %w", parent, err)
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

// attach moves pid into the cgroup through cgroup.procs: a v1 cgroup's
// child, or an early child (forked before jail knew it would need a
// cgroup) on v1 or v2. A child cloned into its v2 cgroup needs nothing.
func (cg *cgroup) attach(pid int) error {
	if cg.method != LimitCgroup1 && cg.method != LimitCgroup2 {
		return nil
	}
	for _, d := range cg.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("attach to %s: %w", d, err)
		}
	}
	// An early child has forked its pid 1 already (it waits there for
	// the header), and moving a process leaves its children where they
	// are: they are moved too. Read after the move, so a child forked
	// meanwhile is either listed or born in the cgroup.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return fmt.Errorf("attach: list the children of %d: %w", pid, err)
	}
	for _, f := range strings.Fields(string(b)) {
		for _, d := range cg.dirs {
			if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(f), 0); err != nil {
				return fmt.Errorf("attach to %s: %w", d, err)
			}
		}
	}
	cg.attached = true
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
// tree, and not shared or file mappings); RLIMIT_NPROC bounds the tasks of
// the uid in the sandbox's user namespace. The sum of the tree, shared
// memory, memory files and tmpfs included, is the census's to bound
// (watch_linux.go), and so is ending a sandbox held at its task limit.
// RLIMIT_FSIZE is not set: it would bound each file on disk too (the
// workspace's), and one file rather than the sum.
func rlimitsFor(l Limits) []RLimit {
	var r []RLimit
	if l.MemoryBytes > 0 && !l.MemoryNoRLimit {
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

// FormatSize writes a byte count for messages: the largest binary unit
// it reaches, exact where it is (4G, 512M), else to one decimal (the
// default memory bound, half of the machine's, is 11.8G, not 12341792K).
// The cached run's report prints the text stored in its entry.
func FormatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}} {
		if n >= 1<<u.shift {
			if n%(1<<u.shift) == 0 {
				return strconv.FormatInt(n>>u.shift, 10) + u.suffix
			}
			return strconv.FormatFloat(float64(n)/float64(int64(1)<<u.shift), 'f', 1, 64) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
