package gitstate

import (
	"strings"
)

// configRule is one allowlisted config key: which subsections it may
// have, and what its values may be. Every rule's values are data to git:
// none names a program, a file git reads, or another repository.
type configRule struct {
	section, name string
	sub           func(string) bool // nil: the key has no subsection
	value         func(string) bool
	values        string // the values value admits, for the docs
	why           string // what the key is for
}

// configAllow is the complete list of keys adopted from a sandbox's
// config. Anything else it added, changed or removed is dropped and named.
var configAllow = []configRule{
	{"user", "name", nil, identity, "printable text without `<` `>`", "author and committer name"},
	{"user", "email", nil, identity, "printable text without `<` `>`", "author and committer email"},
	{"remote", "url", validRemoteName, remoteURL, "https, http, ssh, git URLs and scp-like `host:path`", "fetch URL (no ext::, fd::, local paths or leading -)"},
	{"remote", "pushurl", validRemoteName, remoteURL, "https, http, ssh, git URLs and scp-like `host:path`", "push URL (same rule as url)"},
	{"remote", "fetch", validRemoteName, refspec, "a refspec", "fetch refspec"},
	{"remote", "push", validRemoteName, refspec, "a refspec", "push refspec"},
	{"remote", "tagopt", validRemoteName, oneOf("--tags", "--no-tags"), "`--tags`, `--no-tags`", "tag following"},
	{"remote", "prune", validRemoteName, boolean, "boolean", "prune on fetch"},
	{"remote", "prunetags", validRemoteName, boolean, "boolean", "prune tags on fetch"},
	{"branch", "remote", validBranchName, remoteOrDot, "a remote name or `.`", "upstream remote"},
	{"branch", "pushremote", validBranchName, validRemoteName, "a remote name", "push remote"},
	{"branch", "merge", validBranchName, validRefName, "a ref name", "upstream ref"},
	{"branch", "rebase", validBranchName, boolean, "boolean", "pull rebases (booleans only: interactive would open an editor)"},
	{"core", "autocrlf", nil, oneOf("true", "false", "input"), "`true`, `false`, `input`", "line-ending conversion"},
	{"core", "eol", nil, oneOf("lf", "crlf", "native"), "`lf`, `crlf`, `native`", "line ending of the work tree"},
	{"core", "safecrlf", nil, orBool("warn"), "boolean or `warn`", "line-ending conversion checks"},
	{"init", "defaultbranch", nil, validBranchName, "a branch name", "name of the first branch"},
	{"pull", "rebase", nil, boolean, "boolean", "pull rebases (booleans only)"},
	{"pull", "ff", nil, orBool("only"), "boolean or `only`", "pull fast-forward mode"},
	{"merge", "ff", nil, orBool("only"), "boolean or `only`", "merge fast-forward mode"},
	{"fetch", "prune", nil, boolean, "boolean", "prune on fetch"},
	{"push", "default", nil, oneOf("nothing", "current", "upstream", "tracking", "simple", "matching"), "`nothing`, `current`, `upstream`, `tracking`, `simple`, `matching`", "push mode"},
	{"push", "autosetupremote", nil, boolean, "boolean", "set upstream on first push"},
}

// dangerousConfig are key patterns known to make git run a program, read
// another file or repository, or otherwise change what runs; they get a
// sharper reason in the report (they are dropped like every key not on
// configAllow). "*" matches any subsection.
var dangerousConfig = []string{
	"core.fsmonitor", "core.hookspath", "core.pager", "core.editor", "core.sshcommand", "core.askpass",
	"core.gitproxy", "core.alternaterefscommand", "core.worktree", "core.sharedrepository",
	"diff.external", "diff.*.command", "diff.*.textconv", "merge.*.driver", "filter.*.clean",
	"filter.*.smudge", "filter.*.process", "filter.*.required", "credential.helper", "credential.*.helper",
	"include.path", "includeif.*.path", "gpg.program", "gpg.*.program", "sequence.editor",
	"uploadpack.packobjectshook", "remote.*.uploadpack", "remote.*.receivepack", "remote.*.vcs",
	"remote.*.proxy", "protocol.allow", "protocol.*.allow", "interactive.difffilter", "web.browser",
	"browser.*.cmd", "browser.*.path", "man.*.cmd", "man.*.path", "difftool.*.cmd", "mergetool.*.cmd",
	"mergetool.*.path", "difftool.*.path", "pager.*", "alias.*", "core.repositoryformatversion",
	"core.bare", "extensions.*", "safe.directory", "http.*", "url.*.insteadof", "url.*.pushinsteadof",
	"submodule.*.update", "submodule.*.url", "ssh.variant", "core.attributesfile", "core.excludesfile",
	"commit.template", "core.commentchar", "gc.*", "receive.*", "transfer.*", "fetch.fsck*",
}

// configVerdict returns "" when key k may be set to values, or the reason
// it may not.
func configVerdict(k keyID, values []string) string {
	for _, r := range configAllow {
		if r.section != k.Section || r.name != k.Name {
			continue
		}
		if (r.sub == nil) == k.HasSub {
			continue
		}
		if r.sub != nil && !r.sub(k.Subsection) {
			return "its subsection is not a valid name"
		}
		for _, v := range values {
			if v == noValue && r.value(noValue) {
				continue
			}
			if v == noValue || !r.value(v) {
				return "value " + esc(strings.ReplaceAll(v, noValue, "(none)")) + " is not one jail adopts for it (" + r.why + ")"
			}
		}
		return ""
	}
	if isDangerous(k) {
		return "it can make git run a program or read another file or repository"
	}
	return "not on the list of config keys jail adopts"
}

