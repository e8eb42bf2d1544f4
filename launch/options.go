//go:build linux

package launch

import (
	"fmt"
	"strings"
	"time"

	"github.com/jail-sandbox/jail/confine"
)

// Options are what a caller asked of its sandboxes, from the command line:
// `jail run`'s flags, and the subset the tool servers share. Apply fills
// in what the flags left to the policy (Net, Timeout, Memory, Pids,
// OutputLimit, Env) and the fields it marks as derived.
type Options struct {
	// Workdir is the workspace given with -w; "" is the current directory.
	Workdir    string
	PolicyFile string
	// Net is the network mode (policy.NetNone, ...); "" takes the policy's.
	Net     string
	Profile string
	// RO, RW and Hide are host paths bound read-only, read-write or covered.
	RO, RW, Hide []string
	// Env are --env entries: NAME passes the caller's value, NAME=VALUE
	// sets one. Apply puts the network's and the policy's before them.
	Env []string
	// Allow are --allow hosts, added to the policy's [network] allow.
	Allow []string
	// Degraded are the --allow-degraded layers (comma lists).
	Degraded     []string
	Timeout      time.Duration
	Memory, Pids int64
	// OutputLimit is the characters of each captured stream to keep;
	// OutputLimitSet says --output-limit was given (else the policy's).
	OutputLimit    int
	OutputLimitSet bool
	AsRoot         bool
	AllowPtrace    bool
	HomeWorkspace  bool
	// EnvValues says an --env NAME=VALUE was given: the run is never
	// cached (no value of the caller's goes to disk).
	EnvValues bool
	// Argv is the command of `jail run`.
	Argv []string
	// Agent and Role are the --agent and --role of `jail mcp` and `jail
	// tool`: the tool server refuses an unknown one before it makes
	// anything on disk.
	Agent, Role string

	// Derived by Apply.

	// LimitsAsked says --memory, --pids or the policy set limits (not
	// the defaults): only then is the rlimit fallback reported.
	LimitsAsked bool
	// MemoryDefault says the memory bound is the default one (cgroups
	// only, never RLIMIT_DATA).
	MemoryDefault bool
}

// CheckDegraded accepts only layers a kernel may lack: Landlock and
// seccomp. Limits need no opt-in (without a usable cgroup they fall back to
// rlimits, and jail says so); user namespaces cannot be done without.
func CheckDegraded(list []string) error {
	for _, d := range list {
		for _, l := range strings.Split(d, ",") {
			switch confine.Layer(l) {
			case confine.LayerLandlock, confine.LayerSeccomp:
			default:
				return fmt.Errorf("--allow-degraded %q: not a layer that may be skipped (landlock, seccomp)", l)
			}
		}
	}
	return nil
}
