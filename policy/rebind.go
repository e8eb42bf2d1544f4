package policy

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Names the shell can rebind. A guard that reads `cat ~` as a read after
// `alias cat='rm -rf'` (or `cat() { rm -rf "$@"; }`, or a PATH pointing at
// a directory of the sandbox's) would wave through what the line really
// runs. So before a script is walked, every way it rebinds a command name
// is collected:
//
//   - a name defined as an alias, a function (`f()`, `function f`), by
//     `hash -p`, `enable`, or `declare/typeset/export -f`: every word of
//     that name anywhere in the script is a command whose name is not
//     known until run time (the dynamic-command guard asks, its action is
//     process:run, and it is read as rm would be for the hard guards); a
//     literal alias is also expanded and the result checked as a command;
//   - what can rebind any name with content the guard cannot see:
//     `source`/`.` of a file, an assignment to PATH, BASH_ENV, ENV or
//     BASH_FUNC_*, `enable -f`, an alias or `hash` with a word known only
//     at run time, `eval` of such a word: every command of the script is
//     then of unknown name.
//
// The collection ignores order: a rebinding inside a loop applies to
// commands before it in the text too, as it may on the second pass.
type rebinds struct {
	names   map[string]bool
	aliases map[string]string // literal alias values
	all     string            // non-empty: why every name is unknown
	active  map[string]bool   // aliases being expanded (the shell expands one once per word)
}

// rebindingVars are variables whose assignment changes which program a
// name runs, or makes a later shell run code first.
func rebindingVar(name string) bool {
	return name == "PATH" || name == "BASH_ENV" || name == "ENV" || strings.HasPrefix(name, "BASH_FUNC_") ||
		slices.Contains(programVars(), name) || strings.HasPrefix(name, "GIT_CONFIG_") || strings.HasPrefix(name, "LD_") ||
		strings.HasPrefix(strings.ToUpper(name), "NPM_CONFIG_")
}

// programVars are variables that make a program the line names run another program it does
// not name: `LESSOPEN='|./x %s' less f` runs ./x, `TAR_OPTIONS=-I./x tar cf a f` too. A line
// that sets one is read as one whose every command is of unknown name.
func programVars() []string {
	return []string{"LESSOPEN", "LESSCLOSE", "TAR_OPTIONS", "PAGER", "MANPAGER", "GIT_PAGER", "EDITOR", "VISUAL",
		"GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_EXTERNAL_DIFF", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS",
		"SSH_ASKPASS", "GIT_PROXY_COMMAND", "GIT_EXEC_PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT",
		"PYTHONSTARTUP", "PYTHONPATH", "PERL5OPT", "PERL5LIB", "NODE_OPTIONS", "RUBYOPT", "PROMPT_COMMAND", "BROWSER",
		// less reads options, key bindings and their #env section (LESSOPEN) from these.
		"LESS", "LESSKEY", "LESSKEYIN", "LESSKEY_CONTENT",
		// bash runs PS4's command substitutions under xtrace, which SHELLOPTS turns on.
		"PS4", "SHELLOPTS", "BASHOPTS",
		// Where git finds the repository, config and templates whose hooks,
		// core.fsmonitor and core.pager it runs; HOME and XDG_CONFIG_HOME
		// hold the global config of git and of most tools.
		"GIT_DIR", "GIT_COMMON_DIR", "GIT_TEMPLATE_DIR", "GIT_CONFIG", "HOME", "XDG_CONFIG_HOME",
		// Modules and agents a runtime loads before the program's own code.
		"NODE_PATH", "RUBYLIB", "PERLLIB", "PYTHONHOME", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS",
		"DOTNET_STARTUP_HOOKS", "GCONV_PATH", "GOFLAGS", "GOENV", "RUSTC_WRAPPER", "RUSTC",
		// Where python, ruby, node and perl find code they run first: the
		// user site's .pth files, gems, the rc files of a home.
		"PYTHONUSERBASE", "PYTHONNOUSERSITE", "PYTHONSAFEPATH", "PYTHONPLATLIBDIR", "PYTHONEXECUTABLE", "PYTHONBREAKPOINT",
		"PYTHONINSPECT", "GEM_HOME", "GEM_PATH", "BUNDLE_GEMFILE", "NODE_EXTRA_CA_CERTS", "NODE_REPL_EXTERNAL_MODULE",
		"PERL5DB", "PERLDB_OPTS", "XDG_DATA_HOME", "XDG_DATA_DIRS", "XDG_CONFIG_DIRS", "XDG_STATE_HOME", "XDG_CACHE_HOME",
		"ZDOTDIR", "INPUTRC", "KUBECONFIG", "SQLITE_HISTORY", "PSQLRC", "MYSQL_HOME", "WGETRC", "CURL_HOME", "GNUPGHOME",
		"LESSKEYIN_SYSTEM", "LESSKEY_SYSTEM", "LESSSECURE", "LESSHISTFILE", "GIT_CEILING_DIRECTORIES", "GIT_WORK_TREE",
		"GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_ATTR_SOURCE", "GIT_SSL_KEY"}
}

