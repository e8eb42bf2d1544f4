package main

import (
	"cmp"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/launch"
	"github.com/jail-sandbox/jail/policy"
	"golang.org/x/sys/unix"
)

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// runOptions is what `jail run` was asked to do: the sandbox's options,
// and where its result goes.
type runOptions struct {
	launch.Options
	json, capture bool
	jsonOut       string
	jsonOutFile   *confine.Output // its directory, held from before the sandbox starts
	policyHash    func() string   // the effective policy's SHA-256
	started       time.Time       // when jail run began, for a failure's duration_ms
	hash          string
}

func parseRunFlags(args []string, stderr io.Writer) (*runOptions, error) {
	o := &runOptions{}
	fs := flag.NewFlagSet("jail run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Workdir, "w", "", "workspace `DIR`: read-write and the working directory (default: the current directory)")
	fs.Var((*listFlag)(&o.RO), "ro", "bind host `PATH` read-only (repeatable)")
	fs.Var((*listFlag)(&o.RW), "rw", "bind host `PATH` read-write (repeatable)")
	fs.Var((*listFlag)(&o.Hide), "hide", "cover `PATH` with an empty read-only object (repeatable)")
	fs.Var((*listFlag)(&o.Env), "env", "pass variable `NAME` from the caller, or set NAME=VALUE (repeatable)")
	fs.DurationVar(&o.Timeout, "timeout", 0, "kill the whole sandbox after `DURATION` (e.g. 30s, 10m) and exit 124")
	memory := fs.String("memory", "", "memory limit `SIZE` (e.g. 512M, 2G)")
	fs.Int64Var(&o.Pids, "pids", 0, "limit the number of processes to `N`")
	fs.BoolVar(&o.json, "json", false, "print a JSON result object at the end (see README: Result)")
	fs.StringVar(&o.jsonOut, "json-out", "", "write the JSON result to `FILE` instead of stdout/stderr (implies --json)")
	fs.BoolVar(&o.capture, "capture", false, "capture stdout and stderr into the JSON result (implies --json)")
	fs.IntVar(&o.OutputLimit, "output-limit", 0, "characters of each captured stream to keep (default: the policy's [limits] output_chars, 100000)")
	fs.StringVar(&o.PolicyFile, "policy", "", "policy `FILE` (see policy.toml.example)")
	fs.StringVar(&o.Net, "net", "", "network: none (loopback only), proxy (HTTP and SOCKS5 proxies enforcing the policy's allowlist), transparent (proxy, plus DNS and TCP for any program to allowed hosts) or host (the host's network; printed as a warning); default from the policy, none")
	allowFlag(fs, (*listFlag)(&o.Allow))
	fs.Var((*listFlag)(&o.Degraded), "allow-degraded", "run without `LAYER` (landlock, seccomp) when the kernel lacks it; printed on every run")
	fs.BoolVar(&o.AllowPtrace, "allow-ptrace", false, "let the command trace its own processes (strace, gdb, ASan/LSan); jail's pid 1 stays out of reach ([seccomp] allow_ptrace)")
	fs.StringVar(&o.Profile, "profile", "", "agent profile `NAME` (claude, codex, gemini, aider, opencode, a [profiles.NAME] of the policy, or none); default: chosen by the command's base name (docs/agents.md)")
	fs.BoolVar(&o.AsRoot, "as-root", false, "map the caller to uid 0 inside the sandbox (files keep their host owners)")
	homeWorkspaceFlag(fs, &o.HomeWorkspace)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: jail run [flags] -- CMD [ARG...]")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\nA repeated run (same directory, same flags before --) is carried out from the plan\ncache while nothing it was planned from changed; JAIL_PLAN_CACHE=off turns it off,\nJAIL_PLAN_CACHE=trace reports what each run did (docs/plan-cache.md).")
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.Argv = fs.Args()
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
	if o.capture || o.jsonOut != "" {
		o.json = true // both say where the JSON result goes
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
		return jsonWanted(args).fail(2, stageFlags, err, stdout, stderr)
	}
	o.started = started
	// The same loader as `jail policy explain`: what an operator reads
	// there is what this run gets.
	penv, err := launch.PolicyEnv(o.Workdir)
	if err != nil {
		fmt.Fprintln(stderr, "jail run:", err)
		return o.fail(2, stagePolicy, err, stdout, stderr)
	}
	pfacts := launch.PolicyFacts(o.PolicyFile, penv)
	p, widenings, err := policy.LoadEffective(o.PolicyFile, penv)
	if err != nil {
		launch.PrintPolicyErrors(stderr, err)
		fmt.Fprintln(stderr, "jail run: refusing to run with a policy that does not load")
		return o.fail(2, stagePolicy, err, stdout, stderr)
	}
	for _, w := range widenings {
		fmt.Fprintln(stderr, "jail: warning:", w)
	}
	if errs := p.MissingPaths(); len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintln(stderr, e)
		}
		fmt.Fprintln(stderr, "jail run: refusing to run: the policy binds paths that do not exist")
		return 2
	}
	netGiven := o.Net != ""
	layout, pass, sc, err := launch.Apply(&o.Options, p, penv)
	if err != nil {
		fmt.Fprintln(stderr, "jail run:", err)
		return o.fail(2, stagePolicy, err, stdout, stderr)
	}
	if o.jsonOut != "" {
		// Held before any sandbox exists; Build refuses it inside a
		// writable bind (confine.Output).
		if o.jsonOutFile, err = confine.OpenOutput("--json-out", o.jsonOut); err != nil {
			fmt.Fprintln(stderr, "jail run:", err)
			return o.fail(2, stagePrepare, err, stdout, stderr)
		}
		defer o.jsonOutFile.Close()
		layout.Outputs = append(layout.Outputs, o.jsonOutFile)
	}
	cache := launch.NewPlanCache(args, &o.Options, o.capture || o.jsonOut != "", p, penv, pfacts, len(widenings) > 0)
	if cache != nil {
		layout.Facts = cache.Facts()
	}
	if err := launch.ApplyHome(&o.Options, p, penv, layout, &pass, netGiven); err != nil {
		fmt.Fprintln(stderr, "jail run:", err)
		return 2
	}
	if o.json {
		// The result names the policy that produced it. Hashing costs a
		// canonical encoding of the whole policy, so it runs while the
		// sandbox starts.
		hash := make(chan string, 1)
		go func() { hash <- p.Hash() }() // lifetime: one hash, received by policyHash
		o.policyHash = func() string {
			if o.hash == "" {
				o.hash = <-hash
			}
			return o.hash
		}
	}
	// Network (net.go): the proxy is built, and the policy's network errors surface, before
	// any sandbox exists.
	nr, err := launch.PrepareNet(o.Net, p, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "jail run:", err)
		return o.fail(2, stageNetwork, err, stdout, stderr)
	}
	defer nr.Close()
	nr.ApplyTo(&o.Options, layout)
	return runSandbox(o, layout, pass, sc, nr, cache, stdin, stdout, stderr)
}

