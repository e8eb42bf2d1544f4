package policy

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jail-sandbox/jail/gitcmd"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// The walk of a shell command: the syntax tree of mvdan.cc/sh, every word
// resolved as far as it can be without running anything, wrappers (env,
// sudo, nice, xargs, su -c) stripped, and every text the line hands to a
// shell (sh -c, eval, trap, find -exec, sed's e, a git alias, an alias of
// the line's) parsed and walked again. What it finds goes to its
// visitors: the guard's rules (guard_rules.go: what a command risks) and
// the action classifier (actions.go: what a command does). One walk for
// both, so the guard and the approval rules cannot read a line two ways.

// visitor is a user of the walk. Each is told, in the order the shell
// would meet them, every redirection, pipeline, wrapper and simple
// command of the line, nested ones included.
type visitor interface {
	// redirect is one redirection of a statement (quotes removed from
	// its target), before the statement's command.
	redirect(op syntax.RedirOperator, target string, dyn bool)
	// pipeline is the stages of a pipeline that are simple commands,
	// wrappers stripped, before the commands of the stages are visited.
	pipeline(stages [][]arg)
	// wrapper is a command that only runs another (sudo, su, env, nice,
	// ...), as the walk strips it: args[0] is the wrapper.
	wrapper(args []arg)
	// command is one simple command as it runs (see call).
	command(c *call)
	// unreadable is text the walk cannot vouch for.
	unreadable(kind unreadableKind, text, why string)
}

// unreadableKind says why the walk cannot read a text.
type unreadableKind int

const (
	notParsed unreadableKind = iota // it does not parse as shell, or nests too deeply
	notKnown                        // it is known only at run time
)

// call is one simple command as the walk found it.
type call struct {
	// args are its words, wrappers stripped. args[0].dyn says its name is
	// not known until run time, or may be rebound by the line (why).
	args []arg
	// text is the command as a hit shows it.
	text string
	// why is the reason args[0] is unknown.
	why string
	// heredoc is the here-document text the command reads.
	heredoc string
	// script is what a sed or awk program does; nil for other commands.
	script *scriptInfo
	// git is how git reads a git command line; nil for other commands.
	git *gitcmd.Line
	// w resolves the words inside args' substitutions.
	w *walk
}

// name is the command's base name, "" when it is not known.
func (c *call) name() string {
	if c.args[0].dyn {
		return ""
	}
	return path.Base(c.args[0].v)
}

// walk is the state of one walk of a command line.
type walk struct {
	home    string // lets "~" and $HOME be read
	vars    map[string]string
	pending string // here-document text for the next simple command
	rb      rebinds
	vs      []visitor
	// cwd is the directory the command starts in when the session says
	// so and the line never changes directory (cd, pushd, popd); "" when
	// unknown. Relative targets of a recursive delete are judged there.
	cwd string
	// foreign, when not "", says why a command name looked up in PATH
	// may be a program the sandbox wrote (session.go).
	foreign string
	// sh is the session the line runs in, nil when none is known.
	sh *Shell
	// rbSession: rb.all is the session's doing. bySession is the reason
	// a command was read as of unknown name because of the session.
	rbSession bool
	bySession string
	// envChdir: an env -C or --chdir runs a command elsewhere; repeats:
	// the line has a loop or a function, which may run a cd again.
	envChdir, repeats bool
	// inner are the pipelines inside a pipeline already told.
	inner map[*syntax.BinaryCmd]bool
	// spent is what the whole check has read so far, shared by every
	// walk of it (look-aheads and re-parses too).
	spent *budget
}

// budget is what one check has parsed and walked: every re-parse (eval,
// sh -c, an alias, a sed or awk script) of text the line holds or a
// session variable gives counts, so neither one large line nor a text
// parsed again and again costs more than the bounds.
type budget struct {
	bytes, commands int
	over            bool // a bound was passed: the walk stops
}

