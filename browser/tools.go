package browser

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/domstorage"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/jail-sandbox/jail/container"
	"github.com/jail-sandbox/jail/policy"
	"github.com/jail-sandbox/jail/tools"
)

// Config is what the browser category takes from the policy and the front end.
type Config struct {
	// Engine is the Docker engine; nil (no client) makes every tool unready.
	Engine *container.Engine
	// Image is the browser image ([docker] browser_image).
	Image string
	// Limits are each container's ([docker] memory, cpus, pids, tmpfs).
	Limits container.Limits
	// Lifecycle and IdleGrace are [docker] lifecycle and idle_grace.
	Lifecycle string
	IdleGrace time.Duration
	// Session names the front end's session in container labels and records.
	Session string
	// Workspace is where screenshots are saved (under ScreenshotDir), by descriptor.
	Workspace string
	// StateDir is jail's own directory for the agents' browser profiles (cookies, storage),
	// outside every sandbox's view; empty keeps no state between containers.
	StateDir string
	// Egress makes the egress of one agent's browser; its Record is set by the session.
	Egress func(agent string) *Egress
	// Evaluate offers browser_evaluate (it still needs a grant: risk exec).
	// Disabled, when set, is why no tool can run (the policy does not enable Docker, or no
	// engine answers); the tools report it from their readiness check.
	Disabled string
}

// ScreenshotDir is where screenshots are saved, relative to the workspace.
const ScreenshotDir = ".jail/browser"

// metaImagePNG is the result meta key the MCP front end turns into image content.
const metaImagePNG = "image_png_base64"

// callTimeout bounds one browser call, a cold container start included.
const callTimeout = 90 * time.Second

// actionSettle is how quiet the page's requests must have been before an action reports
// what changed (and the least it waits): long enough for a click's handler to start its
// requests, short enough to feel immediate. settleMax bounds the wait.
const (
	actionSettle = 50 * time.Millisecond
	settleMax    = 3 * time.Second
)

// maxShotEdge caps a screenshot's longest edge, in pixels: models scale larger images down
// anyway, and each pixel costs context.
const maxShotEdge = 1568

// Browsers is the browser category of one front end: one browser per agent (or per task or
// call, by [docker] lifecycle), each in its own container with its own profile.
type Browsers struct {
	cfg  Config
	pool *container.Pool[*session]

	mu     sync.Mutex
	agents map[string]*sync.Mutex           // one call of an agent at a time: its profile has one user
	tasks  map[string]container.Correlation // the task whose browser an agent kept last ("task")
}

// New makes the category; no container starts before a call.
func New(cfg Config) (*Browsers, error) {
	pool, err := container.NewPool[*session](cfg.Lifecycle, cfg.IdleGrace)
	if err != nil {
		return nil, err
	}
	return &Browsers{cfg: cfg, pool: pool, agents: map[string]*sync.Mutex{}, tasks: map[string]container.Correlation{}}, nil
}

// Close ends every browser.
func (bs *Browsers) Close() { bs.pool.Close() }

// Ready says whether the tools can run here: Docker enabled and answering, the image there.
func (bs *Browsers) Ready() error {
	if bs.cfg.Disabled != "" {
		return errors.New(bs.cfg.Disabled)
	}
	if bs.cfg.Engine == nil {
		return errors.New("no Docker client")
	}
	if err := bs.cfg.Engine.Ready(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return bs.cfg.Engine.ImageReady(ctx, bs.cfg.Image)
}

// profileDir is the agent's profile directory under the state directory, made when missing
// and owned by the user the containers run as (65534 for a root caller). Its name is a hash,
// so no agent name becomes a path.
func (bs *Browsers) profileDir(agent string) (string, error) {
	if bs.cfg.StateDir == "" {
		return "", nil
	}
	h := sha256.Sum256([]byte("jail browser profile\x00" + agent))
	dir := filepath.Join(bs.cfg.StateDir, "agent-"+hex.EncodeToString(h[:8]))
	if err := os.MkdirAll(bs.cfg.StateDir, 0o700); err != nil {
		return "", fmt.Errorf("browser: the profiles' directory: %w", err)
	}
	if err := makeProfile(bs.cfg.StateDir, filepath.Base(dir)); err != nil {
		return "", err
	}
	return dir, nil
}

func (bs *Browsers) turn(agent string) *sync.Mutex {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	m, ok := bs.agents[agent]
	if !ok {
		m = &sync.Mutex{}
		bs.agents[agent] = m
	}
	return m
}

// start launches a session's browser for ids.
func (bs *Browsers) start(ctx context.Context, ids container.Correlation) (*session, error) {
	profile, err := bs.profileDir(ids.Agent)
	if err != nil {
		return nil, err
	}
	s := &session{start: time.Now(), agent: ids.Agent}
	eg := bs.cfg.Egress(ids.Agent)
	eg.Record = s.record
	s.eg = eg
	b, err := Launch(ctx, bs.cfg.Engine, Options{Image: bs.cfg.Image, Limits: bs.cfg.Limits, Profile: profile, IDs: ids, Egress: eg, Workspace: bs.cfg.Workspace})
	if err != nil {
		return nil, err
	}
	s.b = b
	t, err := s.adopt(b.ctx, func() {})
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("browser: the first tab: %w", err)
	}
	s.cur = t
	return s, nil
}

