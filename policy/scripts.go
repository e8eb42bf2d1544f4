package policy

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// Programs that take a script of their own (sed, awk) or expressions (find) read files only for
// some scripts: sed's e command runs a shell, awk's system() and pipes do, w and > write files.
// A call is code:read only when every argument has a shape known to be read-only; otherwise
// it is the stricter class (code:write for what writes files, process:run for what runs
// commands or is not understood), and the shell commands the script names are checked by the
// guard like any other command line.

// scriptInfo is what a sed or awk call does beyond reading.
type scriptInfo struct {
	inPlace bool     // sed -i: rewrites its files
	writes  bool     // writes files it names (sed w, awk >, find -fprint)
	execs   bool     // runs commands (sed e, s///e; awk system(), pipes)
	unknown bool     // an option or script shape not known to be read-only
	cmds    []string // the shell text of the commands it runs, as far as it can be read
}

func (si scriptInfo) readOnly() bool { return !si.inPlace && !si.writes && !si.execs && !si.unknown }

// actions is the classification of a script program's call.
func (si scriptInfo) actions() []Action {
	if si.readOnly() {
		return []Action{ActCodeRead}
	}
	var as []Action
	if si.inPlace || si.writes {
		as = append(as, ActCodeWrite)
	}
	if si.execs || si.unknown {
		as = append(as, ActProcRun)
	}
	return as
}

// sedInfo reads a sed call's options and scripts.
func sedInfo(args []arg) scriptInfo {
	var si scriptInfo
	var scripts []arg
	explicit := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a.v == "--":
			i = len(args) // the rest are files
		case a.v == "-e" || a.v == "--expression":
			explicit = true
			if i+1 < len(args) {
				scripts = append(scripts, args[i+1])
				i++
			}
		case strings.HasPrefix(a.v, "--expression="):
			explicit = true
			scripts = append(scripts, arg{v: strings.TrimPrefix(a.v, "--expression="), dyn: a.dyn})
		case a.v == "-i" || strings.HasPrefix(a.v, "--in-place"):
			si.inPlace = true
		case slices.Contains([]string{"-n", "--quiet", "--silent", "-E", "-r", "--regexp-extended", "-s", "--separate",
			"-z", "--null-data", "-u", "--unbuffered", "--posix", "--debug", "--sandbox", "--follow-symlinks"}, a.v):
		case strings.HasPrefix(a.v, "-") && !strings.HasPrefix(a.v, "--") && len(a.v) > 1:
			// Clustered short options: -nE, -Ei, -i.bak, -ne SCRIPT.
			for j, c := range a.v[1:] {
				switch {
				case strings.ContainsRune("nErszu", c):
				case c == 'i':
					si.inPlace = true
				case c == 'e' && j == len(a.v)-2 && i+1 < len(args):
					explicit = true
					scripts = append(scripts, args[i+1])
					i++
				default:
					si.unknown = true // -f FILE (a script jail cannot see), -l N, others
				}
				if c == 'i' {
					break // the rest is the backup suffix
				}
			}
		case strings.HasPrefix(a.v, "-"):
			si.unknown = true
		case !explicit && len(scripts) == 0:
			scripts = append(scripts, a)
		}
	}
	if len(scripts) == 0 {
		si.unknown = true
	}
	for _, sc := range scripts {
		if sc.dyn {
			si.unknown = true
			continue
		}
		sedScript(sc.v, &si)
	}
	return si
}

var sedAddr = regexp.MustCompile(`^\s*(([0-9]+(~[0-9]+)?|\$|/([^/\\\n]|\\.)*/I?M?)(\s*,\s*([0-9]+|\$|\+[0-9]+|~[0-9]+|/([^/\\\n]|\\.)*/I?M?))?)?\s*!?\s*`)