func isDangerous(k keyID) bool {
	for _, pat := range dangerousConfig {
		parts := strings.Split(pat, ".")
		var sec, sub, name string
		hasSub := false
		switch len(parts) {
		case 2:
			sec, name = parts[0], parts[1]
		case 3:
			sec, sub, name, hasSub = parts[0], parts[1], parts[2], true
		}
		if sec != k.Section {
			continue
		}
		if hasSub != k.HasSub && !(name == "*" && !hasSub) {
			continue
		}
		if hasSub && sub != "*" && sub != k.Subsection {
			continue
		}
		if name == "*" || name == k.Name || strings.HasSuffix(name, "*") && strings.HasPrefix(k.Name, strings.TrimSuffix(name, "*")) {
			return true
		}
	}
	return false
}

func oneOf(vals ...string) func(string) bool {
	return func(v string) bool {
		for _, x := range vals {
			if strings.EqualFold(v, x) {
				return true
			}
		}
		return false
	}
}

// boolean is git's boolean syntax; a value-less key is true.
func boolean(v string) bool {
	return v == noValue || oneOf("true", "false", "yes", "no", "on", "off", "1", "0", "")(v)
}

func orBool(extra ...string) func(string) bool {
	return func(v string) bool { return boolean(v) || oneOf(extra...)(v) }
}

func printable(v string, max int) bool {
	if len(v) > max {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

func identity(v string) bool {
	return v != noValue && printable(v, 256) && !strings.ContainsAny(v, "<>")
}

func remoteOrDot(v string) bool { return v == "." || validRemoteName(v) }

// refspec is [+]<src>[:<dst>] (or ^<src>), without anything a shell or an
// option parser could read differently.
func refspec(v string) bool {
	if !printable(v, 1024) || v == "" || strings.ContainsAny(v, " \\") {
		return false
	}
	v = strings.TrimPrefix(strings.TrimPrefix(v, "+"), "^")
	return v != "" && v[0] != '-'
}

// remoteURL admits the network transports and scp-like addresses. Refused:
// transport helpers named by "<helper>::" (ext:: runs a command, fd::
// talks to descriptors, others run git-remote-<helper>), file:// and local
// paths (git would run upload-pack on a directory the sandbox may have
// made into a repository), and a leading "-" (read as an option by ssh).
func remoteURL(v string) bool {
	if !printable(v, 4096) || v == "" || v[0] == '-' || strings.Contains(v, "::") || strings.ContainsAny(v, " \\") {
		return false
	}
	lower := strings.ToLower(v)
	for _, scheme := range []string{"https://", "http://", "ssh://", "git+ssh://", "ssh+git://", "git://"} {
		if strings.HasPrefix(lower, scheme) {
			host := v[len(scheme):]
			if host == "" || host[0] == '-' || strings.HasPrefix(strings.TrimLeft(host, "@"), "-") {
				return false
			}
			if at := strings.IndexByte(host, '@'); at >= 0 && at+1 < len(host) && host[at+1] == '-' {
				return false
			}
			return true
		}
	}
	if strings.Contains(v, "://") {
		return false
	}
	// scp-like: [user@]host:path, where the host part has no slash.
	colon := strings.IndexByte(v, ':')
	if colon <= 0 || strings.Contains(v[:colon], "/") {
		return false
	}
	host := v[:colon]
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:]
	}
	return host != "" && host[0] != '-'
}

// configVerdicts judges every changed key of changes (configVerdict) and
// then leaves out what a refused remote URL would leave behind: a remote
// whose url or pushurl is refused is left out whole (its fetch refspec
// alone makes a remote with no URL, which git prints as an empty one and
// fetches from nowhere), and so are the branch.<name>.remote and
// branch.<name>.merge keys of the branches that track it (a remote name
// with no remote is taken for a path, a repository in the work tree). It
// returns the reason for each key left out, by index.
func configVerdicts(changes []setting) map[int]string {
	out := map[int]string{}
	refused := map[string]string{} // remote name -> the url line
	for i, ch := range changes {
		why := configVerdict(ch.Key, ch.Values)
		if why == "" {
			continue
		}
		out[i] = why
		if k := ch.Key; k.Section == "remote" && k.HasSub && (k.Name == "url" || k.Name == "pushurl") && len(ch.Values) > 0 && ch.Values[0] != noValue {
			out[i] = esc(strings.Join(ch.Values, " ")) + " is a local path, file://, transport helper or option, which jail does not adopt (the host's git would run what a repository or program there says), so remote " + esc(k.Subsection) + " is left out whole; to keep it, check the URL and add it on the host: git remote add " + esc(k.Subsection) + " URL"
			refused[k.Subsection] = esc(strings.Join(ch.Values, " "))
		}
	}
	if len(refused) == 0 {
		return out
	}
	orphans := map[string]bool{} // branches tracking a refused remote
	for _, ch := range changes {
		if k := ch.Key; k.Section == "branch" && k.HasSub && k.Name == "remote" && len(ch.Values) == 1 {
			if _, ok := refused[ch.Values[0]]; ok {
				orphans[k.Subsection] = true
			}
		}
	}
	for i, ch := range changes {
		if _, done := out[i]; done {
			continue
		}
		k := ch.Key
		switch {
		case k.Section == "remote" && k.HasSub && refused[k.Subsection] != "":
			out[i] = "remote " + esc(k.Subsection) + " is left out whole: its URL " + refused[k.Subsection] + " is not adopted"
		case k.Section == "branch" && k.HasSub && orphans[k.Subsection] && (k.Name == "remote" || k.Name == "merge"):
			out[i] = "it tracks remote " + esc(strings.Join(ch.Values, " ")) + ", which is left out"
			if k.Name == "merge" {
				out[i] = "its branch tracks a remote that is left out"
			}
		}
	}
	return out
}
