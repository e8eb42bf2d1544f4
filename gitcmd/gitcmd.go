// Package gitcmd reads a git command line the way git itself does: the
// global options before the sub-command (-C, -c, --git-dir, --exec-path,
// ...), the settings given with -c and --config-env, the sub-command, and
// an alias the line defines for it (`git -c alias.p='push -f' p`). Every
// part of jail that judges a git command (the guard, the action
// classifier, the git view's refusals) reads it here, so they cannot
// disagree about which sub-command a line runs.
//
// It reads words, not shell text: the caller has removed quotes. Nothing
// here runs git or reads its configuration files; an alias defined there
// is a sub-command git does not know, and the callers treat it as such.
package gitcmd

import "strings"

// Line is a git command line, read.
type Line struct {
	// Sub is the sub-command git runs, after expanding an alias the
	// line defines; "" when the line names none (git alone, git
	// --version) or when it runs an alias that is a shell command.
	Sub string
	// Args are Sub's arguments: an alias's own words, then the line's.
	Args []string
	// At is the index in the words given to Parse of the word that names
	// the sub-command (the alias when one was expanded); len(words) when
	// there is none. words[At+1:] are the line's own arguments.
	At int
	// Alias is the name of the alias Sub came from ("" none); with
	// several in a chain, the first.
	Alias string
	// Shell is the shell command of an alias whose value begins with
	// "!": git runs it with sh, the arguments appended (Args holds
	// them); Sub is then "".
	Shell string
	// Dynamic says the alias's value comes from the environment
	// (--config-env alias.NAME=VAR): what the line runs is not known
	// until run time.
	Dynamic bool
	// Config are the settings of -c (key=value, key alone for true), in
	// order; ConfigEnv those of --config-env (key=ENVVAR).
	Config, ConfigEnv []string
	// ExecPath is --exec-path=DIR: git runs its sub-commands' programs
	// from DIR ("" unset).
	ExecPath string
	// Dirs are the -C directories, in order; GitDir and WorkTree the
	// last --git-dir and --work-tree.
	Dirs             []string
	GitDir, WorkTree string
}

// valued are the global options that take the next word as their value
// when it is not joined with "=" (git.c, handle_options).
var valued = map[string]bool{
	"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true,
	"--config-env": true, "--super-prefix": true, "--attr-source": true, "--list-cmds": true,
}

// maxAliases bounds alias chains; git refuses a loop, and so does Parse.
const maxAliases = 16

// Parse reads words, the arguments after "git". Where git would run
// less than a reading says, Parse takes the reading that runs more: an
// option git does not know is skipped (git refuses it), and an alias
// that names one of git's own commands is expanded (git ignores it), so
// a caller judging the line never sees less than it might do.
func Parse(words []string) Line {
	var l Line
	i := 0
	for ; i < len(words) && strings.HasPrefix(words[i], "-"); i++ {
		opt, val, joined := words[i], "", false
		if k, v, ok := strings.Cut(opt, "="); ok && strings.HasPrefix(opt, "--") {
			opt, val, joined = k, v, true
		}
		if valued[opt] && !joined {
			if i+1 >= len(words) {
				i++
				break
			}
			i++
			val = words[i]
		}
		switch opt {
		case "-C":
			l.Dirs = append(l.Dirs, val)
		case "-c":
			l.Config = append(l.Config, val)
		case "--config-env":
			l.ConfigEnv = append(l.ConfigEnv, val)
		case "--git-dir":
			l.GitDir = val
		case "--work-tree":
			l.WorkTree = val
		case "--exec-path":
			// Without "=DIR" git prints the path and exits; the word
			// after it is still read as a sub-command, the worse reading.
			l.ExecPath = val
		}
	}
	l.At = i
	if i >= len(words) {
		return l
	}
	l.Sub, l.Args = words[i], words[i+1:]
	seen := map[string]bool{}
	for range maxAliases {
		name := strings.ToLower(l.Sub)
		if seen[name] {
			break // a loop: git refuses it and runs nothing
		}
		seen[name] = true
		if l.aliasFromEnv(name) {
			if l.Alias == "" {
				l.Alias = l.Sub
			}
			l.Sub, l.Dynamic = "", true
			return l
		}
		v, ok := l.alias(name)
		if !ok {
			break
		}
		if l.Alias == "" {
			l.Alias = l.Sub
		}
		if s, ok := strings.CutPrefix(v, "!"); ok {
			l.Sub, l.Shell = "", s
			return l
		}
		ws := SplitCommandLine(v)
		if len(ws) == 0 {
			l.Sub = ""
			return l
		}
		l.Sub, l.Args = ws[0], append(ws[1:], l.Args...)
	}
	return l
}

// alias is the value of the last -c alias.NAME=VALUE for name: git's
// keys are case-insensitive, and a later setting wins.
func (l *Line) alias(name string) (string, bool) {
	v, found := "", false
	for _, c := range l.Config {
		k, val, _ := strings.Cut(c, "=")
		if strings.EqualFold(k, "alias."+name) {
			v, found = val, true
		}
	}
	return v, found
}

// aliasFromEnv reports whether --config-env defines the alias name.
func (l *Line) aliasFromEnv(name string) bool {
	for _, c := range l.ConfigEnv {
		k, _, _ := strings.Cut(c, "=")
		if strings.EqualFold(k, "alias."+name) {
			return true
		}
	}
	return false
}

// SplitCommandLine splits an alias's value into words the way git does
// (split_cmdline): at unquoted white space, with single and double
// quotes and backslashes removed, and nothing expanded.
func SplitCommandLine(s string) []string {
	var words []string
	var b strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == 0 && (c == ' ' || c == '\t' || c == '\n'):
			if in {
				words, in = append(words, b.String()), false
				b.Reset()
			}
			continue
		case c == '\\' && quote != '\'' && i+1 < len(s):
			i++
			c = s[i]
		case quote == 0 && (c == '\'' || c == '"'):
			quote, in = c, true
			continue
		case c == quote:
			quote = 0
			continue
		}
		b.WriteByte(c)
		in = true
	}
	if in {
		words = append(words, b.String())
	}
	return words
}