// sedScript reads one sed script command by command. Commands that only print or edit the
// pattern space are read-only; e runs a shell (its text is recorded for the guard), w and W
// write files, s///e and s///w likewise; anything this reader does not follow is unknown.
func sedScript(src string, si *scriptInfo) {
	for src != "" {
		src = strings.TrimLeft(src, " \t\n;")
		if src == "" {
			return
		}
		if m := sedAddr.FindString(src); m != "" {
			src = src[len(m):]
		}
		if src == "" {
			si.unknown = true
			return
		}
		c := src[0]
		src = src[1:]
		switch {
		case strings.IndexByte("pdDgGhHlnNPqQxz=}{", c) >= 0:
			// Exit codes after q/Q are numbers: skip digits.
			src = strings.TrimLeft(src, "0123456789 ")
		case c == '#':
			if i := strings.IndexByte(src, '\n'); i >= 0 {
				src = src[i:]
			} else {
				src = ""
			}
		case c == 'b' || c == 't' || c == 'T' || c == ':':
			src = sedRestOfCommand(src, c == ':')
		case c == 'a' || c == 'i' || c == 'c':
			// Text to output, to the end of the line.
			if i := strings.IndexByte(src, '\n'); i >= 0 {
				src = src[i:]
			} else {
				src = ""
			}
		case c == 'r' || c == 'R':
			src = sedLine(src, nil) // reads a file: still a read
		case c == 'w' || c == 'W':
			si.writes = true
			src = sedLine(src, nil)
		case c == 'e':
			si.execs = true
			var text string
			src = sedLine(src, &text)
			if strings.TrimSpace(text) != "" {
				si.cmds = append(si.cmds, text)
			}
		case c == 's' || c == 'y':
			if src == "" || src[0] == '\\' || src[0] == '\n' {
				si.unknown = true
				return
			}
			d := src[0]
			parts, rest, ok := sedParts(src[1:], d, 2)
			if !ok {
				si.unknown = true
				return
			}
			src = rest
			if c == 'y' {
				continue
			}
			for src != "" && strings.IndexByte("gpiImM0123456789", src[0]) >= 0 {
				src = src[1:]
			}
			if src != "" && src[0] == 'e' {
				si.execs = true
				si.cmds = append(si.cmds, parts[1])
				src = src[1:]
			}
			if src != "" && src[0] == 'w' {
				si.writes = true
				src = sedLine(src[1:], nil)
			}
			if src != "" && strings.IndexByte(" \t\n;}", src[0]) < 0 {
				si.unknown = true
				return
			}
		default:
			si.unknown = true // F, v, L and the like, or what this reader cannot follow
			return
		}
	}
}

// sedLine consumes a file name or command to the end of the line (sed reads these to the
// newline, ; included).
func sedLine(src string, text *string) string {
	i := strings.IndexByte(src, '\n')
	if i < 0 {
		i = len(src)
	}
	if text != nil {
		*text = strings.TrimSpace(src[:i])
	}
	return src[i:]
}

func sedRestOfCommand(src string, label bool) string {
	end := " \t\n;}"
	if label {
		end = "\n;"
	}
	src = strings.TrimLeft(src, " \t")
	for i := 0; i < len(src); i++ {
		if strings.IndexByte(end, src[i]) >= 0 {
			return src[i:]
		}
	}
	return ""
}

// sedParts splits n delimited parts (pattern, replacement) off src, honouring backslashes.
func sedParts(src string, d byte, n int) ([]string, string, bool) {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(src); i++ {
		switch {
		case src[i] == '\\' && i+1 < len(src):
			if src[i+1] != d {
				cur.WriteByte('\\')
			}
			cur.WriteByte(src[i+1])
			i++
		case src[i] == d:
			parts = append(parts, cur.String())
			cur.Reset()
			if len(parts) == n {
				return parts, src[i+1:], true
			}
		default:
			cur.WriteByte(src[i])
		}
	}
	return nil, "", false
}

// awkInfo reads an awk call's options and program. The program is read-only when it has no
// system(), no pipe, no output redirection (any | or > counts, comparisons included: the
// stricter reading) and loads nothing.
func awkInfo(args []arg) scriptInfo {
	var si scriptInfo
	var prog *arg
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a.v == "--":
			if i+1 < len(args) && prog == nil {
				prog = &args[i+1]
			}
			i = len(args)
		case a.v == "-F" || a.v == "-v" || a.v == "--field-separator" || a.v == "--assign":
			i++
		case strings.HasPrefix(a.v, "-F") || strings.HasPrefix(a.v, "-v") || strings.HasPrefix(a.v, "--field-separator=") || strings.HasPrefix(a.v, "--assign="):
		case a.v == "-e" || a.v == "--source":
			if i+1 < len(args) {
				prog = &args[i+1]
				i++
			}
		case strings.HasPrefix(a.v, "-"):
			si.unknown = true // -f FILE, -i/-l (loads code), -E, others
		case prog == nil:
			prog = &args[i]
		}
	}
	if prog == nil || prog.dyn {
		si.unknown = true
		return si
	}
	p := prog.v
	if strings.Contains(p, "@load") || strings.Contains(p, "@include") {
		si.unknown = true
	}
	if strings.Contains(p, ">") {
		si.writes = true
	}
	if awkSystem.MatchString(p) || strings.Contains(p, "|") {
		si.execs = true
		si.cmds = awkCommands(p)
	}
	return si
}

