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
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// display is the X display inside the container. Xvfb listens on its unix socket in the
// container's /tmp only: no TCP (and the container has no network), nothing shared with the
// host.
const display = ":0"

// appOutputMax bounds the app output the driver keeps for "app not running" errors.
const appOutputMax = 4 << 10

// maxRequestLine bounds one request from the supervisor (a long desktop_type text fits).
const maxRequestLine = 1 << 20

// DriverMain is the desktop driver, run by jail's init inside the desktop container: it
// starts Xvfb at width x height, then answers the supervisor's requests on stdin with
// responses on stdout (the protocol in protocol.go) until stdin ends. Nothing else writes to
// its stdout: Xvfb's and the apps' output goes to stderr.
//
// args: WIDTH HEIGHT
func DriverMain(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "desktop driver: usage: "+DriverCommand+" WIDTH HEIGHT")
		return 2
	}
	w, err1 := strconv.Atoi(args[0])
	h, err2 := strconv.Atoi(args[1])
	if err1 != nil || err2 != nil || w <= 0 || h <= 0 {
		fmt.Fprintln(os.Stderr, "desktop driver: bad screen size", args)
		return 2
	}
	// The apps run with this uid: not dumpable, this process's descriptors (the protocol's
	// stdin and stdout) cannot be opened through /proc, nor the process ptraced, by them.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "desktop driver: prctl(PR_SET_DUMPABLE):", err)
		return 1
	}
	d := &driver{width: w, height: h, out: json.NewEncoder(os.Stdout)}
	if err := d.startX(); err != nil {
		fmt.Fprintln(os.Stderr, "desktop driver:", err)
		d.out.Encode(response{Error: err.Error()})
		return 1
	}
	defer d.stopX()
	d.out.Encode(response{Hello: &hello{Width: w, Height: h}})
	br := bufio.NewReaderSize(os.Stdin, 64<<10)
	for {
		line, err := readLine(br, maxRequestLine)
		if len(bytes.TrimSpace(line)) > 0 {
			var req request
			var resp response
			if jerr := json.Unmarshal(line, &req); jerr != nil {
				resp = response{Error: "bad request: " + jerr.Error()}
			} else {
				resp = d.handle(req)
			}
			resp.ID = req.ID
			if err := d.out.Encode(resp); err != nil {
				return 1
			}
		}
		if err != nil {
			return 0 // stdin ended: the supervisor released the desktop
		}
	}
}

type driver struct {
	width, height int
	out           *json.Encoder
	xvfb          *exec.Cmd
	root          int // the root window, which xdotool's search lists too

	mu  sync.Mutex
	app *app
}

type app struct {
	cmd    *exec.Cmd
	argv   []string
	output tailBuffer
	done   chan struct{}
	state  appState
}

func (d *driver) env() []string {
	return []string{"DISPLAY=" + display, "HOME=/tmp", "LANG=C.UTF-8", "PATH=/usr/local/bin:/usr/bin:/bin"}
}

func (d *driver) startX() error {
	// Made here with the sticky bit so a non-root Xvfb can use it.
	if err := os.MkdirAll("/tmp/.X11-unix", 0o1777); err != nil {
		return fmt.Errorf("make /tmp/.X11-unix: %w", err)
	}
	os.Chmod("/tmp/.X11-unix", 0o1777)
	d.xvfb = exec.Command("Xvfb", display, "-screen", "0", fmt.Sprintf("%dx%dx24", d.width, d.height),
		"-nolisten", "tcp", "-nolisten", "local", "-noreset", "-nocursor")
	d.xvfb.Stdout, d.xvfb.Stderr = os.Stderr, os.Stderr
	d.xvfb.Env = d.env()
	if err := d.xvfb.Start(); err != nil {
		return fmt.Errorf("start Xvfb: %w", err)
	}
	exited := make(chan struct{})
	// Lifetime: until Xvfb exits (stopX, or a crash).
	go func() { d.xvfb.Wait(); close(exited) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, err := d.xdotool("getdisplaygeometry"); err == nil {
			return d.findRoot()
		}
		select {
		case <-exited:
			return fmt.Errorf("xvfb exited while starting (its output is in the container's stderr)")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("xvfb did not answer within 15 s")
		}
	}
}

