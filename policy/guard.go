package policy

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
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
	// Session, when not empty, is why the session's state (not the line's text) made a
	// command of the line one of unknown name: the same text may have been approved in
	// another state, so a grant of the exact command does not apply.
	Session string `json:"session,omitempty"`
	// Git says the line runs git (a git command jail sees); GitWhere
	// where its git commands run, for Gate.GitConfig.
	Git      bool      `json:"git,omitempty"`
	GitWhere *GitWhere `json:"-"`
}

// GitWhere is where a line's git commands may run, for reading the git
// config they will read before the line runs (Gate.GitConfig).
type GitWhere struct {
	// Dirs are the directories git may start in: absolute, or relative
	// to the directory the line starts in ("." that one). GitDirs are git
	// directories named with --git-dir, the same way.
	Dirs, GitDirs []string
	// Writes are the files the line writes that it names literally, the
	// same way: a write into a hooks directory git's config names
	// (core.hooksPath = tools/hooks) is a hook's.
	Writes []string
	// Runs are the programs of the line, read as reading only, whose own
	// config files can make them run another (less: its lesskey's #env
	// sets LESSOPEN; bat: --paging and --pager).
	Runs []string
	// Unknown, when not "", says why a directory git may run in is known
	// only at run time (cd "$D", find -execdir): the line's git commands
	// are then judged as running what jail could not read.
	Unknown string
	// Git says the line runs git: its config matters, not only its hooks
	// directories.
	Git bool
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

// Check returns the verdict on one command line, run with no session
// state of its own.
func (g *Guard) Check(command string) GuardResult {
	return g.CheckIn(command, nil)
}

// CheckIn returns the verdict on one command line run in the session sh
// (nil: none), judged against the variables and directory it will really
// start with ([Shell]).
func (g *Guard) CheckIn(command string, sh *Shell) GuardResult {
	s, acts := &rules{g: g}, &classifier{}
	w := newWalk(g.home, s, acts)
	s.w = w
	w.setup(sh)
	if sh != nil && (gitCodePath(path.Join(sh.Cwd, "x"))) {
		// The session is in a git directory (cd .git in an earlier
		// call): a relative write is a write there.
		acts.inGitDir = true
	}
	w.script(command, 0)
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
	r := GuardResult{Hits: s.hits, Actions: acts.result(), Session: w.bySession, Git: acts.git, GitWhere: acts.where(w.repeats)}
	r.GitWhere.Git = acts.git
	if w.envChdir && r.GitWhere.Unknown == "" {
		r.GitWhere.Unknown = "env -C runs a command in a directory jail does not follow"
	}
	for _, h := range s.hits {
		r.Level = max(r.Level, h.Level)
	}
	return r
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
