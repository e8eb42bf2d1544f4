//go:build linux

package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/gitcmd"
	"github.com/jail-sandbox/jail/policy"
	"golang.org/x/sys/unix"
)

// Shell is a sandbox made for exactly one bash call: fresh namespaces, a
// fresh /tmp and nothing left of earlier calls. It is made ahead of the
// call, with its shell already running (sh -s, blocked on reading its
// script), so that a call costs only the shell's own work.
type Shell struct {
	// Cmd runs the shell.
	Cmd *confine.Cmd
	// Env is the environment the shell started with.
	Env []string
	// Script is the write end of the shell's stdin; Out are the read ends
	// of its stdout, stderr and fd 3.
	Script *os.File
	Out    [3]*os.File
	// Release frees what the sandbox held on the host (placeholders, the
	// network proxy); it is called once, after the sandbox has ended.
	Release func()
	// Jail is the jail binary's path inside the sandbox, which runs the
	// loopback relay of a background process when the shell's fd 3 is a
	// socket (StatePair; relay_linux.go). Empty, or fd 3 a pipe: a
	// background process of this shell has no relay, and its loopback
	// cannot be reached.
	Jail string
	// Writable reports whether this sandbox can write, or create, a
	// directory (confine.CanWrite of its mounts); nil: not known.
	Writable func(dir string) bool
	// Mounts are the sandbox's mounts and Dir the directory its shell
	// starts in: how a call's sandbox sees its files when the call
	// starts (confine.View), for reading the git config the call's git
	// commands will read. Nil Mounts: not known, and git commands are
	// not judged by their config.
	Mounts []confine.Mount
	Dir    string

	released sync.Once
}

// Close ends the shell's sandbox, whether or not it ran a call, and frees
// what it held.
func (sh *Shell) Close() {
	if sh.Cmd != nil {
		sh.Cmd.Signal(unix.SIGKILL)
		sh.Cmd.Wait()
	}
	if sh.Script != nil {
		sh.Script.Close()
	}
	for _, f := range sh.Out {
		if f != nil {
			f.Close()
		}
	}
	sh.released.Do(func() {
		if sh.Release != nil {
			sh.Release()
		}
	})
}

func (sh *Shell) base() []string { return sh.Env }

func (sh *Shell) writable() func(string) bool { return sh.Writable }