// findRoot learns the root window's id from xwininfo.
func (d *driver) findRoot() error {
	cmd := exec.Command("xwininfo", "-root", "-int")
	cmd.Env = d.env()
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("xwininfo -root: %w", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if _, rest, ok := strings.Cut(l, "Window id: "); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				if d.root, err = strconv.Atoi(f[0]); err == nil {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("xwininfo -root: no window id in %q", out)
}

func (d *driver) stopX() {
	d.mu.Lock()
	a := d.app
	d.mu.Unlock()
	if a != nil && a.cmd.Process != nil {
		syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
	}
	if d.xvfb != nil && d.xvfb.Process != nil {
		d.xvfb.Process.Kill()
	}
}

// xdotool runs xdotool against the display and returns its stdout.
func (d *driver) xdotool(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "xdotool", args...)
	cmd.Env = d.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("xdotool %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

func (d *driver) handle(req request) response {
	ok := func(v any) response {
		b, err := json.Marshal(v)
		if err != nil {
			return response{Error: err.Error()}
		}
		return response{Result: b}
	}
	fail := func(err error) response { return response{Error: err.Error()} }
	decode := func(v any) error {
		if len(req.Args) == 0 {
			return nil
		}
		return json.Unmarshal(req.Args, v)
	}
	if req.Op == "launch" {
		var a launchArgs
		if err := decode(&a); err != nil {
			return fail(err)
		}
		r, err := d.launch(a)
		if err != nil {
			return d.appError(err)
		}
		return ok(r)
	}
	// Every other op first checks the app: a dead app is an error, never a stale screen.
	if r, dead := d.deadApp(); dead {
		return r
	}
	switch req.Op {
	case "screenshot":
		r, err := d.screenshot()
		if err != nil {
			return fail(err)
		}
		return ok(r)
	case "windows":
		ws, err := d.windows()
		if err != nil {
			return fail(err)
		}
		return ok(ws)
	case "cursor":
		x, y, _, err := d.cursor()
		if err != nil {
			return fail(err)
		}
		return ok(cursorResult{X: x, Y: y})
	case "wait_for_window":
		var a waitArgs
		if err := decode(&a); err != nil {
			return fail(err)
		}
		w, err := d.waitForWindow(a)
		if err != nil {
			return d.appError(err)
		}
		return ok(w)
	}
	// Input: waits until the app's window is mapped.
	if err := d.waitMapped(10 * time.Second); err != nil {
		return d.appError(err)
	}
	var err error
	switch req.Op {
	case "click":
		var a pointArgs
		if err = decode(&a); err == nil {
			err = d.click(a)
		}
	case "move":
		var a pointArgs
		if err = decode(&a); err == nil {
			err = d.move(a.X, a.Y)
		}
	case "drag":
		var a dragArgs
		if err = decode(&a); err == nil {
			err = d.drag(a)
		}
	case "scroll":
		var a scrollArgs
		if err = decode(&a); err == nil {
			err = d.scroll(a)
		}
	case "type":
		var a typeArgs
		if err = decode(&a); err == nil {
			_, err = d.xdotool("type", "--delay", "8", "--", a.Text)
		}
	case "key":
		var a keyArgs
		if err = decode(&a); err == nil {
			keys := strings.Fields(a.Keys)
			if len(keys) == 0 {
				err = errors.New("no keys")
			} else {
				_, err = d.xdotool(append([]string{"key", "--delay", "20", "--"}, keys...)...)
			}
		}
	default:
		err = fmt.Errorf("unknown op %q", req.Op)
	}
	if err != nil {
		return d.appError(err)
	}
	// The input may have ended the app (ctrl+q): say so now rather than at the next call.
	time.Sleep(30 * time.Millisecond)
	if r, dead := d.deadApp(); dead {
		return r
	}
	return ok(struct{}{})
}

// appError is err, or the "app not running" error when the app died meanwhile.
func (d *driver) appError(err error) response {
	if r, dead := d.deadApp(); dead {
		return r
	}
	return response{Error: err.Error()}
}

// deadApp is the "app not running" response when the last app launched has exited.
func (d *driver) deadApp() (response, bool) {
	d.mu.Lock()
	a := d.app
	d.mu.Unlock()
	if a == nil {
		return response{}, false
	}
	select {
	case <-a.done:
	default:
		return response{}, false
	}
	st := a.state
	st.Output = a.output.String()
	how := fmt.Sprintf("exit status %d", st.ExitCode)
	if st.Signal != "" {
		how = "killed by " + st.Signal
	}
	name := strings.Join(st.Command, " ")
	if len(st.Command) == 3 && st.Command[0] == "/bin/sh" && st.Command[1] == "-c" {
		name = st.Command[2] // desktop_launch's shell command, as the caller wrote it
	}
	return response{Error: fmt.Sprintf("app not running: %s ended (%s); last output: %q; launch it again with desktop_launch",
		name, how, lastLines(st.Output, 800)), App: &st}, true
}

func (d *driver) launch(a launchArgs) (launchResult, error) {
	if len(a.Command) == 0 {
		return launchResult{}, errors.New("no command")
	}
	before, _ := d.windows()
	known := map[int]bool{}
	for _, w := range before {
		known[w.ID] = true
	}
	cmd := exec.Command(a.Command[0], a.Command[1:]...)
	cmd.Dir = a.Dir
	cmd.Env = d.env()
	ap := &app{cmd: cmd, argv: a.Command, done: make(chan struct{})}
	ap.output.max = appOutputMax
	// The app writes to a pipe of the driver's, never to the driver's stdout (the protocol).
	w := io.MultiWriter(&ap.output, os.Stderr)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return launchResult{}, fmt.Errorf("launch %s: %w", a.Command[0], err)
	}
	ap.state = appState{Command: a.Command, Running: true}
	// Lifetime: until the app exits.
	go func() {
		err := cmd.Wait()
		st := appState{Command: a.Command}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				st.Signal = ws.Signal().String()
				st.ExitCode = 128 + int(ws.Signal())
			} else {
				st.ExitCode = ee.ExitCode()
			}
		} else if err != nil {
			st.ExitCode = -1
		}
		d.mu.Lock()
		ap.state = st
		d.mu.Unlock()
		close(ap.done)
	}()
	d.mu.Lock()
	old := d.app
	d.app = ap
	d.mu.Unlock()
	_ = old // an earlier app keeps running; the new one is the target now
	wait := time.Duration(a.WaitMS) * time.Millisecond
	if wait <= 0 {
		wait = 10 * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		ws, err := d.windows()
		if err == nil {
			var fresh []Window
			for _, w := range ws {
				if !known[w.ID] {
					fresh = append(fresh, w)
				}
			}
			if len(fresh) > 0 {
				// No window manager: give the new window the keyboard, as one would.
				d.xdotool("windowfocus", strconv.Itoa(fresh[0].ID))
				return launchResult{PID: cmd.Process.Pid, Windows: fresh}, nil
			}
		}
		select {
		case <-ap.done:
			return launchResult{}, errors.New("the app exited before it showed a window")
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return launchResult{PID: cmd.Process.Pid, NoWindow: true}, nil
		}
	}
}

