package gitstate

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// AdoptNew brings a repository the sandbox made from nothing (git init,
// git clone) in a private directory srcFD into the host's empty git
// directory gitdirFD. It brings in objects verified (loose objects and
// packs streamed through git index-pack --strict, see adoptObjects),
// refs, packed-refs, HEAD, reflogs, shallow, the message files and the
// index (with the gitlink rule of Adopt: a gitlink only for a path in
// Options.Submodules), and writes a config of its own: the repository
// format keys (core.repositoryformatversion, core.filemode, core.bare =
// false, core.logallrefupdates, extensions.objectformat for SHA-256) plus
// the sandbox's allowlisted keys. Hooks, info/, description and every
// other file are dropped and reported. HEAD is written last, so the host's
// git sees a repository only once everything else is in place.
func AdoptNew(gitdirFD, srcFD int, opt Options) (*Report, error) {
	rep := &Report{}
	ents, err := readDir(gitdirFD, 16)
	if err != nil {
		return nil, fmt.Errorf("gitstate: adopt new: list the host's git directory: %w", err)
	}
	if len(ents) != 0 {
		return nil, errors.New("gitstate: adopt new: the host's git directory is not empty")
	}
	src := walkUpper(srcFD, opt.Limits.withDefaults(), rep)
	if src.truncated != "" {
		rep.dropped("everything: the new repository was not adopted: %s", src.truncated)
		return rep, nil
	}
	var srcCfg *Config
	if e := src.get("config"); e != nil && e.kind == kindFile {
		e.used = true
		data, err := src.read("config", maxConfigFile)
		if err == nil {
			srcCfg, err = ParseConfig(data)
		}
		if err != nil {
			rep.dropped("config: %v; only the format keys written", err)
			srcCfg = nil
		}
	}
	format, hexLen, err := objectFormat(srcCfg)
	if err != nil {
		return nil, fmt.Errorf("gitstate: adopt new: %w", err)
	}
	if v, ok := srcConfigGet(srcCfg, "core.repositoryformatversion"); ok && v != "0" && v != "1" {
		return nil, fmt.Errorf("gitstate: adopt new: core.repositoryformatversion %s", esc(v))
	}
	for _, e := range srcConfigEntries(srcCfg) {
		// worktreeConfig only has git read config.worktree files, which
		// are never adopted: the repository is the same without it.
		if e.Section == "extensions" && e.Name != "objectformat" && e.Name != "worktreeconfig" {
			return nil, fmt.Errorf("gitstate: adopt new: the repository uses extensions.%s, which jail does not adopt", esc(e.Name))
		}
	}
	// The skeleton git needs, then objects.
	for _, d := range []string{"objects/pack", "objects/info", "refs/heads", "refs/tags"} {
		fd, err := mkdirAll(gitdirFD, d, 0o755)
		if err != nil {
			return nil, fmt.Errorf("gitstate: adopt new: mkdir %s: %w", d, err)
		}
		unix.Close(fd)
	}
	if err := writeFile(gitdirFD, "config", newConfig(srcCfg, format, rep), 0o644); err != nil {
		return rep, fmt.Errorf("gitstate: adopt new: write config: %w", err)
	}
	a, err := newAdopter(gitdirFD, hexLen, opt, rep)
	if err != nil {
		return rep, err
	}
	defer a.close()
	// Objects first, verified as a fetch's would be (verify_linux.go),
	// with the shallow clone's boundary the stream may stop at.
	var shallow []byte
	if e := src.get("shallow"); e != nil && e.kind == kindFile {
		if data, err := src.read("shallow", maxPackedRefs); err == nil {
			shallow = shallowList(data, hexLen)
		}
	}
	if !a.adoptObjects(src, shallow) {
		rep.Incomplete = true
	}
	// Everything the sandbox wrote is new: an empty base makes every ref,
	// reflog line and the index "changed by the sandbox only".
	base := &Snapshot{ObjectFormat: format, Loose: map[string]string{}, Packed: map[string]string{}}
	head := ""
	if e := src.get("HEAD"); e != nil && e.kind == kindFile {
		data, err := src.read("HEAD", maxRefFile)
		if err == nil {
			head, err = parseRefValue("HEAD", data, hexLen)
		}
		if err != nil {
			rep.dropped("HEAD: %v; wrote ref: refs/heads/main", err)
			head = ""
		}
	}
	if e := src.get("HEAD"); e != nil {
		e.used = true
	}
	a.headLast = true
	// packed-refs is written whole (a clone may have thousands of tags),
	// with the entries whose objects are present; they are then the base,
	// so adoptRefs writes only the loose refs.
	if e := src.get("packed-refs"); e != nil && e.kind == kindFile {
		e.used = true
		data, err := src.read("packed-refs", maxPackedRefs)
		var list []packedRef
		if err == nil {
			list, err = parsePackedRefs(data, hexLen)
		}
		if err != nil {
			rep.dropped("packed-refs: %v", err)
		} else {
			var keep []packedRef
			for _, r := range list {
				switch {
				case strings.HasPrefix(r.Name, "refs/jail/"):
					rep.dropped("%s: refs/jail/ is jail's own namespace", esc(r.Name))
				case isReplaceRef(r.Name):
					rep.dropped("%s: %s", esc(r.Name), replaceWhy)
				case !a.objects.has(r.OID):
					rep.dropped("%s: points to %s, which is not in the objects", esc(r.Name), r.OID)
				default:
					keep = append(keep, packedRef{Name: r.Name, OID: r.OID})
					base.Packed[r.Name] = r.OID
				}
			}
			keep = a.holdPacked(keep)
			if err := writeFile(gitdirFD, "packed-refs", formatPackedRefs(keep, false), 0o644); err != nil {
				return rep, fmt.Errorf("gitstate: adopt new: write packed-refs: %w", err)
			}
			rep.applied("packed-refs (%d refs)", len(keep))
		}
	}
	if err := a.adoptRefs(src, base); err != nil {
		return rep, err
	}
	a.adoptReflogs(src)
	a.adoptMessages(src)
	a.adoptShallow(src)
	a.adoptIndex(src, base)
	a.adoptWorktrees(src)
	if e := src.get("objects"); e != nil {
		for _, p := range src.under("objects") {
			if src.get(p).kind == kindDir {
				src.get(p).used = true
			}
		}
	}
	for _, p := range []string{"description", "hooks", "info", "branches"} {
		if e := src.get(p); e != nil && (p == "description" || len(src.under(p)) == 1) {
			e.used = true // git init's own skeleton, nothing the sandbox chose
		}
	}
	for _, p := range src.under("hooks") {
		if strings.HasSuffix(p, ".sample") {
			src.get(p).used = true // git init's sample hooks, never run
		}
	}
	if e := src.get("info/exclude"); e != nil && e.kind == kindFile {
		// git init's template holds only comments; anything more is
		// the sandbox's and is reported.
		e.used = true
		data, err := src.read("info/exclude", maxMessageFile)
		if err != nil || !onlyComments(data) {
			rep.dropped("info/exclude: not adopted (info/ is not adopted)")
		}
	}
	if head == "" {
		head = "ref: refs/heads/main"
	}
	for _, id := range oids(head) {
		if !a.objects.has(id) {
			rep.dropped("HEAD: points to %s, which is not in the objects; wrote ref: refs/heads/main", id)
			head = "ref: refs/heads/main"
		}
	}
	if ids := oids(head); len(ids) > 0 && a.opt.Hold != nil {
		// A detached HEAD is checked out by the host's next git restore
		// as a branch would be.
		if paths, err := a.opt.Hold(ids); err != nil || len(paths) > 0 {
			a.holdRef("HEAD", "", head, paths, err)
			head = "ref: refs/heads/main"
		}
	}
	if strings.HasPrefix(head, "ref: ") {
		// An unborn branch is what git init leaves; a symbolic HEAD
		// into refs/jail/ (where the held branch is) is not.
		host, err := a.refs.all()
		if err != nil {
			return rep, fmt.Errorf("gitstate: adopt new: read the refs: %w", err)
		}
		if why := symrefWhy(head, host, true); why != "" {
			rep.dropped("HEAD: %s; wrote ref: refs/heads/main", why)
			head = "ref: refs/heads/main"
		}
	}
	if err := a.refs.update("HEAD", "", head); err != nil {
		return rep, fmt.Errorf("gitstate: adopt new: write HEAD: %w", err)
	}
	rep.applied("HEAD")
	src.rest(rep)
	if err := a.sync(); err != nil {
		return rep, err
	}
	return rep, nil
}