// relayBinary is the relay's program for a background process, or "" when it has none.
func (sh *Shell) relayBinary() string {
	if sh.Jail == "" || sh.Out[2] == nil {
		return ""
	}
	var st unix.Stat_t
	if unix.Fstat(int(sh.Out[2].Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return ""
	}
	return sh.Jail
}

// launch gives the waiting shell its script. The shell is its sandbox's
// command, so when it exits pid 1 kills everything the call started (the
// pid namespace dies with pid 1); a timeout or cancellation kills pid 1.
// Either counts only when it ended the sandbox before the shell's end
// was reported.
func (sh *Shell) launch(ctx context.Context, script string, out [3]io.Writer, timeout time.Duration) (shellEnd, error) {
	var timedOut, cancelled atomic.Bool
	timer := time.AfterFunc(timeout, func() {
		timedOut.Store(true)
		sh.Cmd.Signal(unix.SIGKILL)
	})
	stop := context.AfterFunc(ctx, func() {
		cancelled.Store(true)
		sh.Cmd.Signal(unix.SIGKILL)
	})
	wait := copyOut(sh.Out, out)
	sh.Out = [3]*os.File{}
	_, werr := io.WriteString(sh.Script, script)
	sh.Script.Close()
	res, err := sh.Cmd.Wait()
	timer.Stop()
	stop()
	wait()
	if err != nil {
		return shellEnd{}, err
	}
	end := shellEnd{code: res.ExitCode}
	if res.Killed {
		end.timedOut = timedOut.Load()
		end.cancelled = !end.timedOut && cancelled.Load()
		if end.timedOut {
			end.code = 124
		}
	}
	if werr != nil && !res.Killed && res.ExitCode == 0 {
		return shellEnd{}, fmt.Errorf("give the shell its script: %w", werr)
	}
	return end, nil
}

// shells keeps shells ready per kind (writable workspace or read-only),
// made in the background after each call took one. A call that finds the
// next shell still being made waits for it rather than make one more
// beside it, which would only slow both down on a small machine. Shells
// in use are bounded by slots (the server's MaxConcurrency).
type shells struct {
	spawn func(ctx context.Context, readOnly bool) (*Shell, error)
	depth int
	slots chan struct{}

	mu      sync.Mutex
	seen    [2]*shellView // the last made of each kind
	ready   [2][]*Shell
	making  [2]int
	waiting [2][]chan *Shell // each gets one shell, or nil when its making failed
	closed  bool
	fills   sync.WaitGroup
}

func kind(readOnly bool) int {
	if readOnly {
		return 1
	}
	return 0
}

// newShells keeps depth shells ready per kind once the first call took
// one (zero: none, for a process that makes one call), and lets at most
// inUse be taken at a time.
func newShells(spawn func(context.Context, bool) (*Shell, error), depth, inUse int) *shells {
	p := &shells{depth: depth, slots: make(chan struct{}, max(inUse, 1))}
	if spawn != nil {
		p.spawn = func(ctx context.Context, readOnly bool) (*Shell, error) {
			sh, err := spawn(ctx, readOnly)
			if err == nil && sh.Mounts != nil {
				p.mu.Lock()
				p.seen[kind(readOnly)] = &shellView{mounts: sh.Mounts, dir: sh.Dir, env: sh.Env}
				p.mu.Unlock()
			}
			return sh, err
		}
	}
	return p
}

// shellView is how the kind's sandboxes see their files when a call
// starts: every shell of a kind is made from one layout, and differs
// from another only in its git view, whose overlays show the host's git
// directories under a fresh upper.
type shellView struct {
	mounts []confine.Mount
	dir    string
	env    []string
}

// view is the kind's shellView, making a shell (kept ready for a call)
// when none was made yet; nil when shells do not say their mounts.
func (p *shells) view(ctx context.Context, readOnly bool) (*shellView, error) {
	k := kind(readOnly)
	p.mu.Lock()
	v := p.seen[k]
	p.mu.Unlock()
	if v != nil || p.spawn == nil {
		return v, nil
	}
	if err := p.prewarm(ctx, readOnly); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[k], nil
}

var errShellsClosed = errors.New("the server is closing")

// take returns a ready shell of the kind, waiting for one being made, or
// makes one now. The caller gives it back with done once its call is over
// (which also makes the next one: made during the call, it would take the
// CPU the call needs).
func (p *shells) take(ctx context.Context, readOnly bool) (*Shell, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	sh, err := p.get(ctx, readOnly)
	if err != nil {
		<-p.slots
	}
	return sh, err
}

func (p *shells) get(ctx context.Context, readOnly bool) (*Shell, error) {
	k := kind(readOnly)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errShellsClosed
	}
	for n := len(p.ready[k]); n > 0; n = len(p.ready[k]) {
		sh := p.ready[k][n-1]
		p.ready[k] = p.ready[k][:n-1]
		if sh.Cmd != nil && sh.Cmd.Exited() {
			// It ended while it waited (killed from outside, say):
			// it is no use to this call.
			go sh.Close()
			continue
		}
		p.mu.Unlock()
		return sh, nil
	}
	if p.making[k] > len(p.waiting[k]) {
		ch := make(chan *Shell, 1)
		p.waiting[k] = append(p.waiting[k], ch)
		p.mu.Unlock()
		select {
		case sh := <-ch:
			if sh != nil {
				return sh, nil
			}
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return nil, errShellsClosed
			}
			// Its making failed: one more try says whether that lasts.
		case <-ctx.Done():
			p.mu.Lock()
			p.waiting[k] = slices.DeleteFunc(p.waiting[k], func(c chan *Shell) bool { return c == ch })
			p.mu.Unlock()
			// Handed over all the same just before: keep it for the next.
			select {
			case sh := <-ch:
				if sh != nil {
					p.keep(k, sh)
				}
			default:
			}
			return nil, ctx.Err()
		}
	} else {
		p.mu.Unlock()
	}
	sh, err := p.spawn(ctx, readOnly)
	if err != nil {
		return nil, fmt.Errorf("start a sandbox for the call: %w", err)
	}
	return sh, nil
}

// takeLong returns a shell for a background process, which keeps it past
// any call: it takes no slot of the calls (limits.background bounds these
// instead), and the kind's next shells are made at once.
func (p *shells) takeLong(ctx context.Context, readOnly bool) (*Shell, error) {
	sh, err := p.get(ctx, readOnly)
	if err == nil {
		p.refill(readOnly)
	}
	return sh, err
}

// done ends a shell whose call is over, frees its slot and makes the
// kind's next shells.
func (p *shells) done(sh *Shell, readOnly bool) {
	sh.Close()
	<-p.slots
	p.refill(readOnly)
}

// keep hands a made shell to the first waiting call, or keeps it ready;
// a closed set ends it.
func (p *shells) keep(k int, sh *Shell) {
	p.mu.Lock()
	kept := p.keepLocked(k, sh)
	p.mu.Unlock()
	if !kept {
		sh.Close()
	}
}

// keepLocked is keep with p.mu held; the caller ends a shell it did not
// keep.
func (p *shells) keepLocked(k int, sh *Shell) bool {
	if p.closed {
		return false
	}
	if len(p.waiting[k]) > 0 {
		ch := p.waiting[k][0]
		p.waiting[k] = p.waiting[k][1:]
		ch <- sh // buffered, and handed one shell only
		return true
	}
	if len(p.ready[k]) < max(p.depth, 1) {
		p.ready[k] = append(p.ready[k], sh)
		return true
	}
	return false
}

