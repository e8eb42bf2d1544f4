//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// LayerStatus is one line of `jail check`.
type LayerStatus struct {
	Layer     Layer  `json:"layer"`
	Available bool   `json:"available"`
	Detail    string `json:"detail"`
	Fix       string `json:"fix,omitempty"`
}

// Check reports every layer this kernel and user give. The last line is a
// real launch of a sandbox running /bin/true with every layer on, so the
// report cannot claim more than a run would get.
func Check() []LayerStatus {
	var out []LayerStatus

	ns := LayerStatus{Layer: LayerUserNS, Available: true, Detail: fmt.Sprintf("uid %d", os.Getuid())}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil {
		ns.Detail += ", user.max_user_namespaces=" + strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil {
		ns.Detail += ", kernel.apparmor_restrict_unprivileged_userns=" + strings.TrimSpace(string(b))
	}
	out = append(out, ns)

	ll := LayerStatus{Layer: LayerLandlock}
	if abi, err := landlockABI(); err != nil {
		ll.Detail = "not available: " + err.Error()
		ll.Fix = landlockFix
	} else {
		ll.Available = true
		ll.Detail = fmt.Sprintf("ABI %d", abi)
		if abi >= 4 {
			ll.Detail += "; TCP connect rules"
		}
		if abi >= 6 {
			ll.Detail += "; abstract unix socket and signal scoping"
		}
	}
	out = append(out, ll)

	sc := LayerStatus{Layer: LayerSeccomp}
	if !seccompAvailable() {
		sc.Detail = "not available: PR_GET_SECCOMP fails"
		sc.Fix = seccompFix
	} else if prog, err := CompileSeccomp(SeccompOptions{}); err != nil {
		sc.Detail = "filter does not compile: " + err.Error()
	} else {
		sc.Available = true
		sc.Detail = fmt.Sprintf("default filter: %d + %d instructions", len(prog[0]), len(prog[1]))
	}
	out = append(out, sc)

	cg := newCgroup(Limits{MemoryBytes: 1 << 30, Pids: 1024}, fmt.Sprintf("jail-check-%d", os.Getpid()))
	// Limits always have a mechanism: rlimits are the fallback, weaker but
	// real, so this line informs rather than fails.
	cl := LayerStatus{Layer: LayerCgroup, Available: true, Detail: "--memory/--pids via " + string(cg.method)}
	if cg.why != "" {
		cl.Detail += " (rlimit fallback: " + cg.why + ")"
	}
	cg.cleanup()
	out = append(out, cl)

	trial := LayerStatus{Layer: "launch"}
	if err := trialLaunch(); err != nil {
		trial.Detail = "a sandbox could not be started: " + err.Error()
		var le *LayerError
		if errors.As(err, &le) {
			trial.Fix = le.Fix
		}
	} else {
		trial.Available = true
		trial.Detail = "a sandbox with every layer ran /bin/true"
	}
	return append(out, trial)
}

func trialLaunch() error {
	ws, err := os.MkdirTemp("", "jail-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	home, _ := os.UserHomeDir()
	l := &Layout{Workspace: ws, Home: home, System: DefaultSystem(), Secrets: DefaultSecrets()}
	ms, ph, err := l.Build()
	defer ph.Release()
	if err != nil {
		return err
	}
	prog, err := CompileSeccomp(SeccompOptions{})
	if err != nil {
		return err
	}
	c := &Cmd{Spec: &Spec{Argv: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin:/bin"}, Dir: ws, UID: os.Getuid(), GID: os.Getgid(),
		Hostname: "jail", Mounts: ms, Net: NetNone, Seccomp: prog}}
	if err := c.Start(); err != nil {
		return err
	}
	r, err := c.Wait()
	if err != nil {
		return err
	}
	if r.ExitCode != 0 {
		return fmt.Errorf("/bin/true exited %d", r.ExitCode)
	}
	return nil
}
