//go:build linux

package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/jail-sandbox/jail/launch"
	"github.com/jail-sandbox/jail/policy"
	"golang.org/x/sys/unix"
)

// durationFlag is a flag.Duration whose bad value says what is wanted.
type durationFlag time.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }
func (d *durationFlag) Set(v string) error {
	x, err := time.ParseDuration(v)
	if err != nil {
		return errors.New("want a duration such as 30s, 10m or 1h30m")
	}
	*d = durationFlag(x)
	return nil
}

// countFlag is an int64 flag whose bad value says what is wanted.
type countFlag int64

func (c *countFlag) String() string { return strconv.FormatInt(int64(*c), 10) }
func (c *countFlag) Set(v string) error {
	x, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return errors.New("want a whole number such as 4096")
	}
	*c = countFlag(x)
	return nil
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func parseRunFlags(args []string, stderr io.Writer) (*launch.Run, error) {
	o := &launch.Run{}
	fs := flag.NewFlagSet("jail run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Workdir, "w", "", "workspace `DIR`: read-write and the working directory (default: the current directory)")
	fs.Var((*listFlag)(&o.RO), "ro", "bind host `PATH` read-only (repeatable)")
	fs.Var((*listFlag)(&o.RW), "rw", "bind host `PATH` read-write (repeatable)")
	fs.Var((*listFlag)(&o.Hide), "hide", "cover `PATH` with an empty read-only object (repeatable)")
	fs.Var((*listFlag)(&o.Env), "env", "pass variable `NAME` from the caller, or set NAME=VALUE (repeatable)")
	fs.Var((*durationFlag)(&o.Timeout), "timeout", "kill the whole sandbox after `DURATION` (e.g. 30s, 10m) and exit 124")
	memory := fs.String("memory", "", "memory limit `SIZE` (e.g. 512M, 2G)")
	fs.Var((*countFlag)(&o.Pids), "pids", "limit the number of processes to `N`")
	fs.BoolVar(&o.JSON, "json", false, "print a JSON result object at the end (see README: Result)")
	fs.StringVar(&o.JSONOut, "json-out", "", "write the JSON result to `FILE` instead of stdout/stderr (implies --json)")
	fs.BoolVar(&o.Capture, "capture", false, "capture stdout and stderr into the JSON result (implies --json)")
	outputLimit := (*countFlag)(new(int64))
	fs.Var(outputLimit, "output-limit", "`N` characters of each captured stream to keep (default: the policy's [limits] output_chars, 100000)")
	fs.StringVar(&o.PolicyFile, "policy", "", "policy `FILE` (see policy.toml.example)")
	fs.StringVar(&o.Net, "net", "", "network: none (loopback only), proxy (HTTP and SOCKS5 proxies enforcing the policy's allowlist), transparent (proxy, plus DNS and TCP for any program to allowed hosts) or host (the host's network; printed as a warning); default from the policy, none")
	allowFlag(fs, (*listFlag)(&o.Allow))
	fs.Var((*listFlag)(&o.Degraded), "allow-degraded", "run without `LAYER` (landlock, seccomp) when the kernel lacks it; printed on every run")
	fs.BoolVar(&o.AllowPtrace, "allow-ptrace", false, "let the command trace its own processes (strace, gdb, ASan/LSan); jail's pid 1 stays out of reach ([seccomp] allow_ptrace)")
	fs.StringVar(&o.Profile, "profile", "", "agent profile `NAME` (claude, codex, gemini, aider, opencode, a [profiles.NAME] of the policy, or none); default: chosen by the command's base name (docs/agents.md)")
	fs.BoolVar(&o.AsRoot, "as-root", false, "map the caller to uid 0 inside the sandbox (files keep their host owners)")
	homeWorkspaceFlag(fs, &o.HomeWorkspace)
	// A bad flag is one line naming it (runMain prints the error), not
	// the whole usage; -h prints the usage.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintln(stderr, "usage: jail run [flags] -- CMD [ARG...]")
			fs.PrintDefaults()
			fmt.Fprintln(stderr, "\nA repeated run (same directory, same flags before --) is carried out from the plan\ncache while nothing it was planned from changed; JAIL_PLAN_CACHE=off turns it off,\nJAIL_PLAN_CACHE=trace reports what each run did (docs/plan-cache.md).")
			return nil, err
		}
		return nil, fmt.Errorf("%w (jail run -h lists the flags)", err)
	}
	o.Argv = fs.Args()
	o.OutputLimit = int(min(*outputLimit, math.MaxInt32))
	for _, e := range o.Env {
		o.EnvValues = o.EnvValues || strings.Contains(e, "=")
	}
	fs.Visit(func(f *flag.Flag) { o.OutputLimitSet = o.OutputLimitSet || f.Name == "output-limit" })
	if len(o.Argv) == 0 {
		return nil, errors.New("no command given: jail run [flags] -- CMD [ARG...]")
	}
	if *memory != "" {
		n, err := parseSize(*memory)
		if err != nil {
			return nil, fmt.Errorf("--memory %q: %w", *memory, err)
		}
		o.Memory = n
	}
	if o.Pids < 0 {
		return nil, fmt.Errorf("--pids %d: must be positive", o.Pids)
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("--timeout %s: must be positive", o.Timeout)
	}
	if o.OutputLimit < 0 {
		return nil, fmt.Errorf("--output-limit %d: must be positive", o.OutputLimit)
	}
	if o.Capture || o.JSONOut != "" {
		o.JSON = true // both say where the JSON result goes
	}
	if err := launch.CheckDegraded(o.Degraded); err != nil {
		return nil, err
	}
	switch o.Net {
	case "", policy.NetNone, policy.NetProxy, policy.NetTransparent, policy.NetHost:
	default:
		return nil, fmt.Errorf("--net %q: want none, proxy, transparent or host", o.Net)
	}
	return o, nil
}

