//go:build linux

package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// Background processes (docs/background.md): a bash call with
// run_in_background takes a held sandbox of its own, gives it the script
// and returns at once. The sandbox lives on, outside every call, until
// bash_kill, the process's own end, or the server's Close; the server is
// the session (jail serve's input, jail mcp's connection). Only the
// caller that started one (the same agent and role) can read or end it.

// bgKeep is how many bytes of each stream a background process keeps
// unread: a server writing a log line per request must not grow the
// supervisor without bound, and what scrolled past is counted.
const bgKeep = 1 << 20

// bgEndedKept bounds the ended processes kept for their last output;
// beyond it the oldest ended one is forgotten.
const bgEndedKept = 16

// bgKillWait is how long bash_kill waits for a killed sandbox to be gone
// before it reports the process killed all the same: SIGKILL of pid 1
// takes the pid namespace down with it.
const bgKillWait = 5 * time.Second

// background is a server's background processes.
type background struct {
	// max bounds the processes alive at once (policy limits.background);
	// zero or less refuses them, for the reason in off.
	max int
	off string

	mu    sync.Mutex
	next  int
	procs []*bgProc // in start order
	done  bool      // closed: no more starts
}

// bgProc is one background process.
type bgProc struct {
	id      string
	owner   string
	command string
	started time.Time
	sh      *Shell
	out     [2]*bgBuf // stdout, stderr

	// relay is the supervisor's end of the process's loopback relay (nil: none); relayMu
	// makes its exchanges one at a time.
	relay   *os.File
	relayMu sync.Mutex

	ended chan struct{} // closed once the sandbox ended and its output is in
	// Set before ended closes.
	code     int
	killed   atomic.Bool
	err      error
	endedAt  time.Time
	killOnce sync.Once
}

func newBackground(max int, off string) *background {
	return &background{max: max, off: off}
}

// owner is who may see a background process: the agent and role that
// started it.
func owner(cc CallContext) string { return cc.Agent + "\x00" + cc.Role }

// alive counts the processes not yet ended; b.mu is held.
func (b *background) alive() int {
	n := 0
	for _, p := range b.procs {
		select {
		case <-p.ended:
		default:
			n++
		}
	}
	return n
}

// start runs script in sh, which the caller took for it and which start
// now owns, and returns the process. The slot is counted under b.mu, so
// concurrent starts cannot pass the bound together.
func (b *background) start(cc CallContext, command, script, relay string, sh *Shell) (*bgProc, error) {
	b.mu.Lock()
	switch {
	case b.done:
		b.mu.Unlock()
		sh.Close()
		return nil, errShellsClosed
	case b.alive() >= b.max:
		b.mu.Unlock()
		sh.Close()
		return nil, fmt.Errorf("%d background processes are running, the most limits.background = %d allows: end one with bash_kill first", b.max, b.max)
	}
	b.next++
	p := &bgProc{id: "bg-" + strconv.Itoa(b.next), owner: owner(cc), command: command, started: time.Now(), sh: sh,
		out: [2]*bgBuf{{}, {}}, ended: make(chan struct{})}
	if relay != "" {
		p.relay = sh.Out[2]
	}
	b.procs = append(b.procs, p)
	b.mu.Unlock()

	// A background process does not move the session's directory or
	// variables: its fd 3 is the loopback relay's socket, when it has one,
	// and anything else written there is dropped.
	outs := sh.Out
	if p.relay != nil {
		outs[2] = nil
	}
	wait := copyOut(outs, [3]io.Writer{p.out[0], p.out[1], io.Discard})
	sh.Out = [3]*os.File{}
	script_ := sh.Script
	sh.Script = nil
	go func() {
		// Lifetime: until the shell has read its script or ended.
		io.WriteString(script_, script)
		script_.Close()
	}()
	go func() {
		// Lifetime: until the sandbox ends (bash_kill and Close kill it).
		res, err := sh.Cmd.Wait()
		wait()
		sh.Close() // frees the placeholders and the network proxy
		if p.relay != nil {
			p.relayMu.Lock()
			p.relay.Close()
			p.relayMu.Unlock()
		}
		p.err = err
		if res != nil {
			p.code = res.ExitCode
		}
		p.endedAt = time.Now()
		close(p.ended)
		b.forget()
	}()
	return p, nil
}

