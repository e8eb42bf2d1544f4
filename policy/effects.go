package policy

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// What a command does beyond what its name says. A reader (sort, uniq,
// less, xxd) is code:read only while no option or operand of it writes
// a file or runs a program: `sort -o .git/config`, `uniq IN OUT`, `sort
// --compress-program=./x`, `less --lesskey-src=keys` (whose #env runs
// LESSOPEN). One table says, per command, which options and operands
// do what; an option a table does not list is judged the worse way (a
// program run), since an unknown option of a tool that can write may be
// one that does. docs/actions.md, "Effects the classifier cannot see".

// optKind is what an option does with its value.
type optKind int

const (
	optFlag    optKind = iota // no value: only changes the reading
	optValue                  // takes a value it only reads (a key, a width, a file read)
	optOut                    // takes the name of a file it writes
	optRun                    // takes a program, a command, or a file of commands it runs
	optRunFlag                // no value, and runs a program (git grep -O)
	optInPlace                // no value, and rewrites the operands in place (yq -i)
)

// effectTable is one command's options (as written: "-o", "--output")
// and its operands that are written.
type effectTable struct {
	opts map[string]optKind
	// outOperand: the n-th operand (from 1) is a file written (uniq IN
	// OUT, xxd IN OUT); 0 none.
	outOperand int
	// loose: options not listed are only read (a tool whose writes and
	// runs are all listed, with too many read-only options to list).
	loose bool
}

func opts(kind optKind, names ...string) map[string]optKind {
	m := map[string]optKind{}
	for _, n := range names {
		m[n] = kind
	}
	return m
}