// The guard's bounds: a line past them is refused as unparseable, naming
// the bound. They are far above what people and models write (a script
// of a few hundred commands; a here-document of code of some thousand
// brackets), and keep the worst check near a second
// (BenchmarkGuardBounds).
const (
	// maxNesting bounds how deep a command line's brackets may nest
	// before the guard parses it.
	maxNesting = 1000
	// maxOpens bounds the brackets, backticks, pipes, &s and compound
	// keywords (if, while, until, for, select, case, function) a text
	// holds in all: the parser recurses at most once for each (opens),
	// and closers cannot
	// be counted soundly without the parser itself (a ")" in quotes, a
	// comment or a case pattern closes nothing).
	maxOpens = 20000
	// maxParseBytes bounds the shell text one check parses, re-parses
	// included; maxCommands the simple commands it walks.
	maxParseBytes = 10 << 20
	maxCommands   = 20000
)

func newWalk(home string, vs ...visitor) *walk {
	return &walk{home: home, vars: map[string]string{}, vs: vs, spent: &budget{}}
}

// quiet is a walk that tells no one: a look ahead at what a command is.
func (w *walk) quiet() *walk {
	return &walk{home: w.home, vars: w.vars, cwd: w.cwd, foreign: w.foreign, sh: w.sh, spent: w.spent}
}

// overBudget reports, once, that the check passed a bound: the text
// src is not read further.
func (w *walk) overBudget(src, why string) {
	if !w.spent.over {
		w.spent.over = true
		w.unreadable(notParsed, shortText(src), why)
	}
}

// shortText is the start of a long text, for a hit's command.
func shortText(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

func (w *walk) unreadable(kind unreadableKind, text, why string) {
	for _, v := range w.vs {
		v.unreadable(kind, text, why)
	}
}

// script walks one command line; depth counts the re-parses that led here.
func (w *walk) script(src string, depth int) {
	if depth > maxDepth {
		w.unreadable(notParsed, src, "command nests eval or sh -c too deeply to check")
		return
	}
	if w.spent.over {
		return
	}
	if w.spent.bytes += len(src); w.spent.bytes > maxParseBytes {
		w.overBudget(src, fmt.Sprintf("command and what it runs come to more than %d bytes of shell for the guard to read", maxParseBytes))
		return
	}
	if d := nesting(src); d > maxNesting {
		// The parser and the walk recurse once per level: a line of
		// 200000 "(" overflowed the supervisor's stack (a fatal error no
		// recover catches).
		w.unreadable(notParsed, shortText(src), fmt.Sprintf("command nests its brackets %d levels deep, more than the %d the guard reads", d, maxNesting))
		return
	}
	if n := opens(src); n > maxOpens {
		// The count above sees a ")" in quotes as a closer: 600000 levels
		// of "( echo ')'; " nested past it and overflowed the stack.
		w.unreadable(notParsed, shortText(src), fmt.Sprintf("command holds %d brackets, pipes, &s and compound keywords, more than the %d the guard reads (a large here-document: write the file with the write tool)", n, maxOpens))
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		w.unreadable(notParsed, src, "command does not parse as shell: "+err.Error())
		return
	}
	w.collectRebinds(f)
	if w.cwd != "" && changesDir(f) {
		w.cwd = ""
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if w.spent.over {
			return false
		}
		switch n := n.(type) {
		case *syntax.Stmt:
			w.redirects(n)
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				w.pipeline(n, depth)
			}
		case *syntax.CallExpr:
			if len(n.Args) == 0 {
				w.assign(n.Assigns)
				return true
			}
			w.command(w.argv(n.Args), depth)
			w.pending = ""
		case *syntax.DeclClause:
			w.assign(n.Args)
		case *syntax.ForClause, *syntax.WhileClause, *syntax.FuncDecl:
			w.repeats = true
		}
		return true
	})
}