// call is what every tool does around its action: the agent's turn, its session (made on first
// use), the bound, and errors as results.
func (bs *Browsers) call(ctx context.Context, c tools.HostCall, f func(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error)) tools.Result {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = callTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m := bs.turn(c.Context.Agent)
	m.Lock()
	defer m.Unlock()
	ids := container.Correlation{Agent: c.Context.Agent, Session: bs.cfg.Session, Task: c.Context.TaskID, Request: c.Request}
	if c.Context.TraceID != "" {
		ids.Request = c.Context.TraceID
	}
	if bs.cfg.Lifecycle == "task" && bs.cfg.StateDir != "" {
		// One Chromium per profile: the agent's browser of another task ends before this
		// task's starts on the same profile.
		bs.mu.Lock()
		prev, ok := bs.tasks[ids.Agent]
		bs.tasks[ids.Agent] = ids
		bs.mu.Unlock()
		if ok && prev.Task != ids.Task {
			bs.pool.Drop(prev)
		}
	}
	start := time.Now()
	s, release, fresh, err := bs.pool.Acquire(ctx, ids, func(ctx context.Context) (*session, error) { return bs.start(ctx, ids) })
	if err != nil {
		return tools.Result{IsError: true, Content: "jail: " + err.Error()}
	}
	defer release()
	if !fresh {
		s.b.c.Serving(ids)
	}
	t := s.tab()
	if t == nil {
		return tools.Result{IsError: true, Content: "jail: the browser has no tab: open one with browser_tabs"}
	}
	// The action's own bound, under the call's: the tab's context carries the browser.
	actx, cancelA := context.WithTimeout(t.ctx, time.Until(deadline(ctx)))
	defer cancelA()
	stop := context.AfterFunc(ctx, cancelA)
	defer stop()
	res, err := f(actx, s, c.Args)
	if err != nil {
		res = tools.Result{IsError: true, Content: err.Error()}
	}
	// Passkeys a page made during the call are kept at once: the browser may not end
	// cleanly.
	if err := s.authn.save(actx); err != nil && !res.IsError {
		res.Content += "\n[warning: " + err.Error() + "]"
	}
	if res.Meta == nil {
		res.Meta = map[string]any{}
	}
	res.Meta["browser_cold_start"] = fresh
	res.Meta["took_ms"] = time.Since(start).Milliseconds()
	return res
}

func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// Tools are the browser_* tools.
func (bs *Browsers) Tools() []*tools.Tool {
	t := func(name, desc, schema string, f func(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error)) *tools.Tool {
		info := catalogue(name)
		return &tools.Tool{Name: name, Description: desc, Schema: schema, Risk: info.Risk, Capabilities: info.Capabilities,
			Timeout: callTimeout, OutputCap: 30000, Ready: bs.Ready,
			Host: func(ctx context.Context, c tools.HostCall) tools.Result { return bs.call(ctx, c, f) }}
	}
	ref := `"ref":{"type":"string","pattern":"^e[0-9]+$","description":"an element's ref from browser_snapshot"}`
	return append([]*tools.Tool{
		t("browser_navigate", "Load a URL in the browser (http or https, fetched by jail under the network policy), or go back, forward, or reload. Returns the page's title and outline size.",
			`{"type":"object","additionalProperties":false,"properties":{"url":{"type":"string","minLength":1},"action":{"enum":["back","forward","reload"]}}}`, bs.navigate),
		t("browser_snapshot", "An outline of the page's accessibility tree with a ref (e1, e2, ...) per element for the action tools. filter: text to match, or role=ROLE.",
			`{"type":"object","additionalProperties":false,"properties":{"filter":{"type":"string","maxLength":200}}}`, bs.snapshot),
		t("browser_click", "Click an element by its ref from browser_snapshot; returns what changed on the page.",
			`{"type":"object","additionalProperties":false,"required":["ref"],"properties":{`+ref+`,"double":{"type":"boolean"}}}`, bs.click),
		t("browser_hover", "Move the mouse over an element by its ref; returns what changed on the page.",
			`{"type":"object","additionalProperties":false,"required":["ref"],"properties":{`+ref+`}}`, bs.hover),
		t("browser_type", "Replace the text of an editable element (by ref) with text; submit presses Enter after. Returns what changed.",
			`{"type":"object","additionalProperties":false,"required":["ref","text"],"properties":{`+ref+`,"text":{"type":"string","maxLength":100000},"submit":{"type":"boolean"}}}`, bs.typeText),
		t("browser_select", "Choose options of a <select> by ref: values or visible labels. Returns what changed.",
			`{"type":"object","additionalProperties":false,"required":["ref","values"],"properties":{`+ref+`,"values":{"type":"array","minItems":1,"maxItems":100,"items":{"type":"string"}}}}`, bs.selectOption),
		t("browser_press_key", "Press a key in the page: a name (Enter, Tab, Escape, Backspace, ArrowDown, ...) or one character, with modifiers as Control+a. Returns what changed.",
			`{"type":"object","additionalProperties":false,"required":["key"],"properties":{"key":{"type":"string","minLength":1,"maxLength":40}}}`, bs.pressKey),
		t("browser_wait_for", "Wait until text appears (text) or disappears (text_gone) in the page, or for time seconds; at most 30 s.",
			`{"type":"object","additionalProperties":false,"properties":{"text":{"type":"string","minLength":1},"text_gone":{"type":"string","minLength":1},"time":{"type":"number","minimum":0,"maximum":30}}}`, bs.waitFor),
		t("browser_screenshot", "Capture the page as PNG: the viewport, an element (ref) or the full page; saved under .jail/browser with its SHA-256.",
			`{"type":"object","additionalProperties":false,"properties":{`+ref+`,"full_page":{"type":"boolean"}}}`, bs.screenshot),
		t("browser_tabs", "List, open (url), select (index) or close (index) the browser's tabs.",
			`{"type":"object","additionalProperties":false,"required":["action"],"properties":{"action":{"enum":["list","open","select","close"]},"index":{"type":"integer","minimum":0},"url":{"type":"string"}}}`, bs.tabs),
		t("browser_console", "The console messages and errors of the current tab since the last call.",
			`{"type":"object","additionalProperties":false,"properties":{}}`, bs.console),
		t("browser_network", "The requests jail fetched or refused for the browser since the last call, with status or the reason of the refusal.",
			`{"type":"object","additionalProperties":false,"properties":{}}`, bs.network),
		t("browser_upload", "Give a file input (by ref) workspace files: paths relative to the workspace. Returns what changed.",
			`{"type":"object","additionalProperties":false,"required":["ref","paths"],"properties":{`+ref+`,"paths":{"type":"array","minItems":1,"maxItems":20,"items":{"type":"string","minLength":1}}}}`, bs.upload),
		t("browser_storage_get", "Read one localStorage key of one origin (e.g. http://localhost:3000) of the current tab's browser.",
			`{"type":"object","additionalProperties":false,"required":["origin","key"],"properties":{"origin":{"type":"string","minLength":1},"key":{"type":"string","minLength":1,"maxLength":1000}}}`, bs.storageGet),
		t("browser_storage_set", "Set one localStorage key of one origin; the value is at most 64 KiB.",
			`{"type":"object","additionalProperties":false,"required":["origin","key","value"],"properties":{"origin":{"type":"string","minLength":1},"key":{"type":"string","minLength":1,"maxLength":1000},"value":{"type":"string","maxLength":65536}}}`, bs.storageSet),
		t("browser_evaluate", "Run a JavaScript expression in the page and return its JSON value (awaits a promise). Opt-in: needs a grant.",
			`{"type":"object","additionalProperties":false,"required":["expression"],"properties":{"expression":{"type":"string","minLength":1,"maxLength":100000}}}`, bs.evaluate),
	}, bs.webauthnTools(t)...)
}

