package policy

import (
	"path"
	"slices"
	"strings"

	"github.com/jail-sandbox/jail/gitcmd"
	"mvdan.cc/sh/v3/syntax"
)

// Action is what a tool call does, as "category:action" (code:write, vcs:push). Operators write
// approval rules in these terms instead of tool names, so one rule covers the write tool, the
// edit tool and `sed -i` in bash alike. The vocabulary is fixed (see [Actions]); classification
// is static (the tool, and for bash the parsed command) and involves no model.
type Action string

// Category is the part before the colon.
func (a Action) Category() string { c, _, _ := strings.Cut(string(a), ":"); return c }

// The action vocabulary. Each leaf says what a call may change, so approval lists can single out
// the consequential ones (vcs:push, pkg:publish, db:mutate, deploy:run) and wave through the
// routine ones (code, test, build).
const (
	ActCodeRead   Action = "code:read"   // reads or searches files: read ls glob grep, cat, find
	ActCodeWrite  Action = "code:write"  // creates or changes files: write edit, > file, sed -i, mv
	ActCodeDelete Action = "code:delete" // deletes files: rm, rmdir, unlink, find -delete
	ActTestRun    Action = "test:run"    // runs tests: go test, pytest, npm test, make test
	ActBuildRun   Action = "build:run"   // compiles: go build, make, cargo build, tsc, gcc
	ActVCSRead    Action = "vcs:read"    // reads history: git status, log, diff, show, blame
	ActVCSFetch   Action = "vcs:fetch"   // brings history in from a remote: git fetch, pull, clone
	ActVCSBranch  Action = "vcs:branch"  // moves between lines of work: git branch, checkout, switch
	ActVCSCommit  Action = "vcs:commit"  // changes local history or the index: git add, commit, reset, rebase
	ActVCSPush    Action = "vcs:push"    // publishes history: git push
	ActPkgInstall Action = "pkg:install" // installs dependencies: npm install, pip install, go get
	ActPkgPublish Action = "pkg:publish" // publishes a package: npm publish, cargo publish, twine upload
	ActNetFetch   Action = "net:fetch"   // downloads: curl, wget, web_fetch
	ActNetConnect Action = "net:connect" // opens a session elsewhere: ssh, scp, rsync host:, nc
	ActDBRead     Action = "db:read"     // queries a database: psql -c 'SELECT ...'
	ActDBMutate   Action = "db:mutate"   // changes a database: INSERT, UPDATE, DELETE, DROP, or SQL jail cannot see
	ActProcRun    Action = "process:run" // runs a program jail does not classify further
	ActProcKill   Action = "process:kill"
	ActProcRead   Action = "process:read"  // reads what a background process wrote: bash_output
	ActContainer  Action = "container:run" // docker, podman, nerdctl
	ActDeploy     Action = "deploy:run"    // kubectl apply, terraform apply, helm install
	ActSysAdmin   Action = "system:admin"  // sudo, systemctl, mount, mkfs, useradd, shutdown
	ActBrowseNav  Action = "browser:navigate"
	ActBrowseShot Action = "browser:screenshot"
	ActBrowseClk  Action = "browser:click"
	ActBrowseType Action = "browser:type"
	ActBrowseEval Action = "browser:evaluate"
	ActDeskShot   Action = "desktop:screenshot"
	ActDeskClick  Action = "desktop:click"
	ActDeskType   Action = "desktop:type"
)

// Actions returns the whole vocabulary in a fixed order.
func Actions() []Action {
	return []Action{ActCodeRead, ActCodeWrite, ActCodeDelete, ActTestRun, ActBuildRun,
		ActVCSRead, ActVCSFetch, ActVCSBranch, ActVCSCommit, ActVCSPush, ActPkgInstall, ActPkgPublish,
		ActNetFetch, ActNetConnect, ActDBRead, ActDBMutate, ActProcRun, ActProcRead, ActProcKill, ActContainer,
		ActDeploy, ActSysAdmin, ActBrowseNav, ActBrowseShot, ActBrowseClk, ActBrowseType, ActBrowseEval,
		ActDeskShot, ActDeskClick, ActDeskType}
}

// ActionCategories returns the categories of [Actions], in order.
func ActionCategories() []string {
	var cs []string
	for _, a := range Actions() {
		if !slices.Contains(cs, a.Category()) {
			cs = append(cs, a.Category())
		}
	}
	return cs
}

// IsActionSelector reports whether s names a category ("code") or a leaf ("vcs:push").
func IsActionSelector(s string) bool {
	return slices.Contains(Actions(), Action(s)) || slices.Contains(ActionCategories(), s)
}

// MatchAction reports whether selector (a category or a leaf) covers a.
func MatchAction(selector string, a Action) bool {
	return string(a) == selector || a.Category() == selector
}

