package desktop

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/jail-sandbox/jail/container"
	"github.com/jail-sandbox/jail/policy"
	"github.com/jail-sandbox/jail/tools"
)

// ScreenshotDir is where screenshots are saved, relative to the workspace.
const ScreenshotDir = ".jail/desktop/screenshots"

// metaImagePNG is the result meta key the MCP front end turns into image content.
const metaImagePNG = "image_png_base64"

// callTimeout bounds one desktop call, a cold container start included.
const callTimeout = 90 * time.Second

const coords = `"x":{"type":"integer","minimum":0,"description":"pixels from the left of the screen"},` +
	`"y":{"type":"integer","minimum":0,"description":"pixels from the top of the screen"}`

const button = `"button":{"enum":["left","middle","right"],"description":"default left"}`

// Tools are the desktop_* tools, in the order of the computer-use action set
// (docs/desktop.md has the mapping).
func (d *Desktop) Tools() []*tools.Tool {
	t := func(name, desc, schema string, run func(ctx context.Context, s *session, args json.RawMessage) tools.Result) *tools.Tool {
		info := catalogue(name)
		return &tools.Tool{Name: name, Description: desc, Schema: schema, Risk: info.Risk, Capabilities: info.Capabilities,
			Timeout: callTimeout, Ready: d.Ready,
			Host: func(ctx context.Context, c tools.HostCall) tools.Result { return d.run(ctx, c, run) }}
	}
	return []*tools.Tool{
		t("desktop_launch", "Start a GUI app on the virtual desktop: a shell command run in the workspace (mounted read-only at its path); waits for its first window.",
			`{"type":"object","properties":{"command":{"type":"string","minLength":1,"maxLength":10000,"description":"a shell command, e.g. \"python3 app.py\" or \"xterm\""},`+
				`"cwd":{"type":"string","description":"directory relative to the workspace; default the workspace"},`+
				`"wait_ms":{"type":"integer","minimum":1,"maximum":60000,"description":"how long to wait for a window; default 10000"}},"required":["command"],"additionalProperties":false}`,
			d.launch),
		t("desktop_screenshot", "Capture the virtual desktop as a PNG (saved under .jail/desktop/screenshots, SHA-256 in the result). Coordinates in it are the input coordinates.",
			`{"type":"object","properties":{},"additionalProperties":false}`, d.screenshotTool),
		t("desktop_click", "Click at x, y on the virtual desktop (button left/middle/right; clicks 2 double, 3 triple).",
			`{"type":"object","properties":{`+coords+`,`+button+`,"clicks":{"type":"integer","minimum":1,"maximum":3}},"required":["x","y"],"additionalProperties":false}`,
			d.input("click", "clicked")),
		t("desktop_move", "Move the pointer to x, y on the virtual desktop.",
			`{"type":"object","properties":{`+coords+`},"required":["x","y"],"additionalProperties":false}`, d.input("move", "moved to")),
		t("desktop_drag", "Press at x, y, move to to_x, to_y and release (button default left).",
			`{"type":"object","properties":{`+coords+`,"to_x":{"type":"integer","minimum":0},"to_y":{"type":"integer","minimum":0},`+button+`},"required":["x","y","to_x","to_y"],"additionalProperties":false}`,
			d.input("drag", "dragged from")),
		t("desktop_scroll", "Scroll at x, y: direction up/down/left/right, amount in wheel clicks (default 3).",
			`{"type":"object","properties":{`+coords+`,"direction":{"enum":["up","down","left","right"]},"amount":{"type":"integer","minimum":1,"maximum":50}},"required":["x","y","direction"],"additionalProperties":false}`,
			d.input("scroll", "scrolled at")),
		t("desktop_type", "Type text into the focused window of the virtual desktop (any Unicode text).",
			`{"type":"object","properties":{"text":{"type":"string","minLength":1,"maxLength":20000}},"required":["text"],"additionalProperties":false}`,
			d.input("type", "typed")),
		t("desktop_key", "Press keys on the virtual desktop: X key names and combos, space-separated, e.g. \"ctrl+s\", \"Return\", \"ctrl+shift+t Tab\".",
			`{"type":"object","properties":{"keys":{"type":"string","minLength":1,"maxLength":1000}},"required":["keys"],"additionalProperties":false}`,
			d.input("key", "pressed")),
		t("desktop_cursor_position", "Where the pointer is on the virtual desktop.",
			`{"type":"object","properties":{},"additionalProperties":false}`, d.cursor),
		t("desktop_windows", "List the virtual desktop's mapped windows with titles and geometry.",
			`{"type":"object","properties":{},"additionalProperties":false}`, d.windows),
		t("desktop_wait_for_window", "Wait until a window whose title matches a pattern (RE2) is mapped; timeout_ms default 10000.",
			`{"type":"object","properties":{"title":{"type":"string","minLength":1},"timeout_ms":{"type":"integer","minimum":1,"maximum":60000}},"required":["title"],"additionalProperties":false}`,
			d.waitForWindow),
	}
}