func catalogue(name string) policy.ToolInfo {
	for _, t := range policy.Catalogue() {
		if t.Name == name {
			return t
		}
	}
	return policy.ToolInfo{Name: name, Risk: policy.Exec, Capabilities: []string{policy.CapBrowser}}
}

func decode[T any](raw json.RawMessage) (T, error) {
	var v T
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	err := json.Unmarshal(raw, &v)
	return v, err
}

// pageState is what an action compares before and after.
type pageState struct {
	url, title string
	doc        string
	lines      []line
}

func state(ctx context.Context) pageState {
	var st pageState
	st.doc, _ = documentID(ctx)
	st.url, _ = chromedp.Run(ctx, chromedp.Location())
	st.title, _ = chromedp.Run(ctx, chromedp.Title())
	st.lines, _ = outline(ctx)
	return st
}

// settle waits for the page after an action: its requests quiet for actionSettle (what the
// action started has been answered), then the document's load; at most settleMax.
func settle(ctx context.Context, b *Browser) {
	wctx, cancel := context.WithTimeout(ctx, settleMax)
	defer cancel()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	start := time.Now()
	for time.Since(start) < actionSettle || b.fetch != nil && !b.fetch.quiet(actionSettle) {
		select {
		case <-t.C:
		case <-wctx.Done():
			return
		}
	}
	// Most actions leave a loaded document: one evaluation says so, where a poll would wait
	// for its first animation frame.
	if done, err := chromedp.Run(wctx, chromedp.Evaluate[bool](`document.readyState === "complete"`)); err == nil && done {
		return
	}
	poll[bool](wctx, `document.readyState === "complete"`)
}

// report is an action's result: what it did and what changed, bounded.
func report(ctx context.Context, s *session, did string, before pageState) tools.Result {
	settle(ctx, s.b)
	t := s.tab()
	after := state(ctx)
	var b strings.Builder
	b.WriteString(did + "\n")
	meta := map[string]any{"url": after.url, "title": after.title}
	if after.doc != before.doc {
		meta["navigated"] = true
		fmt.Fprintf(&b, "the page changed: now %s %q (earlier refs are stale: take a new snapshot)\n", after.url, after.title)
		return tools.Result{Content: b.String(), Meta: meta}
	}
	if after.title != before.title {
		fmt.Fprintf(&b, "title: %q -> %q\n", before.title, after.title)
	}
	t.refs.number(after.doc, after.lines)
	b.WriteString(changes(before.lines, after.lines, 15))
	return tools.Result{Content: b.String(), Meta: meta}
}

