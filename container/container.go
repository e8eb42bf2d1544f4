package container

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// BinaryPath is where the jail binary is bound, read-only, in every container: jail's init
// ([InitMain]) and the drivers the categories run inside are that binary.
const BinaryPath = "/run/jail/jail"

// DefaultGrace is how long a command has to exit once its stdin closed (the supervisor
// released it, or died) before jail's init kills it.
const DefaultGrace = 5 * time.Second

// logDrainTimeout bounds the wait for a container's output stream to end once it exited.
const logDrainTimeout = 5 * time.Second

// nobody is the uid and gid a root caller's containers run as.
const nobody = 65534

// Spec describes one container. Everything the hardening fixes is not in it.
type Spec struct {
	// Image is the image to run; it must exist on the engine (make images).
	Image string
	// Kind names the category ("browser", "desktop"): a label and the name's prefix.
	Kind string
	// Cmd is the command jail's init runs; its stdin and stdout are the container's.
	Cmd []string
	// Env is the command's whole environment (NAME=value); nothing else is passed.
	Env []string
	// WorkingDir is the command's directory; empty means the image's.
	WorkingDir string
	// Binds are host paths bound into the container; read-only unless Writable.
	Binds []Bind
	// Limits are the [docker] policy's.
	Limits Limits
	// Grace is how long the command has after its stdin closed; zero means DefaultGrace.
	Grace time.Duration
	// IDs are the correlation ids of the call that starts it.
	IDs Correlation
	// DefaultSeccomp runs the container under Docker's default seccomp profile alone,
	// without [SeccompAdditions]: for a command that makes no namespaces of its own (the
	// desktop). False gives the additions Chromium's sandbox needs.
	DefaultSeccomp bool
}

// Bind is a host path bound into a container.
type Bind struct {
	Source, Target string
	Writable       bool
}

// Limits bound one container. Zero values are refused: the policy's defaults fill them.
type Limits struct {
	Memory   int64   // bytes, swap included
	CPUs     float64 // CPUs' worth of time
	Pids     int64
	TmpfsMax int64 // bytes of /tmp, and of /dev/shm
}

// Correlation ties a container and its output to the calls it served.
type Correlation struct {
	Agent   string `json:"agent,omitempty"`
	Session string `json:"session,omitempty"`
	Task    string `json:"task,omitempty"`
	Request string `json:"request,omitempty"`
}

// LogRecord is the audit record of a container that ended ("type": "container").
type LogRecord struct {
	Time        time.Time `json:"time"`
	Type        string    `json:"type"`
	Kind        string    `json:"kind"`
	Container   string    `json:"container"`
	Image       string    `json:"image"`
	Agent       string    `json:"agent,omitempty"`
	Session     string    `json:"session,omitempty"`
	Task        string    `json:"task,omitempty"`
	Requests    []string  `json:"requests,omitempty"`
	RequestsCut int       `json:"requests_cut,omitempty"`
	ExitCode    int64     `json:"exit_code"`
	End         string    `json:"end"` // why it ended: "exited", "released", "killed"
	DurationMS  int64     `json:"duration_ms"`
	StdoutBytes int64     `json:"stdout_bytes"`
	StderrBytes int64     `json:"stderr_bytes"`
	StderrLines int64     `json:"stderr_lines"`
	// Stderr is the tail of the container's stderr, only with [docker] raw_logs.
	Stderr      string `json:"stderr,omitempty"`
	StderrCut   int64  `json:"stderr_cut,omitempty"`
	DrainFailed bool   `json:"drain_failed,omitempty"`
}

// maxRequests bounds the request ids one record lists.
const maxRequests = 64

// Container is one running container of jail's, attached.
type Container struct {
	ID    string
	Kind  string
	Image string

	e       *Engine
	conn    client.HijackedResponse
	stdout  *io.PipeReader
	started time.Time
	grace   time.Duration

	stdinMu     sync.Mutex
	stdinClosed bool

	drained chan struct{} // closed when the output stream ended
	exited  chan struct{} // closed when the container exited
	code    int64
	waitErr error

	mu       sync.Mutex
	ids      Correlation
	requests []string
	reqCut   int
	outBytes int64
	errTail  tail
	closed   bool
}

