package testutil

import (
	"bytes"
	"os"
	"strconv"
)

// Processes lists the host pids whose command line (/proc/PID/cmdline,
// arguments separated by NUL) contains marker. A zombie has no command
// line left, so it is not listed.
func Processes(marker string) []int {
	return processes(marker, false)
}

// LiveProcesses is [Processes] that also reads each process's state and
// leaves out one that became a zombie between the two reads.
func LiveProcesses(marker string) []int {
	return processes(marker, true)
}

func processes(marker string, liveOnly bool) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		if liveOnly {
			// The state follows the last ")" of the command name.
			st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if i := bytes.LastIndexByte(st, ')'); err != nil || i < 0 || bytes.HasPrefix(st[i+1:], []byte(" Z")) {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}