// selectorMatches reports whether any entry of list (tool names or action selectors) names the
// tool or covers one of its actions; it returns the entry that matched, for the reason.
func selectorMatches(list []string, tool string, acts []Action) (string, bool) {
	for _, e := range list {
		if e == tool {
			return e, true
		}
		for _, a := range acts {
			if MatchAction(e, a) {
				return e, true
			}
		}
	}
	return "", false
}

// coversAll reports whether list names the tool or covers every one of its actions. Auto-approval
// needs all: `go test ./... && git push` must not pass because "test" is auto-approved.
func coversAll(list []string, tool string, acts []Action) bool {
	if slices.Contains(list, tool) {
		return true
	}
	if len(acts) == 0 {
		return false
	}
	for _, a := range acts {
		if !slices.ContainsFunc(list, func(e string) bool { return MatchAction(e, a) }) {
			return false
		}
	}
	return true
}

// ToolActions classifies a call of a tool that is not a shell: jail's own tools by name, others
// by their capabilities, the most consequential first. Shell commands are classified by
// [Guard.Check], which parses them.
func ToolActions(t ToolInfo) []Action {
	switch t.Name {
	case "read", "ls", "glob", "grep":
		return []Action{ActCodeRead}
	case "write", "edit":
		return []Action{ActCodeWrite}
	case "web_fetch":
		return []Action{ActNetFetch}
	case "bash_output":
		return []Action{ActProcRead}
	case "bash_kill":
		return []Action{ActProcKill}
	case "browser_navigate":
		return []Action{ActBrowseNav}
	case "browser_screenshot", "browser_snapshot", "browser_wait_for", "browser_console", "browser_network", "browser_storage_get":
		return []Action{ActBrowseShot}
	case "browser_click", "browser_hover", "browser_select", "browser_tabs":
		return []Action{ActBrowseClk}
	case "browser_type", "browser_press_key", "browser_storage_set", "browser_upload":
		return []Action{ActBrowseType}
	case "browser_evaluate", "browser_webauthn_create", "browser_webauthn_list", "browser_webauthn_delete":
		return []Action{ActBrowseEval}
	case "desktop_launch":
		return []Action{ActProcRun}
	case "desktop_screenshot", "desktop_cursor_position", "desktop_windows", "desktop_wait_for_window":
		return []Action{ActDeskShot}
	case "desktop_click", "desktop_move", "desktop_drag", "desktop_scroll":
		return []Action{ActDeskClick}
	case "desktop_type", "desktop_key":
		return []Action{ActDeskType}
	}
	// A tool jail does not know by name is classified by what it touches; several capabilities
	// give several actions, so a rule on any of them applies.
	var acts []Action
	caps := effectiveCaps(t)
	for _, m := range []struct {
		cap string
		act Action
	}{{CapProcessExec, ActProcRun}, {CapFSWrite, ActCodeWrite}, {CapNetworkOutbound, ActNetFetch},
		{CapBrowser, ActBrowseNav}, {CapDesktop, ActDeskClick}, {CapFSRead, ActCodeRead}} {
		if slices.Contains(caps, m.cap) {
			acts = append(acts, m.act)
		}
	}
	if len(acts) == 0 {
		acts = []Action{ActProcRun}
	}
	return acts
}

// classifier is the action classifier's visitor of the guard's walk
// (guard_walk.go): the actions of every command of a line, in the order
// first met.
type classifier struct {
	actions []Action
	// git says the line runs git; gitCode that it writes a file git
	// reads as config or runs as a hook (gitCodePath); unknownWrite that
	// it writes a file whose name is known only at run time, or while in
	// a directory entered by a name known only then.
	git, gitCode, unknownWrite bool
	inGitDir, inUnknownDir     bool // a cd into a git directory, or one named at run time, came first
	// cds are the directories the line's cd and pushd enter, as written
	// (literal words); gits each git command's -C chain and --git-dir;
	// dirUnknown why a directory the line enters is known only at run
	// time (GitWhere).
	cds        []string
	gits       []gitAt
	dirUnknown string
	writes     []string // the files the line writes, by literal name
	runs       []string // configProgram commands of the line
}

// readerRuns reports whether a reader's options make it run a program:
// fd's -x/-X (--exec, --exec-batch), rg's --pre, sort's
// --compress-program, ag's --pager, less's + commands (a shell escape).
func readerRuns(name string, args []arg) bool {
	for _, a := range args[1:] {
		v := a.v
		switch name {
		case "fd", "fdfind":
			if v == "-x" || v == "-X" || strings.HasPrefix(v, "--exec") || strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.ContainsAny(v, "xX") {
				return true
			}
		case "rg":
			if strings.HasPrefix(v, "--pre") && !strings.HasPrefix(v, "--pre-glob") {
				return true
			}
		case "sort":
			if strings.HasPrefix(v, "--compress-prog") {
				return true
			}
		case "ag":
			if strings.HasPrefix(v, "--pager") {
				return true
			}
		case "less", "more":
			if strings.HasPrefix(v, "+") || strings.HasPrefix(v, "--lesskey") || v == "-k" {
				return true
			}
		}
	}
	return false
}