// allowFlag declares --allow, which jail run and the tool servers share.
func allowFlag(fs *flag.FlagSet, l *listFlag) {
	fs.Var(l, "allow", "let the command reach `HOST[:PORT]` (also *.DOMAIN) through jail's egress proxy, for this run: added to the policy's [network] allow, and implies --net proxy (repeatable; without a port, 80 and 443)")
}

// homeWorkspaceFlag is --home-workspace, shared by run, serve, mcp and tool.
func homeWorkspaceFlag(fs *flag.FlagSet, v *bool) {
	fs.BoolVar(v, "home-workspace", false, "allow a workspace that is or contains your home directory: the home is then read-only, its secrets hidden, only --rw paths writable (docs/workspace.md)")
}

// runSandbox builds the Spec from the layout and options, runs it and reports.
func runSandbox(o *runOptions, layout *confine.Layout, pass []string, sc confine.SeccompOptions, nr *launch.Net, cache *launch.PlanCache, stdin *os.File, stdout, stderr io.Writer) int {
	spec := launch.NewSpec(&o.Options, o.Argv, stderr)
	spec.Foreground = isForeground(stdin)
	cmd := &confine.Cmd{Spec: spec, Stdin: stdin, Timeout: o.Timeout, Limits: confine.Limits{MemoryBytes: o.Memory, Pids: o.Pids, MemoryCgroupOnly: o.MemoryDefault},
		Notice: func(line string) { fmt.Fprintln(stderr, line) }}
	cmd.Stdout, cmd.Stderr = asFile(stdout), asFile(stderr)

	var outCap, errCap *confine.Capture
	var copies sync.WaitGroup
	if o.capture {
		spec.Foreground = false
	}
	if !spec.Foreground && launch.IsTerminal(stdin) {
		// Not interactive: the command must not read what the person
		// types (an API key, an answer meant for jail), so its stdin is
		// /dev/null; the init gives it a session of its own, without the
		// terminal (docs/terminal.md).
		cmd.Stdin = nil
	}
	if nr != nil {
		nr.CommandOnTTY = !o.capture && (launch.IsTerminal(cmd.Stdout) || launch.IsTerminal(cmd.Stderr))
	}
	if o.capture {
		outCap, errCap = &confine.Capture{Limit: o.OutputLimit}, &confine.Capture{Limit: o.OutputLimit}
		for _, p := range []struct {
			dst **os.File
			c   *confine.Capture
		}{{&cmd.Stdout, outCap}, {&cmd.Stderr, errCap}} {
			r, w, err := os.Pipe()
			if err != nil {
				fmt.Fprintln(stderr, "jail run: capture pipe:", err)
				return o.fail(2, stagePrepare, err, stdout, stderr)
			}
			*p.dst = w
			copies.Add(1)
			go func(r *os.File, c *confine.Capture) {
				defer copies.Done()
				defer r.Close()
				io.Copy(c, r)
			}(r, p.c)
			defer w.Close()
		}
	}

	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH, unix.SIGUSR1, unix.SIGUSR2)
	defer signal.Stop(sigs)

	ph, err := launch.Start(cmd, layout, pass, o.Env, func() ([]confine.Program, error) { return confine.CompileSeccomp(sc) }, nr.Sockets(), stderr)
	defer ph.Release()
	if err != nil {
		var se *launch.StartError
		errors.As(err, &se)
		stage := stageSandbox
		switch {
		case se.Code == 2:
			fmt.Fprintln(stderr, "jail run:", se.Err)
			stage = stagePrepare
		case se.Code == 126 || se.Code == 127:
			fmt.Fprintf(stderr, "jail: %s\n", se)
			stage = stageExec
		default:
			fmt.Fprintf(stderr, "jail: %s\n", se)
		}
		if se.Hint != "" {
			fmt.Fprintln(stderr, se.Hint)
		}
		return o.fail(se.Code, stage, se, stdout, stderr)
	}
	// The environment's recipe, as launch.Start built it: the layout's
	// variables, then --env's.
	jsonPolicy := ""
	if o.json {
		jsonPolicy = o.policyHash()
	}
	cache.Store(&o.Options, jsonPolicy, cmd, layout, pass, append(slices.Clone(ph.ViewEnv()), o.Env...), ph, stderr)
	stopNet := nr.Serve(cmd.Sockets(), stderr)
	if o.capture {
		cmd.Stdout.Close()
		cmd.Stderr.Close()
	}
	done := make(chan struct{})
	go func() {
		// Lifetime: until the sandbox is waited for (done closes).
		for {
			select {
			case s := <-sigs:
				cmd.Signal(s)
			case <-done:
				return
			}
		}
	}()
	res, err := cmd.Wait()
	stopNet()
	close(done)
	copies.Wait()
	// The sandbox has ended: its git changes are adopted (and reported)
	// before the result, which is the last line jail prints.
	ph.Release()
	if err != nil {
		fmt.Fprintln(stderr, "jail:", err)
		return o.fail(125, stageWait, err, stdout, stderr)
	}
	if res.TimedOut {
		fmt.Fprint(stderr, launch.TimeoutNote(o.Timeout))
	}
	for _, l := range limitsHit(res, o) {
		fmt.Fprintln(stderr, l)
	}
	if res.Limits == confine.LimitRLimit && !o.json && o.LimitsAsked {
		fmt.Fprintf(stderr, "jail: --memory/--pids enforced with rlimits (per process, weaker than a cgroup): %s\n", res.LimitsNote)
	}
	if o.json {
		out := jsonResult{Result: res, PolicySHA256: o.policyHash()}
		if o.capture {
			s1, s2 := outCap.String(), errCap.String()
			out.Stdout, out.Stderr = &s1, &s2
			out.StdoutBase64, out.StderrBase64 = exactBytes(outCap), exactBytes(errCap)
			out.StdoutTruncated, out.StderrTruncated = outCap.Truncated(), errCap.Truncated()
		}
		if err := writeJSON(o, out, stdout, stderr); err != nil {
			fmt.Fprintln(stderr, "jail: write result:", err)
			return 125
		}
	}
	return res.ExitCode
}

