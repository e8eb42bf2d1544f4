package container

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// supervisor names one jail process across pid reuse: the boot, the pid and the process's
// start time (field 22 of /proc/PID/stat, in clock ticks since boot).
type supervisor struct {
	boot  string
	pid   int
	start uint64
}

func (s supervisor) String() string { return fmt.Sprintf("%s/%d/%d", s.boot, s.pid, s.start) }

func currentSupervisor() (supervisor, error) {
	boot, err := bootID()
	if err != nil {
		return supervisor{}, err
	}
	pid := os.Getpid()
	start, err := startTime(pid)
	if err != nil {
		return supervisor{}, fmt.Errorf("container: start time of this process: %w", err)
	}
	return supervisor{boot: boot, pid: pid, start: start}, nil
}

// parseSupervisor reads a LabelSupervisor value; a malformed one is the zero supervisor,
// which is never alive.
func parseSupervisor(v string) supervisor {
	parts := strings.Split(v, "/")
	if len(parts) != 3 {
		return supervisor{}
	}
	pid, err1 := strconv.Atoi(parts[1])
	start, err2 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return supervisor{}
	}
	return supervisor{boot: parts[0], pid: pid, start: start}
}

// alive says whether the process s names still runs: same boot, same pid, same start time.
func (s supervisor) alive() bool {
	if s.pid == 0 {
		return false
	}
	boot, err := bootID()
	if err != nil || boot != s.boot {
		return false
	}
	start, err := startTime(s.pid)
	return err == nil && start == s.start
}

func bootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("container: boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); the start time is field 22.
	if len(f) < 20 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}