func (bs *Browsers) navigate(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	a, err := decode[struct {
		URL    string `json:"url"`
		Action string `json:"action"`
	}](raw)
	if err != nil {
		return tools.Result{}, err
	}
	var act chromedp.Action[chromedp.Void]
	switch {
	case a.URL != "" && a.Action != "":
		return tools.Result{}, errors.New("give url or action, not both")
	case a.Action == "back":
		act = chromedp.NavigateBack()
	case a.Action == "forward":
		act = chromedp.NavigateForward()
	case a.Action == "reload":
		act = chromedp.Reload()
	case webURL(a.URL):
		act = chromedp.Navigate(a.URL)
	default:
		return tools.Result{}, fmt.Errorf("url %q: only http and https URLs are loaded (jail fetches them under the network policy)", a.URL)
	}
	s.mu.Lock()
	mark := len(s.net.items)
	s.mu.Unlock()
	if err := chromedp.Do(ctx, act); err != nil {
		// Say why jail refused the document, when it did.
		s.mu.Lock()
		why := ""
		for _, e := range s.net.items[min(mark, len(s.net.items)):] {
			if e.Kind == "Document" && e.Refused != "" {
				why = e.Refused
			}
		}
		s.mu.Unlock()
		if why != "" {
			return tools.Result{IsError: true, Content: fmt.Sprintf("navigation to %s refused: %s", a.URL, why), Meta: map[string]any{"refused": why}}, nil
		}
		return tools.Result{}, fmt.Errorf("navigate: %w", err)
	}
	st := state(ctx)
	t := s.tab()
	t.refs.number(st.doc, st.lines)
	return tools.Result{Content: fmt.Sprintf("%s %q: %d elements in the outline (browser_snapshot shows them)", st.url, st.title, len(st.lines)),
		Meta: map[string]any{"url": st.url, "title": st.title}}, nil
}

func (bs *Browsers) snapshot(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	a, err := decode[struct {
		Filter string `json:"filter"`
	}](raw)
	if err != nil {
		return tools.Result{}, err
	}
	st := state(ctx)
	t := s.tab()
	t.refs.number(st.doc, st.lines)
	body, cut := render(st.lines, a.Filter, maxSnapshotLines)
	head := fmt.Sprintf("%s %q\n", st.url, st.title)
	return tools.Result{Content: head + body, Meta: map[string]any{"url": st.url, "title": st.title, "elements": len(st.lines), "cut": cut}}, nil
}

// target resolves ref to its element's centre in the viewport, scrolled into view.
func target_(ctx context.Context, t *tab, ref string) (cdp.BackendNodeID, float64, float64, error) {
	doc, err := documentID(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	n, err := t.refs.node(doc, ref)
	if err != nil {
		return 0, 0, 0, err
	}
	if _, err := chromedp.Call(ctx, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: n}); err != nil {
		return 0, 0, 0, errStale(ref, "its element is gone from the page")
	}
	q, err := chromedp.Call(ctx, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: n})
	if err != nil || len(q.Quads) == 0 || len(q.Quads[0]) < 8 {
		return n, 0, 0, fmt.Errorf("ref %s has no box on the page (hidden or not rendered)", ref)
	}
	quad := q.Quads[0]
	x := (quad[0] + quad[2] + quad[4] + quad[6]) / 4
	y := (quad[1] + quad[3] + quad[5] + quad[7]) / 4
	return n, x, y, nil
}

func (bs *Browsers) click(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	a, err := decode[struct {
		Ref    string `json:"ref"`
		Double bool   `json:"double"`
	}](raw)
	if err != nil {
		return tools.Result{}, err
	}
	t := s.tab()
	before := state(ctx)
	_, x, y, err := target_(ctx, t, a.Ref)
	if err != nil {
		return tools.Result{}, err
	}
	clicks := int64(1)
	if a.Double {
		clicks = 2
	}
	for _, ev := range []input.DispatchMouseEventParams{
		{Type: input.DispatchMouseEventTypeMouseMoved, X: x, Y: y},
		{Type: input.DispatchMouseEventTypeMousePressed, X: x, Y: y, Button: input.MouseButtonLeft, Buttons: 1, ClickCount: clicks},
		{Type: input.DispatchMouseEventTypeMouseReleased, X: x, Y: y, Button: input.MouseButtonLeft, ClickCount: clicks},
	} {
		if _, err := chromedp.Call(ctx, input.DispatchMouseEvent, ev); err != nil {
			return tools.Result{}, fmt.Errorf("click %s: %w", a.Ref, err)
		}
	}
	return report(ctx, s, "clicked "+describe(before, a.Ref), before), nil
}

// describe names ref's element as the snapshot shows it.
func describe(st pageState, ref string) string {
	for _, l := range st.lines {
		if l.ref == ref {
			return ref + " (" + strings.TrimPrefix(strings.TrimSpace(l.plain()), "- ") + ")"
		}
	}
	return ref
}

func (bs *Browsers) hover(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	a, err := decode[struct {
		Ref string `json:"ref"`
	}](raw)
	if err != nil {
		return tools.Result{}, err
	}
	t := s.tab()
	before := state(ctx)
	_, x, y, err := target_(ctx, t, a.Ref)
	if err != nil {
		return tools.Result{}, err
	}
	if _, err := chromedp.Call(ctx, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: input.DispatchMouseEventTypeMouseMoved, X: x, Y: y}); err != nil {
		return tools.Result{}, err
	}
	return report(ctx, s, "hovered over "+describe(before, a.Ref), before), nil
}

// callOn runs fn (a function declaration) with the ref's element as this.
func callOn[T any](ctx context.Context, n cdp.BackendNodeID, fn string, args ...any) (T, error) {
	var zero T
	r, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: n})
	if err != nil || r.Object == nil {
		return zero, fmt.Errorf("its element is gone from the page")
	}
	var cargs []*runtime.CallArgument
	for _, a := range args {
		b, _ := json.Marshal(a)
		cargs = append(cargs, &runtime.CallArgument{Value: b})
	}
	yes := true
	res, err := chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{FunctionDeclaration: fn, ObjectID: r.Object.ObjectID,
		Arguments: cargs, ReturnByValue: &yes, AwaitPromise: &yes, UserGesture: &yes})
	if err != nil {
		return zero, err
	}
	if res.ExceptionDetails != nil {
		return zero, fmt.Errorf("%s", res.ExceptionDetails.Text)
	}
	var v T
	if res.Result != nil && len(res.Result.Value) > 0 {
		if err := json.Unmarshal(res.Result.Value, &v); err != nil {
			return zero, err
		}
	}
	return v, nil
}

