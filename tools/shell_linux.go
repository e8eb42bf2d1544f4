//go:build linux

package tools

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/jail-sandbox/jail/confine"
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

	released sync.Once
}

// Close ends the shell's sandbox, whether or not it ran a call, and frees
// what it held.
func (sh *Shell) Close() {
	sh.Cmd.Signal(unix.SIGKILL)
	sh.Cmd.Wait()
	sh.Script.Close()
	for _, f := range sh.Out {
		f.Close()
	}
	sh.released.Do(func() {
		if sh.Release != nil {
			sh.Release()
		}
	})
}

func (sh *Shell) base() []string { return sh.Env }

// launch gives the waiting shell its script. The shell is its sandbox's
// command, so when it exits pid 1 kills everything the call started (the
// pid namespace dies with pid 1); a timeout or cancellation kills pid 1.
func (sh *Shell) launch(ctx context.Context, script string, out [3]io.Writer, timeout time.Duration) (shellEnd, error) {
	var mu sync.Mutex
	var end shellEnd
	kill := func(set *bool) func() {
		return func() {
			mu.Lock()
			*set = true
			mu.Unlock()
			sh.Cmd.Signal(unix.SIGKILL)
		}
	}
	timer := time.AfterFunc(timeout, kill(&end.timedOut))
	defer timer.Stop()
	stop := context.AfterFunc(ctx, kill(&end.cancelled))
	defer stop()
	wait := copyOut(sh.Out, out)
	sh.Out = [3]*os.File{}
	_, werr := io.WriteString(sh.Script, script)
	sh.Script.Close()
	res, err := sh.Cmd.Wait()
	wait()
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		return shellEnd{}, err
	}
	if werr != nil && !end.timedOut && !end.cancelled && res.ExitCode == 0 {
		return shellEnd{}, fmt.Errorf("give the shell its script: %w", werr)
	}
	end.code = res.ExitCode
	if end.timedOut {
		end.code = 124
	}
	return end, nil
}

// shells keeps shells ready per kind (writable workspace or read-only),
// made in the background after each call took one. A call that finds the
// next shell still being made waits for it rather than make one more
// beside it, which would only slow both down on a small machine.
type shells struct {
	spawn func(ctx context.Context, readOnly bool) (*Shell, error)
	depth int

	mu      sync.Mutex
	spare   [2]chan spareShell // made or being made: pending of them
	pending [2]int
	closed  bool
	fills   sync.WaitGroup
}

type spareShell struct {
	sh  *Shell
	err error
}

func kind(readOnly bool) int {
	if readOnly {
		return 1
	}
	return 0
}

// newShells keeps depth shells ready per kind once the first call took
// one (zero: none, for a process that makes one call).
func newShells(spawn func(context.Context, bool) (*Shell, error), depth int) *shells {
	n := max(depth, 1)
	return &shells{spawn: spawn, depth: depth, spare: [2]chan spareShell{make(chan spareShell, n), make(chan spareShell, n)}}
}

// take returns the kind's spare shell, waiting for it when it is being
// made, or makes one now. The caller calls refill once its call is done:
// made during the call, the next shell would take the CPU the call needs.
func (p *shells) take(ctx context.Context, readOnly bool) (*Shell, error) {
	k := kind(readOnly)
	p.mu.Lock()
	if p.pending[k] > 0 {
		p.pending[k]--
		p.mu.Unlock()
		select {
		case r := <-p.spare[k]:
			if r.err == nil {
				return r.sh, nil
			}
			// Made in the background, its failure is this call's news;
			// one more try says whether it lasts.
		case <-ctx.Done():
			p.mu.Lock()
			p.pending[k]++ // it arrives all the same, for the next call
			p.mu.Unlock()
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

// refill starts making the kind's next shell, unless one is ready or on
// its way.
func (p *shells) refill(readOnly bool) {
	k := kind(readOnly)
	p.mu.Lock()
	defer p.mu.Unlock()
	for ; !p.closed && p.pending[k] < p.depth; p.pending[k]++ {
		p.fills.Add(1)
		go func() {
			// Lifetime: one sandbox's start; close waits for it.
			defer p.fills.Done()
			sh, err := p.spawn(context.Background(), readOnly)
			p.spare[k] <- spareShell{sh, err} // room for it: at most depth are pending
		}()
	}
}

// prewarm makes a shell of the kind now, reporting why it cannot.
func (p *shells) prewarm(ctx context.Context, readOnly bool) error {
	sh, err := p.spawn(ctx, readOnly)
	if err != nil {
		return fmt.Errorf("start a sandbox for bash: %w", err)
	}
	k := kind(readOnly)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.pending[k] >= max(p.depth, 1) {
		sh.Close()
		return nil
	}
	p.pending[k]++
	p.spare[k] <- spareShell{sh: sh}
	return nil
}

// close ends the spare shells, after waiting for those being made.
func (p *shells) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.fills.Wait()
	for _, ch := range p.spare {
		for {
			select {
			case r := <-ch:
				if r.sh != nil {
					r.sh.Close()
				}
				continue
			default:
			}
			break
		}
	}
}
