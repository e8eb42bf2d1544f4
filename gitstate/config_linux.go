package gitstate

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// adoptConfig carries the sandbox's allowlisted config changes to the
// host's config. The sandbox's file (the upper's copy) is compared with
// the base's, key by key (a key's whole list of values is one unit); a
// changed key on configAllow whose values pass its check is applied to the
// host's current file, unless the host changed that key too (then the
// host's is kept and it is a conflict). Every other changed key is dropped
// and named. The host's file is rewritten under config.lock, as git config
// does, keeping every line the adoption does not change byte for byte and
// the file's mode.
func (a *adopter) adoptConfig(up *upperTree, base *Snapshot) {
	e := up.get("config")
	if e == nil {
		return
	}
	if e.kind != kindFile && e.kind != kindWhiteout {
		return
	}
	e.used = true
	if e.kind == kindWhiteout {
		a.rep.dropped("config: deletion not adopted")
		return
	}
	data, err := up.read("config", maxConfigFile)
	if err != nil {
		a.rep.dropped("config: %v", err)
		return
	}
	sandbox, err := ParseConfig(data)
	if err != nil {
		a.rep.dropped("config: %v; no key adopted", err)
		return
	}
	baseCfg, err := ParseConfig(base.Config)
	if err != nil {
		a.rep.dropped("config: the snapshot's config: %v", err)
		return
	}
	changes := diffConfig(baseCfg, sandbox)
	baseMap, _ := baseCfg.valueMap()
	var allowed []setting
	verdicts := configVerdicts(changes)
	launched := launchRemotes(baseCfg)
	for i, ch := range changes {
		if why := verdicts[i]; why != "" {
			a.rep.dropped("config %s: %s", esc(ch.Key.String()), why)
			continue
		}
		if k := ch.Key; k.Section == "remote" && k.HasSub && launched[k.Subsection] && (k.Name == "url" || k.Name == "pushurl" || k.Name == "push") {
			// Where the host's git push sends the repository, and what:
			// a sandbox without network would have a channel out through
			// the host's next push.
			a.rep.dropped("config %s: remote %s existed at launch, and where it fetches from and pushes to (url, pushurl, push) stays the host's; change it on the host: git remote set-url%s %s URL",
				esc(k.String()), esc(k.Subsection), map[bool]string{true: " --push", false: ""}[k.Name == "pushurl"], shellWord(esc(k.Subsection)))
			continue
		}
		if k := ch.Key; k.Section == "remote" && k.HasSub && !launched[k.Subsection] && becomesDefault(k.Subsection, launched) {
			// A branch that names no remote pushes to and pulls from
			// the only remote, or else the one named origin: this one
			// would take the host's plain git push.
			a.rep.dropped("config %s: remote %s, which the sandbox added, would become the remote the host's git push and pull use for a branch that names none (the only remote, or origin); add it on the host: git remote add %s URL",
				esc(k.String()), esc(k.Subsection), shellWord(esc(k.Subsection)))
			continue
		}
		if k := ch.Key; k.Section == "branch" && k.HasSub && (k.Name == "remote" || k.Name == "pushremote") {
			if r := addedRemote(ch.Values, launched); r != "" {
				// A remote the sandbox added may be adopted, but the
				// host's git push and pull of a branch go where the
				// host said: else the host's next plain git push sends
				// its commits to a server the sandbox chose.
				a.rep.dropped("config %s: names remote %s, which the sandbox added; where a branch pushes and pulls stays the host's; to use it: git config %s %s",
					esc(k.String()), esc(r), shellWord(esc(k.String())), shellWord(esc(r)))
				continue
			}
		}
		allowed = append(allowed, ch)
	}
	a.newRemotes = map[string]bool{}
	for _, ch := range allowed {
		if k := ch.Key; k.Section == "remote" && k.HasSub && !launched[k.Subsection] {
			a.newRemotes[k.Subsection] = true
		}
	}
	if len(allowed) == 0 {
		return
	}
	for try := 0; try < 5; try++ {
		err := a.applyConfig(allowed, baseMap)
		if errors.Is(err, errRaced) {
			continue
		}
		if err != nil {
			for _, ch := range allowed {
				a.rep.dropped("config %s: %v", esc(ch.Key.String()), err)
			}
		}
		return
	}
	a.rep.dropped("config: kept changing on the host while being adopted")
}