var (
	awkString  = regexp.MustCompile(`^"((?:[^"\\]|\\.)*)"`)
	awkEnviron = regexp.MustCompile(`^ENVIRON\s*\[\s*"([A-Za-z_][A-Za-z0-9_]*)"\s*\]`)
)

// awkCommands rebuilds, as shell text, the commands an awk program runs: the argument of each
// system() and the expression on the far side of each pipe, string literals as written,
// ENVIRON["X"] as $X and any other value as a shell variable jail cannot know.
func awkCommands(p string) []string {
	var out []string
	for _, m := range awkSystem.FindAllStringIndex(p, -1) {
		out = append(out, awkConcat(p[m[1]:]))
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '|' || i+1 < len(p) && p[i+1] == '|' || i > 0 && p[i-1] == '|' {
			continue
		}
		after := strings.TrimLeft(p[i+1:], " \t&")
		if strings.HasPrefix(after, "getline") {
			// cmd | getline: the command is the expression before the pipe.
			j := strings.LastIndexAny(p[:i], ";{(\n")
			out = append(out, awkConcat(p[j+1:i]))
		} else {
			out = append(out, awkConcat(after))
		}
	}
	return out
}

// awkConcat converts a concatenation of strings and values to shell text, up to the first
// token that ends the expression.
func awkConcat(e string) string {
	var b strings.Builder
	for {
		e = strings.TrimLeft(e, " \t")
		if m := awkString.FindStringSubmatch(e); m != nil {
			b.WriteString(strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\n`, "\n", `\t`, "\t").Replace(m[1]))
			e = e[len(m[0]):]
			continue
		}
		if m := awkEnviron.FindStringSubmatch(e); m != nil {
			b.WriteString("${" + m[1] + "}")
			e = e[len(m[0]):]
			continue
		}
		if m := awkValue.FindString(e); m != "" && m != "getline" {
			b.WriteString("${JAIL_AWK_VALUE}")
			e = e[len(m):]
			continue
		}
		return b.String()
	}
}

// findWrites reports find expressions that write files of their own naming.
func findWrites(args []arg) bool {
	for _, a := range args[1:] {
		if strings.HasPrefix(a.v, "-fprint") || a.v == "-fls" {
			return true
		}
	}
	return false
}

// treeReaders read whole directories they are given (archivers, copy tools): a directory that
// holds a secret is as good as the secret to them. Tools that list names only (ls, du, find) or
// take a pattern first (grep) are not among them.
func treeReaders() []string {
	return []string{"tar", "bsdtar", "gtar", "zip", "7z", "7za", "7zr", "rar", "cpio", "pax", "cp", "rsync", "scp",
		"zstd", "gzip", "xz", "bzip2", "lz4", "borg", "restic", "duplicity"}
}

// treeSources are the arguments of a tree reader's call that it reads from: not the
// destination of a copy tool, and none for an archiver that extracts or lists.
func treeSources(name string, args []arg) []arg {
	rest := args[1:]
	switch name {
	case "cp", "rsync", "scp":
		if len(rest) > 0 {
			rest = rest[:len(rest)-1]
		}
	case "tar", "bsdtar", "gtar":
		for i, a := range rest {
			if a.v == "-x" || a.v == "-t" || a.v == "--extract" || a.v == "--list" || a.v == "--get" ||
				(i == 0 || strings.HasPrefix(a.v, "-") && !strings.HasPrefix(a.v, "--")) && strings.ContainsAny(a.v, "xt") && !strings.Contains(a.v, "/") {
				return nil
			}
		}
	}
	return rest
}

// scriptName is the base name of a sed or awk variant.
func scriptName(name string) string {
	switch path.Base(name) {
	case "sed", "gsed":
		return "sed"
	case "awk", "gawk", "mawk", "nawk", "busybox-awk":
		return "awk"
	}
	return ""
}

// holdsSecret reports whether raw names a directory that contains a secret of [rules.isSecret]
// (~/.ssh, /etc/ssh, /etc, the home, /): what a tree reader given it would read.
func (s *rules) holdsSecret(raw string) bool {
	p := s.normPath(raw)
	if !strings.HasPrefix(p, "/") {
		return false
	}
	home := s.home()
	for _, d := range []string{"/etc/ssh", "/etc/shadow", "/etc/gshadow", "/root/.ssh", home + "/.ssh"} {
		if home == "" && strings.HasPrefix(d, "/.ssh") {
			continue
		}
		if p == "/" || p == d || strings.HasPrefix(d, p+"/") {
			return true
		}
	}
	return false
}