func srcConfigGet(c *Config, key string) (string, bool) {
	if c == nil {
		return "", false
	}
	return c.Get(key)
}

func srcConfigEntries(c *Config) []Entry {
	if c == nil {
		return nil
	}
	return c.Entries
}

// newConfig is the config jail writes for an adopted new repository.
func newConfig(src *Config, format string, rep *Report) []byte {
	version := "0"
	if format == "sha256" {
		version = "1"
	}
	filemode := "true"
	if v, ok := srcConfigGet(src, "core.filemode"); ok && boolean(v) {
		filemode = strings.ToLower(v)
	}
	fresh, _ := ParseConfig(nil)
	settings := []setting{
		{Key: keyID{Section: "core", Name: "repositoryformatversion"}, Values: []string{version}},
		{Key: keyID{Section: "core", Name: "filemode"}, Values: []string{filemode}},
		{Key: keyID{Section: "core", Name: "bare"}, Values: []string{"false"}},
		{Key: keyID{Section: "core", Name: "logallrefupdates"}, Values: []string{"true"}},
	}
	if format == "sha256" {
		settings = append(settings, setting{Key: keyID{Section: "extensions", Name: "objectformat"}, Values: []string{"sha256"}})
	}
	if src != nil {
		m, order := src.valueMap()
		var changes []setting
		for _, k := range order {
			switch k.String() {
			case "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates", "extensions.objectformat":
				continue
			}
			changes = append(changes, setting{Key: k, Values: m[k]})
		}
		verdicts := configVerdicts(changes)
		routed := newRemoteVerdicts(changes, verdicts)
		for i, ch := range changes {
			k := ch.Key
			if why := verdicts[i]; why != "" {
				rep.dropped("config %s: %s", esc(k.String()), why)
				continue
			}
			if why := routed[i]; why != "" {
				rep.dropped("config %s: %s", esc(k.String()), why)
				continue
			}
			settings = append(settings, setting{Key: k, Values: m[k]})
			rep.applied("config %s", esc(k.String()))
		}
	}
	return fresh.rewrite(settings)
}