func (bs *Browsers) typeText(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	a, err := decode[struct {
		Ref    string `json:"ref"`
		Text   string `json:"text"`
		Submit bool   `json:"submit"`
	}](raw)
	if err != nil {
		return tools.Result{}, err
	}
	t := s.tab()
	before := state(ctx)
	n, _, _, err := target_(ctx, t, a.Ref)
	if err != nil {
		return tools.Result{}, err
	}
	if _, err := chromedp.Call(ctx, dom.Focus, dom.FocusParams{BackendNodeID: n}); err != nil {
		return tools.Result{}, fmt.Errorf("ref %s cannot take text (focus: %v)", a.Ref, err)
	}
	// Select what is there, so the text replaces it, as a person would.
	editable, err := callOn[bool](ctx, n, `function() {
  if (this instanceof HTMLInputElement || this instanceof HTMLTextAreaElement) { this.select(); return !this.readOnly && !this.disabled; }
  if (this.isContentEditable) { const r = document.createRange(); r.selectNodeContents(this); const s = getSelection(); s.removeAllRanges(); s.addRange(r); return true; }
  return false; }`)
	if err != nil {
		return tools.Result{}, errStale(a.Ref, err.Error())
	}
	if !editable {
		return tools.Result{}, fmt.Errorf("ref %s is not an editable element (an input, a text area or contenteditable)", a.Ref)
	}
	if a.Text == "" {
		if err := key(ctx, "Backspace"); err != nil {
			return tools.Result{}, err
		}
	} else if _, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: a.Text}); err != nil {
		return tools.Result{}, err
	}
	did := fmt.Sprintf("typed %d characters into %s", len([]rune(a.Text)), describe(before, a.Ref))
	if a.Submit {
		if err := key(ctx, "Enter"); err != nil {
			return tools.Result{}, err
		}
		did += " and pressed Enter"
	}
	return report(ctx, s, did, before), nil
}

func (bs *Browsers) selectOption(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	a, err := decode[struct {
		Ref    string   `json:"ref"`
		Values []string `json:"values"`
	}](raw)
	if err != nil {
		return tools.Result{}, err
	}
	t := s.tab()
	before := state(ctx)
	n, _, _, err := target_(ctx, t, a.Ref)
	if err != nil {
		return tools.Result{}, err
	}
	chosen, err := callOn[[]string](ctx, n, `function(want) {
  if (!(this instanceof HTMLSelectElement)) throw new Error("not a <select>");
  const match = o => want.includes(o.value) || want.includes(o.label);
  const got = [];
  if (this.multiple) {
    for (const o of this.options) { o.selected = match(o); if (o.selected) got.push(o.label); }
  } else {
    const o = Array.from(this.options).find(match);
    if (o) { this.value = o.value; got.push(o.label); }
  }
  this.dispatchEvent(new Event("input", {bubbles: true})); this.dispatchEvent(new Event("change", {bubbles: true}));
  return got; }`, a.Values)
	if err != nil {
		return tools.Result{}, fmt.Errorf("select on %s: %v", a.Ref, err)
	}
	if len(chosen) == 0 {
		return tools.Result{}, fmt.Errorf("no option of %s has the value or label %q", a.Ref, a.Values)
	}
	return report(ctx, s, fmt.Sprintf("selected %q in %s", chosen, describe(before, a.Ref)), before), nil
}

// keys are the named keys press_key takes: key, code and Windows key code.
var keys = map[string]struct {
	code string
	vk   int64
	text string
}{
	"Enter": {"Enter", 13, "\r"}, "Tab": {"Tab", 9, ""}, "Escape": {"Escape", 27, ""}, "Backspace": {"Backspace", 8, ""},
	"Delete": {"Delete", 46, ""}, "ArrowUp": {"ArrowUp", 38, ""}, "ArrowDown": {"ArrowDown", 40, ""},
	"ArrowLeft": {"ArrowLeft", 37, ""}, "ArrowRight": {"ArrowRight", 39, ""}, "Home": {"Home", 36, ""}, "End": {"End", 35, ""},
	"PageUp": {"PageUp", 33, ""}, "PageDown": {"PageDown", 34, ""}, "Space": {"Space", 32, " "}, " ": {"Space", 32, " "},
}

var modifiers = map[string]int64{"Alt": 1, "Control": 2, "Ctrl": 2, "Meta": 4, "Shift": 8}