// waitMapped waits until the running app has a mapped window; with no app, or an app
// that has one, it returns at once.
func (d *driver) waitMapped(max time.Duration) error {
	d.mu.Lock()
	a := d.app
	d.mu.Unlock()
	if a == nil {
		return nil
	}
	deadline := time.Now().Add(max)
	for {
		ws, err := d.windows()
		if err == nil && len(ws) > 0 {
			return nil
		}
		select {
		case <-a.done:
			return errors.New("the app exited")
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no window of the app is mapped after %v", max)
		}
	}
}

// windows lists the mapped top-level windows (the root's children: there is no window
// manager) with their titles and geometry.
func (d *driver) windows() ([]Window, error) {
	out, err := d.xdotool("search", "--onlyvisible", "--maxdepth", "1", "--name", ".*")
	if err != nil && !strings.Contains(err.Error(), "exit status 1") {
		return nil, err
	}
	ws := []Window{}
	for _, f := range strings.Fields(out) {
		id, err := strconv.Atoi(f)
		if err != nil || id == d.root {
			continue
		}
		w := Window{ID: id}
		if name, err := d.xdotool("getwindowname", f); err == nil {
			w.Title = strings.TrimRight(name, "\n")
		}
		geo, err := d.xdotool("getwindowgeometry", "--shell", f)
		if err != nil {
			continue // gone meanwhile
		}
		for _, l := range strings.Split(geo, "\n") {
			k, v, _ := strings.Cut(l, "=")
			n, _ := strconv.Atoi(v)
			switch k {
			case "X":
				w.X = n
			case "Y":
				w.Y = n
			case "WIDTH":
				w.Width = n
			case "HEIGHT":
				w.Height = n
			}
		}
		ws = append(ws, w)
	}
	return ws, nil
}

