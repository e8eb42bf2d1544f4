package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/launch"
	"github.com/jail-sandbox/jail/policy"
	"github.com/jail-sandbox/jail/tools"
	"golang.org/x/sys/unix"
)

// workerPath is where a tool worker's sandbox sees the jail binary.
const workerPath = "/run/jail/jail"

// workerCommand is the hidden subcommand main dispatches to
// tools.WorkerMain.
const workerCommand = "__tool-worker"

// toolOptions are the flags `jail tool` and `jail serve` share with
// `jail run`, plus the server's own.
type toolOptions struct {
	run         launch.Options
	maxConc     int
	prewarm     int
	agent, role string
	unattended  bool
}

func toolFlags(name string, o *toolOptions, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.run.Workdir, "w", "", "workspace `DIR` the tools work in (default: the current directory)")
	fs.StringVar(&o.run.PolicyFile, "policy", "", "policy `FILE` (see policy.toml.example)")
	fs.Var((*listFlag)(&o.run.Degraded), "allow-degraded", "run the tools' sandboxes without `LAYER` (landlock, seccomp) when the kernel lacks it")
	fs.BoolVar(&o.run.AsRoot, "as-root", false, "map the caller to uid 0 inside the tools' sandboxes")
	allowFlag(fs, (*listFlag)(&o.run.Allow))
	homeWorkspaceFlag(fs, &o.run.HomeWorkspace)
	return fs
}

// newToolServer loads the policy exactly as `jail run` does and returns a
// server whose workers are sandboxes made by the same code (launch.Apply,
// launch.Start), running this binary's hidden worker command. close ends
// the workers and the network proxy.
func newToolServer(o *toolOptions, stderr io.Writer) (s *tools.Server, closeAll func(), err error) {
	if err := launch.CheckDegraded(o.run.Degraded); err != nil {
		return nil, nil, err
	}
	penv, err := launch.PolicyEnv(o.run.Workdir)
	if err != nil {
		return nil, nil, err
	}
	p, widenings, err := policy.LoadEffective(o.run.PolicyFile, penv)
	if err != nil {
		printPolicyErrors(stderr, err)
		return nil, nil, errors.New("refusing to serve tools with a policy that does not load")
	}
	for _, w := range widenings {
		fmt.Fprintln(stderr, "jail: warning:", w)
	}
	layout, pass, sc, err := launch.Apply(&o.run, p, penv)
	if err != nil {
		return nil, nil, err
	}
	// The workers and bash calls share the workspace's persistent home
	// with its runs (docs/home.md), so caches last here too.
	if _, err := launch.AttachHome(p, penv, layout); err != nil {
		return nil, nil, err
	}
	// The worker is this binary, bound read-only into every sandbox at
	// a fixed path; its host path is resolved like every other bind.
	exe, err := os.Executable()
	if err == nil {
		exe, err = confine.ResolvePath(exe, "/", "")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("find the jail binary for the tool workers: %w", err)
	}
	layout.Extra = append(layout.Extra, confine.Mount{Kind: confine.Bind, Source: exe, Dest: workerPath, Exec: true})
	nr, err := launch.PrepareNet(o.run.Net, p, stderr)
	if err != nil {
		return nil, nil, err
	}
	nr.ApplyTo(&o.run, layout)
	var audit *policy.AuditLog
	if p.Audit.Enabled == nil || *p.Audit.Enabled {
		if audit, err = policy.OpenAuditLog(p.Audit.Path, p.Audit.Fsync); err != nil {
			nr.Close()
			return nil, nil, err
		}
	}
	errFile := asFile(stderr)
	filter := launch.CompileOnce(sc)
	var warnOnce sync.Once
	// spawnIn starts workers in sandboxes built from layout.
	spawnIn := func(layout *confine.Layout) func(ctx context.Context) (*tools.Worker, error) {
		return func(ctx context.Context) (*tools.Worker, error) {
			warn := io.Discard
			warnOnce.Do(func() { warn = stderr })
			spec := launch.NewSpec(&o.run, []string{workerPath, workerCommand}, warn)
			inR, inW, err := blockingPipe()
			if err != nil {
				return nil, err
			}
			outR, outW, err := blockingPipe()
			if err != nil {
				inR.Close()
				inW.Close()
				return nil, err
			}
			// No Timeout: a worker lives for many calls; each call has its
			// own, enforced inside the worker and again by the supervisor.
			cmd := &confine.Cmd{Spec: spec, Stdin: inR, Stdout: outW, Stderr: errFile,
				Limits: confine.Limits{MemoryBytes: o.run.Memory, Pids: o.run.Pids, MemoryCgroupOnly: o.run.MemoryDefault}}
			ph, err := launch.Start(cmd, layout, pass, o.run.Env, filter, nr.Sockets(), stderr)
			inR.Close()
			outW.Close()
			if err != nil {
				ph.Release()
				inW.Close()
				outR.Close()
				return nil, err
			}
			stopNet := nr.Serve(cmd.Sockets(), stderr)
			stop := func() {
				// Stdin is closed: the worker finishes its call and exits.
				// One that does not within a second is killed with its
				// sandbox.
				done := make(chan struct{})
				go func() {
					// Lifetime: until the sandbox is waited for.
					cmd.Wait()
					close(done)
				}()
				select {
				case <-done:
				case <-time.After(time.Second):
					cmd.Signal(unix.SIGKILL)
					<-done
				}
				stopNet()
				ph.Release()
			}
			return tools.NewWorker(inW, outR, stop), nil
		}
	}
	// Roles whose remit is to look (verify, review, analysis, triage) get
	// workers whose workspace is mounted read-only: the toolset already
	// lacks write and edit, and this makes their bash unable to write too.
	roLayout := *layout
	roLayout.WorkspaceReadOnly = true
	spawn, spawnRO := spawnIn(layout), spawnIn(&roLayout)
	// Every bash call gets a sandbox of its own (fresh namespaces, /tmp
	// and process tree), made ahead with its shell already waiting for
	// the script on stdin.
	spawnShell := func(ctx context.Context, readOnly bool) (*tools.Shell, error) {
		l := layout
		if readOnly {
			l = &roLayout
		}
		spec := launch.NewSpec(&o.run, nil, io.Discard)
		spec.Hold = true
		cmd := &confine.Cmd{Spec: spec, Stderr: errFile, Limits: confine.Limits{MemoryBytes: o.run.Memory, Pids: o.run.Pids, MemoryCgroupOnly: o.run.MemoryDefault},
			Notice: func(line string) { fmt.Fprintln(stderr, line) }}
		ph, err := launch.Start(cmd, l, pass, o.run.Env, filter, nr.Sockets(), stderr)
		if err != nil {
			ph.Release()
			return nil, err
		}
		stopNet := nr.Serve(cmd.Sockets(), stderr)
		release := func() {
			stopNet()
			ph.Release()
		}
		var ends [4][2]*os.File // stdin, stdout, stderr, state: read, write
		closeAll := func() {
			for _, e := range ends {
				for _, f := range e {
					if f != nil {
						f.Close()
					}
				}
			}
		}
		for i := range ends {
			if ends[i][0], ends[i][1], err = os.Pipe(); err != nil {
				closeAll()
				cmd.Abort()
				release()
				return nil, err
			}
		}
		err = cmd.Exec([]string{"/bin/sh", "-s"}, spec.Env, spec.Dir, []*os.File{ends[0][0], ends[1][1], ends[2][1], ends[3][1]})
		for _, f := range []*os.File{ends[0][0], ends[1][1], ends[2][1], ends[3][1]} {
			f.Close()
		}
		if err != nil {
			ends[0][1].Close()
			for _, e := range ends[1:] {
				e[0].Close()
			}
			release()
			return nil, err
		}
		return &tools.Shell{Cmd: cmd, Env: spec.Env, Script: ends[0][1], Out: [3]*os.File{ends[1][0], ends[2][0], ends[3][0]}, Release: release}, nil
	}
	reg, err := coreRegistry(o.run.Timeout)
	if err != nil {
		nr.Close()
		return nil, nil, err
	}
	s = &tools.Server{Registry: reg, Policy: p, PolicyHash: p.Hash(), Home: penv.Home, Audit: audit, Spawn: spawn, SpawnReadOnly: spawnRO, SpawnShell: spawnShell, SpareShells: spareShells,
		MaxConcurrency: o.maxConc, BashMaxTimeout: o.run.Timeout, MaxBackground: int(p.Limits.Background), BackgroundOff: "the policy's limits.background is negative (set it to how many may run at once)",
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	return s, func() {
		s.Close()
		nr.Close()
		if audit != nil {
			audit.Close()
		}
	}, nil
}

// coreRegistry is the tool registry of every front end (serve, mcp, tool)
// and of jail policy explain, so explain resolves against the tools a
// caller is offered.
func coreRegistry(bashMaxTimeout time.Duration) (*tools.Registry, error) {
	return tools.NewRegistry(tools.Core(tools.Options{BashMaxTimeout: bashMaxTimeout})...)
}

// blockingPipe is a pipe the Go runtime does not poll, for a worker's
// stdin and stdout: the reader (the worker for requests, the call for its
// answer) waits in read(2) itself and the kernel wakes its thread
// directly, where a polled pipe costs a hand-over from the poller's
// thread on each side (read round trip p50 about 0.26 -> 0.20 ms).
func blockingPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	return os.NewFile(uintptr(p[0]), "worker-out"), os.NewFile(uintptr(p[1]), "worker-out-w"), nil
}

