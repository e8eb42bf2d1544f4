//go:build linux

package confine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Terminal is the pseudo-terminal of an interactive run (docs/terminal.md).
// The command never holds the caller's terminal: its stdio that was the
// terminal is the slave side of a new pty, which its init makes the
// command's controlling terminal (a session of its own: job control, ^C,
// ^Z, /dev/tty all work inside), and jail relays between the caller's
// terminal (in raw mode) and the master side. So the command cannot make
// itself the caller's foreground group, stop jail, read the terminal while
// jail asks a question, or reach the caller's session at all; and what it
// prints reaches the terminal only through jail, which holds it back while
// jail's own question is on the screen (Pause).
//
// The relay's lifetime: Start to Close; its two goroutines end in Close,
// which waits for them. The input goroutine is the only reader of the
// caller's terminal: while paused it hands what it reads to the question.
type Terminal struct {
	tty    int      // the caller's terminal (a duplicate of stdin)
	out    *os.File // the same, for writing
	wake   int      // an eventfd that ends the input goroutine
	master *os.File // non-blocking, so Close ends a pending read
	slave  *os.File // given to the command; closed here once it has it
	saved  *unix.Termios

	mu      sync.Mutex
	cond    *sync.Cond
	paused  bool
	prompt  *os.File // while paused: where the person's keys go
	closing bool
	started bool
	gone    bool // closed: the descriptor numbers may be another file's now
	outDone chan struct{}
	inDone  chan struct{}

	closeOnce sync.Once
}

// OpenTerminal makes the pty of an interactive run whose stdin is the
// caller's terminal.
func OpenTerminal(stdin *os.File) (*Terminal, error) {
	if stdin == nil {
		return nil, errors.New("terminal: no stdin")
	}
	tfd, err := unix.FcntlInt(stdin.Fd(), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, fmt.Errorf("terminal: %w", err)
	}
	saved, err := unix.IoctlGetTermios(tfd, unix.TCGETS)
	if err != nil {
		unix.Close(tfd)
		return nil, fmt.Errorf("terminal: read its modes: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(tfd)
		return nil, fmt.Errorf("terminal: %w", err)
	}
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		unix.Close(tfd)
		unix.Close(wake)
		return nil, fmt.Errorf("terminal: open /dev/ptmx: %w", err)
	}
	fail := func(what string, err error) (*Terminal, error) {
		unix.Close(tfd)
		unix.Close(wake)
		unix.Close(mfd)
		return nil, fmt.Errorf("terminal: %s: %w", what, err)
	}
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		return fail("unlock the pty", err)
	}
	// The slave by the master's descriptor, not by a /dev/pts path.
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(mfd), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		return fail("open the pty's slave", errno)
	}
	sfd := int(r)
	// The command's terminal starts as the caller's: its modes (erase
	// key, UTF-8) and its size.
	_ = unix.IoctlSetTermios(sfd, unix.TCSETS, saved)
	if ws, err := unix.IoctlGetWinsize(tfd, unix.TIOCGWINSZ); err == nil {
		_ = unix.IoctlSetWinsize(mfd, unix.TIOCSWINSZ, ws)
	}
	t := &Terminal{tty: tfd, out: os.NewFile(uintptr(tfd), "tty"), wake: wake, master: os.NewFile(uintptr(mfd), "ptmx"),
		slave: os.NewFile(uintptr(sfd), "pty"), saved: saved, outDone: make(chan struct{}), inDone: make(chan struct{})}
	t.cond = sync.NewCond(&t.mu)
	return t, nil
}

// Slave is the command's side, to be given as its stdio wherever jail's
// was the terminal.
func (t *Terminal) Slave() *os.File { return t.slave }

// IsTerminal reports whether f is the terminal t relays for.
func (t *Terminal) IsTerminal(f *os.File) bool {
	var a, b unix.Stat_t
	return f != nil && unix.Fstat(int(f.Fd()), &a) == nil && unix.Fstat(t.tty, &b) == nil && a.Rdev == b.Rdev && a.Mode&unix.S_IFMT == unix.S_IFCHR
}

