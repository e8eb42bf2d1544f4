//go:build linux

package launch

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/policy"
	"github.com/jail-sandbox/jail/termtext"
	"golang.org/x/sys/unix"
)

// Run is one `jail run`: the sandbox's options, and where its result goes.
type Run struct {
	Options
	// JSON, Capture and JSONOut are --json, --capture and --json-out:
	// whether a result object is printed, the output kept in it, and the
	// file it goes to.
	JSON, Capture bool
	JSONOut       string
	// Started is when jail run began, for a failure's duration_ms.
	Started time.Time

	jsonOutFile *confine.Output // JSONOut's directory, held from before the sandbox starts
	policyHash  func() string   // the effective policy's SHA-256
	hash        string
}

// Main carries out the run and returns its exit status: the command's, or
// 2 when jail refused, 125 when the sandbox could not be made, 126 or 127
// when the command could not be started. args is the command line after
// "run", the plan cache's key. Every refusal is printed on stderr, and
// with --json also reported in the result object.
func (o *Run) Main(args []string, stdin *os.File, stdout, stderr io.Writer) int {
	// The same loader as `jail policy explain`: what an operator reads
	// there is what this run gets.
	penv, err := PolicyEnv(o.Workdir)
	if err != nil {
		fmt.Fprintln(stderr, "jail run:", err)
		return o.Fail(2, StagePolicy, err, stdout, stderr)
	}
	pfacts := PolicyFacts(o.PolicyFile, penv)
	p, widenings, err := policy.LoadEffective(o.PolicyFile, penv)
	if err != nil {
		PrintPolicyErrors(stderr, err)
		fmt.Fprintln(stderr, "jail run: refusing to run with a policy that does not load")
		return o.Fail(2, StagePolicy, err, stdout, stderr)
	}
	for _, w := range widenings {
		fmt.Fprintln(stderr, "jail: warning:", w)
	}
	if errs := p.MissingPaths(); len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintln(stderr, e)
		}
		fmt.Fprintln(stderr, "jail run: refusing to run: the policy binds paths that do not exist")
		return o.Fail(2, StagePolicy, errs[0], stdout, stderr)
	}
	netGiven := o.Net != ""
	layout, pass, sc, err := Apply(&o.Options, p, penv)
	if err != nil {
		fmt.Fprintln(stderr, "jail run:", err)
		return o.Fail(2, StagePolicy, err, stdout, stderr)
	}
	// What would refuse the run is refused before anything is made on
	// disk for it (the home, an agent's files, the git view): a run that
	// never starts leaves nothing behind.
	if err := layout.Check(); err != nil {
		fmt.Fprintln(stderr, "jail run:", err)
		return o.Fail(2, StagePrepare, err, stdout, stderr)
	}
	prof, err := ChooseProfile(&o.Options, p, penv, layout, netGiven)
	if err != nil {
		fmt.Fprintln(stderr, "jail run:", err)
		return o.Fail(2, StagePrepare, err, stdout, stderr)
	}
	if o.JSONOut != "" {
		// Held before any sandbox exists; Build refuses it inside a
		// writable bind (confine.Output).
		if o.jsonOutFile, err = confine.OpenOutput("--json-out", o.JSONOut); err != nil {
			fmt.Fprintln(stderr, "jail run:", err)
			return o.Fail(2, StagePrepare, err, stdout, stderr)
		}
		defer o.jsonOutFile.Close()
		layout.Outputs = append(layout.Outputs, o.jsonOutFile)
	}
	cache := NewPlanCache(args, &o.Options, o.Capture || o.JSONOut != "", p, penv, pfacts, len(widenings) > 0)
	if cache != nil {
		layout.Facts = cache.Facts()
	}
	if o.JSON {
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
	// jail's own lines while the command runs go through msgs, which knows when a relay has
	// the terminal in raw mode (confine.LineWriter).
	msgs := &confine.LineWriter{W: stderr}
	nr, err := PrepareNet(o.Net, p, msgs)
	if err != nil {
		fmt.Fprintln(stderr, "jail run:", err)
		return o.Fail(2, StageNetwork, err, stdout, stderr)
	}
	defer nr.Close()
	if err := ApplyHome(&o.Options, p, penv, layout, &pass, prof); err != nil {
		fmt.Fprintln(stderr, "jail run:", err)
		return o.Fail(2, StagePrepare, err, stdout, stderr)
	}
	nr.ApplyTo(&o.Options, layout)
	return o.launch(layout, pass, sc, nr, cache, stdin, stdout, stderr, msgs)
}

