package desktop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/jail-sandbox/jail/container"
)

// Config is what a Desktop needs from the wiring: plain values, the policy's among them.
type Config struct {
	Engine *container.Engine
	// Image is [docker] desktop_image.
	Image string
	// Width and Height are [docker] desktop_size: the space of every coordinate and screenshot.
	Width, Height int
	// Workspace is the host's workspace: bound read-only into the container at the same path
	// (apps launch from it) and where screenshots are saved.
	Workspace string
	Limits    container.Limits
	// Lifecycle and IdleGrace are [docker] lifecycle and idle_grace.
	Lifecycle string
	IdleGrace time.Duration
	// Session names the front end's session in the containers' labels and records.
	Session string
	// Disabled, when not empty, is why the policy keeps the desktop off ([docker] enabled):
	// Ready reports it without asking Docker.
	Disabled string
}

// Desktop is the desktop category of one front end: its containers, one per call, task or
// agent.
type Desktop struct {
	cfg  Config
	pool *container.Pool[*session]
}

// New makes the category; no container starts before the first call.
func New(cfg Config) (*Desktop, error) {
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, fmt.Errorf("desktop: screen size %dx%d", cfg.Width, cfg.Height)
	}
	pool, err := container.NewPool[*session](cfg.Lifecycle, cfg.IdleGrace)
	if err != nil {
		return nil, err
	}
	return &Desktop{cfg: cfg, pool: pool}, nil
}

// Close ends every desktop container.
func (d *Desktop) Close() { d.pool.Close() }

// Ready says whether the desktop can run here: the policy enables Docker, the engine
// answers, the image exists.
func (d *Desktop) Ready() error {
	if d.cfg.Disabled != "" {
		return errors.New(d.cfg.Disabled)
	}
	if d.cfg.Engine == nil {
		return errors.New("no Docker client")
	}
	return d.cfg.Engine.ImageReady(context.Background(), d.cfg.Image)
}

// helloTimeout bounds a desktop's start: the container, Xvfb, the driver's first line.
const helloTimeout = 60 * time.Second

// maxResponseLine bounds one line from the driver: a PNG of the largest screen, in base64.
const maxResponseLine = 96 << 20

// session is one desktop container and the driver in it.
type session struct {
	c             *container.Container
	width, height int
	lines         chan []byte // the driver's lines; closed when its stdout ends
	readErr       error
	closing       chan struct{} // closed by Close: the reader stops waiting for a call
	closeOnce     sync.Once

	mu     sync.Mutex
	next   uint64
	broken error // a call was abandoned mid-way: the stream is out of step
}

func (d *Desktop) start(ctx context.Context, ids container.Correlation) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	spec := container.Spec{
		Image: d.cfg.Image, Kind: "desktop",
		Cmd:        []string{container.BinaryPath, DriverCommand, strconv.Itoa(d.cfg.Width), strconv.Itoa(d.cfg.Height)},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8"},
		WorkingDir: d.cfg.Workspace,
		Binds:      []container.Bind{{Source: d.cfg.Workspace, Target: d.cfg.Workspace}},
		Limits:     d.cfg.Limits,
		IDs:        ids,
		// Nothing on the desktop makes namespaces: Docker's profile, no additions.
		DefaultSeccomp: true,
	}
	c, err := d.cfg.Engine.Start(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("desktop: %w", err)
	}
	s := &session{c: c, width: d.cfg.Width, height: d.cfg.Height, lines: make(chan []byte), closing: make(chan struct{})}
	// Lifetime: until the container's stdout ends (it exited, or Close ended it).
	go s.read()
	select {
	case line, ok := <-s.lines:
		var r response
		if !ok || json.Unmarshal(line, &r) != nil || r.Hello == nil {
			if ok && r.Error != "" {
				err = errors.New(r.Error)
			} else {
				err = fmt.Errorf("no hello (stderr: %q)", lastLines(c.StderrTail(), 600))
			}
			s.Close()
			return nil, fmt.Errorf("desktop: the driver did not start: %w", err)
		}
		if r.Hello.Width != d.cfg.Width || r.Hello.Height != d.cfg.Height {
			s.Close()
			return nil, fmt.Errorf("desktop: the driver reports a %dx%d screen, want %dx%d", r.Hello.Width, r.Hello.Height, d.cfg.Width, d.cfg.Height)
		}
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("desktop: the driver did not start within %v (stderr: %q)", helloTimeout, lastLines(c.StderrTail(), 600))
	}
	return s, nil
}