func catalogue(name string) policy.ToolInfo {
	for _, t := range policy.Catalogue() {
		if t.Name == name {
			return t
		}
	}
	return policy.ToolInfo{Name: name, Risk: policy.Exec, Capabilities: []string{policy.CapDesktop}}
}

// run gives a call its desktop (made on first use, or per call) and maps errors to results.
func (d *Desktop) run(ctx context.Context, c tools.HostCall, f func(ctx context.Context, s *session, args json.RawMessage) tools.Result) tools.Result {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = callTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ids := container.Correlation{Agent: c.Context.Agent, Session: d.cfg.Session, Task: c.Context.TaskID, Request: c.Request}
	if c.Context.TraceID != "" {
		ids.Request = c.Context.TraceID
	}
	s, release, fresh, err := d.pool.Acquire(ctx, ids, func(ctx context.Context) (*session, error) { return d.start(ctx, ids) })
	if err != nil {
		return tools.Result{IsError: true, Content: "jail: " + err.Error()}
	}
	defer release()
	if !fresh {
		s.c.Serving(ids)
	}
	return f(ctx, s, c.Args)
}

func errResult(err error) tools.Result {
	if e, ok := err.(*appNotRunning); ok {
		return tools.Result{IsError: true, Content: e.msg, Meta: map[string]any{"app_running": false,
			"app_command": e.app.Command, "app_exit_code": e.app.ExitCode, "app_signal": e.app.Signal, "app_output": e.app.Output}}
	}
	return tools.Result{IsError: true, Content: err.Error()}
}