// Start creates, attaches and starts a hardened container for spec. The caller must read
// [Container.Stdout] continuously and end the container with [Container.Close].
func (e *Engine) Start(ctx context.Context, spec Spec) (*Container, error) {
	cfg, host, err := e.configs(spec)
	if err != nil {
		return nil, err
	}
	name := "jail-" + spec.Kind + "-" + randomHex(6)
	created, err := e.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host, Name: name})
	if err != nil {
		if client.IsErrConnectionFailed(err) {
			return nil, &UnavailableError{Host: e.Host(), Err: err}
		}
		return nil, fmt.Errorf("container: create %s: %w", spec.Kind, err)
	}
	c := &Container{ID: created.ID, Kind: spec.Kind, Image: spec.Image, e: e, grace: spec.Grace,
		drained: make(chan struct{}), exited: make(chan struct{}), ids: spec.IDs}
	if c.grace <= 0 {
		c.grace = DefaultGrace
	}
	c.errTail.max = e.LogBytes
	if spec.IDs.Request != "" {
		c.requests = []string{spec.IDs.Request}
	}
	fail := func(op string, err error) (*Container, error) {
		rmCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		e.cli.ContainerRemove(rmCtx, created.ID, client.ContainerRemoveOptions{Force: true})
		return nil, fmt.Errorf("container: %s %s: %w", op, spec.Kind, err)
	}
	// Attach before start, so no byte of output is lost, and register the wait before start,
	// so the exit cannot be missed (next-exit).
	att, err := e.cli.ContainerAttach(ctx, created.ID, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return fail("attach", err)
	}
	c.conn = att.HijackedResponse
	// Lifetime: until the container is removed (AutoRemove) or the engine goes away; the
	// wait's context is not the call's, which may end long before the container.
	waitCtx, cancelWait := context.WithCancel(context.Background())
	wait := e.cli.ContainerWait(waitCtx, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := e.cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		cancelWait()
		c.conn.Close()
		return fail("start", err)
	}
	c.started = time.Now()
	pr, pw := io.Pipe()
	c.stdout = pr
	// Lifetime: until the attach stream ends (the container exited, or Close closed it).
	go func() {
		defer close(c.drained)
		_, err := stdcopy.StdCopy(&counter{c: c, w: pw}, &c.errTail, c.conn.Reader)
		pw.CloseWithError(err)
	}()
	// Lifetime: until the container exits or the engine's connection fails.
	go func() {
		defer cancelWait()
		defer close(c.exited)
		select {
		case r := <-wait.Result:
			c.code = r.StatusCode
			if r.Error != nil {
				c.waitErr = errors.New(r.Error.Message)
			}
		case err := <-wait.Error:
			c.code, c.waitErr = -1, err
		}
	}()
	return c, nil
}

// configs is the hardening: everything here holds for every container jail makes.
func (e *Engine) configs(spec Spec) (*container.Config, *container.HostConfig, error) {
	l := spec.Limits
	switch {
	case spec.Image == "" || spec.Kind == "" || len(spec.Cmd) == 0:
		return nil, nil, fmt.Errorf("container: spec needs an image, a kind and a command")
	case l.Memory <= 0 || l.CPUs <= 0 || l.Pids <= 0 || l.TmpfsMax <= 0:
		return nil, nil, fmt.Errorf("container: spec needs every limit (memory %d, cpus %v, pids %d, tmpfs %d)", l.Memory, l.CPUs, l.Pids, l.TmpfsMax)
	}
	bin := e.Binary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, nil, fmt.Errorf("container: the jail binary to bind: %w", err)
		}
	}
	profile, err := SeccompProfile()
	if spec.DefaultSeccomp {
		profile, err = string(dockerDefault), nil
	}
	if err != nil {
		return nil, nil, err
	}
	grace := spec.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		uid, gid = nobody, nobody
	}
	labels := map[string]string{
		LabelManaged:    "1",
		LabelOwner:      strconv.Itoa(os.Getuid()),
		LabelSupervisor: e.self.String(),
		LabelKind:       spec.Kind,
		LabelAgent:      spec.IDs.Agent,
		LabelSession:    spec.IDs.Session,
		LabelTask:       spec.IDs.Task,
	}
	cfg := &container.Config{
		Image:           spec.Image,
		User:            fmt.Sprintf("%d:%d", uid, gid),
		Entrypoint:      []string{BinaryPath, InitCommand, "-grace", grace.String(), "--"},
		Cmd:             spec.Cmd,
		Env:             spec.Env,
		WorkingDir:      spec.WorkingDir,
		Labels:          labels,
		AttachStdin:     true,
		AttachStdout:    true,
		AttachStderr:    true,
		OpenStdin:       true,
		StdinOnce:       true, // the one attached client gone (kill -9 too): stdin closes
		NetworkDisabled: true,
	}
	mounts := []mount.Mount{{Type: mount.TypeBind, Source: bin, Target: BinaryPath, ReadOnly: true}}
	for _, b := range spec.Binds {
		if !filepath.IsAbs(b.Source) || !filepath.IsAbs(b.Target) {
			return nil, nil, fmt.Errorf("container: bind %s -> %s: both paths must be absolute", b.Source, b.Target)
		}
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: b.Source, Target: b.Target, ReadOnly: !b.Writable,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
	}
	pids := l.Pids
	// No Docker init: jail's own init is pid 1 (InitMain says why).
	init := false
	tmpfs := fmt.Sprintf("rw,nosuid,nodev,noexec,size=%d,mode=1777", l.TmpfsMax)
	host := &container.HostConfig{
		NetworkMode:    "none",
		AutoRemove:     true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges:true", "seccomp=" + profile},
		ReadonlyRootfs: true,
		Tmpfs:          map[string]string{"/tmp": tmpfs},
		ShmSize:        l.TmpfsMax,
		IpcMode:        "private",
		Init:           &init,
		LogConfig:      container.LogConfig{Type: "none"}, // jail counts the output itself
		Mounts:         mounts,
		Resources: container.Resources{
			Memory:     l.Memory,
			MemorySwap: l.Memory, // no swap beyond the memory limit
			NanoCPUs:   int64(l.CPUs * 1e9),
			PidsLimit:  &pids,
		},
	}
	return cfg, host, nil
}