// refill starts making the kind's shells up to depth, counting those
// ready and those on their way.
func (p *shells) refill(readOnly bool) {
	k := kind(readOnly)
	p.mu.Lock()
	defer p.mu.Unlock()
	for ; !p.closed && p.making[k]+len(p.ready[k]) < p.depth; p.making[k]++ {
		p.fills.Add(1)
		go func() {
			// Lifetime: one sandbox's start; close waits for it.
			defer p.fills.Done()
			sh, err := p.spawn(context.Background(), readOnly)
			p.mu.Lock()
			p.making[k]--
			if err != nil {
				// A waiting call learns it and tries itself.
				if len(p.waiting[k]) > 0 {
					ch := p.waiting[k][0]
					p.waiting[k] = p.waiting[k][1:]
					ch <- nil
				}
				p.mu.Unlock()
				return
			}
			// Handed over in the same hold of the lock that counted it
			// made, so no call in between sees it neither made nor ready.
			kept := p.keepLocked(k, sh)
			p.mu.Unlock()
			if !kept {
				sh.Close()
			}
		}()
	}
}

// prewarm makes a shell of the kind now, reporting why it cannot.
func (p *shells) prewarm(ctx context.Context, readOnly bool) error {
	sh, err := p.spawn(ctx, readOnly)
	if err != nil {
		return fmt.Errorf("start a sandbox for bash: %w", err)
	}
	p.keep(kind(readOnly), sh)
	return nil
}

// close ends the ready shells, and those still being made once they are.
func (p *shells) close() {
	p.mu.Lock()
	p.closed = true
	var ready []*Shell
	for k := range p.ready {
		ready = append(ready, p.ready[k]...)
		p.ready[k] = nil
		for _, ch := range p.waiting[k] {
			ch <- nil
		}
		p.waiting[k] = nil
	}
	p.mu.Unlock()
	for _, sh := range ready {
		sh.Close()
	}
	p.fills.Wait()
}

// gitConfig reads, for the gate, the git config a call's git commands
// will read in a sandbox of this view, started in the session st
// (gitcmd.SandboxProgram): from the session's directory and with its
// environment, else the shell's own.
func (v *shellView) gitConfig(st *Session) func(policy.GitWhere) string {
	if v == nil {
		return nil
	}
	start, env := v.dir, v.env
	if st != nil && st.Cwd != "" {
		start, env = st.Cwd, st.Env
	}
	return func(w policy.GitWhere) string {
		abs := func(ds []string) []string {
			out := make([]string, 0, len(ds))
			for _, d := range ds {
				if !path.IsAbs(d) {
					d = path.Join(start, d)
				}
				out = append(out, d)
			}
			return out
		}
		view := confine.NewView(v.mounts)
		if why := configProgram(view, w.Runs, abs(w.Writes), env); why != "" {
			return why
		}
		if why := gitcmd.SandboxProgram(view, gitcmd.Where{Dirs: abs(w.Dirs), GitDirs: abs(w.GitDirs),
			Writes: abs(w.Writes), Env: env, Git: w.Git}); why != "" {
			if w.Git {
				return "its git commands may run programs: " + why
			}
			return why
		}
		return ""
	}
}

// configFiles are the config files of a reader (policy.GitWhere.Runs)
// that can make it run a program, as env (NAME=VALUE) places them: less's
// lesskey, whose #env section sets LESSOPEN (less runs it on every file,
// on a terminal or not), and bat's config (--paging=always with --pager).
func configFiles(name string, env []string) []string {
	get := func(k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	home, xdg := get("HOME"), get("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = path.Join(home, ".config")
	}
	var files []string
	add := func(ps ...string) {
		for _, p := range ps {
			if path.IsAbs(p) {
				files = append(files, path.Clean(p))
			}
		}
	}
	switch name {
	case "less":
		add(get("LESSKEYIN"), get("LESSKEY"), get("LESSKEYIN_SYSTEM"), get("LESSKEY_SYSTEM"))
		if xdg != "" {
			add(path.Join(xdg, "lesskey"))
		}
		if home != "" {
			add(path.Join(home, ".config/lesskey"), path.Join(home, ".lesskey"), path.Join(home, ".less"))
		}
	case "bat", "batcat":
		add(get("BAT_CONFIG_PATH"))
		if xdg != "" {
			add(path.Join(xdg, "bat/config"))
		}
	}
	return files
}

// configProgram returns why a reader of runs may run a program a sandbox
// chose: a config file of its (configFiles) that a sandbox may have
// written, or that the line writes itself, or that cannot be read safely.
func configProgram(view *confine.View, runs, writes, env []string) string {
	for _, name := range runs {
		for _, f := range configFiles(name, env) {
			if slices.Contains(writes, f) {
				return name + " may run a program: the line writes " + strconv.Quote(f) + ", which " + name + " reads as its config"
			}
			_, shared, err := view.ReadFile(f, 1<<20)
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				return name + " may run a program: its config " + strconv.Quote(f) + " cannot be read safely (" + err.Error() + ")"
			case shared:
				how := "its #env section can set LESSOPEN"
				if name != "less" {
					how = "--paging=always with --pager"
				}
				return name + " may run a program: its config " + strconv.Quote(f) + " is one a sandbox may have written (" + how + ")"
			}
		}
	}
	return ""
}
