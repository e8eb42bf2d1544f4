package policy

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// GuardLevel is what a guard says about a command.
type GuardLevel int

// Guard levels. A hard block is never approvable; a soft block needs a human or a persistent
// grant; GuardAllow leaves the decision to the rest of the approval order.
const (
	GuardAllow GuardLevel = iota
	GuardSoft
	GuardHard
)

func (l GuardLevel) String() string {
	return [...]string{"allow", "soft", "hard"}[l]
}

// MarshalText prints the level by name in JSON.
func (l GuardLevel) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// Guard ids. The hard ones deny outright; the soft ones ask. [guards] disable = [...] switches
// any of them off; "unparseable" is not in the list and cannot be switched off, because a command
// the guard cannot read is a command it cannot vouch for.
const (
	GuardRmRoot         = "rm-root"            // hard: recursive delete of /, a system root or home
	GuardNoPreserveRoot = "no-preserve-root"   // hard: rm --no-preserve-root
	GuardBlockDevice    = "block-device-write" // hard: dd of=/dev/sda, > /dev/nvme0n1, shred, wipefs
	GuardMkfs           = "mkfs"               // hard: mkfs*, mke2fs, mkswap
	GuardShutdown       = "shutdown"           // hard: shutdown, reboot, halt, poweroff, init 0/6
	GuardReadSecrets    = "read-secrets"       // hard: /etc/shadow, ~/.ssh private keys, host keys
	GuardRmRecursive    = "rm-recursive"       // soft: rm -r, find -delete
	GuardChmodWorld     = "chmod-world-writable"
	GuardPipeToShell    = "pipe-to-shell"      // soft: curl|wget ... | sh, bash <(curl ...)
	GuardInline         = "inline-interpreter" // soft: python -c, bash -c, node -e, perl -e
	GuardCredWrite      = "credential-write"   // soft: writes to ~/.aws/credentials, .netrc, .npmrc, ...
	GuardForcePush      = "git-force-push"     // soft: git push --force / -f / --force-with-lease / +ref
	GuardSQL            = "destructive-sql"    // soft: DROP, TRUNCATE, DELETE without WHERE
	GuardServices       = "service-control"    // soft: systemctl stop/restart/disable/mask, service X stop
	GuardDynamic        = "dynamic-command"    // soft: command name or eval text unknown until run time
	GuardUnparseable    = "unparseable"        // hard, always on: the command does not parse
)

// GuardIDs returns the default guard ids that [guards] disable may name.
func GuardIDs() []string {
	return []string{GuardRmRoot, GuardNoPreserveRoot, GuardBlockDevice, GuardMkfs, GuardShutdown,
		GuardReadSecrets, GuardRmRecursive, GuardChmodWorld, GuardPipeToShell, GuardInline,
		GuardCredWrite, GuardForcePush, GuardSQL, GuardServices, GuardDynamic}
}

func guardLevelOf(id string) GuardLevel {
	switch id {
	case GuardRmRoot, GuardNoPreserveRoot, GuardBlockDevice, GuardMkfs, GuardShutdown, GuardReadSecrets, GuardUnparseable:
		return GuardHard
	}
	if strings.HasPrefix(id, "hard:") {
		return GuardHard
	}
	return GuardSoft
}

// GuardHit is one rule that matched.
type GuardHit struct {
	ID      string     `json:"id"`
	Level   GuardLevel `json:"level"`
	Reason  string     `json:"reason"`
	Command string     `json:"command"` // the simple command, as the guard read it
}

// GuardResult is the verdict on a whole command line: the strictest hit decides.
type GuardResult struct {
	Level GuardLevel `json:"level"`
	Hits  []GuardHit `json:"hits,omitempty"`
	// Actions is the set of action types of every simple command in the line, in the order
	// first met; never empty (a line with nothing classifiable runs a process).
	Actions []Action `json:"actions,omitempty"`
}

// Reason joins the reasons of the hits at the verdict's level.
func (r GuardResult) Reason() string {
	var rs []string
	for _, h := range r.Hits {
		if h.Level == r.Level {
			rs = append(rs, h.Reason+" ["+h.ID+"]")
		}
	}
	return strings.Join(rs, "; ")
}