func (d *driver) waitForWindow(a waitArgs) (Window, error) {
	re, err := regexp.Compile(a.Title)
	if err != nil {
		return Window{}, fmt.Errorf("title pattern: %w", err)
	}
	timeout := time.Duration(a.TimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		ws, err := d.windows()
		if err != nil {
			return Window{}, err
		}
		for _, w := range ws {
			if re.MatchString(w.Title) {
				return w, nil
			}
		}
		if r, dead := d.deadApp(); dead {
			return Window{}, errors.New(r.Error)
		}
		if time.Now().After(deadline) {
			titles := make([]string, len(ws))
			for i, w := range ws {
				titles[i] = strconv.Quote(w.Title)
			}
			return Window{}, fmt.Errorf("no window titled like %q within %v (mapped: %s)", a.Title, timeout, strings.Join(titles, ", "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (d *driver) cursor() (x, y, window int, err error) {
	out, err := d.xdotool("getmouselocation", "--shell")
	if err != nil {
		return 0, 0, 0, err
	}
	for _, l := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(l, "=")
		n, _ := strconv.Atoi(v)
		switch k {
		case "X":
			x = n
		case "Y":
			y = n
		case "WINDOW":
			window = n
		}
	}
	return x, y, window, nil
}

func (d *driver) inScreen(x, y int) error {
	if x < 0 || y < 0 || x >= d.width || y >= d.height {
		return fmt.Errorf("(%d, %d) is outside the %dx%d screen", x, y, d.width, d.height)
	}
	return nil
}

func (d *driver) move(x, y int) error {
	if err := d.inScreen(x, y); err != nil {
		return err
	}
	_, err := d.xdotool("mousemove", "--sync", strconv.Itoa(x), strconv.Itoa(y))
	return err
}

func buttonNumber(name string) (string, error) {
	switch name {
	case "", "left":
		return "1", nil
	case "middle":
		return "2", nil
	case "right":
		return "3", nil
	}
	return "", fmt.Errorf("unknown button %q (accepted: left, middle, right)", name)
}

// focusUnderPointer gives the keyboard to the top-level window under the pointer, as a
// click-to-focus window manager would (there is none).
func (d *driver) focusUnderPointer() {
	if _, _, win, err := d.cursor(); err == nil && win != 0 {
		d.xdotool("windowfocus", strconv.Itoa(win))
	}
}

func (d *driver) click(a pointArgs) error {
	b, err := buttonNumber(a.Button)
	if err != nil {
		return err
	}
	clicks := a.Clicks
	if clicks == 0 {
		clicks = 1
	}
	if clicks < 1 || clicks > 3 {
		return fmt.Errorf("clicks %d (accepted: 1, 2 or 3)", clicks)
	}
	if err := d.move(a.X, a.Y); err != nil {
		return err
	}
	d.focusUnderPointer()
	_, err = d.xdotool("click", "--repeat", strconv.Itoa(clicks), "--delay", "80", b)
	return err
}

func (d *driver) drag(a dragArgs) error {
	b, err := buttonNumber(a.Button)
	if err != nil {
		return err
	}
	if err := d.inScreen(a.ToX, a.ToY); err != nil {
		return err
	}
	if err := d.move(a.X, a.Y); err != nil {
		return err
	}
	d.focusUnderPointer()
	if _, err := d.xdotool("mousedown", b); err != nil {
		return err
	}
	// Through a midpoint, so apps that need motion between press and release see some.
	mx, my := (a.X+a.ToX)/2, (a.Y+a.ToY)/2
	d.xdotool("mousemove", "--sync", strconv.Itoa(mx), strconv.Itoa(my))
	d.xdotool("mousemove", "--sync", strconv.Itoa(a.ToX), strconv.Itoa(a.ToY))
	_, err = d.xdotool("mouseup", b)
	return err
}

func (d *driver) scroll(a scrollArgs) error {
	btn := map[string]string{"up": "4", "down": "5", "left": "6", "right": "7"}[a.Direction]
	if btn == "" {
		return fmt.Errorf("unknown direction %q (accepted: up, down, left, right)", a.Direction)
	}
	n := a.Amount
	if n == 0 {
		n = 3
	}
	if n < 1 || n > 50 {
		return fmt.Errorf("amount %d (accepted: 1 to 50)", n)
	}
	if err := d.move(a.X, a.Y); err != nil {
		return err
	}
	_, err := d.xdotool("click", "--repeat", strconv.Itoa(n), "--delay", "30", btn)
	return err
}

func (d *driver) screenshot() (shotResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "xwd", "-root", "-silent", "-display", display)
	cmd.Env = d.env()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	raw, err := cmd.Output()
	if err != nil {
		return shotResult{}, fmt.Errorf("xwd: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	img, err := decodeXWD(raw)
	if err != nil {
		return shotResult{}, err
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return shotResult{}, fmt.Errorf("encode png: %w", err)
	}
	b := img.Bounds()
	return shotResult{PNG: buf.Bytes(), Width: b.Dx(), Height: b.Dy()}, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