// command walks one simple command: its wrappers are stripped, what it
// runs before it (a trap's action, a literal alias) is walked, the
// visitors are told, then what it runs inside (sh -c, eval, find -exec,
// sed's e, a git alias) is walked.
func (w *walk) command(args []arg, depth int) {
	if len(args) == 0 || w.spent.over {
		return
	}
	if w.spent.commands++; w.spent.commands > maxCommands {
		w.overBudget(joinArgs(args), fmt.Sprintf("command runs more than %d simple commands for the guard to read", maxCommands))
		return
	}
	first := args[0]
	args = w.stripWrappers(args, depth)
	if len(args) == 0 {
		return
	}
	// A name a wrapper runs (env, xargs, nice) is looked up in PATH even
	// when the shell has a builtin of that name.
	wrapped := args[0].word != first.word || args[0].v != first.v
	c := &call{args: args, text: joinArgs(args), why: "command name is not known until run time", heredoc: w.pending, w: w}
	if !args[0].dyn {
		name := path.Base(args[0].v)
		if name == "trap" {
			// The action is shell code run later; walk it as such.
			if rest := skipOptions(args[1:], ""); len(rest) > 0 && rest[0].v != "-" {
				w.reparse(rest[:1], depth)
			}
		}
		if r, ok := w.rebound(name); ok {
			// A rebound name runs whatever it was bound to: unknown,
			// and a literal alias is walked as expanded.
			w.expandAlias(name, args, depth)
			c.args = slices.Clone(args)
			c.args[0].dyn = true
			c.why = "command name may be rebound: " + r
		} else if r, ok := w.foreignProgram(args, wrapped); ok {
			// The name is not the program everyone knows by it: read as one
			// of unknown name, unless what the name says runs code anyway.
			c.args = slices.Clone(args)
			c.args[0].dyn = true
			c.why = r
		}
	}
	name := c.name()
	switch {
	case scriptName(name) == "sed":
		si := sedInfo(c.args)
		c.script = &si
	case scriptName(name) == "awk":
		si := awkInfo(c.args)
		c.script = &si
	case name == "git":
		l := gitLine(c.args)
		c.git = &l
	}
	for _, v := range w.vs {
		v.command(c)
	}
	if name == "" {
		return
	}
	if c.script != nil {
		// The commands a sed or awk script runs are command lines of their
		// own, so rm -rf ~ inside sed's e or awk's system() is read as such.
		for _, cmd := range c.script.cmds {
			w.script(cmd, depth+1)
		}
	}
	switch {
	case name == "find":
		subs, _ := findExecs(c.args)
		for _, sub := range subs {
			w.command(sub, depth)
		}
	case name == "fd" || name == "fdfind":
		// fd -x CMD / -X CMD: the rest of the line is the command, each
		// found path a word known only at run time.
		for i, a := range c.args[1:] {
			if a.v == "-x" || a.v == "-X" || a.v == "--exec" || a.v == "--exec-batch" {
				sub := slices.Clone(c.args[i+2:])
				for k := range sub {
					if strings.HasPrefix(sub[k].v, "{") && strings.HasSuffix(sub[k].v, "}") {
						sub[k] = arg{v: "/found", dyn: true}
					}
				}
				if len(sub) > 0 && sub[len(sub)-1].v == ";" {
					sub = sub[:len(sub)-1]
				}
				w.command(sub, depth)
				break
			}
		}
	case name == "git":
		if c.git.Shell != "" {
			w.shellAlias(*c.git, depth)
		}
		// rebase -x, bisect run, submodule foreach, filter-branch's
		// filters, -c core.sshCommand=...: git runs each with sh.
		shell, _ := c.git.Commands()
		for _, text := range shell {
			w.script(text, depth+1)
		}
	case name == "eval":
		w.reparse(c.args[1:], depth)
	case isShell(name):
		// The script is the first non-option word after the inline flag.
		for i, a := range c.args[1:] {
			if !inlineFlag(name, a.v) {
				continue
			}
			for _, b := range c.args[i+2:] {
				if !strings.HasPrefix(b.v, "-") {
					w.reparse([]arg{b}, depth)
					break
				}
			}
			break
		}
	}
}