// limitsHit are the lines that say which limit a run hit (the cached
// run prints the same: report in fast_linux.c).
func limitsHit(res *confine.Result, o *runOptions) []string {
	var out []string
	if res.OOMKilled {
		out = append(out, fmt.Sprintf("jail: the sandbox hit its memory limit (%s): the kernel killed a process of it (--memory, [limits] memory)", confine.FormatSize(o.Memory)))
	}
	switch {
	case res.PidsEnded:
		out = append(out, confine.PidsEndedMessage(o.Pids))
	case res.PidsLimited:
		out = append(out, fmt.Sprintf("jail: the sandbox hit its process limit (%d): a fork failed (--pids, [limits] pids)", o.Pids))
	}
	return out
}

// jsonResult is the object `jail run --json` prints (README: Result).
type jsonResult struct {
	*confine.Result
	// PolicySHA256 names the effective policy that produced the result.
	PolicySHA256    string  `json:"policy_sha256"`
	Stdout          *string `json:"stdout,omitempty"`
	Stderr          *string `json:"stderr,omitempty"`
	StdoutTruncated int     `json:"stdout_truncated_chars,omitempty"`
	StderrTruncated int     `json:"stderr_truncated_chars,omitempty"`
	// StdoutBase64 and StderrBase64 hold the kept bytes exactly when they
	// are not valid UTF-8; Stdout and Stderr are then only a rendering
	// (each invalid byte as U+FFFD), since a JSON string cannot carry them.
	StdoutBase64 *string `json:"stdout_base64,omitempty"`
	StderrBase64 *string `json:"stderr_base64,omitempty"`
	// Error and Stage are set when the run ended before the command did:
	// jail refused (exit 2), could not build the sandbox (125) or could not
	// start the command (126, 127). Stage is one of the stage* names.
	Error string `json:"error,omitempty"`
	Stage string `json:"stage,omitempty"`
}