// spareShells is how many bash sandboxes a long-lived server keeps made
// ahead: two keep a stream of calls on two CPUs from waiting for each
// sandbox in turn (bash calls/s here: 142 with one, 183 with two).
const spareShells = 2

const serveUsage = `usage: jail serve [flags]

A JSON-lines tool server on stdin and stdout (README: "Tools, jail tool and
jail serve"). Each call runs confined: the file tools in a worker, each bash
call in fresh namespaces of its own; the policy decides which tools a caller
sees and whether each call runs.
`

func serveMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o := &toolOptions{}
	fs := toolFlags("jail serve", o, stderr)
	fs.IntVar(&o.maxConc, "max-concurrency", runtime.NumCPU(), "calls run at once: file tools in worker sandboxes, each bash call in a sandbox of its own")
	fs.IntVar(&o.prewarm, "prewarm", 1, "workers started before the first request (with one: also the first bash sandbox)")
	fs.Usage = func() { fmt.Fprint(stderr, serveUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || o.maxConc < 1 || o.prewarm < 0 {
		fmt.Fprintln(stderr, "jail serve: takes no arguments; --max-concurrency must be at least 1")
		return 2
	}
	s, closeAll, err := newToolServer(o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "jail serve:", err)
		return 2
	}
	defer closeAll()
	ctx := context.Background()
	// A worker that cannot start now will not start later: say why before
	// the harness sends anything.
	if err := s.Prewarm(ctx, o.prewarm); err != nil {
		fmt.Fprintln(stderr, "jail serve:", err)
		return 125
	}
	if err := s.Serve(ctx, stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "jail serve:", err)
		return 1
	}
	return 0
}