// Guard checks shell commands before a bash-style tool runs them. It parses the command with a
// real shell parser (mvdan.cc/sh, bash dialect) and walks every simple command, however nested:
// pipelines, && and ||, subshells, $(...), backticks, functions, eval, sh -c '...' and the
// wrappers env, sudo, doas, xargs, nice, timeout, nohup, command, exec, busybox and friends.
// Quotes and escapes are removed the way the shell would (r”m, \rm, "rm", $'\x72m'), paths are
// reduced to their base name (/bin/rm), simple variables assigned earlier in the same command are
// followed, and anything it cannot resolve is treated as suspicious rather than innocent.
//
// The guard is a speed bump for the model's mistakes, not the security boundary: the sandbox is.
// It therefore errs towards asking.
type Guard struct {
	disabled []string
	hard     []*regexp.Regexp
	soft     []*regexp.Regexp
	home     string
}

// NewGuard builds a guard from [guards]; home lets "~" and $HOME be recognised.
func NewGuard(cfg GuardConfig, home string) (*Guard, error) {
	g := &Guard{disabled: slices.Clone(cfg.Disable), home: strings.TrimSuffix(home, "/")}
	for _, l := range []struct {
		src []string
		dst *[]*regexp.Regexp
	}{{cfg.Hard, &g.hard}, {cfg.Soft, &g.soft}} {
		for _, s := range l.src {
			re, err := regexp.Compile(s)
			if err != nil {
				return nil, fmt.Errorf("guard: compile %q: %w", s, err)
			}
			*l.dst = append(*l.dst, re)
		}
	}
	return g, nil
}

// maxDepth bounds re-parsing of eval and sh -c strings; deeper nesting is refused.
const maxDepth = 8

// Check returns the verdict on one command line.
func (g *Guard) Check(command string) GuardResult {
	s := &scan{g: g, vars: map[string]string{}}
	s.script(command, 0)
	for _, re := range g.hard {
		if re.MatchString(command) {
			s.hit("hard:"+re.String(), command, "matches the policy's hard pattern")
		}
	}
	for _, re := range g.soft {
		if re.MatchString(command) {
			s.hit("soft:"+re.String(), command, "matches the policy's soft pattern")
		}
	}
	if len(s.actions) == 0 {
		s.act(ActProcRun)
	}
	r := GuardResult{Hits: s.hits, Actions: s.actions}
	for _, h := range s.hits {
		r.Level = max(r.Level, h.Level)
	}
	return r
}

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