// findExecs returns the commands find's -exec, -execdir, -ok and -okdir
// run, each found file ({}) a word unknown until run time, and whether
// find deletes what it finds itself (-delete).
func findExecs(args []arg) (subs [][]arg, deletes bool) {
	for i := 1; i < len(args); i++ {
		switch args[i].v {
		case "-delete":
			deletes = true
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j].v != ";" && args[j].v != "+" {
				j++
			}
			sub := slices.Clone(args[i+1 : j])
			for k := range sub {
				if sub[k].v == "{}" {
					sub[k] = arg{v: "/found", dyn: true}
				}
			}
			subs = append(subs, sub)
			i = j
		}
	}
	return subs, deletes
}

// gitLine reads a git command (args[0] is git) as git does (gitcmd).
func gitLine(args []arg) gitcmd.Line {
	words := make([]string, 0, len(args)-1)
	for _, a := range args[1:] {
		words = append(words, a.v)
	}
	return gitcmd.Parse(words)
}

// shellAlias walks the shell command of a git alias (`-c alias.x='!...'`)
// as a command line: git runs it with sh, the line's arguments after it.
func (w *walk) shellAlias(l gitcmd.Line, depth int) {
	text := l.Shell
	for _, a := range l.Args {
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			w.unreadable(notKnown, l.Shell, "an argument of the git alias "+l.Alias+" cannot be quoted to check it")
			return
		}
		text += " " + q
	}
	w.script(text, depth+1)
}

// assign remembers literal assignments so `a=rm; $a -rf /` is read as rm.
func (w *walk) assign(as []*syntax.Assign) {
	for _, a := range as {
		if a.Name == nil || a.Value == nil {
			continue
		}
		if v, dyn := w.word(a.Value); !dyn {
			w.vars[a.Name.Value] = v
		} else {
			delete(w.vars, a.Name.Value)
		}
	}
}

// arg is one word of a simple command after quote removal.
type arg struct {
	v    string
	dyn  bool         // part of the word is unknown until run time
	word *syntax.Word // nil for words the guard made up (re-split, wrapper output)
}

// argv expands braces and IFS tricks, then removes quotes.
func (w *walk) argv(words []*syntax.Word) []arg {
	var out []arg
	for _, word := range words {
		ws := []*syntax.Word{word}
		// SplitBraces rewrites the word it is given; work on a copy so the tree being walked
		// keeps only node types syntax.Walk knows.
		if cp := (&syntax.Word{Parts: slices.Clone(word.Parts)}); syntax.SplitBraces(cp) {
			ws = nil
			// BracesSeq stops with an error on huge sequences ({1..99999999}); a word that
			// expands that far is checked as written.
			for bw, err := range expand.BracesSeq(nil, cp) {
				if err != nil || len(ws) > 1000 {
					ws = []*syntax.Word{word}
					break
				}
				ws = append(ws, bw)
			}
		}
		for _, bw := range ws {
			v, dyn := w.word(bw)
			// ${IFS} became \x00: split there, as the shell would split the expansion.
			for _, piece := range strings.Split(v, "\x00") {
				if piece == "" && strings.Contains(v, "\x00") {
					continue
				}
				out = append(out, arg{v: piece, dyn: dyn, word: bw})
			}
		}
	}
	return out
}

