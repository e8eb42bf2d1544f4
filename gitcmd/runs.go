package gitcmd

import (
	"path"
	"slices"
	"strings"
)

// What a git line makes git do besides its sub-command's own work: the
// programs it runs (rebase -x, bisect run, submodule foreach, the filters
// of filter-branch, difftool -x, --upload-pack, -c core.sshCommand=...,
// ...), and whether it sends the repository somewhere (push, and the
// plumbing and helpers that push without the name). A caller that judges
// a git command by its sub-command alone misses these: `git rebase -x
// "git push ..." --root` pushes, and `git send-pack` is a push.

// builtins are git's own commands (git --list-cmds=main of git 2.39, and
// the newer ones): any other sub-command is an alias from a config file
// the line does not show, or a git-NAME program on PATH, and either may
// do anything.
var builtins = map[string]bool{
	"add": true, "am": true, "annotate": true, "apply": true, "archive": true, "bisect": true,
	"blame": true, "branch": true, "bugreport": true, "bundle": true, "cat-file": true,
	"check-attr": true, "check-ignore": true, "check-mailmap": true, "check-ref-format": true,
	"checkout": true, "checkout-index": true, "cherry": true, "cherry-pick": true, "clean": true,
	"clone": true, "column": true, "commit": true, "commit-graph": true, "commit-tree": true,
	"config": true, "count-objects": true, "credential": true, "credential-cache": true,
	"credential-store": true, "daemon": true, "describe": true, "diagnose": true, "diff": true,
	"diff-files": true, "diff-index": true, "diff-tree": true, "difftool": true, "fast-export": true,
	"fast-import": true, "fetch": true, "fetch-pack": true, "filter-branch": true,
	"fmt-merge-msg": true, "for-each-ref": true, "for-each-repo": true, "format-patch": true,
	"fsck": true, "fsck-objects": true, "gc": true, "get-tar-commit-id": true, "grep": true,
	"hash-object": true, "help": true, "hook": true, "http-backend": true, "http-fetch": true,
	"http-push": true, "imap-send": true, "index-pack": true, "init": true, "init-db": true,
	"instaweb": true, "interpret-trailers": true, "log": true, "ls-files": true, "ls-remote": true,
	"ls-tree": true, "mailinfo": true, "mailsplit": true, "maintenance": true, "merge": true,
	"merge-base": true, "merge-file": true, "merge-index": true, "merge-octopus": true,
	"merge-one-file": true, "merge-ours": true, "merge-recursive": true, "merge-recursive-ours": true,
	"merge-recursive-theirs": true, "merge-resolve": true, "merge-subtree": true, "merge-tree": true,
	"mergetool": true, "mktag": true, "mktree": true, "multi-pack-index": true, "mv": true,
	"name-rev": true, "notes": true, "pack-objects": true, "pack-redundant": true, "pack-refs": true,
	"patch-id": true, "pickaxe": true, "prune": true, "prune-packed": true, "pull": true,
	"push": true, "quiltimport": true, "range-diff": true, "read-tree": true, "rebase": true,
	"receive-pack": true, "reflog": true, "remote": true, "remote-ext": true, "remote-fd": true,
	"remote-ftp": true, "remote-ftps": true, "remote-http": true, "remote-https": true,
	"repack": true, "replace": true, "request-pull": true, "rerere": true, "reset": true,
	"restore": true, "rev-list": true, "rev-parse": true, "revert": true, "rm": true,
	"send-pack": true, "shell": true, "shortlog": true, "show": true, "show-branch": true,
	"show-index": true, "show-ref": true, "sparse-checkout": true, "stage": true, "stash": true,
	"status": true, "stripspace": true, "submodule": true, "subtree": true, "switch": true,
	"symbolic-ref": true, "tag": true, "unpack-file": true, "unpack-objects": true,
	"update-index": true, "update-ref": true, "update-server-info": true, "upload-archive": true,
	"upload-pack": true, "var": true, "verify-commit": true, "verify-pack": true, "verify-tag": true,
	"version": true, "whatchanged": true, "worktree": true, "write-tree": true, "replay": true,
	"refs": true, "backfill": true, "last-modified": true, "repo": true, "send-email": true,
	"svn": true, "p4": true, "cvsimport": true, "cvsserver": true, "cvsexportcommit": true,
	"archimport": true, "gui": true, "citool": true, "web--browse": true,
}

