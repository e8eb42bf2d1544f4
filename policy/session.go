package policy

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Shell is the state a shell command starts in: the session a bash tool
// keeps between calls (its working directory and exported variables).
//
// That state is what the previous command left, and the command chose it:
// by `export`, by `source`, through a script it ran, or by writing the
// report the session is read from. So the guard and the classifier judge
// a command against the state it will really run in, never against its
// text alone: a variable that makes a program run another (TAR_OPTIONS,
// LESSOPEN, BASH_ENV, ...) makes every command of the line one of unknown
// name, and a PATH entry the sandbox can write makes every name looked up
// in PATH one that may be the sandbox's own program (docs/actions.md).
type Shell struct {
	// Cwd is the directory the command starts in ("" unknown).
	Cwd string
	// Env is the environment the command starts with (NAME=VALUE).
	Env []string
	// Base is the sandbox's own starting environment, which the caller and
	// the policy chose: a variable with the same value there is theirs, not
	// the session's. Nil: every variable of Env counts as the session's.
	Base []string
	// Writable reports whether the sandbox can write, or create, the
	// directory dir (as the sandbox sees it). Nil: every directory outside
	// /usr, /bin, /sbin and /lib counts as writable.
	Writable func(dir string) bool
}

// benignProgramValue reports whether v, as the value of a pager or editor
// variable, names no program beyond the usual ones found in PATH (itself
// judged): agents set GIT_PAGER=cat and GIT_EDITOR=true to keep git from
// waiting on a terminal.
func benignProgramValue(name, v string) bool {
	switch name {
	case "PAGER", "MANPAGER", "GIT_PAGER", "EDITOR", "VISUAL", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR":
		return slices.Contains([]string{"", "cat", "true", ":", "less", "more"}, v)
	}
	return false
}

// setup readies s for a line run in sh: the session's variables are known
// values, its HOME is what ~ means, its directory is where relative
// targets lie, and what it set that rebinds names is recorded.
func (w *walk) setup(sh *Shell) {
	w.sh = sh
	w.rb.names, w.rb.aliases, w.rb.active = map[string]bool{}, map[string]string{}, map[string]bool{}
	if sh == nil {
		return
	}
	if path.IsAbs(sh.Cwd) {
		w.cwd = path.Clean(sh.Cwd)
	}
	base := map[string]string{}
	for _, kv := range sh.Base {
		k, v, _ := strings.Cut(kv, "=")
		base[k] = v
	}
	set := map[string]bool{}
	for _, kv := range sh.Env {
		k, v, _ := strings.Cut(kv, "=")
		set[k] = true
		switch k {
		case "PWD", "OLDPWD", "UID", "EUID", "PPID", "SHELLOPTS", "BASHOPTS", "IFS":
			// Set by the shell itself, or readonly in bash.
		default:
			w.vars[k] = v
		}
		if k == "HOME" && path.IsAbs(v) {
			w.home = strings.TrimSuffix(path.Clean(v), "/")
		}
		if bv, ok := base[k]; ok && bv == v {
			continue // the caller's or the policy's own value
		}
		switch {
		case k == "PATH":
			w.sessionPath(v, base["PATH"])
		case k == "IFS":
			w.rb.all = "the session sets IFS (in an earlier call), which changes how every expansion is split"
			w.rbSession = true
		case rebindingVar(k) && !benignProgramValue(k, v) && w.rb.all == "":
			w.rb.all = "the session's environment sets " + k + " (in an earlier call), which makes programs run others it does not name"
			w.rbSession = true
		}
	}
	if _, ok := base["PATH"]; ok && !set["PATH"] {
		// Unset, a shell looks names up in a default that may hold ".".
		w.sessionPath("", base["PATH"])
	}
	// A variable of the starting environment the session unset changes
	// what programs read as much as one it set: without
	// GIT_CONFIG_GLOBAL, git reads ~/.config/git/config of the
	// persistent home, a file jail does not read for it. (A session PATH
	// the sandbox can write already makes every name looked up unknown,
	// and its reason is the one to give.)
	for _, kv := range sh.Base {
		k, _, _ := strings.Cut(kv, "=")
		if !set[k] && k != "PATH" && rebindingVar(k) && w.rb.all == "" && w.foreign == "" {
			w.rb.all = "the session's environment unsets " + k + " (in an earlier call), which makes programs read files or run programs jail did not judge"
			w.rbSession = true
		}
	}
}