// configPrograms are the readers whose own config files can make them run
// a program (GitWhere.Runs).
func configPrograms() []string { return []string{"less", "bat", "batcat"} }

// gitAt is where one git command of the line runs, relative to the
// directory it starts in.
type gitAt struct {
	dirs   []string // -C, in order
	gitDir string   // --git-dir
}

func (s *classifier) act(as ...Action) {
	for _, a := range as {
		if !slices.Contains(s.actions, a) {
			s.actions = append(s.actions, a)
		}
	}
}

// result is the line's actions; a line with nothing classifiable runs a
// process.
func (s *classifier) result() []Action {
	// git's configuration and hooks are code git runs (docs/actions.md,
	// "Git's config and hooks"): a line that writes them runs a program,
	// and so do its git commands, which would run what it wrote. A write
	// whose target is known only at run time counts so beside a git
	// command: it may be $GIT_CONFIG_GLOBAL.
	if s.gitCode || s.unknownWrite && s.git {
		s.act(ActProcRun)
	}
	if len(s.actions) == 0 {
		s.act(ActProcRun)
	}
	return s.actions
}

// wrote notes that the line writes the file p (dyn: its name is known
// only at run time).
func (s *classifier) wrote(p string, dyn bool) {
	if !dyn && p != "" && !strings.HasPrefix(p, "~") && len(s.writes) < maxGitDirs {
		s.writes = append(s.writes, p)
	}
	switch {
	case dyn:
		s.unknownWrite = true
	case gitCodePath(p) || s.inGitDir && !path.IsAbs(p) && !strings.HasPrefix(p, "~"):
		s.gitCode = true
	case s.inUnknownDir && !path.IsAbs(p) && !strings.HasPrefix(p, "~"):
		s.unknownWrite = true
	}
}

// GitCodePath is gitCodePath for the tools, which check the path a write
// really lands on (a symlink of the workspace followed) against it.
func GitCodePath(p string) bool { return gitCodePath(p) }

// gitCodePath reports whether git may read the file p as config or run
// it as a hook: anything in a .git directory (config, config.worktree,
// hooks/*, info/*, a worktree's or a submodule's own), a bare
// repository's config or hooks, the global config (~/.gitconfig,
// ~/.config/git/*, jail's jail.gitconfig, any *gitconfig a config may
// include), and the hooks directories core.hooksPath usually names
// (.husky, .githooks). The test is by name, so it errs towards the
// program: ~/.ssh/config counts too.
func gitCodePath(p string) bool {
	p = path.Clean(p)
	base := path.Base(p)
	if base == "config" || base == "config.worktree" || strings.HasSuffix(strings.ToLower(base), "gitconfig") {
		return true
	}
	parts := strings.Split(p, "/")
	for i, c := range parts {
		switch {
		case c == ".git", c == ".husky", c == ".githooks", strings.HasSuffix(c, ".git") && i < len(parts)-1:
			return true
		case c == "git" && i > 0 && parts[i-1] == ".config":
			return true
		}
	}
	return false
}

// redirect: output to a file (not a device, not a descriptor) writes it.
func (s *classifier) redirect(op syntax.RedirOperator, target string, dyn bool) {
	switch op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob, syntax.RdrInOut:
		if !strings.HasPrefix(path.Clean(target), "/dev/") || dyn {
			s.act(ActCodeWrite)
			s.wrote(target, dyn)
		}
	}
}

func (s *classifier) pipeline([][]arg) {}

func (s *classifier) unreadable(unreadableKind, string, string) {}

// wrapper: running a command as another user is system administration.
func (s *classifier) wrapper(args []arg) {
	switch path.Base(args[0].v) {
	case "sudo", "doas", "su":
		s.act(ActSysAdmin)
	}
}