// The stages a run can fail at, as a --json result's "stage" names them
// (README: Result).
const (
	stageFlags   = "flags"   // the command line (exit 2)
	stagePolicy  = "policy"  // loading or applying the policy (exit 2)
	stageNetwork = "network" // the policy's network: rules, resolver, proxy (exit 2)
	stagePrepare = "prepare" // the layout, environment or seccomp filter, before any process (exit 2)
	stageSandbox = "sandbox" // creating the sandbox: namespaces, mounts, Landlock, seccomp (exit 125)
	stageExec    = "exec"    // starting the command: not found (127) or not executable (126)
	stageWait    = "wait"    // waiting for the sandbox (exit 125)
)

// fail writes the --json result of a run that ended at stage with code,
// when one was asked for, and returns code: a harness reading --json gets
// one object for every run, not only for those whose command ran. The
// message has already gone to stderr.
func (o *runOptions) fail(code int, stage string, err error, stdout, stderr io.Writer) int {
	if o == nil || !o.json {
		return code
	}
	res := &confine.Result{ExitCode: code, Limits: confine.LimitNone}
	if !o.started.IsZero() {
		res.DurationMS = time.Since(o.started).Milliseconds()
	}
	out := jsonResult{Result: res, Error: err.Error(), Stage: stage}
	if o.policyHash != nil {
		out.PolicySHA256 = o.policyHash()
	}
	if o.jsonOut != "" && o.jsonOutFile == nil && stage != stagePrepare {
		// Refused before the file was opened, and no sandbox will exist
		// to swap it: open it now. One that cannot be opened (the
		// prepare stage) leaves the object on stderr.
		if f, oerr := confine.OpenOutput("--json-out", o.jsonOut); oerr == nil {
			defer f.Close()
			o.jsonOutFile = f
		}
	}
	if werr := writeJSON(o, out, stdout, stderr); werr != nil {
		fmt.Fprintln(stderr, "jail: write result:", werr)
	}
	return code
}

// jsonWanted reads, from a command line the flag parser refused, whether
// a JSON result was asked for and where it goes, so a refusal of the
// flags is reported in JSON too. Flags after the one refused are read as
// well: the parser stopped, but the caller still asked.
func jsonWanted(args []string) *runOptions {
	o := &runOptions{}
	for i := 0; i < len(args) && args[i] != "--"; i++ {
		name, val, hasVal := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") {
			continue
		}
		switch name {
		case "json", "capture":
			b, err := strconv.ParseBool(cmp.Or(val, "true"))
			o.json = o.json || (err == nil && b)
			o.capture = o.capture || (name == "capture" && err == nil && b)
		case "json-out":
			if !hasVal && i+1 < len(args) {
				i++
				val = args[i]
			}
			o.jsonOut, o.json = val, true
		}
	}
	if o.jsonOut == "" && !o.json {
		return nil
	}
	return o
}

// exactBytes is the base64 form of what c kept when it is not valid
// UTF-8, else nil.
func exactBytes(c *confine.Capture) *string {
	b := c.Bytes()
	if utf8.Valid(b) {
		return nil
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s
}

// writeJSON puts the result where it cannot mix with the command's output:
// --json-out FILE; stdout when the output was captured; else stderr, as
// the last line.
func writeJSON(o *runOptions, r jsonResult, stdout, stderr io.Writer) error {
	// Escaped for shells and terminals: the captured output is the
	// sandbox's, and a result may be pasted, sourced or printed.
	b, err := policy.MarshalLine(r)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	switch {
	case o.jsonOutFile != nil:
		return o.jsonOutFile.Write(b)
	case o.capture:
		_, err = stdout.Write(b)
	default:
		_, err = stderr.Write(b)
	}
	return err
}

// isForeground reports whether stdin is a terminal whose foreground process
// group is jail's own: only then may the command take the terminal over.
func isForeground(stdin *os.File) bool {
	if stdin == nil {
		return false
	}
	pgrp, err := unix.IoctlGetInt(int(stdin.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

func asFile(w io.Writer) *os.File {
	if f, ok := w.(*os.File); ok {
		return f
	}
	return nil
}
