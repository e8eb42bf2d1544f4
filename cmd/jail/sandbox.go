package main

import (
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
	"github.com/jail-sandbox/jail/launch"
	"github.com/jail-sandbox/jail/netns"
	"github.com/jail-sandbox/jail/policy"
)

// newSpec is the part of a sandbox's Spec that `jail run` and the tool
// workers share: ids, host name, network and the layers the caller may
// run without (each printed as a warning on warn).
func newSpec(o *launch.Options, argv []string, warn io.Writer) *confine.Spec {
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

// filterFunc compiles the seccomp filter of a sandbox.
type filterFunc func() ([]confine.Program, error)

// compileOnce is the filter of sc compiled once, for a process that
// starts many sandboxes with one policy (jail serve, jail mcp): libseccomp
// takes about a millisecond per compilation.
func compileOnce(sc confine.SeccompOptions) filterFunc {
	return sync.OnceValues(func() ([]confine.Program, error) { return confine.CompileSeccomp(sc) })
}

// startError is a sandbox that did not start, with the exit status and
// message prefix `jail run` reports it with.
type startError struct {
	code   int
	prefix string
	err    error
	// hint is a line that says how to fix it, when jail can tell.
	hint string
}

func (e *startError) Error() string { return e.prefix + e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// held is what a sandbox holds on the host until it has ended: its
// placeholders and its git view, whose changes are adopted then.
type held struct {
	ph  *confine.Placeholders
	git *gitview.Run
	// viewEnv are the variables the layout gave the command
	// (GIT_CONFIG_GLOBAL), before --env's.
	viewEnv []string
}

// Release adopts what the sandbox changed in the workspace's git
// directories and removes its placeholders. The sandbox must have ended.
func (h *held) Release() {
	if h == nil {
		return
	}
	h.git.Finish()
	h.ph.Release()
}

// startSandbox starts cmd, whose Spec has its command, ids, network and
// stdio set: the child is prestarted and creates its namespaces while this
// process resolves the layout and compiles the seccomp filter, then the
// environment, working directory, mounts and filter complete the Spec.
// What it returns must be released after the sandbox exited, also after
// an error; report takes what the git view says (gitview).
func startSandbox(cmd *confine.Cmd, layout *confine.Layout, pass, extraEnv []string, compile filterFunc, nr *netRun, report io.Writer) (*held, error) {
	spec := cmd.Spec
	h := &held{ph: &confine.Placeholders{}}
	if err := cmd.Prestart(); err != nil {
		return h, &startError{125, "cannot start the sandbox: ", err, ""}
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
		h.git, err = gitview.Prepare(gitview.Options{Workspace: ws, StateDir: gitview.StateDir(layout.Home, os.Getenv("XDG_STATE_HOME")),
			ReadOnly: layout.WorkspaceReadOnly, Facts: layout.Facts, Report: report,
			Home: layout.Home, XDGConfig: os.Getenv("XDG_CONFIG_HOME"), Writable: writable})
	}
	if err != nil {
		<-filter
		cmd.Abort()
		return h, &startError{2, "", err, ""}
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
	// The command's environment first: its PATH decides which tool roots
	// in the home the layout binds.
	env, err := confine.BuildEnv(os.Environ(), pass, extraEnv)
	var mounts []confine.Mount
	if err == nil {
		l.Path = filepath.SplitList(envValue(env, "PATH"))
		mounts, h.ph, err = l.Build()
		h.git.RecordWalk()
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
		return h, &startError{2, "", err, ""}
	}
	spec.Env, spec.Dir, spec.Mounts, spec.Seccomp = env, ws, mounts, f.prog
	if nr != nil {
		// No Landlock port rule (Spec.ConnectPorts): the namespace has only loopback, so the
		// rule could only refuse the command's own local servers (docs/network.md).
		spec.Sockets = nr.sockets
	}
	if err := cmd.Start(); err != nil {
		var ee *confine.ExecError
		if errors.As(err, &ee) {
			se := &startError{ee.ExitCode(), "", err, ""}
			if errors.Is(ee.Errno, syscall.ENOENT) && len(spec.Argv) > 0 {
				se.hint = hiddenHint(spec.Argv[0], l.Path, ws, l.Home, mounts)
			}
			return h, se
		}
		return h, &startError{125, "cannot start the sandbox: ", err, ""}
	}
	return h, nil
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