// command adds the actions of one simple command (wrappers already
// stripped). It errs towards the more consequential reading: a command it
// does not know is process:run, a database client whose SQL it cannot see
// is db:mutate.
func (s *classifier) command(c *call) {
	args := c.args
	if args[0].dyn {
		s.act(ActProcRun)
		return
	}
	name := path.Base(args[0].v)
	sub, sub2 := "", ""
	var rest []string
	for _, a := range args[1:] {
		if !strings.HasPrefix(a.v, "-") {
			rest = append(rest, a.v)
		}
	}
	if len(rest) > 0 {
		sub = rest[0]
	}
	if len(rest) > 1 {
		sub2 = rest[1]
	}
	has := func(flags ...string) bool {
		return slices.ContainsFunc(args[1:], func(a arg) bool { return slices.Contains(flags, a.v) })
	}
	s.gitWrites(name, args)
	s.dirs(name, c)
	if unknownDestination(name, args) {
		s.wrote("", true)
	}
	switch {
	case slices.Contains(quietBuiltins(), name):
		// No effect of their own beyond the shell: the other commands of the line classify it.
	case slices.Contains(readers(), name) && readerRuns(name, args):
		// fd -x, rg --pre, sort --compress-program: a reader that runs
		// a program it is given.
		s.act(ActCodeRead, ActProcRun)
	case s.tabled(name, args):
		// A reader whose options and operands may write or run (effects.go).
	case slices.Contains(readers(), name):
		s.act(ActCodeRead)
	case name == "find":
		// -exec and -ok commands are classified as commands of their own by the guard.
		s.act(ActCodeRead)
		if has("-delete") {
			s.act(ActCodeDelete)
		}
		if findWrites(args) {
			s.act(ActCodeWrite)
			s.wrote("", true)
		}
	case slices.Contains([]string{"rm", "rmdir", "unlink", "shred"}, name):
		s.act(ActCodeDelete)
	case c.script != nil:
		s.act(c.script.actions()...)
		if c.script.writes {
			// sed's w FILE, awk's > FILE: files the classifier does not
			// follow by name.
			s.wrote("", true)
		}
	case name == "tar" && tarRunsPrograms(args[1:]):
		// -I PROG, --to-command=PROG, --checkpoint-action=exec=...: tar runs what they name.
		s.act(ActCodeWrite, ActProcRun)
	case slices.Contains([]string{"cp", "mv", "mkdir", "touch", "ln", "install", "tee", "truncate", "chmod", "chown", "patch", "tar", "unzip", "gzip", "gunzip"}, name):
		s.act(ActCodeWrite)
	case isShell(name) && has("-c") || name == "eval":
		// The walk walks the script, and its commands are classified one by one.
	case name == "git":
		s.git = true
		s.act(gitActions(*c.git)...)
		if files := c.git.Writes(); len(files) > 0 {
			// --output=FILE, format-patch -o DIR, bundle create FILE: a
			// word known only at run time among them may be any file.
			s.act(ActCodeWrite)
			dyn := slices.ContainsFunc(args[1:], func(a arg) bool { return a.dyn })
			for _, f := range files {
				s.wrote(f, dyn)
			}
		}
		if c.git.Sub == "config" && configWritesFile(c.git.Args) {
			s.gitCode = true
		}
	case name == "go":
		switch sub {
		case "test":
			s.act(ActTestRun)
		case "build", "vet", "generate", "fmt", "install":
			if sub == "install" && strings.Contains(sub2, "@") {
				s.act(ActPkgInstall)
				break
			}
			s.act(ActBuildRun)
		case "get":
			s.act(ActPkgInstall)
		case "mod":
			if sub2 == "download" || sub2 == "tidy" {
				s.act(ActPkgInstall)
			} else {
				s.act(ActBuildRun)
			}
		default:
			s.act(ActProcRun)
		}
	case slices.Contains([]string{"npm", "yarn", "pnpm", "bun"}, name):
		s.act(jsAction(name, sub, sub2))
	case name == "npx":
		s.act(ActPkgInstall, ActProcRun)
	case slices.Contains([]string{"pip", "pip3", "uv", "poetry", "pipenv", "conda", "gem", "bundle", "composer", "apt", "apt-get", "dnf", "yum", "apk", "brew"}, name):
		switch {
		case slices.Contains([]string{"install", "add", "update", "upgrade", "sync", "i"}, sub) || sub == "pip" && sub2 == "install":
			s.act(ActPkgInstall)
		case sub == "publish" || sub == "push":
			s.act(ActPkgPublish)
		case sub == "run" || sub == "exec":
			s.act(ActProcRun)
		default:
			s.act(ActCodeRead)
		}
	case name == "cargo":
		switch sub {
		case "test", "nextest", "bench":
			s.act(ActTestRun)
		case "build", "check", "clippy", "fmt", "doc":
			s.act(ActBuildRun)
		case "add", "install", "fetch", "update":
			s.act(ActPkgInstall)
		case "publish":
			s.act(ActPkgPublish)
		default:
			s.act(ActProcRun)
		}
	case name == "twine" && sub == "upload":
		s.act(ActPkgPublish)
	case slices.Contains([]string{"make", "gmake", "just", "task", "ninja", "bazel", "mvn", "gradle", "gradlew", "./gradlew", "dotnet", "mix", "rake"}, name):
		if slices.ContainsFunc(rest, func(t string) bool {
			return testTarget.MatchString(t)
		}) {
			s.act(ActTestRun)
		} else if name == "mvn" && has("deploy") || slices.Contains(rest, "deploy") {
			s.act(ActDeploy)
		} else {
			s.act(ActBuildRun)
		}
	case slices.Contains([]string{"pytest", "py.test", "tox", "nox", "jest", "vitest", "mocha", "rspec", "ctest", "phpunit", "karma", "ava", "playwright"}, name):
		s.act(ActTestRun)
	case slices.Contains([]string{"tsc", "gcc", "g++", "cc", "c++", "clang", "clang++", "javac", "rustc", "cmake", "meson", "esbuild", "webpack", "vite", "swiftc", "kotlinc", "zig"}, name):
		s.act(ActBuildRun)
	case isInterpreter(name) && !isShell(name):
		s.interpreterAction(args)
	case isDownloader(name):
		s.act(ActNetFetch)
		if has("-T", "--upload-file", "-d", "--data", "-F", "--form", "-X") {
			s.act(ActNetConnect)
		}
	case slices.Contains([]string{"ssh", "scp", "sftp", "nc", "ncat", "netcat", "telnet", "socat", "ftp", "mosh"}, name):
		s.act(ActNetConnect)
	case name == "rsync":
		if slices.ContainsFunc(rest, func(t string) bool { return strings.Contains(t, ":") }) {
			s.act(ActNetConnect)
		} else {
			s.act(ActCodeWrite)
		}
	case slices.Contains([]string{"psql", "mysql", "mariadb", "sqlite3", "sqlcmd", "clickhouse-client", "duckdb", "cockroach", "mongosh", "redis-cli"}, name):
		sql := c.heredoc
		for _, a := range args[1:] {
			sql += " " + a.v
		}
		s.act(sqlAction(sql))
		if dbClientRuns(name, args, sql) {
			s.act(ActProcRun)
		}
	case slices.Contains([]string{"kill", "pkill", "killall"}, name):
		s.act(ActProcKill)
	case slices.Contains([]string{"docker", "podman", "nerdctl"}, name):
		if sub == "push" {
			s.act(ActDeploy)
		} else {
			s.act(ActContainer)
		}
	case slices.Contains([]string{"kubectl", "helm", "terraform", "tofu", "pulumi", "ansible-playbook", "fly", "flyctl", "vercel", "netlify", "heroku"}, name):
		if slices.Contains([]string{"get", "describe", "logs", "plan", "show", "list", "ls", "status", "version", "template", "validate", "fmt"}, sub) {
			s.act(ActCodeRead)
		} else {
			s.act(ActDeploy)
		}
		if name == "kubectl" || name == "helm" {
			// A kubeconfig's users[].user.exec runs a credential plugin,
			// and the kubeconfig (--kubeconfig, KUBECONFIG, ~/.kube/config
			// of the persistent home) is one the sandbox can write.
			s.act(ActProcRun)
		}
	case slices.Contains([]string{"sudo", "doas", "su", "systemctl", "service", "mount", "umount", "useradd", "userdel", "usermod", "groupadd", "passwd", "chroot", "iptables", "nft", "modprobe", "insmod", "sysctl", "shutdown", "reboot", "halt", "poweroff", "init", "telinit", "dd", "wipefs", "blkdiscard", "mkswap", "mke2fs"}, name) || strings.HasPrefix(name, "mkfs"):
		s.act(ActSysAdmin)
	default:
		s.act(ActProcRun)
	}
}