// Known reports whether Sub is one of git's own commands. A line with no
// sub-command is known (git alone prints its usage).
func (l *Line) Known() bool {
	return l.Sub == "" || builtins[l.Sub]
}

// pushers are the commands that send the repository's objects or refs
// elsewhere under another name than push: the plumbing push is made of,
// the remote helpers (git remote-https URL speaks their protocol on
// stdin, pushes included), and the ones that mail or post patches.
var pushers = []string{"send-pack", "http-push", "remote-ext", "remote-fd", "remote-ftp", "remote-ftps",
	"remote-http", "remote-https", "send-email", "imap-send", "p4", "svn", "cvsexportcommit", "subtree"}

// Pushes reports whether the line may send the repository somewhere: push
// itself, a command of pushers (svn and p4 only when committing out:
// dcommit, submit; subtree push), or a sub-command git does not know,
// which may be an alias of push from a config file.
func (l *Line) Pushes() bool {
	switch {
	case l.Sub == "push", !l.Known():
		return true
	case l.Sub == "svn":
		return slices.Contains(l.Args, "dcommit") || slices.Contains(l.Args, "branch") || slices.Contains(l.Args, "tag")
	case l.Sub == "p4":
		return slices.Contains(l.Args, "submit")
	case l.Sub == "subtree":
		return slices.Contains(l.Args, "push")
	}
	return slices.Contains(pushers, l.Sub)
}

// Forced reports whether a push of the line may overwrite the remote's
// history: --force and its forms, --mirror, a -f among short options, a
// +refspec (push, send-pack, http-push).
func (l *Line) Forced() bool {
	if l.Sub != "push" && l.Sub != "send-pack" && l.Sub != "http-push" {
		return false
	}
	for _, a := range l.Args {
		if a == "-f" || a == "--force" || strings.HasPrefix(a, "--force-with-lease") || a == "--force-if-includes" || a == "--mirror" ||
			(strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "f")) ||
			(strings.HasPrefix(a, "+") && len(a) > 1) {
			return true
		}
	}
	return false
}

// programKeys are the config keys (lower case, * for a name) whose value
// git runs as a shell command: a -c on the line that sets one runs it.
var programKeys = []string{"core.sshcommand", "core.pager", "core.editor", "sequence.editor", "core.askpass",
	"core.gitproxy", "core.fsmonitor", "core.alternaterefscommand", "diff.external", "diff.*.command",
	"diff.*.textconv", "merge.*.driver", "filter.*.clean", "filter.*.smudge", "filter.*.process",
	"credential.helper", "credential.*.helper", "gpg.program", "gpg.*.program", "pager.*",
	"uploadpack.packobjectshook", "remote.*.uploadpack", "remote.*.receivepack", "difftool.*.cmd",
	"mergetool.*.cmd", "man.*.cmd", "browser.*.cmd", "web.browser", "interactive.difffilter",
	"sendemail.smtpserver", "sendemail.tocmd", "sendemail.cccmd", "sendemail.headercmd",
	"sendemail.sendmailcmd", "instaweb.httpd", "core.hookspath", "include.path", "includeif.*.path",
	"protocol.allow", "protocol.*.allow", "remote.*.vcs", "url.*.insteadof", "url.*.pushinsteadof",
	"core.worktree", "ssh.variant",
	// From `git help config` (git 2.39 and later): the hooks of a
	// template directory are copied into every new repository; gpg's
	// key command, trailers' commands, the tools' and viewers' paths, the
	// IMAP tunnel, gui tools, submodule.*.update = !command, send-email's
	// identities.
	"init.templatedir", "gpg.ssh.defaultkeycommand", "trailer.*.cmd", "trailer.*.command", "mergetool.*.path",
	"difftool.*.path", "man.*.path", "man.viewer", "browser.*.path", "help.browser", "imap.tunnel", "guitool.*.cmd",
	"submodule.*.update", "sendemail.*.smtpserver", "sendemail.*.tocmd", "sendemail.*.cccmd", "sendemail.*.headercmd",
	"sendemail.*.sendmailcmd", "sendemail.aliasesfile", "core.sshcommand", "uploadpack.allowfilter"}

// RunsProgram reports whether git runs (or reads another file or
// repository by) the value of the config key: a `git config KEY VALUE`
// of one changes what later git commands run.
func RunsProgram(key string) bool { return keyMatch(key) }