func merge(ms ...map[string]optKind) map[string]optKind {
	out := map[string]optKind{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// readerTables is effectTables, built once: the classifier reads every
// command of every call against it.
var readerTables = effectTables()

// effectTables are the readers' tables (GNU coreutils 9, less 590, xxd,
// yq and jq).
func effectTables() map[string]effectTable {
	sort := effectTable{opts: merge(
		opts(optFlag, "-b", "-d", "-f", "-g", "-i", "-M", "-h", "-n", "-R", "-r", "-V", "-c", "-C", "-m", "-s", "-u", "-z",
			"--ignore-leading-blanks", "--dictionary-order", "--ignore-case", "--general-numeric-sort", "--ignore-nonprinting",
			"--month-sort", "--human-numeric-sort", "--numeric-sort", "--random-sort", "--reverse", "--version-sort", "--check",
			"--merge", "--stable", "--unique", "--zero-terminated", "--debug", "--help", "--version"),
		opts(optValue, "-k", "--key", "-t", "--field-separator", "-S", "--buffer-size", "-T", "--temporary-directory",
			"--parallel", "--random-source", "--files0-from", "--sort"),
		opts(optOut, "-o", "--output"),
		opts(optRun, "--compress-program"))}
	uniq := effectTable{outOperand: 2, opts: merge(
		opts(optFlag, "-c", "-d", "-D", "-i", "-u", "-z", "--count", "--repeated", "--all-repeated", "--group", "--ignore-case",
			"--unique", "--zero-terminated", "--help", "--version"),
		opts(optValue, "-f", "--skip-fields", "-s", "--skip-chars", "-w", "--check-chars"))}
	xxd := effectTable{outOperand: 2, opts: merge(
		opts(optFlag, "-a", "-autoskip", "-b", "-bits", "-C", "-capitalize", "-E", "-EBCDIC", "-e", "-i", "-include", "-p", "-ps",
			"-postscript", "-plain", "-r", "-revert", "-d", "-u", "-uppercase", "-v", "-version", "-h", "-help"),
		opts(optValue, "-c", "-cols", "-g", "-groupsize", "-l", "-len", "-o", "-s", "-seek", "-n", "-name"))}
	// less: -o/-O log what it shows to a file; a lesskey file's #env
	// section sets LESSOPEN; a +command or -p/-t pattern is read, but +!
	// and the ! command run the shell.
	less := effectTable{opts: merge(
		opts(optFlag, "-a", "-A", "-B", "-c", "-C", "-d", "-e", "-E", "-f", "-F", "-g", "-G", "-i", "-I", "-J", "-K", "-L", "-m", "-M",
			"-n", "-N", "-q", "-Q", "-r", "-R", "-s", "-S", "-u", "-U", "-V", "-w", "-W", "-X", "-~", "--", "--help", "--version",
			"--RAW-CONTROL-CHARS", "--raw-control-chars", "--quit-if-one-screen", "--no-init", "--chop-long-lines", "--ignore-case",
			"--IGNORE-CASE", "--LINE-NUMBERS", "--line-numbers", "--quit-at-eof", "--QUIT-AT-EOF", "--squeeze-blank-lines",
			"--mouse", "--use-color", "--status-column", "--long-prompt", "--silent", "--quiet", "--follow-name", "--no-lessopen"),
		opts(optValue, "-b", "-h", "-j", "-p", "-P", "-t", "-T", "-x", "-y", "-z", "-#", "--buffers", "--max-back-scroll",
			"--jump-target", "--pattern", "--prompt", "--tag", "--tag-file", "--tabs", "--max-forw-scroll", "--window", "--shift",
			"--tabs"),
		opts(optOut, "-o", "-O", "--log-file", "--LOG-FILE"),
		opts(optRun, "-k", "--lesskey-file", "--lesskey-src", "--lesskey-content"))}
	// yq (python's, and mikefarah's) and jq: only -i rewrites; their
	// many other options read. jq runs no program.
	yq := effectTable{loose: true, opts: merge(opts(optInPlace, "-i", "--in-place"),
		opts(optValue, "--arg", "--argjson", "--slurpfile", "--rawfile", "-f", "--from-file", "-L", "--indent", "-w", "--width",
			"-o", "--output-format", "-p", "--input-format", "--expression", "--front-matter"))}
	jq := effectTable{loose: true, opts: opts(optValue, "--arg", "--argjson", "--slurpfile", "--rawfile", "-f", "--from-file",
		"-L", "--indent", "--tab", "--args", "--jsonargs")}
	return map[string]effectTable{"sort": sort, "uniq": uniq, "xxd": xxd, "less": less, "more": less, "yq": yq, "jq": jq}
}

// effect is what a call of a tabled command does beyond reading.
type effect struct {
	writes []string // files written, by name
	dyn    bool     // a file written is named at run time
	runs   []string // why it runs a program
}

// readEffects reads args (args[0] the command) against t. Short options
// may be clustered (-uo FILE, -oFILE); long ones take =VALUE or the next
// word. A word known only at run time among the options may be any of
// them: a program run.
func readEffects(t effectTable, args []arg, singleDashLong bool) effect {
	var e effect
	var operands []arg
	inPlace := false
	apply := func(name string, k optKind, v arg) {
		switch k {
		case optOut:
			if v.dyn {
				e.dyn = true
			} else {
				e.writes = append(e.writes, v.v)
			}
		case optRun:
			e.runs = append(e.runs, name+" "+v.v)
		case optRunFlag:
			e.runs = append(e.runs, name)
		case optInPlace:
			inPlace = true
		}
	}
	unknown := func(a string) {
		if !t.loose {
			e.runs = append(e.runs, "the option "+a+", which jail does not know to only read")
		}
	}
	takes := func(k optKind) bool { return k == optValue || k == optOut || k == optRun }
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a.dyn && strings.HasPrefix(a.v, "-"), a.dyn && a.v == "":
			e.runs = append(e.runs, "an option known only at run time")
			continue
		case a.v == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
			continue
		case strings.HasPrefix(a.v, "+") && (path.Base(args[0].v) == "less" || path.Base(args[0].v) == "more"):
			// +cmd: less runs it as a command, and ! runs the shell.
			if strings.Contains(a.v, "!") || strings.Contains(a.v, "|") {
				e.runs = append(e.runs, "the command "+a.v)
			}
			continue
		case !strings.HasPrefix(a.v, "-") || a.v == "-":
			operands = append(operands, a)
			continue
		}
		if strings.HasPrefix(a.v, "--") || singleDashLong {
			name, val, hasVal := strings.Cut(a.v, "=")
			k, ok := t.opts[name]
			if !ok && singleDashLong {
				// xxd: -c8, -g2 attach their values.
				for n, kk := range t.opts {
					if len(n) == 2 && strings.HasPrefix(a.v, n) && takes(kk) {
						name, val, hasVal, k, ok = n, a.v[2:], true, kk, true
						break
					}
				}
			}
			if !ok {
				unknown(a.v)
				continue
			}
			v := arg{v: val}
			if !hasVal && takes(k) && i+1 < len(args) {
				i++
				v = args[i]
			}
			apply(name, k, v)
			continue
		}
		// A cluster of short options: each letter in turn; one that takes
		// a value takes the rest of the word, or the next word.
		for j := 1; j < len(a.v); j++ {
			name := "-" + string(a.v[j])
			k, ok := t.opts[name]
			if !ok {
				unknown(name)
				continue
			}
			if takes(k) {
				v := arg{v: a.v[j+1:]}
				if v.v == "" && i+1 < len(args) {
					i++
					v = args[i]
				}
				apply(name, k, v)
				break
			}
			apply(name, k, arg{})
		}
	}
	if t.outOperand > 0 && len(operands) >= t.outOperand {
		o := operands[t.outOperand-1]
		if o.dyn {
			e.dyn = true
		} else if o.v != "-" {
			e.writes = append(e.writes, o.v)
		}
	}
	if inPlace {
		// Every operand may be a file rewritten (the first may be the
		// filter: counting it too errs towards the write).
		for _, o := range operands {
			if o.dyn {
				e.dyn = true
			} else {
				e.writes = append(e.writes, o.v)
			}
		}
	}
	return e
}