// gitWrites notes what a command that writes files writes, for
// gitCodePath: every operand of cp, mv, install, ln, tee and the like
// (a source too: the reading errs towards the program), the files of an
// in-place sed or perl, and the directory a cd enters.
func (s *classifier) gitWrites(name string, args []arg) {
	inPlace := (name == "sed" || name == "perl") && slices.ContainsFunc(args[1:], func(a arg) bool {
		return strings.HasPrefix(a.v, "-i") || strings.HasPrefix(a.v, "--in-place") || name == "perl" && strings.HasPrefix(a.v, "-") && strings.Contains(a.v, "i")
	})
	switch {
	case name == "cd" || name == "pushd":
		for _, a := range args[1:] {
			switch {
			case a.dyn:
				s.inUnknownDir = true
			case gitCodePath(a.v):
				s.inGitDir = true
			}
		}
	case inPlace || slices.Contains([]string{"cp", "mv", "ln", "install", "tee", "truncate", "touch", "chmod", "patch", "rsync", "dd", "tar", "unzip"}, name):
		for _, a := range args[1:] {
			if a.v == "" && !a.dyn || strings.HasPrefix(a.v, "-") && !strings.Contains(a.v, "=") {
				continue
			}
			v := a.v
			if _, after, ok := strings.Cut(v, "="); ok && strings.HasPrefix(v, "-") {
				v = after // --target-directory=DIR, of=FILE
			} else if _, after, ok := strings.Cut(v, "="); ok && name == "dd" {
				v = after
			}
			s.wrote(v, a.dyn)
		}
	}
}

