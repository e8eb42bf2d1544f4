package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jail-sandbox/jail/container"
)

// ProfileDir is where a browser's profile (cookies, localStorage, passkeys) lives inside its
// container: Options.Profile bound there, or a fresh directory on the container's tmpfs.
const ProfileDir = "/profile"

// Options say how to start one browser.
type Options struct {
	// Image is the browser image (make images builds it).
	Image string
	// Limits are the container's, from [docker] policy.
	Limits container.Limits
	// Profile is a host directory kept for one agent (its cookies and storage last between
	// calls and runs), bound writable at ProfileDir; empty gives a profile that ends with the
	// container. The caller makes it, owned by the container's user, in jail's own state
	// directory, which no sandbox sees.
	Profile string
	// Workspace, when set, is bound read-only at its own path, so browser_upload can hand the
	// page a workspace file: Chromium opens it inside the container, the supervisor never does.
	Workspace string
	// IDs are the correlation ids of the call that starts it.
	IDs container.Correlation
	// Egress fetches every request the pages make. Required.
	Egress *Egress
	// Width and Height are the viewport; zero means 1280x800.
	Width, Height int
}

// Browser is one Chromium in its container, driven over the DevTools pipe.
type Browser struct {
	c *container.Container
	// ctx is the first tab's chromedp context; cancel ends the browser.
	ctx    context.Context
	cancel context.CancelFunc
	// fetch answers the browser's requests.
	fetch     *interceptor
	closeOnce sync.Once
}

// chromiumFlags are the browser's command-line switches. The sandbox is never turned off:
// Chromium refuses to start when its namespace sandbox cannot be made (the container's
// seccomp profile allows exactly what it needs), and Launch checks it is on.
func chromiumFlags(o Options, profile string) []string {
	w, h := o.Width, o.Height
	if w <= 0 || h <= 0 {
		w, h = 1280, 800
	}
	return []string{
		"--headless",
		"--remote-debugging-pipe",
		"--user-data-dir=" + profile,
		fmt.Sprintf("--window-size=%d,%d", w, h),
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-gpu",
		// The browser never resolves a name itself: every request is paused and fetched
		// by jail, and anything that is not (there should be nothing) fails here too.
		"--host-resolver-rules=MAP * ~NOTFOUND",
		"--no-proxy-server",
		// Chromium's own calls home: component updates, safe browsing, sync, metrics.
		"--disable-background-networking",
		"--disable-component-update",
		"--disable-sync",
		"--disable-breakpad",
		"--disable-extensions",
		"--disable-default-apps",
		"--disable-features=Translate,OptimizationHints,MediaRouter,InterestFeedContentSuggestions",
		"--metrics-recording-only",
		"--password-store=basic",
		"--mute-audio",
	}
}

