package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Labels every container of jail's carries. LabelManaged marks it as jail's: orphan clean-up
// looks at nothing else.
const (
	LabelManaged    = "org.jail-sandbox.managed"
	LabelOwner      = "org.jail-sandbox.owner-uid"
	LabelSupervisor = "org.jail-sandbox.supervisor" // boot id/pid/start time of the jail that made it
	LabelKind       = "org.jail-sandbox.kind"
	LabelAgent      = "org.jail-sandbox.agent"
	LabelSession    = "org.jail-sandbox.session"
	LabelTask       = "org.jail-sandbox.task"
	// LabelInputs is the hash of an image's inputs (images/build.sh); an image without it was
	// not built by make images.
	LabelInputs = "org.jail-sandbox.inputs"
)

// pingTimeout bounds the readiness check: `jail check` and every tool listing wait for it.
const pingTimeout = 3 * time.Second

// UnavailableError says the Docker engine cannot be used, why, and what to do about it.
type UnavailableError struct {
	Host string // the engine's address
	Err  error
}

func (e *UnavailableError) Error() string {
	fix := "start it (as root: scripts/dockerd.sh, or systemctl start docker) or point DOCKER_HOST at one"
	cause := e.Err.Error()
	switch {
	case errors.Is(e.Err, syscall.EACCES) || strings.Contains(cause, "permission denied"):
		fix = "add yourself to the docker group (usermod -aG docker $USER, then log in again) or point DOCKER_HOST at an engine you may use"
	case strings.Contains(cause, "is not supported by this client"):
		fix = "upgrade the engine to Docker 19.03 (API 1.40) or newer"
	}
	return fmt.Sprintf("Docker is not reachable at %s (%v): the browser and desktop tools run in containers; %s; every other tool works without it", e.Host, e.Err, fix)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Engine is a connection to one Docker engine. It is safe for concurrent use.
type Engine struct {
	cli *client.Client
	// Audit receives one record per container that ended; nil writes none.
	Audit func(LogRecord)
	// RawLogs and LogBytes are [docker] raw_logs and log_bytes.
	RawLogs  bool
	LogBytes int64
	// Binary is the host path of the jail binary bound into every container at
	// [BinaryPath]; empty means this process's executable.
	Binary string
	Logger *slog.Logger

	self supervisor

	mu    sync.Mutex
	ready error     // the last readiness answer
	asked time.Time // when it was asked
}

// Connect makes a client for the engine of DOCKER_HOST (or the local socket). The client
// negotiates the API version on first use (its default since moby/moby/client 0.1: 20.10's
// 1.41, say, not the client's newest). It does not talk to the engine: [Engine.Ping] does.
func Connect() (*Engine, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("container: docker client: %w", err)
	}
	self, err := currentSupervisor()
	if err != nil {
		cli.Close()
		return nil, err
	}
	return &Engine{cli: cli, self: self, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, nil
}

// Close closes the client's idle connections.
func (e *Engine) Close() error { return e.cli.Close() }

// Host is the engine's address.
func (e *Engine) Host() string { return e.cli.DaemonHost() }

// Ping asks the engine whether it answers, negotiating the API version; a failure is an
// [*UnavailableError].
func (e *Engine) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := e.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return &UnavailableError{Host: e.Host(), Err: err}
	}
	return nil
}

// readyTTL is how long a readiness answer is reused: a tool listing asks once per tool.
const readyTTL = 2 * time.Second

// Ready is Ping, remembered for a moment, for the tools' readiness checks.
func (e *Engine) Ready() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.asked.IsZero() && time.Since(e.asked) < readyTTL {
		return e.ready
	}
	e.ready = e.Ping(context.Background())
	e.asked = time.Now()
	return e.ready
}

// ImageReady says whether image exists on the engine, and how to make it when it does not.
func (e *Engine) ImageReady(ctx context.Context, image string) error {
	if err := e.Ready(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := e.cli.ImageInspect(ctx, image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("image %s is not on the Docker engine: build it with make images (images/build.sh), or set [docker] browser_image/desktop_image to one you have", image)
		}
		return fmt.Errorf("container: inspect image %s: %w", image, err)
	}
	return nil
}

// RemoveOrphans deletes the containers carrying jail's label whose supervisor no longer runs
// on this machine: those of a jail killed before its containers ended, left behind when the
// engine itself stopped meanwhile. A non-root caller removes only its own. It returns how
// many it removed.
func (e *Engine) RemoveOrphans(ctx context.Context) (int, error) {
	list, err := e.cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", LabelManaged)})
	if err != nil {
		return 0, fmt.Errorf("container: list jail's containers: %w", err)
	}
	uid := fmt.Sprint(os.Getuid())
	n := 0
	var errs []error
	for _, c := range list.Items {
		if os.Getuid() != 0 && c.Labels[LabelOwner] != uid {
			continue
		}
		if parseSupervisor(c.Labels[LabelSupervisor]).alive() {
			continue
		}
		if _, err := e.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("container: remove orphan %.12s: %w", c.ID, err))
			continue
		}
		e.Logger.Info("removed an orphaned container", "id", c.ID[:12], "supervisor", c.Labels[LabelSupervisor])
		n++
	}
	return n, errors.Join(errs...)
}