// word removes quotes and escapes. Unknown expansions contribute nothing to the text and mark
// the word dynamic, so "$X/" reads as "/" — what it becomes when X is empty.
func (w *walk) word(word *syntax.Word) (string, bool) {
	var b strings.Builder
	dyn := false
	var part func(p syntax.WordPart, quoted bool)
	part = func(p syntax.WordPart, quoted bool) {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, quoted))
		case *syntax.SglQuoted:
			if p.Dollar {
				b.WriteString(ansiC(p.Value))
			} else {
				b.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				part(q, true)
			}
		case *syntax.ParamExp:
			name := ""
			if p.Param != nil {
				name = p.Param.Value
			}
			simple := p.Exp == nil && p.Index == nil && p.Slice == nil && p.Repl == nil && !p.Length && !p.Excl && p.Names == 0
			switch v, ok := w.vars[name]; {
			case simple && ok && !quoted:
				// Unquoted, the value is split into words as the shell
				// splits it (default IFS): a="rm -rf /"; $a is rm.
				b.WriteString(strings.Map(func(r rune) rune {
					if r == ' ' || r == '\t' || r == '\n' {
						return 0
					}
					return r
				}, v))
			case simple && ok:
				b.WriteString(v)
			case simple && name == "HOME" && w.home != "":
				b.WriteString(w.home)
			case simple && name == "HOME":
				b.WriteString("~")
			case simple && name == "IFS" && !quoted:
				b.WriteString("\x00")
			default:
				dyn = true
			}
		default: // command and process substitution, arithmetic, extended globs
			dyn = true
		}
	}
	for _, p := range word.Parts {
		part(p, false)
	}
	return b.String(), dyn
}

// unescape removes backslashes as the shell does: any character outside quotes, only \ " $ `
// and newline inside double quotes.
func unescape(s string, quoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (!quoted || strings.ContainsRune("\\\"$`\n", rune(s[i+1]))) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ansiC decodes $'...' strings, a favourite of obfuscators: $'\x72\x6d' is rm.
func ansiC(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'x':
			j := i + 1
			for j < len(s) && j < i+3 && isHex(s[j]) {
				j++
			}
			if n, err := strconv.ParseUint(s[i+1:j], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i = j - 1
			} else {
				b.WriteString(`\x`)
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 8)
			b.WriteByte(byte(n))
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func joinArgs(args []arg) string {
	var vs []string
	for _, a := range args {
		v := a.v
		if a.dyn {
			v += "$?"
		}
		vs = append(vs, v)
	}
	return strings.Join(vs, " ")
}

func literal(args []arg) bool {
	return !slices.ContainsFunc(args, func(a arg) bool { return a.dyn })
}

// stripWrappers removes commands that only run another command, returning what actually runs.
// It re-parses strings that wrappers hand to a shell (env -S, watch, su -c).
func (w *walk) stripWrappers(args []arg, depth int) []arg {
	for len(args) > 0 && !args[0].dyn {
		name := path.Base(args[0].v)
		rest := args[1:]
		if wrapperNames[name] {
			for _, v := range w.vs {
				v.wrapper(args)
			}
		}
		switch name {
		case "env":
			for len(rest) > 0 && (strings.HasPrefix(rest[0].v, "-") || strings.Contains(rest[0].v, "=")) {
				switch rest[0].v {
				case "-u", "--unset", "-C", "--chdir":
					w.envChdir = w.envChdir || rest[0].v == "-C" || rest[0].v == "--chdir"
					rest = rest[min(2, len(rest)):]
					continue
				case "-S", "--split-string":
					if len(rest) > 1 {
						w.reparse(rest[1:], depth)
					}
					return nil
				}
				rest = rest[1:]
			}
		case "sudo", "doas":
			rest = skipOptions(rest, "ughpCDrtUT")
		case "nice":
			rest = skipOptions(rest, "n")
		case "ionice":
			rest = skipOptions(rest, "cnp")
		case "timeout":
			rest = skipOptions(rest, "sk")
			if len(rest) > 0 {
				rest = rest[1:] // the duration
			}
		case "nohup", "builtin", "unbuffer", "setsid", "time", "stdbuf", "exec", "flock", "chroot", "nsenter", "caffeinate":
			rest = skipOptions(rest, "aiuoeE")
			if (name == "flock" || name == "chroot") && len(rest) > 0 {
				rest = rest[1:] // the lock file or new root
			}
		case "command":
			if len(rest) > 0 && (rest[0].v == "-v" || rest[0].v == "-V") {
				return nil // a lookup, runs nothing
			}
			rest = skipOptions(rest, "")
		case "xargs":
			rest = skipOptions(rest, "IndELsaP")
			// xargs appends words from stdin: mark the command as having unknown arguments.
			if len(rest) > 0 {
				rest = append(slices.Clone(rest), arg{dyn: true})
			}
		case "busybox", "toybox":
		case "watch":
			rest = skipOptions(rest, "nd")
			w.reparse(rest, depth)
			return nil
		case "su":
			for i := 0; i+1 < len(rest); i++ {
				if rest[i].v == "-c" || rest[i].v == "--command" {
					w.reparse(rest[i+1:i+2], depth)
				}
			}
			return nil
		default:
			return args
		}
		args = rest
	}
	return args
}

// wrapperNames are the commands stripWrappers strips.
var wrapperNames = map[string]bool{"env": true, "sudo": true, "doas": true, "nice": true, "ionice": true, "timeout": true,
	"nohup": true, "builtin": true, "unbuffer": true, "setsid": true, "time": true, "stdbuf": true, "exec": true, "flock": true,
	"chroot": true, "nsenter": true, "caffeinate": true, "command": true, "xargs": true, "busybox": true, "toybox": true,
	"watch": true, "su": true}

// skipOptions drops leading options; letters in withValue take the following word.
func skipOptions(args []arg, withValue string) []arg {
	for len(args) > 0 && strings.HasPrefix(args[0].v, "-") && args[0].v != "-" {
		a := args[0].v
		args = args[1:]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "--") && len(a) == 2 && strings.ContainsRune(withValue, rune(a[1])) && len(args) > 0 {
			args = args[1:]
		}
	}
	return args
}

// reparse walks words a command hands to a shell as a command line.
func (w *walk) reparse(args []arg, depth int) {
	if !literal(args) {
		w.unreadable(notKnown, joinArgs(args), "runs a command text not known until run time")
		return
	}
	var vs []string
	for _, a := range args {
		vs = append(vs, a.v)
	}
	w.script(strings.Join(vs, " "), depth+1)
}

func isShell(name string) bool {
	return slices.Contains([]string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "rbash", "busybox"}, name)
}