// key presses one key, with modifiers written as Control+Shift+x.
func key(ctx context.Context, spec string) error {
	parts := strings.Split(spec, "+")
	name := parts[len(parts)-1]
	if name == "" && len(parts) > 1 { // "Control++"
		name = "+"
	}
	var mods int64
	for _, m := range parts[:len(parts)-1] {
		bit, ok := modifiers[m]
		if !ok {
			return fmt.Errorf("key %q: unknown modifier %q (Alt, Control, Meta, Shift)", spec, m)
		}
		mods |= bit
	}
	down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Modifiers: mods, Key: name}
	if k, ok := keys[name]; ok {
		down.Code, down.WindowsVirtualKeyCode, down.Text = k.code, k.vk, k.text
		if name == "Space" || name == " " {
			down.Key = " "
		}
	} else if r := []rune(name); len(r) == 1 {
		down.Text = name
		if c := strings.ToUpper(name); len(c) == 1 && c[0] >= 'A' && c[0] <= 'Z' {
			down.Code, down.WindowsVirtualKeyCode = "Key"+c, int64(c[0])
		} else if c[0] >= '0' && c[0] <= '9' {
			down.Code, down.WindowsVirtualKeyCode = "Digit"+c, int64(c[0])
		}
	} else {
		return fmt.Errorf("key %q: not a key name jail knows (Enter, Tab, Escape, Backspace, Delete, Arrow*, Home, End, PageUp, PageDown, Space) or one character", spec)
	}
	if mods&(1|2|4) != 0 {
		down.Text = "" // a shortcut, not text
	}
	if down.Text == "" {
		down.Type = input.DispatchKeyEventTypeRawKeyDown
	}
	up := down
	up.Type, up.Text = input.DispatchKeyEventTypeKeyUp, ""
	for _, ev := range []input.DispatchKeyEventParams{down, up} {
		if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, ev); err != nil {
			return fmt.Errorf("press %s: %w", spec, err)
		}
	}
	return nil
}

func (bs *Browsers) pressKey(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	a, err := decode[struct {
		Key string `json:"key"`
	}](raw)
	if err != nil {
		return tools.Result{}, err
	}
	before := state(ctx)
	if err := key(ctx, a.Key); err != nil {
		return tools.Result{}, err
	}
	return report(ctx, s, "pressed "+a.Key, before), nil
}

func (bs *Browsers) waitFor(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	a, err := decode[struct {
		Text     string   `json:"text"`
		TextGone string   `json:"text_gone"`
		Time     *float64 `json:"time"`
	}](raw)
	if err != nil {
		return tools.Result{}, err
	}
	start := time.Now()
	wait := 30 * time.Second
	if a.Time != nil {
		wait = time.Duration(*a.Time * float64(time.Second))
	}
	if a.Text == "" && a.TextGone == "" {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return tools.Result{}, ctx.Err()
		}
		return tools.Result{Content: fmt.Sprintf("waited %s", wait)}, nil
	}
	expr, what := "", ""
	if a.Text != "" {
		b, _ := json.Marshal(a.Text)
		expr, what = fmt.Sprintf("document.body && document.body.innerText.includes(%s)", b), fmt.Sprintf("%q appeared", a.Text)
	} else {
		b, _ := json.Marshal(a.TextGone)
		expr, what = fmt.Sprintf("!document.body || !document.body.innerText.includes(%s)", b), fmt.Sprintf("%q is gone", a.TextGone)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if _, err := poll[bool](wctx, expr); err != nil {
		return tools.Result{IsError: true, Content: fmt.Sprintf("not within %s: %s did not happen", wait, strings.TrimSuffix(what, ""))}, nil
	}
	return tools.Result{Content: fmt.Sprintf("%s after %s", what, time.Since(start).Round(time.Millisecond))}, nil
}

func (bs *Browsers) screenshot(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	a, err := decode[struct {
		Ref      string `json:"ref"`
		FullPage bool   `json:"full_page"`
	}](raw)
	if err != nil {
		return tools.Result{}, err
	}
	m, err := chromedp.Call(ctx, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return tools.Result{}, err
	}
	vp := m.CSSLayoutViewport
	clip := &page.Viewport{X: float64(vp.PageX), Y: float64(vp.PageY), Width: float64(vp.ClientWidth), Height: float64(vp.ClientHeight), Scale: 1}
	beyond := false
	switch {
	case a.Ref != "" && a.FullPage:
		return tools.Result{}, errors.New("give ref or full_page, not both")
	case a.Ref != "":
		n, _, _, err := target_(ctx, s.tab(), a.Ref)
		if err != nil {
			return tools.Result{}, err
		}
		box, err := callOn[struct{ X, Y, W, H float64 }](ctx, n, `function() { const r = this.getBoundingClientRect(); return {X: r.x + scrollX, Y: r.y + scrollY, W: r.width, H: r.height}; }`)
		if err != nil || box.W <= 0 || box.H <= 0 {
			return tools.Result{}, fmt.Errorf("ref %s has no box to capture", a.Ref)
		}
		clip = &page.Viewport{X: box.X, Y: box.Y, Width: box.W, Height: box.H, Scale: 1}
		beyond = true
	case a.FullPage:
		cs := m.CSSContentSize
		clip = &page.Viewport{X: 0, Y: 0, Width: cs.Width, Height: math.Min(cs.Height, 16384), Scale: 1}
		beyond = true
	}
	if long := math.Max(clip.Width, clip.Height); long > maxShotEdge {
		clip.Scale = maxShotEdge / long
	}
	shot, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng, Clip: clip, CaptureBeyondViewport: &beyond})
	if err != nil {
		return tools.Result{}, fmt.Errorf("capture: %w", err)
	}
	png := shot.Data
	art, err := container.SaveArtifact(bs.cfg.Workspace, ScreenshotDir, ".png", png)
	if err != nil {
		return tools.Result{}, err
	}
	w, h := int(math.Round(clip.Width*clip.Scale)), int(math.Round(clip.Height*clip.Scale))
	return tools.Result{Content: fmt.Sprintf("screenshot %dx%d saved to %s (sha256 %s)", w, h, art.Path, art.SHA256),
		Meta: map[string]any{"path": art.Path, "sha256": art.SHA256, "width": w, "height": h, "bytes": art.Size,
			metaImagePNG: base64.StdEncoding.EncodeToString(png)}}, nil
}