// command is what the container runs: Chromium with its DevTools pipe on the container's
// stdio. Chromium reads commands on fd 3 and writes on fd 4; the shell moves the container's
// stdin and stdout there and gives Chromium /dev/null and stderr instead, so nothing else it
// prints can corrupt the pipe.
func command(flags []string) []string {
	var b strings.Builder
	b.WriteString("exec chromium")
	for _, f := range flags {
		b.WriteString(" " + shellQuote(f))
	}
	b.WriteString(" 3<&0 4>&1 0</dev/null 1>&2")
	return []string{"/bin/sh", "-c", b.String()}
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// allocator makes the one browser of a chromedp context in a container.
type allocator struct {
	e    *container.Engine
	spec container.Spec
	c    *container.Container
}

func (a *allocator) Allocate(ctx context.Context, opts ...chromedp.BrowserOption) (*chromedp.Browser, error) {
	c, err := a.e.Start(ctx, a.spec)
	if err != nil {
		return nil, err
	}
	a.c = c
	return chromedp.NewBrowserTransport(ctx, chromedp.NewPipeConn(pipeReader{c}, pipeWriter{c}), opts...)
}

func (a *allocator) Wait() {
	if a.c != nil {
		<-a.c.Exited()
	}
}

// pipeReader and pipeWriter are the two ends of the DevTools pipe, on the container's
// attached stdio. Closing the writer closes the container's stdin, which ends Chromium.
type pipeReader struct{ c *container.Container }

func (r pipeReader) Read(p []byte) (int, error) { return r.c.Stdout().Read(p) }
func (r pipeReader) Close() error               { return nil }

type pipeWriter struct{ c *container.Container }

func (w pipeWriter) Write(p []byte) (int, error) { return w.c.Write(p) }
func (w pipeWriter) Close() error                { return w.c.CloseStdin() }

// Launch starts a browser: its container, Chromium on the DevTools pipe, the interception of
// every request, and its first tab. The browser lives until Close, whatever ctx does after
// Launch returned; ctx bounds the start.
func Launch(ctx context.Context, e *container.Engine, o Options) (*Browser, error) {
	if o.Egress == nil {
		return nil, errors.New("browser: launch without an egress")
	}
	profile := "/tmp/profile"
	spec := container.Spec{Image: o.Image, Kind: "browser", Limits: o.Limits, IDs: o.IDs,
		Env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/tmp", "LANG=C.UTF-8"}}
	if o.Profile != "" {
		profile = ProfileDir
		spec.Binds = append(spec.Binds, container.Bind{Source: o.Profile, Target: ProfileDir, Writable: true})
	}
	if o.Workspace != "" {
		spec.Binds = append(spec.Binds, container.Bind{Source: o.Workspace, Target: o.Workspace})
	}
	spec.Cmd = command(chromiumFlags(o, profile))
	a := &allocator{e: e, spec: spec}
	// The browser's lifetime is its own, not the call's that started it.
	actx, cancelAlloc := chromedp.NewAllocatorContext(context.WithoutCancel(ctx), a)
	tctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(func(string, ...any) {}), chromedp.WithErrorf(func(string, ...any) {}))
	b := &Browser{ctx: tctx, cancel: func() { cancelTab(); cancelAlloc() }}
	fail := func(err error) (*Browser, error) {
		b.cancel()
		if a.c != nil {
			tail := strings.TrimSpace(a.c.StderrTail())
			a.c.Close()
			if tail != "" {
				err = fmt.Errorf("%w; the browser said: %s", err, lastLines(tail, 5))
			}
		}
		return nil, err
	}
	start := make(chan error, 1)
	go func() {
		// Lifetime: until the first tab exists or the start is abandoned.
		start <- chromedp.Do(tctx)
	}()
	select {
	case err := <-start:
		if err != nil {
			return fail(fmt.Errorf("browser: start Chromium in its container: %w", err))
		}
	case <-ctx.Done():
		return fail(fmt.Errorf("browser: start Chromium in its container: %w", ctx.Err()))
	}
	b.c = a.c
	ic, err := intercept(tctx, o.Egress)
	if err != nil {
		return fail(err)
	}
	b.fetch = ic
	if err := checkSandbox(ctx, tctx); err != nil {
		return fail(err)
	}
	return b, nil
}

// checkSandbox reads Chromium's own report of its sandbox (chrome://sandbox, rendered from
// what the browser process knows of its renderers) and refuses a browser whose renderers are
// not in the namespace sandbox with seccomp-bpf. Chromium exits rather than run unsandboxed
// unless told --no-sandbox, which jail never passes; this catches an image or a profile that
// changed that.
func checkSandbox(ctx, tctx context.Context) error {
	ctx, cancel := context.WithTimeout(tctx, time.Until(deadlineOr(ctx, 20*time.Second)))
	defer cancel()
	err := chromedp.Do(ctx, chromedp.Navigate("chrome://sandbox"))
	var report string
	if err == nil {
		report, err = poll[string](ctx, `document.body && document.body.innerText.includes("sandboxed") ? document.body.innerText : ""`)
	}
	if err != nil {
		return fmt.Errorf("browser: read chrome://sandbox to check the renderers' sandbox: %w", err)
	}
	for _, want := range []string{"Layer 1 Sandbox\tNamespace", "PID namespaces\tYes", "Network namespaces\tYes", "Seccomp-BPF sandbox\tYes", "You are adequately sandboxed."} {
		if !strings.Contains(report, want) {
			return fmt.Errorf("browser: Chromium's renderers are not sandboxed as jail requires (chrome://sandbox lacks %q): %s", want, strings.Join(strings.Fields(report), " "))
		}
	}
	return chromedp.Do(ctx, chromedp.Navigate("about:blank"))
}

// deadlineOr is ctx's deadline, or d from now when it has none.
func deadlineOr(ctx context.Context, d time.Duration) time.Time {
	if t, ok := ctx.Deadline(); ok {
		return t
	}
	return time.Now().Add(d)
}

// lastLines keeps the last n lines of s.
func lastLines(s string, n int) string {
	ls := strings.Split(s, "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}

// Context is the first tab's chromedp context. Callers bound their actions with a timeout
// derived from it.
func (b *Browser) Context() context.Context { return b.ctx }

// Container is the browser's container.
func (b *Browser) Container() *container.Container { return b.c }

// Close ends the browser and its container and waits for both.
func (b *Browser) Close() error {
	var err error
	b.closeOnce.Do(func() {
		b.cancel()
		if b.fetch != nil {
			done := make(chan struct{})
			go func() {
				// Lifetime: until the requests in flight saw their context end.
				b.fetch.wg.Wait()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
			}
		}
		if b.c != nil {
			err = b.c.Close()
		}
	})
	return err
}

// Done is closed when the browser's container has exited.
func (b *Browser) Done() <-chan struct{} { return b.c.Exited() }

var _ io.ReadCloser = pipeReader{}

// poll evaluates expression until it is truthy and returns its value. A navigation between two
// evaluations destroys the page's execution context ("Cannot find context with specified id");
// poll then evaluates again in the new one, until ctx ends.
func poll[T any](ctx context.Context, expression string) (T, error) {
	for {
		v, err := chromedp.Run(ctx, chromedp.Poll[T](expression))
		if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "Cannot find context with specified id") {
			return v, err
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return v, ctx.Err()
		}
	}
}