// command checks one simple command.
func (s *scan) command(args []arg, depth int) {
	args = s.stripWrappers(args, depth)
	if len(args) == 0 {
		return
	}
	why := "command name is not known until run time"
	text := joinArgs(args)
	if !args[0].dyn {
		switch name := path.Base(args[0].v); name {
		case "alias", "hash", "enable", "source", ".":
			s.act(ActProcRun) // a rebinding runs, or makes run, code of its own
		case "trap":
			// The action is shell code run later; check it as such.
			if rest := skipOptions(args[1:], ""); len(rest) > 0 && rest[0].v != "-" {
				s.reparse(rest[:1], depth)
			}
		}
		if r, ok := s.rebound(path.Base(args[0].v)); ok {
			// A rebound name runs whatever it was bound to: unknown,
			// and a literal alias is checked as expanded.
			s.expandAlias(path.Base(args[0].v), args, depth)
			args = slices.Clone(args)
			args[0].dyn = true
			why = "command name may be rebound: " + r
		}
	}
	s.classify(args)
	if args[0].dyn {
		// An unknown command name might be anything; if reading it as rm would be a hard block,
		// it is one.
		probe := &scan{g: s.g, vars: s.vars}
		probe.rm(append([]arg{{v: "rm"}}, args[1:]...), text)
		for _, h := range probe.hits {
			if h.Level == GuardHard {
				s.hit(h.ID, text, h.Reason+" (through a command name not known until run time)")
			}
		}
		s.hit(GuardDynamic, text, why)
		return
	}
	name := path.Base(args[0].v)
	var sources []arg
	if slices.Contains(treeReaders(), name) {
		sources = treeSources(name, args)
	}
	for _, a := range args[1:] {
		if a.dyn {
			continue
		}
		v := a.v
		if _, after, ok := strings.Cut(v, "="); ok && strings.HasPrefix(v, "-") {
			v = after // --directory=~/.ssh
		}
		if s.isSecret(v) {
			s.hit(GuardReadSecrets, text, "touches "+v+", a secret jail never lets a tool read")
		} else if slices.ContainsFunc(sources, func(b arg) bool { return b.v == a.v }) && s.holdsSecret(v) {
			s.hit(GuardReadSecrets, text, name+" reads "+v+", which holds a secret jail never lets a tool read")
			break
		}
	}
	switch scriptName(name) {
	case "sed", "awk":
		si := sedInfo(args)
		if scriptName(name) == "awk" {
			si = awkInfo(args)
		}
		if si.execs || si.unknown && !si.inPlace {
			s.hit(GuardInline, text, name+" runs commands, or a script the guard cannot fully read")
		}
		// The commands the script runs are checked as command lines of their own, so rm -rf ~
		// inside sed's e or awk's system() meets the same hard guards.
		for _, c := range si.cmds {
			s.script(c, depth+1)
		}
	}
	switch {
	case name == "rm":
		s.rm(args, text)
	case name == "find":
		s.find(args, text, depth)
	case name == "dd":
		for _, a := range args[1:] {
			if t, ok := strings.CutPrefix(a.v, "of="); ok && isBlockDevice(t) {
				s.hit(GuardBlockDevice, text, "writes to block device "+t)
			}
			if t, ok := strings.CutPrefix(a.v, "of="); ok && s.isCredential(t) {
				s.hit(GuardCredWrite, text, "writes to credential file "+t)
			}
		}
	case name == "shred" || name == "wipefs" || name == "blkdiscard":
		for _, a := range args[1:] {
			if isBlockDevice(a.v) || name != "shred" {
				s.hit(GuardBlockDevice, text, name+" destroys data on a device")
				break
			}
		}
	case strings.HasPrefix(name, "mkfs") || name == "mke2fs" || name == "mkswap" || name == "mkntfs" || name == "mkdosfs":
		s.hit(GuardMkfs, text, "formats a filesystem")
	case slices.Contains([]string{"shutdown", "reboot", "halt", "poweroff", "kexec"}, name):
		s.hit(GuardShutdown, text, "stops or restarts the machine")
	case name == "init" || name == "telinit":
		if len(args) > 1 && (args[1].v == "0" || args[1].v == "6") {
			s.hit(GuardShutdown, text, "changes runlevel to halt or reboot")
		}
	case name == "systemctl" || name == "service":
		s.services(name, args, text)
	case name == "chmod":
		s.chmod(args, text)
	case name == "git":
		s.git(args, text)
	case name == "eval" || name == "source" || name == ".":
		if name == "eval" {
			s.reparse(args[1:], depth)
		}
		s.substitutedDownload(args, text)
	case isInterpreter(name):
		s.interpreter(name, args, text, depth)
	case slices.Contains([]string{"psql", "mysql", "mariadb", "sqlite3", "sqlcmd", "clickhouse-client", "duckdb", "cockroach"}, name):
		sql := s.pending
		for _, a := range args[1:] {
			sql += " " + a.v
		}
		if destructiveSQL(sql) {
			s.hit(GuardSQL, text, "runs destructive SQL (DROP, TRUNCATE or DELETE without WHERE)")
		}
	}
	if slices.Contains([]string{"cp", "mv", "install", "ln", "rsync", "scp"}, name) && len(args) > 2 {
		if t := args[len(args)-1]; s.isCredential(t.v) {
			s.hit(GuardCredWrite, text, "writes to credential file "+t.v)
		}
	}
	if name == "tee" || name == "truncate" || (scriptName(name) == "sed" && slices.ContainsFunc(args, func(a arg) bool { return strings.HasPrefix(a.v, "-i") })) {
		for _, a := range args[1:] {
			if s.isCredential(a.v) {
				s.hit(GuardCredWrite, text, "writes to credential file "+a.v)
			}
			if isBlockDevice(a.v) && name == "tee" {
				s.hit(GuardBlockDevice, text, "writes to block device "+a.v)
			}
		}
	}
	for _, re := range s.g.hard {
		if re.MatchString(text) {
			s.hit("hard:"+re.String(), text, "matches the policy's hard pattern")
		}
	}
	for _, re := range s.g.soft {
		if re.MatchString(text) {
			s.hit("soft:"+re.String(), text, "matches the policy's soft pattern")
		}
	}
}

func (s *scan) rm(args []arg, text string) {
	recursive, endOpts := false, false
	var targets []arg
	for _, a := range args[1:] {
		switch {
		case endOpts || !strings.HasPrefix(a.v, "-") || a.v == "-":
			targets = append(targets, a)
		case a.v == "--":
			endOpts = true
		case a.v == "--no-preserve-root":
			s.hit(GuardNoPreserveRoot, text, "rm --no-preserve-root exists only to delete /")
		case a.v == "--recursive":
			recursive = true
		case !strings.HasPrefix(a.v, "--") && strings.ContainsAny(a.v, "rR"):
			recursive = true
		}
	}
	if !recursive {
		return
	}
	for _, t := range targets {
		if s.criticalRoot(t) {
			s.hit(GuardRmRoot, text, "recursively deletes "+shown(t)+", a system or home root")
			return
		}
	}
	s.hit(GuardRmRecursive, text, "deletes recursively")
}