// configWritesFile reports whether git config's arguments write a
// config file named on the line (-f FILE, --file=FILE) with any key: the
// file may be one git reads (.git/config), and the key one this reading
// does not know.
func configWritesFile(args []string) bool {
	for i, a := range args {
		if (a == "-f" || a == "--file") && i+1 < len(args) || strings.HasPrefix(a, "--file=") {
			f := strings.TrimPrefix(a, "--file=")
			if a == "-f" || a == "--file" {
				f = args[i+1]
			}
			return gitCodePath(f) && slices.ContainsFunc(args, func(x string) bool {
				return !strings.HasPrefix(x, "-") && x != f
			}) && !slices.Contains(args, "--get") && !slices.Contains(args, "-l") && !slices.Contains(args, "--list")
		}
	}
	return false
}

// quietBuiltins change nothing outside the shell itself.
func quietBuiltins() []string {
	return []string{"echo", "printf", "cd", "pushd", "popd", "true", "false", ":", "export", "unset", "set", "shift",
		"test", "[", "[[", "pwd", "sleep", "read", "local", "declare", "typeset", "return", "exit", "wait", "type", "which", "date", "whoami", "id", "uname", "env", "printenv"}
}

// readers only look at files.
func readers() []string {
	return []string{"cat", "less", "more", "head", "tail", "ls", "ll", "tree", "grep", "egrep", "fgrep", "rg", "ag", "ack",
		"wc", "sort", "uniq", "cut", "tr", "diff", "cmp", "file", "stat", "du", "df", "realpath", "readlink", "basename",
		"dirname", "md5sum", "sha256sum", "sha1sum", "jq", "yq", "xxd", "od", "hexdump", "strings", "nl", "column", "fd", "locate", "bat", "comm", "join", "paste", "fold", "tac", "rev"}
}

// gitActions classifies a git command by its sub-command (gitcmd reads
// the global options and the line's aliases). A line that makes git run
// a program (--exec-path=DIR, an alias that is a shell command or comes
// from the environment, rebase -x, bisect run, submodule foreach, the
// filters of filter-branch, difftool -x, --upload-pack, -c keys such as
// core.sshCommand: gitcmd's Commands) also runs a process, and the walk
// classifies the shell commands among them as commands of their own. A
// line that may send the repository elsewhere (push, send-pack,
// http-push, a remote helper, send-email, or a sub-command git does not
// know, which may be an alias of push from a config file) is a push.
func gitActions(l gitcmd.Line) []Action {
	var acts []Action
	shell, programs := l.Commands()
	if l.ExecPath != "" || l.Shell != "" || l.Dynamic || len(shell) > 0 || len(programs) > 0 {
		acts = append(acts, ActProcRun)
	}
	if l.Shell != "" || l.Dynamic {
		// The shell command's own commands are classified by the walk.
		return acts
	}
	if l.Pushes() {
		acts = append(acts, ActVCSPush)
	}
	if l.Sub == "config" && configSetsProgram(l.Args) {
		// git config core.sshCommand ./p.sh: the next fetch runs it.
		acts = append(acts, ActProcRun)
	}
	return append(acts, gitAction(l))
}

// configSetsProgram reports whether git config's arguments set a key
// whose value git runs (gitcmd.RunsProgram): the first word that is not
// an option, followed by a value, or --add/--replace-all.
func configSetsProgram(args []string) bool {
	for i, a := range args {
		if strings.HasPrefix(a, "-") {
			if a == "-f" || a == "--file" || a == "--blob" || a == "--type" {
				return configSetsProgram(args[min(i+2, len(args)):])
			}
			continue
		}
		return i+1 < len(args) && gitcmd.RunsProgram(a)
	}
	return false
}

// gitAction is the action of git's sub-command.
func gitAction(l gitcmd.Line) Action {
	if l.Sub == "" {
		return ActVCSRead
	}
	next := ""
	if len(l.Args) > 0 {
		next = l.Args[0]
	}
	switch l.Sub {
	case "status", "log", "diff", "show", "blame", "shortlog", "describe", "rev-parse", "rev-list", "ls-files", "ls-tree", "grep", "cat-file", "reflog", "whatchanged", "help", "version", "show-ref", "for-each-ref", "name-rev", "count-objects", "fsck", "ls-remote":
		if l.Sub == "ls-remote" {
			return ActVCSFetch
		}
		return ActVCSRead
	case "fetch", "pull", "clone", "submodule":
		return ActVCSFetch
	case "push", "send-pack", "http-push", "remote-ext", "remote-fd", "remote-ftp", "remote-ftps", "remote-http", "remote-https", "send-email", "imap-send":
		return ActVCSPush
	case "branch", "checkout", "switch", "worktree":
		if l.Sub == "branch" && (next == "" || next == "-a" || next == "-r" || next == "--list" || next == "-v" || next == "-vv" || next == "--show-current") {
			return ActVCSRead
		}
		return ActVCSBranch
	case "remote", "tag", "stash", "config":
		if next == "" || next == "-v" || next == "list" || next == "--list" || next == "-l" || next == "--get" || next == "show" {
			return ActVCSRead
		}
		return ActVCSCommit
	}
	// add, commit, reset, restore, rm, mv, merge, rebase, cherry-pick, revert, am, apply, clean,
	// gc, and anything newer: they change the local repository.
	return ActVCSCommit
}