// forget drops the oldest ended processes beyond bgEndedKept.
func (b *background) forget() {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.procs) - b.alive()
	b.procs = slices.DeleteFunc(b.procs, func(p *bgProc) bool {
		if n <= bgEndedKept {
			return false
		}
		select {
		case <-p.ended:
			n--
			return true
		default:
			return false
		}
	})
}

// dial connects to port on the loopback of one of agent's running background processes
// (whichever listens there), through its relay.
func (b *background) dial(ctx context.Context, agent string, port int) (net.Conn, error) {
	b.mu.Lock()
	var procs []*bgProc
	for _, p := range b.procs {
		select {
		case <-p.ended:
			continue
		default:
		}
		if strings.HasPrefix(p.owner, agent+"\x00") && p.relay != nil {
			procs = append(procs, p)
		}
	}
	b.mu.Unlock()
	if len(procs) == 0 {
		return nil, fmt.Errorf("localhost:%d: this session runs no background process (bash with run_in_background) to serve it", port)
	}
	var errs []string
	for _, p := range procs {
		p.relayMu.Lock()
		c, err := relayDial(ctx, p.relay, port)
		p.relayMu.Unlock()
		if err == nil {
			return c, nil
		}
		errs = append(errs, p.id+": "+err.Error())
	}
	return nil, fmt.Errorf("localhost:%d: no background process of this session listens there (%s)", port, strings.Join(errs, "; "))
}

// DialBackground connects to port on the loopback of one of the agent's background processes
// (bash run_in_background): how the browser's http://localhost:PORT reaches the agent's own dev
// server and nothing else.
func (s *Server) DialBackground(ctx context.Context, agent string, port int) (net.Conn, error) {
	s.init()
	return s.bg.dial(ctx, agent, port)
}