func shown(a arg) string {
	if a.dyn {
		return fmt.Sprintf("%q (with a part unknown until run time)", a.v)
	}
	return a.v
}

func (s *scan) find(args []arg, text string, depth int) {
	var starts []arg
	i := 1
	for ; i < len(args) && !strings.HasPrefix(args[i].v, "-") && args[i].v != "(" && args[i].v != "!"; i++ {
		starts = append(starts, args[i])
	}
	deletes := false
	for ; i < len(args); i++ {
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
			if len(sub) > 0 && path.Base(sub[0].v) == "rm" {
				deletes = true
			}
			s.command(sub, depth)
			i = j
		}
	}
	if !deletes {
		return
	}
	for _, t := range starts {
		if s.criticalRoot(t) {
			s.hit(GuardRmRoot, text, "deletes files under "+t.v+", a system or home root")
			return
		}
	}
	s.hit(GuardRmRecursive, text, "deletes the files it finds")
}

// criticalRoot reports whether deleting t recursively would destroy the system or a home.
func (s *scan) criticalRoot(t arg) bool {
	p := s.normPath(t.v)
	if p == "" {
		return false
	}
	// /*, /usr/*, ~/.* : a glob over a root's entries is as bad as the root itself.
	for strings.ContainsAny(path.Base(p), "*?[") && p != "/" {
		p = path.Dir(p)
	}
	roots := []string{"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32",
		"/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/usr", "/var", "/snap", "/nix",
		"/usr/bin", "/usr/lib", "/usr/local", "/usr/sbin", "/usr/share", "/usr/include", "/var/lib", "/var/log", "~"}
	if s.g.home != "" {
		roots = append(roots, s.g.home)
	}
	return slices.Contains(roots, p) || regexp.MustCompile(`^/home/[^/]+$`).MatchString(p)
}

// normPath expands ~ and cleans; relative paths stay relative.
func (s *scan) normPath(p string) string {
	if p == "" {
		return ""
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if s.g.home == "" {
			return path.Clean(p)
		}
		p = s.g.home + strings.TrimPrefix(p, "~")
	}
	return path.Clean(p)
}

// isSecret reports paths no tool may read: shadow files and SSH private keys.
func (s *scan) isSecret(raw string) bool {
	p := s.normPath(raw)
	if !strings.Contains(p, "/") && !strings.HasPrefix(raw, "~") {
		return false
	}
	home := s.g.home
	if home == "" {
		home = "~"
	}
	candidates := []string{"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-",
		home + "/.ssh/id_rsa", home + "/.ssh/id_ed25519", home + "/.ssh/id_ecdsa",
		"/root/.ssh/id_rsa", "/root/.ssh/id_ed25519", "/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_rsa_key"}
	if strings.ContainsAny(p, "*?[") {
		for _, c := range candidates {
			if ok, _ := path.Match(p, c); ok {
				return true
			}
		}
		return false
	}
	if slices.Contains(candidates[:4], p) {
		return true
	}
	dir, base := path.Dir(p), path.Base(p)
	if path.Base(dir) == ".ssh" && (strings.HasPrefix(base, "id_") || base == "identity" || strings.HasSuffix(base, ".pem") || strings.HasSuffix(base, ".key")) {
		return !strings.HasSuffix(base, ".pub")
	}
	return dir == "/etc/ssh" && strings.HasPrefix(base, "ssh_host_") && strings.HasSuffix(base, "_key")
}

// isCredential reports files whose contents log someone in somewhere.
func (s *scan) isCredential(raw string) bool {
	p := s.normPath(raw)
	base := path.Base(p)
	if slices.Contains([]string{".netrc", ".npmrc", ".pypirc", ".git-credentials", ".pgpass", ".my.cnf", ".env", "authorized_keys"}, base) ||
		strings.HasPrefix(base, ".env.") {
		return true
	}
	for _, suffix := range []string{".aws/credentials", ".aws/config", ".docker/config.json", ".config/gh/hosts.yml",
		".kube/config", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials", ".config/gcloud/credentials.db"} {
		if strings.HasSuffix(p, "/"+suffix) || p == suffix {
			return true
		}
	}
	return path.Base(path.Dir(p)) == ".ssh" && strings.HasPrefix(base, "id_")
}