// raw puts the caller's terminal in raw mode: every key, ^C and ^Z
// included, goes to the command's terminal, whose own line discipline
// acts on it.
func (t *Terminal) raw() {
	if t.isGone() {
		return
	}
	r := *t.saved
	r.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	r.Oflag &^= unix.OPOST
	r.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	r.Cflag &^= unix.CSIZE | unix.PARENB
	r.Cflag |= unix.CS8
	r.Cc[unix.VMIN], r.Cc[unix.VTIME] = 1, 0
	_ = unix.IoctlSetTermios(t.tty, unix.TCSETSW, &r)
}

// cooked gives the caller's terminal its own modes back.
func (t *Terminal) cooked() {
	if t.isGone() {
		return
	}
	_ = unix.IoctlSetTermios(t.tty, unix.TCSETSW, t.saved)
}

// Start begins relaying, once the command has its side: the terminal goes
// raw, keys go to the command, its output to the terminal.
func (t *Terminal) Start() {
	t.slave.Close()
	t.raw()
	t.mu.Lock()
	t.started = true
	t.mu.Unlock()
	go t.output()
	go t.input()
}

// output copies what the command writes to the terminal, holding it back
// while jail's question is on the screen. It ends when every descriptor of
// the command's side is closed (EIO) or Close closes the master.
func (t *Terminal) output() {
	defer close(t.outDone)
	buf := make([]byte, 32<<10)
	for {
		n, err := t.master.Read(buf)
		if n > 0 {
			t.mu.Lock()
			for t.paused && !t.closing {
				t.cond.Wait()
			}
			t.mu.Unlock()
			if _, werr := t.out.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// input copies the person's keys to the command, or, while jail's question
// is open, to the question.
func (t *Terminal) input() {
	defer close(t.inDone)
	buf := make([]byte, 4096)
	for {
		fds := []unix.PollFd{{Fd: int32(t.tty), Events: unix.POLLIN}, {Fd: int32(t.wake), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents == 0 {
			continue
		}
		n, err := unix.Read(t.tty, buf)
		if n <= 0 && err != unix.EINTR && err != unix.EAGAIN {
			// The terminal hung up: so does the command's (closing the
			// master sends SIGHUP to its session).
			t.master.Close()
			return
		}
		if n <= 0 {
			continue
		}
		t.mu.Lock()
		to := t.prompt
		paused := t.paused
		t.mu.Unlock()
		switch {
		case paused && to != nil:
			to.Write(buf[:n])
		case paused:
			// Between questions' set-up: dropped, as TCIFLUSH would.
		default:
			if _, err := t.master.Write(buf[:n]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				return
			}
		}
	}
}

// Pause stops the relay for one of jail's own questions: the person's keys
// then reach the question alone (in, which ends at Resume), nothing the
// command prints reaches the screen until Resume, and the terminal is in
// its own (cooked) modes. Before it returns, what was typed before is
// discarded (TCIFLUSH) and whatever the command's output left open is
// cancelled: an escape sequence cut in the middle (CAN), a string (ST: a
// title, OSC 52), the scroll region, attributes and modes (a soft reset,
// DECSTR), and a fresh, cleared line starts. So the question cannot be
// hidden, redrawn or answered by the command. out is the terminal.
func (t *Terminal) Pause() (in *os.File, out *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		r, _ = os.Open(os.DevNull) // the question then reads no answer
	}
	t.mu.Lock()
	t.paused = true
	if err == nil {
		t.prompt = w
	}
	t.mu.Unlock()
	if t.isGone() {
		if err == nil {
			w.Close()
		}
		return r, nil
	}
	t.cooked()
	_ = unix.IoctlSetInt(t.tty, unix.TCFLSH, unix.TCIFLUSH)
	t.out.Write([]byte("\x18\x1b\\\x1b[!p\x1b[0m\r\n\x1b[2K"))
	return r, t.out
}

// Resume restarts the relay after Pause, and has the command redraw its
// screen: a full-screen program's picture was overwritten by the question.
// The window size is changed and set back, which sends it SIGWINCH.
func (t *Terminal) Resume() {
	t.mu.Lock()
	if t.prompt != nil {
		t.prompt.Close()
		t.prompt = nil
	}
	t.mu.Unlock()
	t.raw()
	if ws, err := unix.IoctlGetWinsize(t.tty, unix.TIOCGWINSZ); err == nil && ws.Row > 1 && !t.isGone() {
		small := *ws
		small.Row--
		_ = unix.IoctlSetWinsize(int(t.master.Fd()), unix.TIOCSWINSZ, &small)
		_ = unix.IoctlSetWinsize(int(t.master.Fd()), unix.TIOCSWINSZ, ws)
	}
	t.mu.Lock()
	t.paused = false
	t.cond.Broadcast()
	t.mu.Unlock()
}

// Resize gives the command's terminal the caller's size (SIGWINCH to
// jail); the kernel signals the command's foreground group.
func (t *Terminal) Resize() {
	if t.isGone() {
		return
	}
	if ws, err := unix.IoctlGetWinsize(t.tty, unix.TIOCGWINSZ); err == nil {
		_ = unix.IoctlSetWinsize(int(t.master.Fd()), unix.TIOCSWINSZ, ws)
	}
}

// Close ends the relay once the command has ended: what it wrote last is
// shown (until its side is closed, at most a second), then the caller's
// terminal gets its modes back.
func (t *Terminal) Close() { t.closeOnce.Do(t.close) }

func (t *Terminal) close() {
	t.mu.Lock()
	started := t.started
	t.mu.Unlock()
	if !started {
		t.slave.Close()
	} else {
		select {
		case <-t.outDone:
		case <-time.After(time.Second):
		}
	}
	t.mu.Lock()
	t.closing = true
	t.paused = false
	t.cond.Broadcast()
	t.mu.Unlock()
	t.master.Close()
	if started {
		unix.Write(t.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
		<-t.inDone
		<-t.outDone
	}
	t.cooked()
	t.mu.Lock()
	t.gone = true
	t.mu.Unlock()
	t.out.Close()
	unix.Close(t.wake)
}

func (t *Terminal) isGone() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gone
}

// relaying reports whether the relay has the caller's terminal in raw mode now (started,
// no question on the screen, not closed).
func (t *Terminal) relaying() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.started && !t.paused && !t.closing
}

// LineWriter carries jail's own lines (network refusals, notices) to the caller's terminal.
// While a Terminal relays, that terminal is in raw mode, without output processing, so a
// bare "\n" moves down without going back to the left edge: each line of jail's would start
// where the last one ended, a staircase drawn across the command's screen. LineWriter then
// writes every "\n" as "\r\n". Without a terminal, or once it is closed, bytes go through
// unchanged (a log file or a pipe gets no carriage returns).
type LineWriter struct {
	W io.Writer

	mu   sync.Mutex
	term *Terminal
}

// SetTerminal tells the writer which relay owns the terminal from now on.
func (l *LineWriter) SetTerminal(t *Terminal) {
	l.mu.Lock()
	l.term = t
	l.mu.Unlock()
}

// Write implements io.Writer.
func (l *LineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	t := l.term
	l.mu.Unlock()
	if t == nil || !t.relaying() || !bytes.Contains(p, []byte("\n")) {
		return l.W.Write(p)
	}
	if _, err := l.W.Write(bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// TerminalOutput is what a command that does not get jail's interactive pty has as its
// stdout or stderr in place of the caller's terminal: the slave of a pty of its own,
// whose output jail copies to the terminal. Never a descriptor of the caller's terminal,
// not even one opened write-only: reading it would take what the person types, and on
// any descriptor of it the command could change the terminal's modes and size (stty
// -echo, intr undef: the user's ^C no longer works after the run), lock it against the
// user's own opens (TIOCEXCL: jail's later questions, ssh's and sudo's prompts fail) or
// flush what the person typed. The pty starts with the terminal's modes and size, so
// isatty, colours and the width stay as they were; what the command does to the pty
// stays on the pty. Where no pty can be made, the command gets the write end of a pipe
// jail copies to the terminal (isatty is false there). The plan cache's twin is
// output_pty in fast_linux.c.
type TerminalOutput struct {
	// File is what the command gets.
	File *os.File
	// Relayed is true when File is a pipe (no pty could be made).
	Relayed bool
	tty     *os.File // the caller's terminal, as jail holds it
	master  *os.File
	done    chan struct{}
}

// NewTerminalOutput returns the TerminalOutput for f when f is a terminal, nil otherwise.
// Close it once the sandbox has started (the command holds its own copy); Wait for what
// it relays after the sandbox ended.
func NewTerminalOutput(f *os.File) (*TerminalOutput, error) {
	if f == nil {
		return nil, nil
	}
	modes, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		return nil, nil
	}
	t := &TerminalOutput{tty: f, done: make(chan struct{})}
	var src *os.File
	if master, slave, err := outputPty(f, modes); err == nil {
		t.File, t.master, src = slave, master, master
	} else {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("terminal: a pipe to relay the command's output: %w", err)
		}
		t.File, t.Relayed, src = w, true, r
	}
	go func() {
		// Lifetime: until every holder of the command's side is gone
		// (jail's own copy, Close, and the sandbox's processes, which end
		// with it: a pty's master then reads EIO, a pipe EOF), or Wait
		// gives up on it.
		defer close(t.done)
		io.Copy(f, src)
	}()
	return t, nil
}

// outputPty makes a pty with the modes and size of the terminal tty.
func outputPty(tty *os.File, modes *unix.Termios) (master, slave *os.File, err error) {
	// Non-blocking, so the runtime polls it and closing it ends a pending read (Wait).
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("terminal: open /dev/ptmx: %w", err)
	}
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(mfd)
		return nil, nil, fmt.Errorf("terminal: unlock the pty: %w", err)
	}
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(mfd), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		unix.Close(mfd)
		return nil, nil, fmt.Errorf("terminal: open the pty's slave: %w", errno)
	}
	sfd := int(r)
	_ = unix.IoctlSetTermios(sfd, unix.TCSETS, modes)
	if ws, err := unix.IoctlGetWinsize(int(tty.Fd()), unix.TIOCGWINSZ); err == nil {
		_ = unix.IoctlSetWinsize(mfd, unix.TIOCSWINSZ, ws)
	}
	return os.NewFile(uintptr(mfd), "ptmx"), os.NewFile(uintptr(sfd), "pty"), nil
}

