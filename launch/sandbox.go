//go:build linux

package launch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/gitview"
	"github.com/jail-sandbox/jail/netns"
	"github.com/jail-sandbox/jail/policy"
	"github.com/jail-sandbox/jail/termtext"
)

// NewSpec is the part of a sandbox's Spec that `jail run` and the tool
// workers share: ids, host name, network and the layers the caller may
// run without (each printed as a warning on warn).
func NewSpec(o *Options, argv []string, warn io.Writer) *confine.Spec {
	var degraded []confine.Layer
	for _, d := range o.Degraded {
		for _, l := range strings.Split(d, ",") {
			degraded = append(degraded, confine.Layer(l))
			fmt.Fprintf(warn, "jail: WARNING: --allow-degraded=%s: the sandbox runs without this layer if the kernel lacks it\n", l)
		}
	}
	if o.Net == "host" {
		fmt.Fprintln(warn, "jail: WARNING: --net host: the sandbox shares the host's network")
	}
	uid, gid := os.Getuid(), os.Getgid()
	if o.AsRoot {
		uid, gid = 0, 0
	}
	spec := &confine.Spec{Argv: argv, UID: uid, GID: gid, Hostname: "jail", Net: specNet(o.Net), AllowDegraded: degraded}
	if o.Net == policy.NetNone {
		// Lookups fail at once, and the first one is explained (docs/network.md).
		spec.OffDNS = &confine.OffDNS{Notice: netns.OffNotice}
	}
	return spec
}

// FilterFunc compiles the seccomp filter of a sandbox.
type FilterFunc func() ([]confine.Program, error)

// CompileOnce is the filter of sc compiled once, for a process that
// starts many sandboxes with one policy (jail serve, jail mcp): libseccomp
// takes about a millisecond per compilation.
func CompileOnce(sc confine.SeccompOptions) FilterFunc {
	return sync.OnceValues(func() ([]confine.Program, error) { return confine.CompileSeccomp(sc) })
}

// StartError is a sandbox that did not start, with the exit status and
// message prefix `jail run` reports it with.
type StartError struct {
	// Code is jail run's exit status for it: 2 refused before any
	// process, 125 the sandbox, 126 or 127 the command.
	Code int
	// Prefix goes before the error in the message.
	Prefix string
	Err    error
	// Hint is a line that says how to fix it, when jail can tell.
	Hint string
}