// newRemoteVerdicts applies to a new repository the rule adoptConfig
// applies to the remotes a sandbox adds to the host's repository: the host
// had no remote here, so every remote the sandbox made would become the
// one the host's plain git push and pull use (git takes the only remote,
// else origin), and a sandbox without network would have the host's next
// git push send the repository to the pushurl it chose. So each remote is
// left out whole, its url and pushurl named with their values and the
// command that adds it on the host, and the branch keys that route a
// branch to one (remote, pushremote, and the merge of a branch whose
// remote is left out) go with it. It returns the reason for each key
// left out, by index, beside configVerdicts' (verdicts).
func newRemoteVerdicts(changes []setting, verdicts map[int]string) map[int]string {
	out := map[int]string{}
	urls := map[string][]string{} // remote -> "url = VALUE" parts
	for i, ch := range changes {
		if k := ch.Key; verdicts[i] == "" && k.Section == "remote" && k.HasSub && (k.Name == "url" || k.Name == "pushurl") {
			urls[k.Subsection] = append(urls[k.Subsection], k.Name+" "+esc(strings.Join(ch.Values, " ")))
		}
	}
	left := map[string]bool{}
	for i, ch := range changes {
		if k := ch.Key; verdicts[i] == "" && k.Section == "remote" && k.HasSub {
			left[k.Subsection] = true
		}
	}
	orphans := map[string]bool{}
	for i, ch := range changes {
		k := ch.Key
		if verdicts[i] != "" || k.Section != "branch" || !k.HasSub || (k.Name != "remote" && k.Name != "pushremote") {
			continue
		}
		for _, v := range ch.Values {
			if v != "." && v != noValue {
				orphans[k.Subsection] = true
			}
		}
	}
	named := map[string]bool{}
	for i, ch := range changes {
		if verdicts[i] != "" {
			continue
		}
		k := ch.Key
		switch {
		case k.Section == "remote" && k.HasSub && (k.Name == "url" || k.Name == "pushurl") && !named[k.Subsection]:
			named[k.Subsection] = true
			out[i] = "remote " + esc(k.Subsection) + " (" + strings.Join(urls[k.Subsection], ", ") + "), which the sandbox made with the repository, would become the remote the host's git push and pull use for a branch that names none (the only remote, or origin), so it is left out whole; check its URL and add it on the host: git remote add " + shellWord(esc(k.Subsection)) + " URL"
		case k.Section == "remote" && k.HasSub && left[k.Subsection]:
			out[i] = "remote " + esc(k.Subsection) + " is left out"
		case k.Section == "branch" && k.HasSub && orphans[k.Subsection] && (k.Name == "remote" || k.Name == "pushremote" || k.Name == "merge"):
			out[i] = "where a branch pushes and pulls is the host's to say (the remote the sandbox named is left out); to use one: git config " + shellWord(esc(k.String())) + " VALUE"
		}
	}
	return out
}