func (bs *Browsers) tabs(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	a, err := decode[struct {
		Action string `json:"action"`
		Index  *int   `json:"index"`
		URL    string `json:"url"`
	}](raw)
	if err != nil {
		return tools.Result{}, err
	}
	ts, err := s.pages(ctx)
	if err != nil {
		return tools.Result{}, err
	}
	pick := func() (*tab, error) {
		if a.Index == nil || *a.Index >= len(ts) {
			return nil, fmt.Errorf("%s needs an index of a tab (0 to %d; browser_tabs list shows them)", a.Action, len(ts)-1)
		}
		return ts[*a.Index], nil
	}
	switch a.Action {
	case "open":
		if a.URL != "" && !webURL(a.URL) {
			return tools.Result{}, fmt.Errorf("url %q: only http and https URLs are loaded", a.URL)
		}
		tctx, cancel := chromedp.NewContext(s.b.ctx)
		t, err := s.adopt(tctx, cancel)
		if err != nil {
			cancel()
			return tools.Result{}, fmt.Errorf("open a tab: %w", err)
		}
		s.mu.Lock()
		s.cur = t
		s.mu.Unlock()
		if a.URL != "" {
			if err := chromedp.Do(withDeadline(tctx, ctx), chromedp.Navigate(a.URL)); err != nil {
				return tools.Result{}, fmt.Errorf("open %s: %w", a.URL, err)
			}
		}
	case "select":
		t, err := pick()
		if err != nil {
			return tools.Result{}, err
		}
		s.mu.Lock()
		s.cur = t
		s.mu.Unlock()
		chromedp.CallBrowser(ctx, target.ActivateTarget, target.ActivateTargetParams{TargetID: t.id})
	case "close":
		t, err := pick()
		if err != nil {
			return tools.Result{}, err
		}
		if len(ts) == 1 {
			return tools.Result{}, errors.New("the last tab stays open (navigate it instead)")
		}
		if _, err := chromedp.CallBrowser(ctx, target.CloseTarget, target.CloseTargetParams{TargetID: t.id}); err != nil {
			return tools.Result{}, err
		}
		t.cancel()
	case "list":
	}
	ts, err = s.pages(ctx)
	if err != nil {
		return tools.Result{}, err
	}
	var b strings.Builder
	infos, _ := chromedp.Targets(ctx)
	for i, t := range ts {
		mark := " "
		if t == s.tab() {
			mark = "*"
		}
		title, u := "", ""
		for _, in := range infos {
			if in.TargetID == t.id {
				title, u = in.Title, in.URL
			}
		}
		fmt.Fprintf(&b, "%s %d %s %q\n", mark, i, u, clip(title, 100))
	}
	return tools.Result{Content: b.String(), Meta: map[string]any{"tabs": len(ts)}}, nil
}

// withDeadline is ctx bounded by the deadline of bound.
func withDeadline(ctx, bound context.Context) context.Context {
	c, cancel := context.WithDeadline(ctx, deadline(bound))
	context.AfterFunc(c, cancel)
	return c
}

func (bs *Browsers) console(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	s.mu.Lock()
	msgs, dropped := s.cur.console.take()
	s.mu.Unlock()
	return tools.Result{Content: sinceLast(msgs, dropped, "messages", "no console messages since the last call"),
		Meta: map[string]any{"messages": len(msgs), "dropped": dropped}}, nil
}

func (bs *Browsers) network(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	s.mu.Lock()
	es, dropped := s.net.take()
	s.mu.Unlock()
	refused := 0
	lines := make([]string, 0, len(es))
	for _, e := range es {
		if e.Refused != "" {
			refused++
			lines = append(lines, fmt.Sprintf("REFUSED %s %s (%s): %s", e.Method, clip(e.URL, 300), e.Kind, e.Refused))
			continue
		}
		lines = append(lines, fmt.Sprintf("%d %s %s (%s) %d bytes %s", e.Status, e.Method, clip(e.URL, 300), e.Kind, e.Bytes, e.Duration.Round(time.Millisecond)))
	}
	return tools.Result{Content: sinceLast(lines, dropped, "requests", "no requests since the last call"),
		Meta: map[string]any{"requests": len(es), "refused": refused, "dropped": dropped}}, nil
}

// maxSinceLast bounds what browser_console and browser_network return.
const maxSinceLast = 30000

// sinceLast is what a buffer of the session held since the last call
// (console messages, requests), one line each: what it dropped first,
// then the lines while they fit in maxSinceLast, and how many were cut;
// none says so.
func sinceLast(lines []string, dropped int, what, none string) string {
	var b strings.Builder
	if dropped > 0 {
		fmt.Fprintf(&b, "[%d earlier %s dropped]\n", dropped, what)
	}
	for i, l := range lines {
		if b.Len()+len(l) > maxSinceLast {
			fmt.Fprintf(&b, "... [%d more %s cut]\n", len(lines)-i, what)
			break
		}
		b.WriteString(l + "\n")
	}
	if len(lines) == 0 && dropped == 0 {
		b.WriteString(none + "\n")
	}
	return b.String()
}

// webURL reports whether u is a URL the browser loads: http or https,
// fetched by jail under the network policy.
func webURL(u string) bool {
	return strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")
}

// bounded cuts v to max bytes with jail's marker; cut is how many it left out.
func bounded(v string, max int) (out string, cut int) {
	if len(v) <= max {
		return v, 0
	}
	return v[:max] + fmt.Sprintf("... [%d chars truncated]", len(v)-max), len(v) - max
}