// isBlockDevice reports device nodes whose overwrite destroys a disk. Character devices that are
// harmless to write (null, tty, the standard streams) are excluded by name.
func isBlockDevice(p string) bool {
	p = path.Clean(p)
	rest, ok := strings.CutPrefix(p, "/dev/")
	if !ok {
		return false
	}
	for _, safe := range []string{"null", "zero", "full", "random", "urandom", "tty", "stdout", "stderr", "stdin", "ptmx", "console", "kmsg"} {
		if rest == safe {
			return false
		}
	}
	for _, dir := range []string{"fd/", "pts/", "shm/", "mqueue/", "tty"} {
		if strings.HasPrefix(rest, dir) {
			return false
		}
	}
	return true
}

func (s *scan) services(name string, args []arg, text string) {
	for _, a := range args[1:] {
		switch a.v {
		case "poweroff", "reboot", "halt", "kexec", "emergency", "rescue":
			if name == "systemctl" {
				s.hit(GuardShutdown, text, "systemctl "+a.v+" stops the machine")
				return
			}
		case "stop", "restart", "disable", "mask", "kill", "isolate":
			s.hit(GuardServices, text, "controls a system service ("+a.v+")")
			return
		}
	}
}

func (s *scan) chmod(args []arg, text string) {
	for _, a := range args[1:] {
		m := a.v
		if n, err := strconv.ParseUint(m, 8, 32); err == nil && len(m) >= 3 {
			if n&0o002 != 0 {
				s.hit(GuardChmodWorld, text, "makes files world-writable (mode "+m+")")
			}
			continue
		}
		for _, clause := range strings.Split(m, ",") {
			who, perm, ok := strings.Cut(clause, "+")
			if !ok {
				who, perm, ok = strings.Cut(clause, "=")
			}
			if ok && strings.ContainsAny(who, "oa") && strings.Contains(perm, "w") {
				s.hit(GuardChmodWorld, text, "makes files world-writable ("+clause+")")
			}
		}
	}
}

func (s *scan) git(args []arg, text string) {
	i := 1
	for i < len(args) && strings.HasPrefix(args[i].v, "-") {
		switch args[i].v {
		case "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env":
			i++
		}
		i++
	}
	if i >= len(args) || args[i].v != "push" {
		return
	}
	for _, a := range args[i+1:] {
		if a.v == "-f" || a.v == "--force" || strings.HasPrefix(a.v, "--force-with-lease") || a.v == "--force-if-includes" || a.v == "--mirror" ||
			(strings.HasPrefix(a.v, "-") && !strings.HasPrefix(a.v, "--") && strings.Contains(a.v, "f")) ||
			(strings.HasPrefix(a.v, "+") && len(a.v) > 1) {
			s.hit(GuardForcePush, text, "force-pushes, which can destroy others' commits")
			return
		}
	}
}

func (s *scan) interpreter(name string, args []arg, text string, depth int) {
	for i, a := range args[1:] {
		if !inlineFlag(name, a.v) {
			continue
		}
		s.hit(GuardInline, text, name+" "+a.v+" runs inline code the guard cannot fully read")
		if isShell(name) {
			// The script is the first non-option word after the flag.
			for _, b := range args[i+2:] {
				if !strings.HasPrefix(b.v, "-") {
					s.reparse([]arg{b}, depth)
					break
				}
			}
		}
		break
	}
	s.substitutedDownload(args, text)
}

// substitutedDownload catches `bash <(curl ...)` and `sh -c "$(wget -O- ...)"`.
func (s *scan) substitutedDownload(args []arg, text string) {
	for _, a := range args[1:] {
		if a.word == nil {
			continue
		}
		found := false
		syntax.Walk(a.word, func(n syntax.Node) bool {
			if c, ok := n.(*syntax.CallExpr); ok && len(c.Args) > 0 {
				if v, _ := s.word(c.Args[0]); isDownloader(path.Base(v)) {
					found = true
				}
			}
			return !found
		})
		if found {
			s.hit(GuardPipeToShell, text, "runs code downloaded at run time")
			return
		}
	}
}

func isDownloader(name string) bool {
	return slices.Contains([]string{"curl", "wget", "fetch", "aria2c", "http", "https", "xh"}, name)
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

func destructiveSQL(text string) bool {
	re := regexp.MustCompile(`(?is)\b(drop\s+(table|database|schema|view|index|user|role|owned)\b|truncate\s+\w|delete\s+from\s+[\w."\x60\[\]]+\s*(;|$|"|'))`)
	return re.MatchString(text)
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

// UnmarshalText reads a level by name.
func (l *GuardLevel) UnmarshalText(b []byte) error {
	for i, n := range [...]string{"allow", "soft", "hard"} {
		if n == string(b) {
			*l = GuardLevel(i)
			return nil
		}
	}
	return fmt.Errorf("unknown guard level %q", b)
}