func isInterpreter(name string) bool {
	return isShell(name) || interpreterName.MatchString(name)
}

// The patterns the walk matches every command against, compiled once: a
// compilation per command made a line of 2000 commands take 0.4 s.
var (
	interpreterName = regexp.MustCompile(`^(python[0-9.]*|pypy[0-9.]*|perl[0-9.]*|ruby[0-9.]*|node|nodejs|deno|bun|php[0-9.]*|lua[0-9.]*|Rscript|pwsh|powershell|osascript|tclsh|wish)$`)
	testTarget      = regexp.MustCompile(`(^|[-_:])(test|tests|check|spec)($|[-_:])`)
	sqlMutate       = regexp.MustCompile(`(?i)\b(insert|update|delete|drop|truncate|alter|create|grant|revoke|replace|merge|upsert|copy|vacuum|flushall|flushdb|del|set)\b`)
	sqlRead         = regexp.MustCompile(`(?i)\b(select|show|explain|describe|with|\\d[a-z+]*|\\l|keys|get|find|count)\b`)
	homeDir         = regexp.MustCompile(`^/home/[^/]+$`)
	sqlDestructive  = regexp.MustCompile(`(?is)\b(drop\s+(table|database|schema|view|index|user|role|owned)\b|truncate\s+\w|delete\s+from\s+[\w."\x60\[\]]+\s*(;|$|"|'))`)
	awkSystem       = regexp.MustCompile(`\bsystem\s*\(`)
	awkValue        = regexp.MustCompile(`^(\$?[A-Za-z_0-9]+(\[[^\]]*\])?|\$\([^)]*\))`)
)