// keyMatch reports whether the config key (any case) matches a pattern of
// programKeys (* matches a name, dots included: remote."a.b".uploadpack).
func keyMatch(key string) bool {
	// A subsection may hold a slash (includeIf "gitdir:/w/".path),
	// which path.Match's * would not cross.
	key = strings.ReplaceAll(strings.ToLower(key), "/", "\x00")
	for _, p := range programKeys {
		if ok, _ := path.Match(p, key); ok {
			return true
		}
	}
	return false
}

// Commands are the shell commands the line makes git run, each a command
// line a caller can read as one (git runs each with sh, or as sh would:
// an alias's shell command is Shell, not here); Programs are what it
// runs that cannot be read so (a hooks directory, a credential helper by
// name, an ext:: transport, a config key that redirects a remote or reads
// another file, a setting from the environment). Either makes the line
// run a process.
func (l *Line) Commands() (shell []string, programs []string) {
	config := l.Config
	if l.Sub == "clone" {
		// git clone -c KEY=VALUE / --config KEY=VALUE: written into the
		// new repository's config, and in effect for the clone itself.
		for i := 0; i < len(l.Args); i++ {
			if v, next, ok := optValue(l.Args, i, "--config"); ok {
				config = append(slices.Clone(config), v)
				if next {
					i++
				}
			} else if v, next, ok := optValue(l.Args, i, "-c"); ok {
				config = append(slices.Clone(config), v)
				if next {
					i++
				}
			}
		}
	}
	for _, c := range config {
		k, v, _ := strings.Cut(c, "=")
		if !keyMatch(k) {
			continue
		}
		lk := strings.ToLower(k)
		switch {
		case lk == "core.sshcommand" || lk == "core.pager" || lk == "core.editor" || lk == "sequence.editor" ||
			lk == "diff.external" || strings.HasPrefix(lk, "pager.") || strings.HasSuffix(lk, ".cmd") ||
			strings.HasSuffix(lk, ".command") || strings.HasSuffix(lk, ".textconv") || strings.HasSuffix(lk, ".driver") ||
			strings.HasPrefix(lk, "filter.") || lk == "core.fsmonitor" || lk == "core.alternaterefscommand" ||
			strings.HasSuffix(lk, ".uploadpack") || strings.HasSuffix(lk, ".receivepack") || lk == "uploadpack.packobjectshook":
			if v != "" && v != "false" && v != "true" {
				shell = append(shell, v)
			} else {
				programs = append(programs, "-c "+k)
			}
		case strings.HasPrefix(lk, "credential.") && strings.HasPrefix(v, "!"):
			shell = append(shell, v[1:])
		default:
			programs = append(programs, "-c "+k)
		}
	}
	for _, c := range l.ConfigEnv {
		if k, _, _ := strings.Cut(c, "="); keyMatch(k) {
			programs = append(programs, "--config-env "+k)
		}
	}
	for i := 0; i < len(l.Args); i++ {
		a := l.Args[i]
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "ext::") {
			programs = append(programs, a)
		}
		for _, n := range cmdOptions[l.Sub] {
			v, next, ok := optValue(l.Args, i, n)
			if ok {
				shell = append(shell, v)
				if next {
					i++
				}
				break
			}
		}
	}
	switch l.Sub {
	case "bisect":
		// git bisect run CMD ARG...: the words joined and run by the
		// shell (builtin/bisect.c).
		if i := slices.Index(l.Args, "run"); i >= 0 && i+1 < len(l.Args) {
			shell = append(shell, strings.Join(l.Args[i+1:], " "))
		}
	case "submodule":
		// git submodule [--quiet] foreach [--recursive] CMD...: eval'd
		// in each submodule.
		if i := slices.Index(l.Args, "foreach"); i >= 0 {
			rest := l.Args[i+1:]
			for len(rest) > 0 && strings.HasPrefix(rest[0], "--") {
				rest = rest[1:]
			}
			if len(rest) > 0 {
				shell = append(shell, strings.Join(rest, " "))
			}
		}
	case "for-each-repo":
		// git for-each-repo --config=KEY CMD...: git CMD in each
		// repository the key lists.
		for i, a := range l.Args {
			if !strings.HasPrefix(a, "-") {
				shell = append(shell, "git "+strings.Join(l.Args[i:], " "))
				break
			}
		}
	case "grep":
		// git grep -O[PAGER] / --open-files-in-pager[=PAGER]: the files
		// found are opened in PAGER, or in core.pager, by the shell.
		for _, a := range l.Args {
			if a == "--" {
				break
			}
			switch v, ok := strings.CutPrefix(a, "--open-files-in-pager"); {
			case ok && strings.HasPrefix(v, "="):
				shell = append(shell, v[1:])
			case ok && v == "":
				programs = append(programs, "grep --open-files-in-pager")
			case strings.HasPrefix(a, "-O"):
				if a == "-O" {
					programs = append(programs, "grep -O")
				} else {
					shell = append(shell, a[2:])
				}
			case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "O"):
				programs = append(programs, "grep "+a)
			}
		}
	case "init", "init-db", "clone":
		// --template=DIR: its hooks become the new repository's.
		for i := range l.Args {
			if _, _, ok := optValue(l.Args, i, "--template"); ok {
				programs = append(programs, l.Sub+" --template")
			}
		}
	case "hook", "mergetool", "instaweb", "daemon", "web--browse", "gui", "citool", "difftool", "maintenance":
		// They run hooks, tools and servers the config names.
		programs = append(programs, l.Sub)
	}
	if l.ExecPath != "" {
		programs = append(programs, "--exec-path="+l.ExecPath)
	}
	if !l.Known() {
		programs = append(programs, "git-"+l.Sub)
	}
	return shell, programs
}