func (s *session) read() {
	defer close(s.lines)
	br := bufio.NewReaderSize(s.c.Stdout(), 256<<10)
	for {
		line, err := readLine(br, maxResponseLine)
		if len(bytes.TrimSpace(line)) > 0 {
			// A line nobody asked for (the app wrote into the driver's stdout) waits here
			// until the next call takes it as out of step, or the session closes.
			select {
			case s.lines <- line:
			case <-s.closing:
				return
			}
		} else if line == nil && err == nil {
			s.readErr = fmt.Errorf("a line from the driver longer than %d bytes", maxResponseLine)
			s.c.Close()
			return
		}
		if err != nil {
			if err != io.EOF {
				s.readErr = err
			}
			return
		}
	}
}

func (s *session) Alive() bool {
	s.mu.Lock()
	broken := s.broken
	s.mu.Unlock()
	select {
	case <-s.c.Exited():
		return false
	default:
		return broken == nil
	}
}

func (s *session) Close() error {
	s.closeOnce.Do(func() { close(s.closing) })
	return s.c.Close()
}

// errAppNotRunning marks the driver's "app not running" answer.
type appNotRunning struct {
	msg string
	app *appState
}

func (e *appNotRunning) Error() string { return e.msg }

// call sends one request and waits for its response. Calls on a session take turns (the
// pool gives a session to one call at a time).
func (s *session) call(ctx context.Context, op string, args any, out any) error {
	s.mu.Lock()
	if s.broken != nil {
		s.mu.Unlock()
		return s.broken
	}
	s.next++
	id := s.next
	s.mu.Unlock()
	req := request{ID: id, Op: op}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return err
		}
		req.Args = b
	}
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := s.c.Write(append(line, '\n')); err != nil {
		return s.fail(fmt.Errorf("desktop: send to the driver: %w", err))
	}
	select {
	case l, ok := <-s.lines:
		if !ok {
			return s.fail(s.ended())
		}
		var r response
		if err := json.Unmarshal(l, &r); err != nil || r.ID != id {
			return s.fail(fmt.Errorf("desktop: the driver answered out of step (want id %d)", id))
		}
		if r.Error != "" {
			if r.App != nil {
				return &appNotRunning{msg: r.Error, app: r.App}
			}
			return errors.New(r.Error)
		}
		if out != nil {
			if err := json.Unmarshal(r.Result, out); err != nil {
				return fmt.Errorf("desktop: the driver's %s result: %w", op, err)
			}
		}
		return nil
	case <-ctx.Done():
		// Its answer would arrive in the next call's place: this desktop is done.
		return s.fail(fmt.Errorf("desktop: %s: %w", op, ctx.Err()))
	}
}

func (s *session) fail(err error) error {
	s.mu.Lock()
	if s.broken == nil {
		s.broken = err
	}
	s.mu.Unlock()
	return err
}

// ended says why the driver's output ended.
func (s *session) ended() error {
	select {
	case <-s.c.Exited():
		return fmt.Errorf("desktop: the desktop container ended (exit %d; stderr: %q); the next call starts a new one", s.c.ExitCode(), lastLines(s.c.StderrTail(), 600))
	case <-time.After(2 * time.Second):
	}
	if s.readErr != nil {
		return fmt.Errorf("desktop: reading the driver: %w", s.readErr)
	}
	return errors.New("desktop: the driver's output ended")
}

// Screenshot is one validated screen capture.
type Screenshot struct {
	PNG           []byte
	Width, Height int
}

// screenshot asks the driver for the screen and checks what comes back: a PNG that decodes
// whole, of the advertised size. The container is not trusted to send either.
func (s *session) screenshot(ctx context.Context) (Screenshot, error) {
	var r shotResult
	if err := s.call(ctx, "screenshot", nil, &r); err != nil {
		return Screenshot{}, err
	}
	img, err := png.Decode(bytes.NewReader(r.PNG))
	if err != nil {
		return Screenshot{}, s.fail(fmt.Errorf("desktop: the driver's screenshot is not a PNG: %w", err))
	}
	b := img.Bounds()
	if b.Dx() != s.width || b.Dy() != s.height || b.Min.X != 0 || b.Min.Y != 0 {
		return Screenshot{}, s.fail(fmt.Errorf("desktop: the driver's screenshot is %dx%d, not the advertised %dx%d", b.Dx(), b.Dy(), s.width, s.height))
	}
	return Screenshot{PNG: r.PNG, Width: b.Dx(), Height: b.Dy()}, nil
}