// tabled applies the table of the command name, if it has one, and
// reports whether it did.
func (s *classifier) tabled(name string, args []arg) bool {
	t, ok := readerTables[name]
	if !ok {
		return false
	}
	e := readEffects(t, args, name == "xxd")
	s.act(ActCodeRead)
	if len(e.writes) > 0 || e.dyn {
		s.act(ActCodeWrite)
	}
	for _, w := range e.writes {
		s.wrote(w, false)
	}
	if e.dyn {
		s.wrote("", true)
	}
	if len(e.runs) > 0 {
		s.act(ActProcRun)
	}
	return true
}

// unknownDestination reports whether the command writes files whose
// names its words do not give: an archive extracted (tar x, unzip),
// patch (the targets are in the diff), a recursive copy (cp -r st/. .
// writes st's .git/config as .git/config), rsync. Such a write is one to
// an unknown path: beside git it may be git's config.
func unknownDestination(name string, args []arg) bool {
	has := func(short string, long ...string) bool {
		return slices.ContainsFunc(args[1:], func(a arg) bool {
			if slices.Contains(long, a.v) || a.dyn {
				return true
			}
			return strings.HasPrefix(a.v, "-") && !strings.HasPrefix(a.v, "--") && strings.ContainsAny(a.v[1:], short)
		})
	}
	switch name {
	case "tar":
		if len(args) > 1 && !strings.HasPrefix(args[1].v, "-") && strings.ContainsAny(args[1].v, "x") {
			return true // the old bundle: tar xf a.tar
		}
		return has("x", "--extract", "--get")
	case "unzip":
		return !has("lptvZ", "--help")
	case "patch", "rsync", "cpio", "pax", "7z", "7za", "bsdtar", "ar", "git-apply":
		return true
	case "cp":
		return has("rRa", "--recursive", "--archive")
	}
	return false
}

// The shell escapes of database clients' text, compiled once: psql's
// \o |cmd and \g |cmd, COPY ... PROGRAM 'cmd', mysql's system cmd.
var (
	sqlPipe   = regexp.MustCompile(`(?i)\\[og]\s*\||\bprogram\s+'`)
	sqlSystem = regexp.MustCompile(`(?i)(^|;|\s)system\s`)
)

// dbClientRuns reports whether a database client's call may run a
// program besides its SQL: a shell escape in what it is given (psql's
// \! and \o |cmd, mysql's \! and system), or a start-up file of the
// persistent home, which the sandbox can write, that it reads unless told
// not to: ~/.psqlrc (psql without -X), ~/.my.cnf (whose plugin-dir and
// default-auth load a library; mysql without --no-defaults), sqlite3's
// ~/.sqliterc and duckdb's ~/.duckdbrc (their dot-commands .shell,
// .system run programs, also from -cmd and -init), mongosh's
// ~/.mongoshrc.js (and its JavaScript may run anything).
func dbClientRuns(name string, args []arg, sql string) bool {
	flag := func(short byte, long string) bool {
		return slices.ContainsFunc(args[1:], func(a arg) bool {
			return a.v == long || strings.HasPrefix(a.v, "-") && !strings.HasPrefix(a.v, "--") && strings.IndexByte(a.v, short) > 0
		})
	}
	escape := strings.Contains(sql, `\!`) || sqlPipe.MatchString(sql)
	switch name {
	case "sqlite3", "duckdb", "mongosh", "mongo":
		return true
	case "psql":
		return escape || !flag('X', "--no-psqlrc")
	case "mysql", "mariadb":
		return escape || sqlSystem.MatchString(sql) ||
			len(args) < 2 || args[1].v != "--no-defaults"
	}
	return escape
}