func jsAction(tool, sub, sub2 string) Action {
	switch sub {
	case "test", "t":
		return ActTestRun
	case "install", "i", "ci", "add", "update", "upgrade", "up", "link":
		return ActPkgInstall
	case "":
		if tool == "yarn" || tool == "bun" && sub2 == "" {
			return ActPkgInstall // bare yarn installs
		}
		return ActProcRun
	case "publish":
		return ActPkgPublish
	case "build":
		return ActBuildRun
	case "run", "run-script":
		switch {
		case strings.Contains(sub2, "test"):
			return ActTestRun
		case strings.Contains(sub2, "build") || strings.Contains(sub2, "compile") || strings.Contains(sub2, "lint"):
			return ActBuildRun
		}
		return ActProcRun
	case "ls", "list", "outdated", "view", "info", "why", "audit":
		return ActCodeRead
	}
	return ActProcRun
}

// interpreterAction classifies python -m MODULE and friends by the module they run.
func (s *classifier) interpreterAction(args []arg) {
	for i, a := range args[1:] {
		if a.v != "-m" || i+2 >= len(args) {
			continue
		}
		mod, next := args[i+2].v, ""
		if i+3 < len(args) {
			next = args[i+3].v
		}
		switch {
		case mod == "pytest" || mod == "unittest" || mod == "tox" || mod == "nose2":
			s.act(ActTestRun)
		case mod == "pip" && (next == "install" || next == "download"):
			s.act(ActPkgInstall)
		case mod == "build" || mod == "compileall" || mod == "py_compile":
			s.act(ActBuildRun)
		case mod == "twine" && next == "upload":
			s.act(ActPkgPublish)
		case mod == "http.server":
			s.act(ActProcRun)
		default:
			s.act(ActProcRun)
		}
		return
	}
	s.act(ActProcRun)
}

// sqlAction reads the SQL a database client was given. SQL it cannot see (a file, stdin, an
// interactive session) counts as a mutation: the guard assumes the worse reading.
func sqlAction(sql string) Action {
	mutate, read := sqlMutate, sqlRead
	switch {
	case mutate.MatchString(sql):
		return ActDBMutate
	case read.MatchString(sql):
		return ActDBRead
	}
	return ActDBMutate
}

// actionList formats actions for a reason string.
func actionList(acts []Action) string {
	var ss []string
	for _, a := range acts {
		ss = append(ss, string(a))
	}
	return strings.Join(ss, ",")
}

// toolsOrActions validates a list that may mix tool names and action selectors.
func (v *validator) toolsOrActions(key string, names []string) {
	for _, n := range names {
		if _, ok := catalogueEntry(n); ok || IsActionSelector(n) {
			continue
		}
		v.add(key, "unknown tool or action type %q (accepted: a tool (%s), a category (%s) or a type such as vcs:push; see README \"Policy vocabulary\")",
			n, strings.Join(catalogueNames(), ", "), strings.Join(ActionCategories(), ", "))
	}
}

// tarRunsPrograms reports whether tar's arguments name a program for it to run: a compressor
// (-I, --use-compress-program), a command to pipe members to (--to-command), a checkpoint or
// volume script, a remote shell. Short options may be bundled (-xIf), and the first word may
// be the old dashless bundle (tar xIf ...): I or F anywhere in a bundle counts.
func tarRunsPrograms(args []arg) bool {
	for i, a := range args {
		v := a.v
		switch {
		case a.dyn:
			return true
		case v == "--":
			return false
		case strings.HasPrefix(v, "--"):
			for _, o := range []string{"--use-compress-program", "--to-command", "--checkpoint-action", "--info-script",
				"--new-volume-script", "--rsh-command", "--rmt-command", "--compress-program"} {
				if strings.HasPrefix(v, o) {
					return true
				}
			}
		case strings.HasPrefix(v, "-") || i == 0:
			if strings.ContainsAny(strings.TrimPrefix(v, "-"), "IF") {
				return true
			}
		}
	}
	return false
}