func (d *Desktop) launch(ctx context.Context, s *session, raw json.RawMessage) tools.Result {
	var a struct {
		Command string `json:"command"`
		Cwd     string `json:"cwd"`
		WaitMS  int    `json:"wait_ms"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return errResult(err)
	}
	dir := d.cfg.Workspace
	if a.Cwd != "" {
		c := filepath.Clean(a.Cwd)
		if filepath.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
			return errResult(fmt.Errorf("cwd %q must be relative to the workspace, without \"..\" components", a.Cwd))
		}
		dir = filepath.Join(d.cfg.Workspace, c)
	}
	var r launchResult
	start := time.Now()
	if err := s.call(ctx, "launch", launchArgs{Command: []string{"/bin/sh", "-c", a.Command}, Dir: dir, WaitMS: a.WaitMS}, &r); err != nil {
		return errResult(err)
	}
	meta := map[string]any{"pid": r.PID, "windows": r.Windows, "launch_ms": time.Since(start).Milliseconds()}
	if r.NoWindow {
		return tools.Result{Content: fmt.Sprintf("launched %s (pid %d in the container); no window appeared yet", a.Command, r.PID), Meta: meta}
	}
	return tools.Result{Content: fmt.Sprintf("launched %s; window %s", a.Command, describeWindows(r.Windows)), Meta: meta}
}

func describeWindows(ws []Window) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = fmt.Sprintf("%q at (%d, %d) %dx%d", w.Title, w.X, w.Y, w.Width, w.Height)
	}
	return strings.Join(parts, "; ")
}

func (d *Desktop) screenshotTool(ctx context.Context, s *session, _ json.RawMessage) tools.Result {
	shot, err := s.screenshot(ctx)
	if err != nil {
		return errResult(err)
	}
	art, err := container.SaveArtifact(d.cfg.Workspace, ScreenshotDir, ".png", shot.PNG)
	if err != nil {
		return errResult(err)
	}
	return tools.Result{
		Content: fmt.Sprintf("screenshot %dx%d saved to %s (sha256 %s)", shot.Width, shot.Height, art.Path, art.SHA256),
		Meta: map[string]any{"path": art.Path, "sha256": art.SHA256, "width": shot.Width, "height": shot.Height,
			"bytes": art.Size, metaImagePNG: base64.StdEncoding.EncodeToString(shot.PNG)},
	}
}

// input is a tool that sends one input op; done describes it in the result.
func (d *Desktop) input(op, done string) func(ctx context.Context, s *session, raw json.RawMessage) tools.Result {
	return func(ctx context.Context, s *session, raw json.RawMessage) tools.Result {
		var args map[string]any
		if err := json.Unmarshal(raw, &args); err != nil {
			return errResult(err)
		}
		for _, k := range []string{"x", "to_x"} {
			if v, ok := args[k].(float64); ok && int(v) >= s.width {
				return errResult(fmt.Errorf("%s %d is outside the %dx%d screen", k, int(v), s.width, s.height))
			}
		}
		for _, k := range []string{"y", "to_y"} {
			if v, ok := args[k].(float64); ok && int(v) >= s.height {
				return errResult(fmt.Errorf("%s %d is outside the %dx%d screen", k, int(v), s.width, s.height))
			}
		}
		start := time.Now()
		if err := s.call(ctx, op, json.RawMessage(raw), nil); err != nil {
			return errResult(err)
		}
		what := done
		switch op {
		case "click", "move", "scroll":
			what = fmt.Sprintf("%s (%v, %v)", done, args["x"], args["y"])
		case "drag":
			what = fmt.Sprintf("%s (%v, %v) to (%v, %v)", done, args["x"], args["y"], args["to_x"], args["to_y"])
		case "type":
			what = fmt.Sprintf("%s %d characters", done, len([]rune(fmt.Sprint(args["text"]))))
		case "key":
			what = fmt.Sprintf("%s %v", done, args["keys"])
		}
		return tools.Result{Content: what, Meta: map[string]any{"took_ms": time.Since(start).Milliseconds()}}
	}
}

func (d *Desktop) cursor(ctx context.Context, s *session, _ json.RawMessage) tools.Result {
	var r cursorResult
	if err := s.call(ctx, "cursor", nil, &r); err != nil {
		return errResult(err)
	}
	return tools.Result{Content: fmt.Sprintf("pointer at (%d, %d)", r.X, r.Y), Meta: map[string]any{"x": r.X, "y": r.Y}}
}

func (d *Desktop) windows(ctx context.Context, s *session, _ json.RawMessage) tools.Result {
	var ws []Window
	if err := s.call(ctx, "windows", nil, &ws); err != nil {
		return errResult(err)
	}
	if len(ws) == 0 {
		return tools.Result{Content: "no windows are mapped", Meta: map[string]any{"windows": ws}}
	}
	return tools.Result{Content: describeWindows(ws), Meta: map[string]any{"windows": ws}}
}

func (d *Desktop) waitForWindow(ctx context.Context, s *session, raw json.RawMessage) tools.Result {
	var a waitArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return errResult(err)
	}
	var w Window
	if err := s.call(ctx, "wait_for_window", a, &w); err != nil {
		return errResult(err)
	}
	return tools.Result{Content: "window " + describeWindows([]Window{w}), Meta: map[string]any{"window": w}}
}