func (e *StartError) Error() string { return e.Prefix + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// Held is what a sandbox holds on the host until it has ended: its
// placeholders and its git view, whose changes are adopted then.
type Held struct {
	ph  *confine.Placeholders
	git *gitview.Run
	// trees are the git views of the --rw trees that are repositories
	// (gitview.Trees).
	trees []*gitview.Run
	// viewEnv are the variables the layout gave the command
	// (GIT_CONFIG_GLOBAL), before --env's.
	viewEnv []string
}

// ViewEnv are the variables the layout gave the command
// (GIT_CONFIG_GLOBAL), before --env's: with them, the recipe of the
// command's environment.
func (h *Held) ViewEnv() []string { return h.viewEnv }

// Release adopts what the sandbox changed in the workspace's git
// directories and removes its placeholders, then finishes what other
// runs left to the last one out. The sandbox must have ended.
func (h *Held) Release() {
	if h == nil {
		return
	}
	// Its own locks first: they would keep this run from reducing what
	// its sandbox made (confine/holds_linux.go).
	h.ph.Unhold()
	h.git.Finish()
	for _, t := range h.trees {
		t.Finish()
	}
	h.ph.Release()
	h.git.ReducePending()
}

// Start starts cmd, whose Spec has its command, ids, network and
// stdio set: the child is prestarted and creates its namespaces while this
// process resolves the layout and compiles the seccomp filter, then the
// environment, working directory, mounts and filter complete the Spec.
// What it returns must be released after the sandbox exited, also after
// an error; report takes what the git view says (gitview).
func Start(cmd *confine.Cmd, layout *confine.Layout, pass, extraEnv []string, compile FilterFunc, sockets []confine.Socket, report io.Writer) (*Held, error) {
	spec := cmd.Spec
	h := &Held{ph: &confine.Placeholders{}}
	if err := cmd.Prestart(); err != nil {
		return h, &StartError{125, "cannot start the sandbox: ", err, ""}
	}
	type compiled struct {
		prog []confine.Program
		err  error
	}
	filter := make(chan compiled, 1)
	go func() {
		// Lifetime: one compilation; received below.
		prog, err := compile()
		filter <- compiled{prog, err}
	}()
	ws, err := layout.CheckWorkspace()
	if err == nil {
		var writable []string
		for _, p := range layout.ReadWrite {
			if r, err := confine.ResolvePath(p, "/", ""); err == nil {
				writable = append(writable, r)
			}
		}
		opt := gitview.Options{Workspace: ws, StateDir: gitview.StateDir(layout.Home, os.Getenv("XDG_STATE_HOME")),
			ReadOnly: layout.WorkspaceReadOnly, Facts: layout.Facts, Report: report,
			Home: layout.Home, XDGConfig: os.Getenv("XDG_CONFIG_HOME"), Writable: writable,
			Protected: policy.DefaultProtected(), Later: policy.DefaultProtectedLater()}
		avoid := append(append([]string{layout.Home, layout.HomeDir, opt.StateDir}, layout.Homes...), layout.HiddenState...)
		for _, a := range avoid {
			if r, err := confine.ResolvePath(a, "/", ""); err == nil && r != a {
				avoid = append(avoid, r)
			}
		}
		opt.Shown = gitview.Trees(ws, writable, avoid)
		h.git, err = gitview.Prepare(opt)
		h.trees, err = treeViews(opt, ws, err)
	}
	if err == nil {
		err = h.git.CloneHere(spec.Argv, ws)
	}
	if err != nil {
		<-filter
		cmd.Abort()
		return h, &StartError{2, "", err, ""}
	}
	// The layout may be shared by many sandboxes (jail serve): the git
	// view is this one's.
	l := *layout
	l.Made = append(slices.Clip(layout.Made), h.git.Mounts()...)
	l.Protected = slices.DeleteFunc(slices.Clone(layout.Protected), h.git.Covers)
	l.Protected = append(l.Protected, h.git.Protected()...)
	gd, gf := h.git.Guarded()
	l.Guarded = append(slices.Clip(layout.Guarded), gd...)
	l.GuardedFiles = append(slices.Clip(layout.GuardedFiles), gf...)
	l.Trees = slices.Clip(layout.Trees)
	for _, t := range h.trees {
		l.Made = append(l.Made, t.Mounts()...)
		prot := append(slices.DeleteFunc(slices.Clone(layout.Protected), t.Covers), t.Protected()...)
		l.Trees = append(l.Trees, confine.Tree{Root: t.Workspace(), Protected: prot})
		gd, gf := t.Guarded()
		for _, d := range gd {
			if !slices.Contains(l.Guarded, d) {
				l.Guarded = append(l.Guarded, d)
			}
		}
		for _, f := range gf {
			if !slices.Contains(l.GuardedFiles, f) {
				l.GuardedFiles = append(l.GuardedFiles, f)
			}
		}
	}
	// The command's environment first: its PATH decides which tool roots
	// in the home the layout binds.
	env, err := confine.BuildEnv(os.Environ(), pass, extraEnv)
	var mounts []confine.Mount
	if err == nil {
		l.Path = filepath.SplitList(envValue(env, "PATH"))
		mounts, h.ph, err = l.Build()
		h.ph.Report = report
		h.git.RecordWalk()
		for _, t := range h.trees {
			t.RecordWalk()
		}
		l.Env = append(l.Env, h.git.Env()...)
	}
	if err == nil && len(l.Env) > 0 {
		// What the view needs (GIT_CONFIG_GLOBAL), before --env, which
		// wins over it.
		h.viewEnv = l.Env
		env, err = confine.BuildEnv(os.Environ(), pass, append(slices.Clone(l.Env), extraEnv...))
	}
	f := <-filter
	if err == nil {
		err = f.err
	}
	if err != nil {
		cmd.Abort()
		return h, &StartError{2, "", err, ""}
	}
	spec.Env, spec.Dir, spec.Mounts, spec.Seccomp = env, ws, mounts, f.prog
	// The network's listening sockets (Net), made in the sandbox's
	// namespace. No Landlock port rule (Spec.ConnectPorts): the namespace
	// has only loopback, so the rule could only refuse the command's own
	// local servers (docs/network.md).
	spec.Sockets = sockets
	if err := cmd.Start(); err != nil {
		var ee *confine.ExecError
		if errors.As(err, &ee) {
			se := &StartError{ee.ExitCode(), "", err, ""}
			if errors.Is(ee.Errno, syscall.ENOENT) && len(spec.Argv) > 0 {
				se.Hint = hiddenHint(spec.Argv[0], l.Path, ws, l.Home, mounts)
			}
			return h, se
		}
		return h, &StartError{125, "cannot start the sandbox: ", err, ""}
	}
	h.git.Started(cmd.InitPid())
	for _, t := range h.trees {
		t.Started(cmd.InitPid())
	}
	return h, nil
}

// treeViews prepares the git view of each --rw tree that is a repository
// (opt.Shown, gitview.Trees), beside the workspace ws's (opt's, made
// unless err): the view and the protected paths of a workspace, so that
// nothing the sandbox writes in its git directory or its editor files
// runs on the host (docs/git.md, "--rw trees"). Such a run is planned
// each time: the plan cache repeats the workspace's view only.
func treeViews(opt gitview.Options, ws string, err error) ([]*gitview.Run, error) {
	if err != nil || len(opt.Shown) == 0 {
		return nil, err
	}
	opt.Facts.Unsure()
	var out []*gitview.Run
	for _, t := range opt.Shown {
		o := opt
		o.Workspace, o.Tree, o.Shown, o.ReadOnly = t, true, nil, false
		o.Report = &treeReport{w: opt.Report, prefix: "jail: --rw " + termtext.Escape(t) + ": "}
		o.Writable = append([]string{ws}, slices.DeleteFunc(slices.Clone(opt.Writable), func(w string) bool { return w == t })...)
		r, err := gitview.Prepare(o)
		if err != nil {
			for _, p := range out {
				p.Finish()
			}
			return nil, fmt.Errorf("--rw %s: %w", t, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// envValue is the value of name in env (NAME=VALUE entries), or "".
func envValue(env []string, name string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// hiddenHint is the line that explains a command found on the host but
// not inside, because it lives in a place the sandbox hides, and names
// the flag that would show it (docs/commands.md).
func hiddenHint(name string, path []string, dir, home string, mounts []confine.Mount) string {
	found, bind, ok := confine.HiddenCommand(name, path, dir, home, mounts)
	if !ok {
		return ""
	}
	return fmt.Sprintf("jail: %s is %s, hidden in the sandbox; add --ro %s (or ro = [%q] in the policy's [sandbox]; docs/commands.md)", name, found, bind, bind)
}

// specNet is the confine network mode: every mode but host is a fresh namespace.
func specNet(mode string) confine.NetMode {
	if mode == policy.NetHost {
		return confine.NetHost
	}
	return confine.NetNone
}

// treeReport is the report of a --rw tree's view: each line of the view
// (paths relative to the tree) says which tree it is of.
type treeReport struct {
	w      io.Writer
	prefix string
	line   []byte
}

func (t *treeReport) Write(p []byte) (int, error) {
	if t.w == nil {
		return len(p), nil
	}
	t.line = append(t.line, p...)
	for {
		i := bytes.IndexByte(t.line, '\n')
		if i < 0 {
			return len(p), nil
		}
		l := t.line[:i+1]
		if rest, ok := bytes.CutPrefix(l, []byte("jail: ")); ok {
			l = append([]byte(t.prefix), rest...)
		}
		if _, err := t.w.Write(l); err != nil {
			return len(p), err
		}
		t.line = t.line[i+1:]
	}
}