// Same reports whether f is the terminal t relays to.
func (t *TerminalOutput) Same(f *os.File) bool {
	var a, b unix.Stat_t
	return t != nil && f != nil && unix.Fstat(int(f.Fd()), &a) == nil && unix.Fstat(int(t.tty.Fd()), &b) == nil &&
		a.Mode&unix.S_IFMT == unix.S_IFCHR && a.Rdev == b.Rdev
}

// Resize gives the pty the terminal's size again (SIGWINCH to jail).
func (t *TerminalOutput) Resize() {
	if t == nil || t.master == nil {
		return
	}
	if ws, err := unix.IoctlGetWinsize(int(t.tty.Fd()), unix.TIOCGWINSZ); err == nil {
		_ = unix.IoctlSetWinsize(int(t.master.Fd()), unix.TIOCSWINSZ, ws)
	}
}

// Close closes jail's copy of the command's side.
func (t *TerminalOutput) Close() {
	if t != nil {
		t.File.Close()
	}
}

// Wait waits until the relay has copied everything the command wrote; call it after
// Close, once the sandbox has ended. A pty's side still held somewhere after that is
// given a second, as the interactive relay gives it (relay_close in fast_linux.c).
func (t *TerminalOutput) Wait() {
	if t == nil {
		return
	}
	select {
	case <-t.done:
	case <-time.After(time.Second):
		if t.master != nil {
			t.master.Close()
		}
		<-t.done
	}
}