func validPackFile(name string, hexLen int) bool {
	dot := strings.IndexByte(name, '.')
	if dot < 0 || !validPackBase(name[:dot], hexLen) {
		return false
	}
	switch name[dot+1:] {
	case "pack", "idx", "rev", "bitmap", "keep", "promisor", "mtimes":
		return true
	}
	return false
}

// adoptShallow adopts the shallow file of a new repository (a shallow
// clone is broken without it): object ids, one a line, each present.
func (a *adopter) adoptShallow(src *upperTree) {
	e := src.get("shallow")
	if e == nil || e.kind != kindFile {
		return
	}
	e.used = true
	data, err := src.read("shallow", maxPackedRefs)
	if err == nil {
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		sort.Strings(lines)
		for _, l := range lines {
			if !isHex(l, a.hexLen) {
				err = fmt.Errorf("line %s is not an object id", esc(l))
				break
			}
			if !a.objects.has(l) {
				err = fmt.Errorf("%s is not in the objects", l)
				break
			}
		}
	}
	if err == nil {
		err = writeFile(a.gitfd, "shallow", data, 0o644)
	}
	if err != nil {
		a.rep.dropped("shallow: %v", err)
		return
	}
	a.rep.applied("shallow")
}

func onlyComments(data []byte) bool {
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && l[0] != '#' {
			return false
		}
	}
	return true
}

// holdPacked asks Options.Hold once about every ref of a new repository's
// packed-refs (a clone's remote-tracking refs and tags, thousands of them
// at times): when their commits add or change files the host's tools run
// code from, every one is kept under refs/jail/<run>/ instead of its name,
// and one line says how to take them all.
func (a *adopter) holdPacked(keep []packedRef) []packedRef {
	if a.opt.Hold == nil || len(keep) == 0 {
		return keep
	}
	var ids []string
	for _, r := range keep {
		ids = append(ids, r.OID)
	}
	paths, err := a.opt.Hold(ids)
	if err == nil && len(paths) == 0 {
		return keep
	}
	held := make([]packedRef, 0, len(keep))
	for _, r := range keep {
		name := "refs/jail/" + a.run + "/" + strings.TrimPrefix(r.Name, "refs/")
		if validRefName(name) {
			held = append(held, packedRef{Name: name, OID: r.OID})
		}
	}
	a.rep.held("packed-refs (%d refs): %s; kept under %s: look at them with `git log -p --all --not --glob=refs/heads`, and take them with `git fetch --update-head-ok . %s`",
		len(keep), heldWhy(paths, err), esc("refs/jail/"+a.run+"/"), shellWord("+refs/jail/"+a.run+"/*:refs/*"))
	return held
}