// Stdout is the container's stdout, demultiplexed from the attach stream. It ends (EOF)
// when the container's output does.
func (c *Container) Stdout() io.Reader { return c.stdout }

// Write writes to the container's stdin.
func (c *Container) Write(p []byte) (int, error) { return c.conn.Conn.Write(p) }

// CloseStdin closes the container's stdin: jail's init then gives the command Grace to exit.
func (c *Container) CloseStdin() error {
	c.stdinMu.Lock()
	defer c.stdinMu.Unlock()
	if c.stdinClosed {
		return nil
	}
	c.stdinClosed = true
	return c.conn.CloseWrite()
}

// Exited is closed when the container has exited.
func (c *Container) Exited() <-chan struct{} { return c.exited }

// ExitCode is the container's exit status, once Exited is closed (-1 when unknown).
func (c *Container) ExitCode() int64 {
	<-c.exited
	return c.code
}

// StderrTail is the last bytes the container wrote to stderr (at most [docker] log_bytes).
func (c *Container) StderrTail() string {
	return string(c.errTail.bytes())
}

// Serving records that the container now serves the call ids names: its record lists every
// request, and names the last agent, session and task.
func (c *Container) Serving(ids Correlation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids.Agent, c.ids.Session, c.ids.Task = ids.Agent, ids.Session, ids.Task
	if ids.Request == "" {
		return
	}
	if len(c.requests) >= maxRequests {
		c.reqCut++
		return
	}
	c.requests = append(c.requests, ids.Request)
}

// Close ends the container: its stdin closes, the command gets Grace to exit, then the
// container is killed; the output is collected into the audit record. It returns once the
// container has exited. Calling it again does nothing.
func (c *Container) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	end := "released"
	select {
	case <-c.exited:
		end = "exited"
	default:
	}
	c.CloseStdin()
	var err error
	select {
	case <-c.exited:
	case <-time.After(c.grace + 2*time.Second):
		end = "killed"
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, kerr := c.e.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true})
		cancel()
		if kerr != nil && !cerrdefs.IsNotFound(kerr) {
			err = fmt.Errorf("container: remove %.12s: %w", c.ID, kerr)
		}
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
			err = errors.Join(err, fmt.Errorf("container: %.12s did not exit after removal", c.ID))
		}
	}
	drainFailed := false
	select {
	case <-c.drained:
	case <-time.After(logDrainTimeout):
		drainFailed = true
	}
	c.conn.Close()
	c.stdout.Close()
	c.record(end, drainFailed)
	return err
}

func (c *Container) record(end string, drainFailed bool) {
	if c.e.Audit == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	code := int64(-1)
	select {
	case <-c.exited:
		code = c.code
	default:
	}
	r := LogRecord{Time: time.Now().UTC(), Type: "container", Kind: c.Kind, Container: c.ID[:12], Image: c.Image,
		Agent: c.ids.Agent, Session: c.ids.Session, Task: c.ids.Task, Requests: c.requests, RequestsCut: c.reqCut,
		ExitCode: code, End: end, DurationMS: time.Since(c.started).Milliseconds(), StdoutBytes: c.outBytes,
		DrainFailed: drainFailed}
	r.StderrBytes, r.StderrLines = c.errTail.counts()
	if c.e.RawLogs {
		r.Stderr = string(c.errTail.bytes())
		r.StderrCut = r.StderrBytes - int64(len(r.Stderr))
	}
	c.e.Audit(r)
}

// counter counts what passes to the container's stdout reader.
type counter struct {
	c *Container
	w io.Writer
}

func (w *counter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	w.c.outBytes += int64(len(p))
	w.c.mu.Unlock()
	return w.w.Write(p)
}

// tail keeps the last max bytes written to it, and counts all of them.
type tail struct {
	mu    sync.Mutex
	max   int64
	buf   []byte
	total int64
	lines int64
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	for _, b := range p {
		if b == '\n' {
			t.lines++
		}
	}
	max := t.max
	if max <= 0 {
		max = 16 << 10
	}
	t.buf = append(t.buf, p...)
	if over := int64(len(t.buf)) - max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) counts() (total, lines int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total, t.lines
}

func (t *tail) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
