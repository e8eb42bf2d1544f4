package policy

import (
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// The guard's walk of a shell command (Guard.Check): the syntax tree of
// mvdan.cc/sh, every word resolved as far as it can be without running
// anything, wrappers (env, sudo, nice, xargs, sh -c) stripped and their
// scripts parsed again, pipelines and redirections seen; each command it
// finds goes to the rules (guard_rules.go).

type scan struct {
	g       *Guard
	hits    []GuardHit
	vars    map[string]string
	pending string // here-document text for the next simple command
	actions []Action
	rb      rebinds // names the command may rebind (rebind.go)
}

func (s *scan) hit(id, cmd, reason string) {
	if slices.Contains(s.g.disabled, id) {
		return
	}
	for _, h := range s.hits {
		if h.ID == id && h.Command == cmd {
			return
		}
	}
	s.hits = append(s.hits, GuardHit{ID: id, Level: guardLevelOf(id), Reason: reason, Command: cmd})
}

func (s *scan) script(src string, depth int) {
	if depth > maxDepth {
		s.hit(GuardUnparseable, src, "command nests eval or sh -c too deeply to check")
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		s.hit(GuardUnparseable, src, "command does not parse as shell: "+err.Error())
		return
	}
	s.collectRebinds(f)
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			s.redirects(n)
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				s.pipeline(n, depth)
			}
		case *syntax.CallExpr:
			if len(n.Args) == 0 {
				s.assign(n.Assigns)
				return true
			}
			s.command(s.argv(n.Args), depth)
			s.pending = ""
		case *syntax.DeclClause:
			s.assign(n.Args)
		}
		return true
	})
}