// applyConfig makes one attempt at rewriting the host's config.
func (a *adopter) applyConfig(allowed []setting, baseMap map[keyID][]string) error {
	data, fi, err := readFile(a.gitfd, "config", maxConfigFile, false)
	mode := uint32(0o644)
	switch {
	case errors.Is(err, unix.ENOENT):
		data = nil
	case err != nil:
		return fmt.Errorf("read the host's config: %w", err)
	default:
		mode = fi.Mode & 0o7777
	}
	host, err := ParseConfig(data)
	if err != nil {
		return fmt.Errorf("the host's config: %w", err)
	}
	hostMap, _ := host.valueMap()
	var apply []setting
	for _, ch := range allowed {
		switch cur := hostMap[ch.Key]; {
		case equalValues(cur, ch.Values):
		case !equalValues(cur, baseMap[ch.Key]):
			a.rep.conflict("config %s: changed on the host and in the sandbox; the host's kept", esc(ch.Key.String()))
		default:
			apply = append(apply, ch)
		}
	}
	if len(apply) == 0 {
		return nil
	}
	out := host.rewrite(apply)
	// The rewrite must say exactly what was meant: parse it back.
	check, err := ParseConfig(out)
	if err != nil {
		return fmt.Errorf("rewritten config does not parse: %w", err)
	}
	checkMap, _ := check.valueMap()
	for _, ch := range apply {
		if !equalValues(checkMap[ch.Key], ch.Values) {
			return fmt.Errorf("rewritten config has %s wrong", esc(ch.Key.String()))
		}
	}
	lk, err := lock(a.gitfd, "config", mode)
	if err != nil {
		return fmt.Errorf("lock config: %w", err)
	}
	now, _, err := readFile(a.gitfd, "config", maxConfigFile, false)
	if err != nil && !errors.Is(err, unix.ENOENT) {
		lk.release()
		return fmt.Errorf("read the host's config: %w", err)
	}
	if !bytes.Equal(now, data) {
		lk.release()
		return errRaced
	}
	if err := lk.commit(out); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	for _, ch := range apply {
		if k := ch.Key; k.Section == "remote" && a.newRemotes[k.Subsection] && (k.Name == "url" || k.Name == "pushurl") {
			// Named with its value: the host's git push may send the
			// repository there from now on.
			a.rep.appliedNotable("config %s = %s (a remote the sandbox added; the host's git fetch and push may use it)", esc(k.String()), esc(strings.Join(ch.Values, " ")))
			continue
		}
		a.rep.appliedNotable("config %s", esc(ch.Key.String()))
	}
	return nil
}

// launchRemotes are the remotes the config names (any remote.NAME.* key):
// those of the host's config at launch.
func launchRemotes(c *Config) map[string]bool {
	out := map[string]bool{}
	for _, e := range c.Entries {
		if e.Section == "remote" && e.HasSub {
			out[e.Subsection] = true
		}
	}
	return out
}

// addedRemote is the first of a branch's remote or pushremote values that
// names a remote the host's config did not have at launch (launched), ""
// when none does ("." is the repository itself).
func addedRemote(values []string, launched map[string]bool) string {
	for _, v := range values {
		if v != noValue && v != "." && !launched[v] {
			return v
		}
	}
	return ""
}

// becomesDefault reports whether a remote named name, added to a config
// whose remotes were launched, becomes git's default remote (the one a
// branch without branch.NAME.remote pushes to and pulls from): git takes
// the only remote there is, and else the one named origin.
func becomesDefault(name string, launched map[string]bool) bool {
	return name == "origin" || len(launched) == 0 || (len(launched) == 1 && !launched["origin"])
}