// dirs notes where the command leaves the shell, or runs git, for
// GitWhere: cd and pushd of a literal directory, git's -C and
// --git-dir, and what makes a directory known only at run time (a cd of
// a word known then, find -execdir).
func (s *classifier) dirs(name string, c *call) {
	args := c.args
	if slices.Contains(configPrograms(), name) && !slices.Contains(s.runs, name) {
		s.runs = append(s.runs, name)
	}
	switch name {
	case "cd", "pushd":
		rest := args[1:]
		for len(rest) > 0 && strings.HasPrefix(rest[0].v, "-") && rest[0].v != "-" && !rest[0].dyn {
			rest = rest[1:] // -P, -L, -e, --
		}
		home := ""
		if c.w != nil {
			home = c.w.home
		}
		switch {
		case len(rest) == 0 && home != "":
			s.cds = append(s.cds, home)
		case len(rest) > 0 && (rest[0].v == "~" || strings.HasPrefix(rest[0].v, "~/")) && home != "" && !rest[0].dyn:
			s.cds = append(s.cds, home+strings.TrimPrefix(rest[0].v, "~"))
		case len(rest) == 0 || rest[0].v == "~" || strings.HasPrefix(rest[0].v, "~/"):
			s.dirUnknown = "the line enters the home, which jail does not know here"
		case rest[0].dyn:
			s.dirUnknown = "a directory the line enters is known only at run time"
		case rest[0].v == "-" || strings.HasPrefix(rest[0].v, "+") || strings.HasPrefix(rest[0].v, "~"):
			s.dirUnknown = "the line enters " + quoteEntry(rest[0].v) + ", a directory jail does not follow"
		default:
			s.cds = append(s.cds, rest[0].v)
		}
	case "find":
		if slices.ContainsFunc(args[1:], func(a arg) bool { return a.v == "-execdir" || a.v == "-okdir" }) {
			s.dirUnknown = "find -execdir runs commands in each directory it finds"
		}
	case "git":
		if c.git == nil {
			return
		}
		if slices.ContainsFunc(args[1:min(len(args), 1+c.git.At)], func(a arg) bool { return a.dyn }) {
			s.dirUnknown = "a git option is known only at run time"
		}
		s.gits = append(s.gits, gitAt{dirs: c.git.Dirs, gitDir: c.git.GitDir})
	}
}

// maxGitDirs bounds the directories GitWhere lists; a line that may run
// git in more is judged as one that runs it where jail cannot look.
const maxGitDirs = 64

// where is GitWhere for the line: every directory its git commands may
// run in, relative to the directory the line starts in or absolute.
// Each cd of the line is applied, in the order met, to every directory
// the ones before it may have led to (branches and subshells included:
// the set errs towards more directories); a relative cd the line may
// repeat (in a loop or a function) makes the directories unknown.
func (s *classifier) where(repeats bool) *GitWhere {
	w := &GitWhere{Unknown: s.dirUnknown, Runs: s.runs}
	if len(s.gits) == 0 && len(s.writes) == 0 || w.Unknown != "" {
		return w
	}
	cands := []string{"."}
	seen := map[string]bool{".": true}
	for _, cd := range s.cds {
		if repeats && !path.IsAbs(cd) {
			w.Unknown = "the line may enter " + quoteEntry(cd) + " again and again (a loop or a function)"
			return w
		}
		for _, c := range cands {
			n := joinDir(c, cd)
			if seen[n] {
				continue
			}
			if len(cands) >= maxGitDirs {
				w.Unknown = "the line may run git in more directories than jail reads the config of"
				return w
			}
			seen[n] = true
			cands = append(cands, n)
		}
	}
	dirs := map[string]bool{}
	for _, f := range s.writes {
		for _, c := range cands {
			if w.Writes = append(w.Writes, joinDir(c, f)); path.IsAbs(f) {
				break
			}
		}
	}
	if len(s.gits) == 0 {
		w.Dirs = cands // where the hooks directories written to are looked for
		return w
	}
	for _, g := range s.gits {
		for _, c := range cands {
			d := c
			for _, x := range g.dirs {
				d = joinDir(d, x)
			}
			if g.gitDir != "" {
				w.GitDirs = append(w.GitDirs, joinDir(d, g.gitDir))
			}
			if !dirs[d] {
				dirs[d] = true
				w.Dirs = append(w.Dirs, d)
			}
		}
	}
	return w
}

// joinDir is dir entered from c: an absolute path as it is, a relative
// one below c (lexically: the directories are resolved as the sandbox
// sees them only when read, and a symlink on the way is followed there).
func joinDir(c, dir string) string {
	switch {
	case dir == "":
		return c
	case path.IsAbs(dir):
		return path.Clean(dir)
	}
	return path.Join(c, dir)
}