// assign remembers literal assignments so `a=rm; $a -rf /` is read as rm.
func (s *scan) assign(as []*syntax.Assign) {
	for _, a := range as {
		if a.Name == nil || a.Value == nil {
			continue
		}
		if v, dyn := s.word(a.Value); !dyn {
			s.vars[a.Name.Value] = v
		} else {
			delete(s.vars, a.Name.Value)
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
func (s *scan) argv(words []*syntax.Word) []arg {
	var out []arg
	for _, w := range words {
		ws := []*syntax.Word{w}
		// SplitBraces rewrites the word it is given; work on a copy so the tree being walked
		// keeps only node types syntax.Walk knows.
		if cp := (&syntax.Word{Parts: slices.Clone(w.Parts)}); syntax.SplitBraces(cp) {
			ws = nil
			// BracesSeq stops with an error on huge sequences ({1..99999999}); a word that
			// expands that far is checked as written.
			for bw, err := range expand.BracesSeq(nil, cp) {
				if err != nil || len(ws) > 1000 {
					ws = []*syntax.Word{w}
					break
				}
				ws = append(ws, bw)
			}
		}
		for _, w := range ws {
			v, dyn := s.word(w)
			// ${IFS} became \x00: split there, as the shell would split the expansion.
			for _, piece := range strings.Split(v, "\x00") {
				if piece == "" && strings.Contains(v, "\x00") {
					continue
				}
				out = append(out, arg{v: piece, dyn: dyn, word: w})
			}
		}
	}
	return out
}

// word removes quotes and escapes. Unknown expansions contribute nothing to the text and mark
// the word dynamic, so "$X/" reads as "/" — what it becomes when X is empty.
func (s *scan) word(w *syntax.Word) (string, bool) {
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
			switch v, ok := s.vars[name]; {
			case simple && ok:
				b.WriteString(v)
			case simple && name == "HOME" && s.g.home != "":
				b.WriteString(s.g.home)
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
	for _, p := range w.Parts {
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
func (s *scan) stripWrappers(args []arg, depth int) []arg {
	for len(args) > 0 && !args[0].dyn {
		name := path.Base(args[0].v)
		rest := args[1:]
		switch name {
		case "env":
			for len(rest) > 0 && (strings.HasPrefix(rest[0].v, "-") || strings.Contains(rest[0].v, "=")) {
				switch rest[0].v {
				case "-u", "--unset", "-C", "--chdir":
					rest = rest[min(2, len(rest)):]
					continue
				case "-S", "--split-string":
					if len(rest) > 1 {
						s.reparse(rest[1:], depth)
					}
					return nil
				}
				rest = rest[1:]
			}
		case "sudo", "doas":
			s.act(ActSysAdmin)
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
			s.reparse(rest, depth)
			return nil
		case "su":
			s.act(ActSysAdmin)
			for i := 0; i+1 < len(rest); i++ {
				if rest[i].v == "-c" || rest[i].v == "--command" {
					s.hit(GuardInline, joinArgs(args), "su -c runs an inline shell script")
					s.reparse(rest[i+1:i+2], depth)
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

func (s *scan) reparse(args []arg, depth int) {
	if !literal(args) {
		s.hit(GuardDynamic, joinArgs(args), "runs a command text not known until run time")
		return
	}
	var vs []string
	for _, a := range args {
		vs = append(vs, a.v)
	}
	s.script(strings.Join(vs, " "), depth+1)
}

func isShell(name string) bool {
	return slices.Contains([]string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "rbash", "busybox"}, name)
}

func isInterpreter(name string) bool {
	return isShell(name) || regexp.MustCompile(`^(python[0-9.]*|pypy[0-9.]*|perl[0-9.]*|ruby[0-9.]*|node|nodejs|deno|bun|php[0-9.]*|lua[0-9.]*|Rscript|pwsh|powershell|osascript|tclsh|wish)$`).MatchString(name)
}

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

// pipeline checks what flows between the commands of a pipeline: a download into an
// interpreter, or destructive SQL into a database client.
func (s *scan) pipeline(n *syntax.BinaryCmd, depth int) {
	var leaves []*syntax.Stmt
	var flat func(st *syntax.Stmt)
	flat = func(st *syntax.Stmt) {
		if b, ok := st.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
			flat(b.X)
			flat(b.Y)
			return
		}
		leaves = append(leaves, st)
	}
	flat(n.X)
	flat(n.Y)
	downloaded, sqlText := false, ""
	for _, st := range leaves {
		c, ok := st.Cmd.(*syntax.CallExpr)
		if !ok || len(c.Args) == 0 {
			continue
		}
		probe := &scan{g: s.g, vars: s.vars}
		args := probe.stripWrappers(s.argv(c.Args), depth)
		if len(args) == 0 {
			continue
		}
		name := path.Base(args[0].v)
		switch {
		case args[0].dyn:
		case isDownloader(name):
			downloaded = true
		case isInterpreter(name) && downloaded:
			s.hit(GuardPipeToShell, joinArgs(args), "pipes a download into "+name)
		case slices.Contains([]string{"psql", "mysql", "mariadb", "sqlite3", "sqlcmd", "clickhouse-client", "duckdb"}, name) && destructiveSQL(sqlText):
			s.hit(GuardSQL, joinArgs(args), "pipes destructive SQL into "+name)
		default:
			sqlText += " " + joinArgs(args)
		}
	}
}

// redirects checks where a statement's output goes, and remembers here-documents for the SQL
// check of the command they feed.
func (s *scan) redirects(st *syntax.Stmt) {
	s.pending = ""
	for _, r := range st.Redirs {
		if r.Hdoc != nil {
			v, _ := s.word(r.Hdoc)
			s.pending += v
		}
		if r.Word == nil {
			continue
		}
		target, _ := s.word(r.Word)
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob, syntax.RdrInOut, syntax.DplOut:
			if r.Op != syntax.DplOut && !strings.HasPrefix(path.Clean(target), "/dev/") {
				s.act(ActCodeWrite)
			}
			if isBlockDevice(target) {
				s.hit(GuardBlockDevice, "> "+target, "redirects output to block device "+target)
			}
			if s.isCredential(target) {
				s.hit(GuardCredWrite, "> "+target, "writes to credential file "+target)
			}
		case syntax.RdrIn:
			if s.isSecret(target) {
				s.hit(GuardReadSecrets, "< "+target, "reads "+target+", a secret jail never lets a tool read")
			}
		case syntax.WordHdoc:
			s.pending += target
		}
	}
}
