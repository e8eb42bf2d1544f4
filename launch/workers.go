//go:build linux

package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/policy"
	"github.com/jail-sandbox/jail/termtext"
	"github.com/jail-sandbox/jail/tools"
	"golang.org/x/sys/unix"
)

// WorkerPath is where a tool worker's sandbox sees the jail binary.
const WorkerPath = "/run/jail/jail"

// WorkerCommand is the hidden subcommand main dispatches to
// tools.WorkerMain.
const WorkerCommand = "__tool-worker"

// NewToolServer loads the policy exactly as `jail run` does and returns a
// server whose workers are sandboxes made by the same code (Apply, Start),
// running this binary's hidden worker command (WorkerCommand), at most
// maxConc calls at once. closeAll ends the workers and the network proxy.
func NewToolServer(o *Options, maxConc int, stderr io.Writer) (s *tools.Server, closeAll func(), err error) {
	if err := CheckDegraded(o.Degraded); err != nil {
		return nil, nil, err
	}
	penv, err := PolicyEnv(o.Workdir)
	if err != nil {
		return nil, nil, err
	}
	p, widenings, err := policy.LoadEffective(o.PolicyFile, penv)
	if err != nil {
		PrintPolicyErrors(stderr, err)
		return nil, nil, errors.New("refusing to serve tools with a policy that does not load")
	}
	for _, w := range widenings {
		fmt.Fprintln(stderr, "jail: warning:", w)
	}
	layout, pass, sc, err := Apply(o, p, penv)
	if err != nil {
		return nil, nil, err
	}
	// Refused before anything is made on disk (the home): the workspace,
	// the binds, the agent or role served.
	if err := layout.Check(); err != nil {
		return nil, nil, err
	}
	if _, err := policy.Resolve(p, nil, policy.Subject{Agent: o.Agent, Role: o.Role}); err != nil {
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
	layout.Extra = append(layout.Extra, confine.Mount{Kind: confine.Bind, Source: exe, Dest: WorkerPath, Exec: true})
	nr, err := PrepareNet(o.Net, p, stderr)
	if err != nil {
		return nil, nil, err
	}
	// The workers and bash calls share the workspace's persistent home
	// with its runs (docs/home.md), so caches last here too.
	if _, err := AttachHome(p, penv, layout); err != nil {
		nr.Close()
		return nil, nil, err
	}
	nr.ApplyTo(o, layout)
	var audit *policy.AuditLog
	if p.Audit.Enabled == nil || *p.Audit.Enabled {
		if audit, err = policy.OpenAuditLog(p.Audit.Path, p.Audit.Fsync); err != nil {
			nr.Close()
			return nil, nil, err
		}
	}
	errFile := asFile(stderr)
	filter := CompileOnce(sc)
	var warnOnce sync.Once
	// spawnIn starts workers in sandboxes built from layout.
	spawnIn := func(layout *confine.Layout) func(ctx context.Context) (*tools.Worker, error) {
		return func(ctx context.Context) (*tools.Worker, error) {
			warn := io.Discard
			warnOnce.Do(func() { warn = stderr })
			spec := NewSpec(o, []string{WorkerPath, WorkerCommand}, warn)
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
				Limits: confine.Limits{MemoryBytes: o.Memory, Pids: o.Pids, MemoryNoRLimit: o.MemoryDefault}}
			ph, err := Start(cmd, layout, pass, o.Env, filter, nr.Sockets(), stderr)
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
		spec := NewSpec(o, nil, io.Discard)
		spec.Hold = true
		cmd := &confine.Cmd{Spec: spec, Stderr: errFile, Limits: confine.Limits{MemoryBytes: o.Memory, Pids: o.Pids, MemoryNoRLimit: o.MemoryDefault},
			Notice: func(line string) { fmt.Fprintln(stderr, termtext.Line(line)) }}
		ph, err := Start(cmd, l, pass, o.Env, filter, nr.Sockets(), stderr)
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
			if i == 3 {
				// fd 3 is a socket: the state of a call, or a background
				// process's loopback relay (tools/relay_linux.go).
				if ends[i][0], ends[i][1], err = tools.StatePair(); err != nil {
					closeAll()
					cmd.Abort()
					release()
					return nil, err
				}
				continue
			}
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
		// What this sandbox can write, for judging the PATH its session
		// leaves to the next call (policy.Shell).
		mounts := spec.Mounts
		return &tools.Shell{Cmd: cmd, Env: spec.Env, Script: ends[0][1], Out: [3]*os.File{ends[1][0], ends[2][0], ends[3][0]}, Release: release,
			Jail: WorkerPath, Writable: func(dir string) bool { return confine.CanWrite(mounts, dir) }, Mounts: mounts, Dir: spec.Dir}, nil
	}
	dk, docker, err := NewDocker(p, layout.Workspace, audit, true, stderr)
	if err != nil {
		nr.Close()
		return nil, nil, err
	}
	reg, err := CoreRegistry(o.Timeout, docker...)
	if err != nil {
		dk.Close()
		nr.Close()
		return nil, nil, err
	}
	s = &tools.Server{Registry: reg, Policy: p, PolicyHash: p.Hash(), Home: penv.Home, Audit: audit, Spawn: spawn, SpawnReadOnly: spawnRO, SpawnShell: spawnShell, SpareShells: spareShells,
		MaxConcurrency: maxConc, BashMaxTimeout: o.Timeout, MaxBackground: int(p.Limits.Background), BackgroundOff: "the policy's limits.background is negative (set it to how many may run at once)",
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	// The browser's localhost is the session's background processes.
	dk.SetBackground(s.DialBackground)
	return s, func() {
		s.Close()
		dk.Close()
		nr.Close()
		if audit != nil {
			audit.Close()
		}
	}, nil
}

// CoreRegistry is the tool registry of every front end (serve, mcp, tool)
// and of jail policy explain, so explain resolves against the tools a
// caller is offered: the core tools, then extra (the Docker-backed
// categories, NewDocker).
func CoreRegistry(bashMaxTimeout time.Duration, extra ...*tools.Tool) (*tools.Registry, error) {
	return tools.NewRegistry(append(tools.Core(tools.Options{BashMaxTimeout: bashMaxTimeout}), extra...)...)
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

// PrintPolicyErrors prints one file:line: key: message per line.
func PrintPolicyErrors(w io.Writer, err error) {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		for _, e := range joined.Unwrap() {
			termtext.Fprintln(w, e) // a project policy is the workspace's, which a sandbox may have written
		}
		return
	}
	termtext.Fprintln(w, err)
}

// asFile is w as a file, for a child's stderr, or nil (the child's
// stderr is then /dev/null).
func asFile(w io.Writer) *os.File {
	if f, ok := w.(*os.File); ok {
		return f
	}
	return nil
}

// Prewarm starts n workers (and the first bash sandbox) of s ahead of the
// first call, for the front end prog (jail serve, jail mcp). A sandbox
// that cannot start because of what the workspace holds (a name a
// sandbox swapped, renamed or removed under jail: a protected .jail
// replaced by a symlink, say) does not end the server: the mount is
// refused, never made on what is there now, the reason is printed, and
// each call makes its own sandbox and reports why it cannot while that
// lasts. A layer this kernel or user lacks (user namespaces, Landlock,
// seccomp, limits) will not come later, and is returned.
func Prewarm(ctx context.Context, s *tools.Server, n int, prog string, stderr io.Writer) error {
	err := s.Prewarm(ctx, n)
	if err == nil || lastingStartError(err) {
		return err
	}
	fmt.Fprintf(stderr, "jail: warning: %s: nothing made ahead: %v\njail: %s serves on: each call starts its sandbox and says why it cannot\n", prog, err, prog)
	return nil
}

// lastingStartError reports whether err is a layer the machine lacks,
// not a refusal of the workspace's present state.
func lastingStartError(err error) bool {
	var le *confine.LayerError
	if errors.As(err, &le) {
		return le.Layer != confine.LayerMount
	}
	var se *StartError
	// A refusal before the sandbox (2: the layout, the git view) is about
	// the workspace's names; anything else has no such cause.
	return !errors.As(err, &se) || se.Code != 2
}