// sessionPath records why a name looked up in PATH may be the sandbox's
// own program: an entry of the session's PATH (v) that the starting PATH
// (base) lacks and that the sandbox can write, or that is relative (the
// working directory's), or a magic link's (/proc/self/cwd, /dev/fd).
func (w *walk) sessionPath(v, base string) {
	if w.foreign != "" {
		return
	}
	trusted := strings.Split(base, ":")
	for _, e := range strings.Split(v, ":") {
		if slices.Contains(trusted, e) {
			continue
		}
		clean := path.Clean(e)
		switch {
		case e == "" || !path.IsAbs(e):
			w.foreign = "the session's PATH (set in an earlier call) has the relative entry " + quoteEntry(e) + ": a command name may run a program of the working directory"
		case within(clean, "/proc") || within(clean, "/dev"):
			w.foreign = "the session's PATH (set in an earlier call) has " + quoteEntry(e) + ", which can lead anywhere the sandbox writes: a command name may run a program the sandbox wrote"
		case w.writable(clean):
			w.foreign = "the session's PATH (set in an earlier call) has " + quoteEntry(e) + ", which the sandbox can write: a command name may run a program the sandbox wrote"
		default:
			continue
		}
		return
	}
}

func quoteEntry(e string) string {
	if e == "" {
		return `"" (the working directory)`
	}
	q, err := syntax.Quote(e, syntax.LangBash)
	if err != nil {
		return "an entry that cannot be shown"
	}
	return q
}

// writable reports whether the sandbox can write dir: the session's
// answer, else anything outside the system's own directories.
func (w *walk) writable(dir string) bool {
	if w.sh != nil && w.sh.Writable != nil {
		return w.sh.Writable(dir)
	}
	for _, sys := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if within(dir, sys) {
			return false
		}
	}
	return true
}

// foreignProgram reports whether the command name may run a program the
// sandbox wrote, and why: a path (./cat, /tmp/ls) in a place the sandbox
// can write, or, with a session PATH entry it can write, a name looked
// up in PATH (wrapped: run by a wrapper, which looks even a builtin's name
// up). A name whose usual reading runs code anyway (make, go test,
// pytest) keeps it: approving it already approved running the project's
// code.
func (w *walk) foreignProgram(args []arg, wrapped bool) (string, bool) {
	name := args[0].v
	why := ""
	switch {
	case strings.Contains(name, "/"):
		p := name
		if p == "~" || strings.HasPrefix(p, "~/") {
			p = w.home + strings.TrimPrefix(p, "~")
		}
		p = path.Clean(p)
		switch {
		case !path.IsAbs(p):
			why = "runs " + quoteEntry(name) + ", a program of the working directory, which the sandbox can write"
		case within(p, "/proc") || within(p, "/dev") || w.writable(path.Dir(p)):
			why = "runs " + quoteEntry(name) + ", a program in a place the sandbox can write"
		}
	case w.foreign != "" && (wrapped || !slices.Contains(shellBuiltins(), name)):
		why = w.foreign
	}
	if why == "" {
		return "", false
	}
	probe := &classifier{}
	c := &call{args: slices.Clone(args), w: w.quiet()}
	c.args[0].v = path.Base(name)
	switch base := path.Base(name); {
	case scriptName(base) == "sed":
		si := sedInfo(c.args)
		c.script = &si
	case scriptName(base) == "awk":
		si := awkInfo(c.args)
		c.script = &si
	case base == "git":
		l := gitLine(c.args)
		c.git = &l
	}
	probe.command(c)
	if len(probe.actions) > 0 && !slices.ContainsFunc(probe.actions, func(a Action) bool {
		return a != ActTestRun && a != ActBuildRun && a != ActProcRun
	}) {
		return "", false
	}
	if why == w.foreign {
		w.bySession = why
	}
	return why, true
}

// shellBuiltins are names sh and bash run themselves, without a PATH
// lookup.
func shellBuiltins() []string {
	return []string{"cd", "echo", "printf", "true", "false", ":", "export", "unset", "set", "shift", "test", "[", "[[",
		"pwd", "read", "local", "declare", "typeset", "return", "exit", "wait", "type", "eval", "exec", "command",
		"alias", "unalias", "trap", "umask", "ulimit", "getopts", "hash", "jobs", "fg", "bg", "kill", "times",
		"break", "continue", "readonly", "source", ".", "let", "builtin", "enable", "pushd", "popd", "dirs"}
}

// changesDir reports whether the script changes directory anywhere, after
// which the session's directory says nothing about relative paths.
func changesDir(f *syntax.File) bool {
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok && len(c.Args) > 0 {
			if w := c.Args[0].Lit(); w == "cd" || w == "pushd" || w == "popd" || w == "" {
				// A name known only at run time may be cd too.
				found = true
			}
		}
		return !found
	})
	return found
}

// within reports whether p is root or lies beneath it (both clean).
func within(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}