// launch builds the Spec from the layout and options, runs it and reports.
func (o *Run) launch(layout *confine.Layout, pass []string, sc confine.SeccompOptions, nr *Net, cache *PlanCache, stdin *os.File, stdout, stderr io.Writer, msgs *confine.LineWriter) int {
	spec := NewSpec(&o.Options, o.Argv, stderr)
	spec.Foreground = isForeground(stdin)
	cmd := &confine.Cmd{Spec: spec, Stdin: stdin, Timeout: o.Timeout, Limits: confine.Limits{MemoryBytes: o.Memory, Pids: o.Pids, MemoryNoRLimit: o.MemoryDefault},
		Notice: func(line string) { fmt.Fprintln(msgs, termtext.Line(line)) }}
	cmd.Stdout, cmd.Stderr = asFile(stdout), asFile(stderr)

	var outCap, errCap *confine.Capture
	var copies sync.WaitGroup
	if o.Capture {
		spec.Foreground = false
	}
	if spec.Foreground {
		// Interactive: the command gets a pty of jail's, never the
		// caller's terminal (docs/terminal.md).
		term, err := confine.OpenTerminal(stdin)
		if err != nil {
			fmt.Fprintf(stderr, "jail: %v: the command runs without the terminal\n", err)
			spec.Foreground = false
		} else {
			defer term.Close()
			msgs.SetTerminal(term)
			cmd.Terminal = term
			if nr != nil {
				nr.Terminal = term
			}
		}
	}
	if !spec.Foreground && IsTerminal(stdin) {
		// Not interactive: the command must not read what the person
		// types (an API key, an answer meant for jail), so its stdin is
		// /dev/null; the init gives it a session of its own, without the
		// terminal (docs/terminal.md).
		cmd.Stdin = nil
	}
	if nr != nil {
		nr.CommandOnTTY = !o.Capture && cmd.Terminal == nil && (IsTerminal(cmd.Stdout) || IsTerminal(cmd.Stderr))
	}
	var termOut []*confine.TerminalOutput
	if cmd.Terminal == nil {
		// Its stdout and stderr on the terminal: a pty of its own that
		// jail copies to the terminal (NewTerminalOutput), never a
		// descriptor of the caller's terminal; one pty for both where
		// they are the same terminal, so their order holds.
		for _, f := range []**os.File{&cmd.Stdout, &cmd.Stderr} {
			if len(termOut) == 1 && termOut[0].Same(*f) {
				*f = termOut[0].File
				continue
			}
			t, err := confine.NewTerminalOutput(*f)
			if err != nil {
				fmt.Fprintln(stderr, "jail run:", err)
				return o.Fail(2, StagePrepare, err, stdout, stderr)
			}
			if t != nil {
				defer t.Close()
				termOut = append(termOut, t)
				*f = t.File
			}
		}
	}
	if o.Capture {
		outCap, errCap = &confine.Capture{Limit: o.OutputLimit}, &confine.Capture{Limit: o.OutputLimit}
		for _, p := range []struct {
			dst **os.File
			c   *confine.Capture
		}{{&cmd.Stdout, outCap}, {&cmd.Stderr, errCap}} {
			r, w, err := os.Pipe()
			if err != nil {
				fmt.Fprintln(stderr, "jail run: capture pipe:", err)
				return o.Fail(2, StagePrepare, err, stdout, stderr)
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
	signal.Notify(sigs, confine.ForwardedSignals()...)
	defer signal.Stop(sigs)

	ph, err := Start(cmd, layout, pass, o.Env, func() ([]confine.Program, error) { return confine.CompileSeccomp(sc) }, nr.Sockets(), stderr)
	defer ph.Release()
	if err != nil {
		var se *StartError
		errors.As(err, &se)
		stage := StageSandbox
		switch {
		// A path in them may be one a sandbox named (a protected
		// name found below a directory it made): escaped unless it is
		// printable already (termtext.Line).
		case se.Code == 2:
			fmt.Fprintln(stderr, "jail run:", termtext.Line(se.Err.Error()))
			stage = StagePrepare
		case se.Code == 126 || se.Code == 127:
			fmt.Fprintf(stderr, "jail: %s\n", termtext.Line(se.Error()))
			stage = StageExec
		default:
			fmt.Fprintf(stderr, "jail: %s\n", termtext.Line(se.Error()))
		}
		if se.Hint != "" {
			fmt.Fprintln(stderr, termtext.Line(se.Hint))
		}
		return o.Fail(se.Code, stage, se, stdout, stderr)
	}
	// The environment's recipe, as Start built it: the layout's
	// variables, then --env's.
	jsonPolicy := ""
	if o.JSON {
		jsonPolicy = o.policyHash()
	}
	cache.Store(&o.Options, jsonPolicy, cmd, layout, pass, append(slices.Clone(ph.ViewEnv()), o.Env...), ph, stderr)
	stopNet := nr.Serve(cmd.Sockets(), msgs)
	if o.Capture {
		cmd.Stdout.Close()
		cmd.Stderr.Close()
	}
	for _, t := range termOut {
		t.Close() // the sandbox holds its own copy; a relay ends with it
	}
	done := make(chan struct{})
	go func() {
		// Lifetime: until the sandbox is waited for (done closes).
		for {
			select {
			case s := <-sigs:
				if s == unix.SIGWINCH {
					for _, t := range termOut {
						t.Resize()
					}
				}
				cmd.Signal(s)
			case <-done:
				return
			}
		}
	}()
	res, err := cmd.Wait()
	if cmd.Terminal != nil {
		cmd.Terminal.Close() // what the command wrote last, before jail's lines
	}
	stopNet()
	close(done)
	copies.Wait()
	for _, t := range termOut {
		t.Wait() // what the command wrote last, before jail's lines
	}
	// The sandbox has ended: its git changes are adopted (and reported)
	// before the result, which is the last line jail prints.
	ph.Release()
	if err != nil {
		fmt.Fprintln(stderr, "jail:", err)
		return o.Fail(125, StageWait, err, stdout, stderr)
	}
	if res.TimedOut {
		fmt.Fprint(stderr, TimeoutNote(o.Timeout))
	}
	for _, l := range limitsHit(res, o) {
		fmt.Fprintln(stderr, l)
	}
	if res.Limits == confine.LimitRLimit && !o.JSON && o.LimitsAsked {
		fmt.Fprintf(stderr, "jail: --memory/--pids enforced with rlimits (per process, weaker than a cgroup): %s\n", res.LimitsNote)
	}
	if o.JSON {
		out := jsonResult{Result: res, PolicySHA256: o.policyHash()}
		if o.Capture {
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
func limitsHit(res *confine.Result, o *Run) []string {
	var out []string
	if res.MemoryEnded && res.MemoryHeld != nil {
		out = append(out, confine.MemoryEndedMessage(o.Memory, *res.MemoryHeld))
	} else if res.OOMKilled {
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
	// start the command (126, 127). Stage is one of the Stage* names.
	Error string `json:"error,omitempty"`
	Stage string `json:"stage,omitempty"`
}

// The stages a run can fail at, as a --json result's "stage" names them
// (README: Result).
const (
	StageFlags   = "flags"   // the command line (exit 2)
	StagePolicy  = "policy"  // loading or applying the policy (exit 2)
	StageNetwork = "network" // the policy's network: rules, resolver, proxy (exit 2)
	StagePrepare = "prepare" // the layout, environment or seccomp filter, before any process (exit 2)
	StageSandbox = "sandbox" // creating the sandbox: namespaces, mounts, Landlock, seccomp (exit 125)
	StageExec    = "exec"    // starting the command: not found (127) or not executable (126)
	StageWait    = "wait"    // waiting for the sandbox (exit 125)
)

// Fail writes the --json result of a run that ended at stage with code,
// when one was asked for, and returns code: a harness reading --json gets
// one object for every run, not only for those whose command ran. The
// message has already gone to stderr.
func (o *Run) Fail(code int, stage string, err error, stdout, stderr io.Writer) int {
	if o == nil || !o.JSON {
		return code
	}
	res := &confine.Result{ExitCode: code, Limits: confine.LimitNone}
	if !o.Started.IsZero() {
		res.DurationMS = time.Since(o.Started).Milliseconds()
	}
	out := jsonResult{Result: res, Error: err.Error(), Stage: stage}
	if o.policyHash != nil {
		out.PolicySHA256 = o.policyHash()
	}
	if o.JSONOut != "" && o.jsonOutFile == nil && stage != StagePrepare {
		// Refused before the file was opened, and no sandbox will exist
		// to swap it: open it now. One that cannot be opened (the
		// prepare stage) leaves the object on stderr.
		if f, oerr := confine.OpenOutput("--json-out", o.JSONOut); oerr == nil {
			defer f.Close()
			o.jsonOutFile = f
		}
	}
	if werr := writeJSON(o, out, stdout, stderr); werr != nil {
		fmt.Fprintln(stderr, "jail: write result:", werr)
	}
	return code
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
func writeJSON(o *Run, r jsonResult, stdout, stderr io.Writer) error {
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
	case o.Capture:
		_, err = stdout.Write(b)
	default:
		// The command had the same stderr and may have left a line
		// unfinished ({"exit_code":0} without a newline): the object
		// then starts a line of its own, so the last line is jail's
		// alone (README "Result"; the plan cache's run does the same:
		// report_error in fast_linux.c).
		_, err = stderr.Write(append([]byte{'\n'}, b...))
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