func (bs *Browsers) upload(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	a, err := decode[struct {
		Ref   string   `json:"ref"`
		Paths []string `json:"paths"`
	}](raw)
	if err != nil {
		return tools.Result{}, err
	}
	if bs.cfg.Workspace == "" {
		return tools.Result{}, errors.New("upload: this browser has no workspace bound")
	}
	// The paths name files of the workspace as the container sees it (bound read-only at the
	// same path): Chromium opens them there; what a symlink in the workspace points to is
	// resolved inside the container, where nothing of the host but the workspace is.
	var files []string
	for _, p := range a.Paths {
		c := filepath.Clean(p)
		if filepath.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") || c == "." {
			return tools.Result{}, fmt.Errorf("upload: %q must be a file path relative to the workspace (no .. and not absolute)", p)
		}
		files = append(files, filepath.Join(bs.cfg.Workspace, c))
	}
	t := s.tab()
	before := state(ctx)
	n, _, _, err := target_(ctx, t, a.Ref)
	if err != nil {
		return tools.Result{}, err
	}
	isFile, err := callOn[bool](ctx, n, `function() { return this instanceof HTMLInputElement && this.type === "file"; }`)
	if err != nil {
		return tools.Result{}, errStale(a.Ref, err.Error())
	}
	if !isFile {
		return tools.Result{}, fmt.Errorf("ref %s is not a file input", a.Ref)
	}
	if _, err := chromedp.Call(ctx, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: files, BackendNodeID: n}); err != nil {
		return tools.Result{}, fmt.Errorf("upload to %s: %w", a.Ref, err)
	}
	return report(ctx, s, fmt.Sprintf("gave %s %d files: %s", describe(before, a.Ref), len(files), strings.Join(a.Paths, ", ")), before), nil
}

// storageOf is the localStorage of origin, its domain enabled for the calls on it.
func storageOf(ctx context.Context, origin string) (*domstorage.StorageID, error) {
	if !webURL(origin) {
		return nil, fmt.Errorf("origin %q: give scheme, host and port, e.g. http://localhost:3000", origin)
	}
	chromedp.Call(ctx, domstorage.Enable, cdp.Empty{})
	return &domstorage.StorageID{SecurityOrigin: strings.TrimSuffix(origin, "/"), IsLocalStorage: true}, nil
}

// maxStorageValue bounds a storage value returned or set.
const maxStorageValue = 64 << 10

func (bs *Browsers) storageGet(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	a, err := decode[struct{ Origin, Key string }](raw)
	if err != nil {
		return tools.Result{}, err
	}
	id, err := storageOf(ctx, a.Origin)
	if err != nil {
		return tools.Result{}, err
	}
	items, err := chromedp.Call(ctx, domstorage.GetDOMStorageItems, domstorage.GetDOMStorageItemsParams{StorageID: id})
	if err != nil {
		return tools.Result{}, fmt.Errorf("read localStorage of %s: %w", a.Origin, err)
	}
	for _, kv := range items.Entries {
		if len(kv) == 2 && kv[0] == a.Key {
			meta := map[string]any{"found": true, "bytes": len(kv[1])}
			v, cut := bounded(kv[1], maxStorageValue)
			if cut > 0 {
				meta["truncated_bytes"] = cut
			}
			return tools.Result{Content: v, Meta: meta}, nil
		}
	}
	return tools.Result{Content: fmt.Sprintf("no key %q in the localStorage of %s", a.Key, a.Origin), Meta: map[string]any{"found": false}}, nil
}

func (bs *Browsers) storageSet(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	a, err := decode[struct{ Origin, Key, Value string }](raw)
	if err != nil {
		return tools.Result{}, err
	}
	id, err := storageOf(ctx, a.Origin)
	if err != nil {
		return tools.Result{}, err
	}
	if _, err := chromedp.Call(ctx, domstorage.SetDOMStorageItem, domstorage.SetDOMStorageItemParams{StorageID: id, Key: a.Key, Value: a.Value}); err != nil {
		return tools.Result{}, fmt.Errorf("set localStorage of %s: %w", a.Origin, err)
	}
	return tools.Result{Content: fmt.Sprintf("set %q in the localStorage of %s (%d bytes)", a.Key, a.Origin, len(a.Value))}, nil
}

// maxEvalResult bounds browser_evaluate's JSON result.
const maxEvalResult = 30000

func (bs *Browsers) evaluate(ctx context.Context, s *session, raw json.RawMessage) (tools.Result, error) {
	a, err := decode[struct{ Expression string }](raw)
	if err != nil {
		return tools.Result{}, err
	}
	yes := true
	r, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: a.Expression, ReturnByValue: &yes, AwaitPromise: &yes, UserGesture: &yes})
	if err != nil {
		return tools.Result{}, fmt.Errorf("evaluate: %w", err)
	}
	if r.ExceptionDetails != nil {
		msg := r.ExceptionDetails.Text
		if r.ExceptionDetails.Exception != nil && r.ExceptionDetails.Exception.Description != "" {
			msg = r.ExceptionDetails.Exception.Description
		}
		return tools.Result{IsError: true, Content: "exception: " + clip(msg, 2000)}, nil
	}
	out := "undefined"
	if r.Result != nil && len(r.Result.Value) > 0 {
		out = string(r.Result.Value)
	}
	meta := map[string]any{"bytes": len(out)}
	out, cut := bounded(out, maxEvalResult)
	if cut > 0 {
		meta["truncated_chars"] = cut
	}
	return tools.Result{Content: out, Meta: meta}, nil
}