// lookup finds the caller's process by id. Another caller's process is
// reported absent, not refused: its existence is not the caller's to know.
func (b *background) lookup(cc CallContext, id string) (*bgProc, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.procs {
		if p.id == id && p.owner == owner(cc) {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no background process %q of this caller (bash_output without an id lists them)", id)
}

func (b *background) remove(p *bgProc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.procs = slices.DeleteFunc(b.procs, func(q *bgProc) bool { return q == p })
}

// list are the caller's processes, in start order.
func (b *background) list(cc CallContext) []*bgProc {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*bgProc
	for _, p := range b.procs {
		if p.owner == owner(cc) {
			out = append(out, p)
		}
	}
	return out
}

// kill ends p's sandbox (SIGKILL to its init: the pid namespace, and every
// process the command started, go with it) and waits for its end.
func (p *bgProc) kill(wait time.Duration) bool {
	p.killOnce.Do(func() {
		select {
		case <-p.ended:
			return
		default:
		}
		p.killed.Store(true)
		p.sh.Cmd.Signal(unix.SIGKILL)
	})
	select {
	case <-p.ended:
		return true
	case <-time.After(wait):
		return false
	}
}

// close kills every process and waits for them: they end with the session.
func (b *background) close() {
	b.mu.Lock()
	b.done = true
	procs := slices.Clone(b.procs)
	b.mu.Unlock()
	for _, p := range procs {
		p.kill(0)
	}
	for _, p := range procs {
		<-p.ended
	}
}

// status is one line saying how p is doing.
func (p *bgProc) status() (state string, line string) {
	select {
	case <-p.ended:
		switch {
		case p.err != nil:
			return "failed", fmt.Sprintf("failed after %s: %v", p.endedAt.Sub(p.started).Round(time.Millisecond), p.err)
		case p.killed.Load():
			return "killed", fmt.Sprintf("killed by bash_kill after %s", p.endedAt.Sub(p.started).Round(time.Millisecond))
		default:
			return "exited", fmt.Sprintf("exited with code %d after %s", p.code, p.endedAt.Sub(p.started).Round(time.Millisecond))
		}
	default:
		return "running", fmt.Sprintf("running for %s", time.Since(p.started).Round(time.Second))
	}
}

// bgBuf keeps the last bgKeep bytes written to a stream and where the
// reader got to.
type bgBuf struct {
	mu      sync.Mutex
	buf     []byte // the bytes from written-len(buf) to written
	written int64  // bytes written in all
	read    int64  // bytes handed to bash_output so far (or skipped)
}

// Write never fails and never blocks the process on its reader.
func (b *bgBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.written += int64(len(p))
	if len(p) >= bgKeep {
		b.buf = append(b.buf[:0], p[len(p)-bgKeep:]...)
		return len(p), nil
	}
	if over := len(b.buf) + len(p) - bgKeep; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// next hands out up to n unread bytes, cut at a character boundary, and
// says how many unread bytes scrolled away before them and how many are
// left after them.
func (b *bgBuf) next(n int) (s string, lost, left int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	first := b.written - int64(len(b.buf))
	if b.read < first {
		lost, b.read = first-b.read, first
	}
	rest := b.buf[b.read-first:]
	take := min(len(rest), n)
	// Back up to the start of a character, unless that takes nothing.
	for take < len(rest) && take > 0 && !utf8.RuneStart(rest[take]) {
		take--
	}
	if take == 0 && len(rest) > 0 && n > 0 {
		take = min(len(rest), n)
	}
	b.read += int64(take)
	return strings.ToValidUTF8(string(rest[:take]), "\uFFFD"), lost, int64(len(rest) - take)
}

// runInBackground reports whether a bash call asks to run in the
// background.
func runInBackground(args json.RawMessage) bool {
	var a struct {
		RunInBackground bool `json:"run_in_background"`
	}
	json.Unmarshal(args, &a)
	return a.RunInBackground
}

// startBackground runs a bash call's command in a held sandbox of its own
// and returns at once with the process's id.
func (s *Server) startBackground(ctx context.Context, readOnly bool, cc CallContext, req callRequest) Result {
	if s.bg.max <= 0 {
		return errorf("bash: run_in_background is refused here: %s", s.bg.off)
	}
	a, err := decode[struct{ Command string }](req.Args)
	if err != nil {
		return errorf("%v", err)
	}
	if strings.ContainsRune(a.Command, 0) {
		return errorf("bash: the command contains a NUL byte (\\u0000), which no shell can run: remove it")
	}
	// Checked before a sandbox is taken, and again when it is counted.
	s.bg.mu.Lock()
	full := s.bg.alive() >= s.bg.max
	s.bg.mu.Unlock()
	if full {
		return errorf("bash: %d background processes are running, the most limits.background = %d allows: end one with bash_kill first", s.bg.max, s.bg.max)
	}
	sh, err := s.shells.takeLong(ctx, readOnly)
	if err != nil {
		return errorf("bash: %v", err)
	}
	var cwd string
	var env []string
	if req.Session != nil {
		cwd, env = req.Session.Cwd, req.Session.Env
	}
	relay := sh.relayBinary()
	p, err := s.bg.start(cc, a.Command, bashScript(a.Command, cwd, sh.base(), env, relay), relay, sh)
	if err != nil {
		return errorf("bash: %v", err)
	}
	return Result{Content: fmt.Sprintf("started background process %s; bash_output with id %q reads its output, bash_kill ends it", p.id, p.id),
		Meta: map[string]any{"bash_id": p.id, "background": true}}
}

// maxBashOutputWait bounds bash_output's wait for new output.
const maxBashOutputWait = 30 * time.Second

func bashOutputTool() *Tool {
	return &Tool{
		Name:        "bash_output",
		Description: "Read the new output of a background bash process (run_in_background) and whether it still runs. Without id: list them. wait: seconds to wait for output or its end.",
		Schema: `{"type":"object","additionalProperties":false,"properties":{
"id":{"type":"string","minLength":1,"description":"the bash_id run_in_background returned"},
"wait":{"type":"number","minimum":0,"maximum":30,"description":"seconds to wait for new output or the process's end"}}}`,
		Risk:      0,
		OutputCap: 30000,
		Host: func(ctx context.Context, c HostCall) Result {
			a, err := decode[struct {
				ID   string
				Wait float64
			}](c.Args)
			if err != nil {
				return errorf("%v", err)
			}
			if a.ID == "" {
				return listBackground(c)
			}
			p, err := c.bg.lookup(c.Context, a.ID)
			if err != nil {
				return errorf("bash_output: %v", err)
			}
			if a.Wait > 0 {
				p.waitOutput(ctx, time.Duration(min(a.Wait, maxBashOutputWait.Seconds())*float64(time.Second)))
			}
			res, left := p.output(c.OutputCap)
			if state, _ := p.status(); state != "running" && left == 0 {
				c.bg.remove(p) // all of it read: nothing more to ask about
			}
			return res
		},
	}
}

// waitOutput waits until p wrote something unread or ended, ctx ends, or d
// has passed.
func (p *bgProc) waitOutput(ctx context.Context, d time.Duration) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, b := range p.out {
			b.mu.Lock()
			unread := b.written > b.read
			b.mu.Unlock()
			if unread {
				return
			}
		}
		select {
		case <-p.ended:
			return
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-tick.C:
		}
	}
}

// output is the process's unread output, stdout then stderr as a bash
// call shows them, with its state.
func (p *bgProc) output(cap int) (res Result, left int64) {
	if cap <= 0 {
		cap = 30000
	}
	state, line := p.status()
	var b strings.Builder
	meta := map[string]any{"bash_id": p.id, "state": state}
	so, lostOut, leftOut := p.out[0].next(cap)
	se, lostErr, leftErr := p.out[1].next(max(cap-len(so), 0))
	if lostOut > 0 {
		fmt.Fprintf(&b, "[%d bytes of stdout scrolled past unread]\n", lostOut)
	}
	b.WriteString(so)
	if lostErr > 0 || se != "" {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
		b.WriteString("[stderr]\n")
		if lostErr > 0 {
			fmt.Fprintf(&b, "[%d bytes of stderr scrolled past unread]\n", lostErr)
		}
		b.WriteString(se)
	}
	left = leftOut + leftErr
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	if left > 0 {
		fmt.Fprintf(&b, "[%d more bytes unread: call bash_output again]\n", left)
	}
	fmt.Fprintf(&b, "[%s %s]", p.id, line)
	meta["unread_chars"] = left
	meta["lost_bytes"] = lostOut + lostErr
	if state == "exited" {
		meta["exit_code"] = p.code
	}
	return Result{Content: b.String(), Meta: meta}, left
}

func listBackground(c HostCall) Result {
	ps := c.bg.list(c.Context)
	if len(ps) == 0 {
		return Result{Content: "no background processes", Meta: map[string]any{"processes": []any{}}}
	}
	var b strings.Builder
	var meta []any
	for _, p := range ps {
		state, line := p.status()
		cmd := p.command
		if len(cmd) > 80 {
			cmd = cmd[:77] + "..."
		}
		fmt.Fprintf(&b, "%s  %s: %s\n", p.id, line, strings.ReplaceAll(cmd, "\n", " "))
		meta = append(meta, map[string]any{"bash_id": p.id, "state": state})
	}
	return Result{Content: strings.TrimSuffix(b.String(), "\n"), Meta: map[string]any{"processes": meta}}
}

func bashKillTool() *Tool {
	return &Tool{
		Name:        "bash_kill",
		Description: "End a background bash process (run_in_background) and everything it started; returns its unread output.",
		Schema: `{"type":"object","additionalProperties":false,"required":["id"],"properties":{
"id":{"type":"string","minLength":1,"description":"the bash_id run_in_background returned"}}}`,
		Risk:      1,
		OutputCap: 30000,
		Host: func(ctx context.Context, c HostCall) Result {
			a, err := decode[struct{ ID string }](c.Args)
			if err != nil {
				return errorf("%v", err)
			}
			p, err := c.bg.lookup(c.Context, a.ID)
			if err != nil {
				return errorf("bash_kill: %v", err)
			}
			if !p.kill(bgKillWait) {
				return errorf("bash_kill: %s was sent SIGKILL but its sandbox has not ended after %s", p.id, bgKillWait)
			}
			res, _ := p.output(c.OutputCap)
			c.bg.remove(p)
			return res
		},
	}
}