// cmdOptions are the options of each sub-command whose value git runs as
// a shell command: rebase's exec lines, difftool's tool, the upload-pack
// and receive-pack git runs for a local or file:// remote, the filters of
// filter-branch, send-email's address and sending commands.
var cmdOptions = map[string][]string{
	"rebase":        {"--exec", "-x"},
	"difftool":      {"--extcmd", "-x"},
	"clone":         {"--upload-pack", "-u"},
	"fetch":         {"--upload-pack"},
	"pull":          {"--upload-pack"},
	"ls-remote":     {"--upload-pack"},
	"fetch-pack":    {"--upload-pack", "--exec"},
	"archive":       {"--exec"},
	"push":          {"--receive-pack", "--exec"},
	"send-pack":     {"--receive-pack", "--exec"},
	"filter-branch": {"--env-filter", "--tree-filter", "--index-filter", "--parent-filter", "--msg-filter", "--commit-filter", "--tag-name-filter"},
	"send-email":    {"--to-cmd", "--cc-cmd", "--header-cmd", "--sendmail-cmd", "--smtp-server"},
}

// optValue reads option name at args[i]: "--name=V" or "--name V" for a
// long one, "-nV" or "-n V" for a short one; next says V was args[i+1].
func optValue(args []string, i int, name string) (v string, next, ok bool) {
	a := args[i]
	if a == name {
		if i+1 < len(args) {
			return args[i+1], true, true
		}
		return "", false, false
	}
	if strings.HasPrefix(name, "--") {
		v, ok = strings.CutPrefix(a, name+"=")
		return v, false, ok
	}
	if v, ok = strings.CutPrefix(a, name); ok && v != "" && !strings.HasPrefix(a, "--") {
		return v, false, true
	}
	return "", false, false
}

// Writes are the files the line makes git write by name besides the
// repository's own: --output=FILE of the diff family and archive (-o),
// a file in format-patch's -o/--output-directory, bundle create FILE.
// unknown says a file written is named only at run time.
func (l *Line) Writes() (files []string) {
	for i := 0; i < len(l.Args); i++ {
		a := l.Args[i]
		if a == "--" {
			break
		}
		names := []string{"--output"}
		switch l.Sub {
		case "archive":
			names = append(names, "-o")
		case "format-patch":
			names = append(names, "-o", "--output-directory")
		}
		for _, n := range names {
			v, next, ok := optValue(l.Args, i, n)
			if !ok {
				continue
			}
			if l.Sub == "format-patch" && n != "--output" {
				// The patches are DIR/NNNN-*.patch.
				v = path.Join(v, "0001.patch")
			}
			files = append(files, v)
			if next {
				i++
			}
			break
		}
	}
	if l.Sub == "bundle" && len(l.Args) > 1 && l.Args[0] == "create" {
		for _, a := range l.Args[1:] {
			if !strings.HasPrefix(a, "-") {
				files = append(files, a)
				break
			}
		}
	}
	return files
}