// parseSize reads 512M, 2G, 1024K or plain bytes.
func parseSize(s string) (int64, error) {
	bad := errors.New("want a positive size such as 512M, 2G, 1024K or a number of bytes")
	if s == "" {
		return 0, bad
	}
	mult := int64(1)
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	}
	num := s
	if mult != 1 {
		num = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, bad
	}
	return n * mult, nil
}

func runMain(args []string, stdin *os.File, stdout, stderr io.Writer) int {
	// A reader that goes away (jail run ... | head) must not kill jail
	// before it cleans up: with SIGPIPE caught, a write fails with EPIPE
	// instead. A caught signal is reset at execve, so the command still
	// gets the default action.
	signal.Notify(make(chan os.Signal, 1), unix.SIGPIPE)
	started := time.Now()
	o, err := parseRunFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "jail run:", err)
		return jsonWanted(args).Fail(2, launch.StageFlags, err, stdout, stderr)
	}
	o.Started = started
	return o.Main(args, stdin, stdout, stderr)
}

// allowFlag declares --allow, which jail run and the tool servers share.
func allowFlag(fs *flag.FlagSet, l *listFlag) {
	fs.Var(l, "allow", "let the command reach `HOST[:PORT]` (also *.DOMAIN) through jail's egress proxy, for this run: added to the policy's [network] allow, and implies --net proxy (repeatable; without a port, 80 and 443)")
}

// homeWorkspaceFlag is --home-workspace, shared by run, serve, mcp and tool.
func homeWorkspaceFlag(fs *flag.FlagSet, v *bool) {
	fs.BoolVar(v, "home-workspace", false, "allow a workspace that is or contains your home directory: the home is then read-only, its secrets hidden, only --rw paths writable (docs/workspace.md)")
}

// jsonWanted reads, from a command line the flag parser refused, whether
// a JSON result was asked for and where it goes, so a refusal of the
// flags is reported in JSON too. Flags after the one refused are read as
// well: the parser stopped, but the caller still asked.
func jsonWanted(args []string) *launch.Run {
	o := &launch.Run{}
	for i := 0; i < len(args) && args[i] != "--"; i++ {
		name, val, hasVal := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") {
			continue
		}
		switch name {
		case "json", "capture":
			b, err := strconv.ParseBool(cmp.Or(val, "true"))
			o.JSON = o.JSON || (err == nil && b)
			o.Capture = o.Capture || (name == "capture" && err == nil && b)
		case "json-out":
			if !hasVal && i+1 < len(args) {
				i++
				val = args[i]
			}
			o.JSONOut, o.JSON = val, true
		}
	}
	if o.JSONOut == "" && !o.JSON {
		return nil
	}
	return o
}