// collectRebinds records the rebindings of f (see rebinds).
func (w *walk) collectRebinds(f *syntax.File) {
	r := &w.rb
	if r.names == nil {
		r.names, r.aliases, r.active = map[string]bool{}, map[string]string{}, map[string]bool{}
	}
	some := func(why string) {
		if r.all == "" {
			r.all = why
		}
	}
	assigns := func(as []*syntax.Assign) {
		for _, a := range as {
			if a.Name == nil || !rebindingVar(a.Name.Value) {
				continue
			}
			if a.Value != nil {
				if v, dyn := w.word(a.Value); !dyn && benignProgramValue(a.Name.Value, v) {
					continue // GIT_PAGER=cat
				}
			} else if !a.Naked && benignProgramValue(a.Name.Value, "") {
				continue // GIT_PAGER=
			}
			some("the line assigns " + a.Name.Value)
		}
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.FuncDecl:
			if n.Name != nil {
				r.names[n.Name.Value] = true
			}
			for _, l := range n.Names {
				r.names[l.Value] = true
			}
		case *syntax.DeclClause:
			assigns(n.Args)
			funcs := false
			for _, a := range n.Args {
				if a.Naked && a.Name == nil && a.Value != nil {
					if v, _ := w.word(a.Value); strings.HasPrefix(v, "-") && strings.Contains(v, "f") {
						funcs = true
					}
				}
				if funcs && a.Naked && a.Name != nil {
					r.names[a.Name.Value] = true
				}
			}
		case *syntax.CallExpr:
			assigns(n.Assigns)
			if len(n.Args) == 0 {
				return true
			}
			args := w.argv(n.Args)
			for len(args) > 0 && !args[0].dyn && path.Base(args[0].v) == "env" {
				args = args[1:]
				for len(args) > 0 && (strings.HasPrefix(args[0].v, "-") || strings.Contains(args[0].v, "=")) {
					if k, v, ok := strings.Cut(args[0].v, "="); ok && rebindingVar(k) && (args[0].dyn || !benignProgramValue(k, v)) {
						some("the line sets " + k + " with env")
					}
					args = args[1:]
				}
			}
			if len(args) == 0 || args[0].dyn {
				return true
			}
			rest := args[1:]
			switch path.Base(args[0].v) {
			case "alias":
				for _, a := range rest {
					k, v, ok := strings.Cut(a.v, "=")
					switch {
					case a.dyn:
						some("an alias is defined from a word known only at run time")
					case ok:
						r.names[k] = true
						r.aliases[k] = v
					}
				}
			case "source", ".":
				some("the line sources a file the guard cannot read")
			case "enable":
				for _, a := range rest {
					switch {
					case a.dyn || a.v == "-f" || strings.HasPrefix(a.v, "-") && strings.Contains(a.v, "f"):
						some("enable loads or rebinds builtins")
					case !strings.HasPrefix(a.v, "-"):
						r.names[a.v] = true
					}
				}
			case "hash":
				if slices.ContainsFunc(rest, func(a arg) bool { return a.v == "-p" || a.dyn }) {
					for _, a := range rest {
						if a.dyn {
							some("hash binds a name known only at run time")
						}
					}
					if len(rest) > 0 {
						r.names[rest[len(rest)-1].v] = true
					}
				}
			case "eval":
				if !literal(rest) {
					some("eval runs text known only at run time")
				}
			}
		}
		return true
	})
}

// rebound reports whether the command name is one the script may have
// rebound, and why.
func (w *walk) rebound(name string) (string, bool) {
	if w.rb.all != "" {
		if w.rbSession {
			w.bySession = w.rb.all
		}
		return w.rb.all, true
	}
	if w.rb.names[name] {
		return name + " is redefined in the line (alias, function, hash or enable)", true
	}
	return "", false
}

// expandAlias checks what a literal alias makes of a command: its value
// followed by the command's arguments, parsed again.
func (w *walk) expandAlias(name string, args []arg, depth int) {
	v, ok := w.rb.aliases[name]
	if !ok || w.rb.active[name] || !literal(args[1:]) {
		return
	}
	w.rb.active[name] = true
	defer delete(w.rb.active, name)
	text := v
	for _, a := range args[1:] {
		q, err := syntax.Quote(a.v, syntax.LangBash)
		if err != nil {
			w.unreadable(notKnown, joinArgs(args), "an argument of the alias "+name+" cannot be quoted to check it")
			return
		}
		text += " " + q
	}
	w.script(text, depth+1)
}