// inlineFlag reports whether an interpreter's argument introduces inline code.
func inlineFlag(name, a string) bool {
	switch {
	case isShell(name) || strings.HasPrefix(name, "perl") || strings.HasPrefix(name, "ruby"):
		letter := "c"
		if !isShell(name) {
			letter = "eE"
		}
		return strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a[1:], letter)
	case strings.HasPrefix(name, "python") || strings.HasPrefix(name, "pypy"):
		return a == "-c" || (strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.HasSuffix(a, "c"))
	case strings.HasPrefix(name, "php"):
		return a == "-r"
	case name == "pwsh" || name == "powershell":
		return strings.EqualFold(a, "-c") || strings.EqualFold(a, "-command") || strings.EqualFold(a, "-encodedcommand")
	case name == "osascript" || name == "Rscript" || strings.HasPrefix(name, "lua"):
		return a == "-e"
	case name == "deno":
		return a == "eval"
	}
	return a == "-e" || a == "--eval" || a == "-p" || a == "--print" // node, bun
}

// pipeline tells the visitors the stages of a pipeline, so they can judge
// what flows between them (a download into an interpreter).
func (w *walk) pipeline(n *syntax.BinaryCmd, depth int) {
	if w.inner[n] {
		return // a stage of a pipeline told already
	}
	if w.inner == nil {
		w.inner = map[*syntax.BinaryCmd]bool{}
	}
	var leaves []*syntax.Stmt
	var flat func(st *syntax.Stmt)
	flat = func(st *syntax.Stmt) {
		if b, ok := st.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
			// Walked after this one: told once, as part of the whole
			// (a|b|c... of n stages was told n times, n*n stages).
			w.inner[b] = true
			flat(b.X)
			flat(b.Y)
			return
		}
		leaves = append(leaves, st)
	}
	flat(n.X)
	flat(n.Y)
	var stages [][]arg
	for _, st := range leaves {
		c, ok := st.Cmd.(*syntax.CallExpr)
		if !ok || len(c.Args) == 0 {
			continue
		}
		// The stages are walked as commands after this; here they are
		// only looked at.
		if args := w.quiet().stripWrappers(w.argv(c.Args), depth); len(args) > 0 {
			stages = append(stages, args)
		}
	}
	for _, v := range w.vs {
		v.pipeline(stages)
	}
}

// redirects tells the visitors where a statement's input and output go,
// and remembers here-documents for the command they feed.
func (w *walk) redirects(st *syntax.Stmt) {
	w.pending = ""
	for _, r := range st.Redirs {
		if r.Hdoc != nil {
			v, _ := w.word(r.Hdoc)
			w.pending += v
		}
		if r.Word == nil {
			continue
		}
		target, dyn := w.word(r.Word)
		if r.Op == syntax.WordHdoc {
			w.pending += target
		}
		for _, v := range w.vs {
			v.redirect(r.Op, target, dyn)
		}
	}
}

// nesting is how deep src's brackets nest, quotes and here-documents
// ignored (unbalanced brackets in a string only add): the parser recurses
// once per level of (...), $((...)), {...} and [...].
func nesting(src string) int {
	depth, most := 0, 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '(', '{', '[':
			depth++
			most = max(most, depth)
		case ')', '}', ']':
			depth = max(depth-1, 0)
		}
	}
	return most
}

// opens counts what may open a level of the parser's recursion in src:
// every bracket, backtick, pipe and & (a chain of && or | is a tree as
// deep as it is long) and compound keyword as a word (if, while, until,
// for, select, case, function), in quotes and here-documents too (the
// worse reading: the count is an upper bound of the depth).
func opens(src string) int {
	n := 0
	word := func(c byte) bool {
		return c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case c == '(' || c == '{' || c == '[' || c == '`' || c == '|' || c == '&':
			// A pipe, && and || nest too: a|b|c is a|(b|c) to the parser.
			n++
		case 'a' <= c && c <= 'z' && (i == 0 || !word(src[i-1])):
			j := i
			for j < len(src) && word(src[j]) {
				j++
			}
			switch src[i:j] {
			case "if", "while", "until", "for", "select", "case", "function":
				n++
			}
			i = j - 1
		}
	}
	return n
}
