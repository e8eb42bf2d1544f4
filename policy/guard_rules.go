package policy

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/jail-sandbox/jail/gitcmd"
	"mvdan.cc/sh/v3/syntax"
)

// The guard's rules: what one command the walk found (guard_walk.go) is,
// by program and arguments: destructive removals, secrets read, services,
// permissions, git's history rewrites, downloads run as code, destructive
// SQL. Each hit names its rule (GuardIDs) and why. rules is the guard's
// visitor of the walk.

type rules struct {
	g    *Guard
	hits []GuardHit
	// w is the walk that tells these rules, for what the session makes
	// of ~ and of relative paths; nil reads them as the guard's.
	w *walk
}

// home is what ~ and $HOME mean: the session's HOME, or the guard's.
func (s *rules) home() string {
	if s.w != nil {
		return s.w.home
	}
	return s.g.home
}

func (s *rules) hit(id, cmd, reason string) {
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

func (s *rules) unreadable(kind unreadableKind, text, why string) {
	id := GuardDynamic
	if kind == notParsed {
		id = GuardUnparseable
	}
	s.hit(id, text, why)
}

func (s *rules) wrapper(args []arg) {
	if path.Base(args[0].v) != "su" {
		return
	}
	for i := 1; i+1 < len(args); i++ {
		if args[i].v == "-c" || args[i].v == "--command" {
			s.hit(GuardInline, joinArgs(args), "su -c runs an inline shell script")
		}
	}
}

// command checks one simple command.
func (s *rules) command(c *call) {
	args, text := c.args, c.text
	if args[0].dyn {
		// An unknown command name might be anything; if reading it as rm would be a hard block,
		// it is one.
		probe := &rules{g: s.g, w: s.w}
		probe.rm(append([]arg{{v: "rm"}}, args[1:]...), text)
		for _, h := range probe.hits {
			if h.Level == GuardHard {
				s.hit(h.ID, text, h.Reason+" (through a command name not known until run time)")
			}
		}
		s.hit(GuardDynamic, text, c.why)
		return
	}
	name := c.name()
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
	if si := c.script; si != nil && (si.execs || si.unknown && !si.inPlace) {
		s.hit(GuardInline, text, name+" runs commands, or a script the guard cannot fully read")
	}
	switch {
	case name == "rm":
		s.rm(args, text)
	case name == "find":
		s.find(args, text)
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
		s.git(*c.git, text)
	case name == "eval" || name == "source" || name == ".":
		s.substitutedDownload(c, text)
	case isInterpreter(name):
		s.interpreter(name, c, text)
	case slices.Contains([]string{"psql", "mysql", "mariadb", "sqlite3", "sqlcmd", "clickhouse-client", "duckdb", "cockroach"}, name):
		sql := c.heredoc
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

// pipeline checks what flows between the commands of a pipeline: a
// download into an interpreter, or destructive SQL into a database client.
func (s *rules) pipeline(stages [][]arg) {
	downloaded := false
	// The text of the stages before a database client, which may be SQL
	// piped into it: kept to maxPipedSQL bytes (each stage added, and the
	// text matched at each client, made a pipeline of n stages cost n*n).
	// Past the bound the SQL counts as destructive, the worse reading.
	var sqlText strings.Builder
	checked, destructive := 0, false
	for _, args := range stages {
		name := path.Base(args[0].v)
		switch {
		case args[0].dyn:
		case isDownloader(name):
			downloaded = true
		case isInterpreter(name) && downloaded:
			s.hit(GuardPipeToShell, joinArgs(args), "pipes a download into "+name)
		case slices.Contains([]string{"psql", "mysql", "mariadb", "sqlite3", "sqlcmd", "clickhouse-client", "duckdb"}, name):
			if sqlText.Len() > maxPipedSQL {
				destructive = true
			} else if t := sqlText.String(); len(t) > checked && !destructive {
				// Only what came since the last client, with a margin for
				// a statement cut at the seam.
				destructive = destructiveSQL(t[max(checked-sqlSeam, 0):])
				checked = len(t)
			}
			if destructive {
				s.hit(GuardSQL, joinArgs(args), "pipes destructive SQL into "+name)
			}
		case sqlText.Len() <= maxPipedSQL:
			sqlText.WriteString(" " + joinArgs(args))
		}
	}
}

// maxPipedSQL bounds the text read as SQL piped into a database client;
// sqlSeam is how much of the text matched before is matched again with
// what follows.
const (
	maxPipedSQL = 64 << 10
	sqlSeam     = 256
)

// redirect checks where a statement's output goes and what it reads.
func (s *rules) redirect(op syntax.RedirOperator, target string, _ bool) {
	switch op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob, syntax.RdrInOut, syntax.DplOut:
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
	}
}

func (s *rules) rm(args []arg, text string) {
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

func (s *rules) find(args []arg, text string) {
	var starts []arg
	for i := 1; i < len(args) && !strings.HasPrefix(args[i].v, "-") && args[i].v != "(" && args[i].v != "!"; i++ {
		starts = append(starts, args[i])
	}
	subs, deletes := findExecs(args[len(starts):])
	for _, sub := range subs {
		deletes = deletes || len(sub) > 0 && path.Base(sub[0].v) == "rm"
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
func (s *rules) criticalRoot(t arg) bool {
	p := s.normPath(t.v)
	if p == "" {
		return false
	}
	if !path.IsAbs(p) && p != "~" && !strings.HasPrefix(p, "~/") && s.w != nil && s.w.cwd != "" {
		p = path.Join(s.w.cwd, p) // rm -rf * in a session whose directory is the home
	}
	// /*, /usr/*, ~/.* : a glob over a root's entries is as bad as the root itself.
	for strings.ContainsAny(path.Base(p), "*?[") && p != "/" {
		p = path.Dir(p)
	}
	roots := []string{"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32",
		"/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/usr", "/var", "/snap", "/nix",
		"/usr/bin", "/usr/lib", "/usr/local", "/usr/sbin", "/usr/share", "/usr/include", "/var/lib", "/var/log", "~"}
	if s.home() != "" {
		roots = append(roots, s.home())
	}
	return slices.Contains(roots, p) || homeDir.MatchString(p)
}

// normPath expands ~ and cleans; relative paths stay relative.
func (s *rules) normPath(p string) string {
	if p == "" {
		return ""
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if s.home() == "" {
			return path.Clean(p)
		}
		p = s.home() + strings.TrimPrefix(p, "~")
	}
	return path.Clean(p)
}

// isSecret reports paths no tool may read: shadow files and SSH private keys.
func (s *rules) isSecret(raw string) bool {
	p := s.normPath(raw)
	if !strings.Contains(p, "/") && !strings.HasPrefix(raw, "~") {
		return false
	}
	if shown := strings.Map(func(r rune) rune {
		if formatRune(r) {
			return -1
		}
		return r
	}, p); shown != p {
		// A name with characters a terminal hides or reorders
		// (ssh_host_\u202eyek_asr shows as ssh_host_rsa_key) is judged the
		// worse way: a secret when it would be one without them, or when
		// it lies where secrets do.
		dir, base := path.Dir(shown), path.Base(shown)
		return s.isSecret(shown) || dir == "/etc/ssh" || path.Base(dir) == ".ssh" || dir == "/etc" && strings.Contains(base, "shadow")
	}
	home := s.home()
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

// formatRune reports the characters termtext escapes because a terminal
// hides them or reorders the text around them: C1 controls, Unicode
// format characters (bidirectional overrides, zero-width characters) and
// the line and paragraph separators.
func formatRune(r rune) bool {
	return r >= 0x80 && r <= 0x9f || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Cf, r)
}

// isCredential reports files whose contents log someone in somewhere.
func (s *rules) isCredential(raw string) bool {
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

func (s *rules) services(name string, args []arg, text string) {
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

func (s *rules) chmod(args []arg, text string) {
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

// git checks what a git command runs: a force push, an alias of the
// line's that is a shell command (walked as one) or comes from the
// environment.
func (s *rules) git(l gitcmd.Line, text string) {
	switch {
	case l.Shell != "":
		s.hit(GuardInline, text, "the git alias "+l.Alias+" runs a shell command")
	case l.Dynamic:
		s.hit(GuardDynamic, text, "the git alias "+l.Alias+" is read from the environment at run time")
	}
	// push, send-pack and http-push alike (gitcmd's Forced); a push in
	// a command git runs (rebase -x, an alias) is walked as its own.
	if l.Forced() {
		s.hit(GuardForcePush, text, "force-pushes, which can destroy others' commits")
	}
}

func (s *rules) interpreter(name string, c *call, text string) {
	for _, a := range c.args[1:] {
		if inlineFlag(name, a.v) {
			// A shell's script is walked as a command line of its own.
			s.hit(GuardInline, text, name+" "+a.v+" runs inline code the guard cannot fully read")
			break
		}
	}
	s.substitutedDownload(c, text)
}

// substitutedDownload catches `bash <(curl ...)` and `sh -c "$(wget -O- ...)"`.
func (s *rules) substitutedDownload(c *call, text string) {
	for _, a := range c.args[1:] {
		if a.word == nil {
			continue
		}
		found := false
		syntax.Walk(a.word, func(n syntax.Node) bool {
			if n, ok := n.(*syntax.CallExpr); ok && len(n.Args) > 0 {
				if v, _ := c.w.word(n.Args[0]); isDownloader(path.Base(v)) {
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

func destructiveSQL(text string) bool {
	// The words first: the pattern's matcher costs tens of nanoseconds a
	// byte, and most text holds none of them.
	l := strings.ToLower(text)
	if !strings.Contains(l, "drop") && !strings.Contains(l, "truncate") && !strings.Contains(l, "delete") {
		return false
	}
	return sqlDestructive.MatchString(text)
}
