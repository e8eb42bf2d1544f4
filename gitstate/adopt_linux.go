package gitstate

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// adopter carries one adoption's state.
type adopter struct {
	gitfd   int
	hexLen  int
	refs    *refStore
	objects *objectStore
	run     string
	opt     Options
	rep     *Report
	// skipLogs are refs whose reflog is not adopted (conflicts, drops).
	skipLogs map[string]bool
	// deleted are refs whose deletion was applied.
	deleted map[string]bool
	// headLast leaves HEAD to the caller (AdoptNew writes it last).
	headLast bool
	// headSandbox and headHost are the commits HEAD resolves to in the
	// sandbox's view and on the host after the refs were adopted.
	headSandbox, headHost string
	// newRemotes are the remotes the sandbox's adopted config keys name
	// that the launch's config did not (adoptConfig).
	newRemotes map[string]bool
}

func newAdopter(gitdirFD, hexLen int, opt Options, rep *Report) (*adopter, error) {
	run, err := opt.runID()
	if err != nil {
		return nil, err
	}
	objs, err := openObjects(gitdirFD, hexLen)
	if err != nil {
		return nil, fmt.Errorf("gitstate: open objects: %w", err)
	}
	return &adopter{
		gitfd: gitdirFD, hexLen: hexLen, objects: objs, run: run, opt: opt, rep: rep,
		refs:     &refStore{fd: gitdirFD, hexLen: hexLen},
		skipLogs: map[string]bool{}, deleted: map[string]bool{},
	}, nil
}

func (a *adopter) close() { a.objects.close() }

// Adopt brings the validated part of what a sandbox changed in a git
// directory into the host's one. gitdirFD is the host's git directory,
// upperFD the overlay upper directory the sandbox wrote into (both held
// descriptors, not closed), base the Snapshot taken when the sandbox
// started. It returns an error only when it could not examine the state
// at all; everything it declines is in the Report.
func Adopt(gitdirFD, upperFD int, base *Snapshot, opt Options) (*Report, error) {
	rep := &Report{}
	if base == nil {
		return nil, errors.New("gitstate: adopt: no snapshot")
	}
	hostCfg, err := readHostConfig(gitdirFD)
	if err != nil {
		return nil, fmt.Errorf("gitstate: adopt: %w", err)
	}
	format, hexLen, err := objectFormat(hostCfg)
	if err != nil {
		return nil, fmt.Errorf("gitstate: adopt: %w", err)
	}
	if format != base.ObjectFormat {
		return nil, fmt.Errorf("gitstate: adopt: the repository's object format changed from %s to %s during the run", base.ObjectFormat, format)
	}
	up := walkUpper(upperFD, opt.Limits.withDefaults(), rep)
	if up.truncated != "" {
		// A partial listing could miss a whiteout or a ref and so
		// misread the sandbox's intent: adopt nothing.
		rep.dropped("everything: the sandbox's git changes were not adopted: %s", up.truncated)
		return rep, nil
	}
	a, err := newAdopter(gitdirFD, hexLen, opt, rep)
	if err != nil {
		return nil, err
	}
	defer a.close()
	// Objects first, verified: a ref is adopted only when the object it
	// names is on the host by then.
	shallow, _, err := readFile(gitdirFD, "shallow", maxPackedRefs, false)
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return rep, fmt.Errorf("gitstate: adopt: read shallow: %w", err)
	}
	if !a.adoptObjects(up, shallowList(shallow, hexLen)) {
		rep.Incomplete = true
	}
	if err := a.adoptRefs(up, base); err != nil {
		return rep, err
	}
	a.adoptReflogs(up)
	a.adoptMessages(up)
	a.adoptConfig(up, base)
	a.adoptIndex(up, base)
	a.adoptWorktrees(up)
	up.rest(rep)
	if err := a.sync(); err != nil {
		return rep, err
	}
	return rep, nil
}

// sync makes what the adoption wrote durable in one call, once, before
// the caller may delete the sandbox's copy of it.
func (a *adopter) sync() error {
	if len(a.rep.Applied) == 0 && len(a.rep.Conflicts) == 0 {
		return nil
	}
	if err := unix.Syncfs(a.gitfd); err != nil {
		return fmt.Errorf("gitstate: sync: %w", err)
	}
	return nil
}

func readHostConfig(gitdirFD int) (*Config, error) {
	data, _, err := readFile(gitdirFD, "config", maxConfigFile, false)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return c, nil
}

// sandboxRefs works out, from the upper alone and the base, what the
// sandbox meant each ref it touched to be ("" for deleted). A ref counts
// as touched only with evidence in the upper: its loose file written or
// hidden, or packed-refs rewritten without or with another value. So a
// change the host made to the (live) lower during the run, such as git gc
// packing loose refs, is never mistaken for the sandbox's.
func (a *adopter) sandboxRefs(up *upperTree, base *Snapshot) map[string]string {
	upperLoose := map[string]string{}
	for _, p := range up.under("refs") {
		e := up.get(p)
		if e.kind != kindFile {
			continue
		}
		e.used = true
		switch {
		case strings.HasPrefix(p, "refs/jail/"):
			a.rep.dropped("%s: refs/jail/ is jail's own namespace", esc(p))
			continue
		case isReplaceRef(p):
			a.rep.dropped("%s: %s", esc(p), replaceWhy)
			continue
		case !validRefName(p):
			a.rep.dropped("%s: not a valid ref name", esc(p))
			continue
		}
		data, err := up.read(p, maxRefFile)
		if err == nil {
			var v string
			if v, err = parseRefValue(p, data, a.hexLen); err == nil {
				upperLoose[p] = v
				continue
			}
		}
		a.rep.dropped("%s: %v", esc(p), err)
		a.skipLogs[p] = true
	}
	for _, p := range up.under("refs") {
		if e := up.get(p); e.kind == kindDir || e.kind == kindWhiteout {
			e.used = true
		}
	}
	pseudo := map[string]string{}
	for _, n := range pseudoRefs {
		e := up.get(n)
		if e == nil || n == "HEAD" && a.headLast {
			continue
		}
		e.used = true
		switch e.kind {
		case kindWhiteout:
			if n == "HEAD" {
				// Without HEAD the host's git would no longer see a
				// repository at all.
				a.rep.dropped("HEAD: deletion not adopted (a repository needs HEAD)")
				a.skipLogs[n] = true
				continue
			}
			pseudo[n] = ""
		case kindFile:
			data, err := up.read(n, maxRefFile)
			if err == nil {
				var v string
				if v, err = parseRefValue(n, data, a.hexLen); err == nil {
					pseudo[n] = v
					continue
				}
			}
			a.rep.dropped("%s: %v", n, err)
			a.skipLogs[n] = true
		}
	}
	var upperPacked map[string]string
	if e := up.get("packed-refs"); e != nil {
		e.used = true
		switch e.kind {
		case kindWhiteout:
			upperPacked = map[string]string{}
		case kindFile:
			data, err := up.read("packed-refs", maxPackedRefs)
			var list []packedRef
			if err == nil {
				list, err = parsePackedRefs(data, a.hexLen)
			}
			if err != nil {
				a.rep.dropped("packed-refs: %v", err)
				break
			}
			upperPacked = map[string]string{}
			for _, r := range list {
				if strings.HasPrefix(r.Name, "refs/jail/") {
					continue
				}
				if isReplaceRef(r.Name) {
					if base.Packed[r.Name] != r.OID {
						a.rep.dropped("%s: %s", esc(r.Name), replaceWhy)
					}
					continue
				}
				upperPacked[r.Name] = r.OID
			}
		}
	}
	baseRefs := base.Refs()
	names := map[string]bool{}
	for _, m := range []map[string]string{base.Loose, base.Packed, upperLoose, upperPacked} {
		for k := range m {
			// The host's replace refs are the host's: never added,
			// changed or deleted from inside.
			if !isPseudoRef(k) && !strings.HasPrefix(k, "refs/jail/") && !isReplaceRef(k) {
				names[k] = true
			}
		}
	}
	intent := map[string]string{}
	for x := range names {
		var s string
		if v, ok := upperLoose[x]; ok {
			s = v
		} else if _, loose := base.Loose[x]; loose && !up.hidden(x) {
			continue
		} else if upperPacked != nil {
			s = upperPacked[x]
		} else {
			s = base.Packed[x]
		}
		if s != baseRefs[x] {
			intent[x] = s
		}
	}
	for n, v := range pseudo {
		if v != baseRefs[n] {
			intent[n] = v
		}
	}
	return intent
}

// adoptRefs applies the sandbox's ref changes three-way: against the base
// and the host's refs as they are now.
func (a *adopter) adoptRefs(up *upperTree, base *Snapshot) error {
	intent := a.sandboxRefs(up, base)
	host, err := a.refs.all()
	if err != nil {
		return fmt.Errorf("gitstate: adopt: read the host's refs: %w", err)
	}
	baseRefs := base.Refs()
	// Deletions first (a rename a -> a/b needs a gone), then refs/, then
	// the pseudo-refs that may point at them.
	names := make([]string, 0, len(intent))
	for n := range intent {
		names = append(names, n)
	}
	// A symbolic value is judged by what it resolves to on the host
	// (symrefWhy), so the refs it may point at go before it.
	rank := func(n string) int {
		r := 1
		switch {
		case intent[n] == "":
			return 0
		case isPseudoRef(n):
			r = 2
		}
		if strings.HasPrefix(intent[n], "ref: ") {
			r += 2
		}
		return r
	}
	sort.Slice(names, func(i, j int) bool {
		if ri, rj := rank(names[i]), rank(names[j]); ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	for _, x := range names {
		a.adoptRef(x, baseRefs[x], intent[x], host)
	}
	// The index goes with a commit: it is adopted only when the host's
	// HEAD now names the commit the sandbox's HEAD named.
	view := func(n string) string {
		if v, ok := intent[n]; ok {
			return v
		}
		return baseRefs[n]
	}
	a.headSandbox = resolveRef(view, "HEAD")
	a.headHost = resolveRef(func(n string) string { return host[n] }, "HEAD")
	return nil
}

// isReplaceRef reports whether name is under refs/replace/: git reads the
// object such a ref names wherever it would read the one its name names
// (core.useReplaceRefs, on by default), in checkout, diff, log and show.
func isReplaceRef(name string) bool { return strings.HasPrefix(name, "refs/replace/") }

// replaceWhy is why a replace ref is never adopted.
const replaceWhy = "a replace ref would make the host's git show and check out another object in place of one it has"

// resolveRef follows symbolic refs (at most five, as git's own limit is
// small too) to an object id, "" for an unborn or broken chain.
func resolveRef(get func(string) string, name string) string {
	for i := 0; i < 5; i++ {
		v := get(name)
		t, ok := strings.CutPrefix(v, "ref: ")
		if !ok {
			return v
		}
		name = t
	}
	return ""
}

// symrefWhy says why the symbolic value s ("ref: T") the sandbox wrote is
// not adopted, "" when it is: it is judged by what it finally resolves
// to among the host's refs (after the sandbox's other refs were adopted,
// each asked of Options.Hold). The hold check looks at object ids only,
// so without this HEAD or a branch made a symbolic ref to
// refs/jail/<run>/heads/evil (the held ref, whose name the sandbox can
// read from its mounts) would have the host's next git reset --hard
// check out the held commit. A chain that passes through refs/jail/, ends
// at a ref the host does not have (unborn: allowed only when unborn is,
// in a new repository), or is longer than git follows is refused.
func symrefWhy(s string, host map[string]string, unborn bool) string {
	name := strings.TrimPrefix(s, "ref: ")
	for i := 0; i < 5; i++ {
		if strings.HasPrefix(name, "refs/jail/") {
			return fmt.Sprintf("a symbolic ref through %s: refs/jail/ holds what jail held or kept aside, taken only with the host's git update-ref", esc(name))
		}
		v := host[name]
		if v == "" {
			if unborn {
				return ""
			}
			return fmt.Sprintf("a symbolic ref to %s, which the host does not have (held, dropped or never made); point it on the host with `git symbolic-ref`", esc(name))
		}
		t, ok := strings.CutPrefix(v, "ref: ")
		if !ok {
			return ""
		}
		name = t
	}
	return "a chain of symbolic refs longer than git follows"
}

func describe(v string) string {
	if v == "" {
		return "deleted"
	}
	return esc(v)
}

func (a *adopter) adoptRef(x, b, s string, host map[string]string) {
	for _, oid := range oids(s) {
		if !a.objects.has(oid) {
			a.rep.dropped("%s: points to %s, which is not in the repository's objects", esc(x), oid)
			a.skipLogs[x] = true
			return
		}
	}
	h := host[x]
	if h != s && strings.HasPrefix(s, "ref: ") {
		if why := symrefWhy(s, host, false); why != "" {
			a.rep.dropped("%s: %s; the host's kept", esc(x), why)
			a.skipLogs[x], a.skipLogs["HEAD"] = true, true
			return
		}
	}
	if ids := oids(s); len(ids) > 0 && h != s && a.opt.Hold != nil {
		if paths, err := a.opt.Hold(ids); err != nil || len(paths) > 0 {
			a.holdRef(x, h, s, paths, err)
			return
		}
	}
	for try := 0; try < 5; try++ {
		switch {
		case h == s:
			return // the host already has it
		case h != b:
			a.conflictRef(x, s, h)
			return
		}
		if s != "" && h == "" {
			if other := dirFileConflict(host, x); other != "" {
				a.rep.dropped("%s: conflicts with the host's ref %s (one would be a directory of the other)", esc(x), esc(other))
				a.skipLogs[x] = true
				return
			}
		}
		err := a.refs.update(x, h, s)
		if err == nil {
			if s == "" {
				a.deleted[x] = true
				delete(host, x)
				a.rep.applied("%s deleted", esc(x))
			} else {
				host[x] = s
				a.rep.applied("%s", esc(x))
			}
			return
		}
		if !errors.Is(err, errRaced) {
			a.rep.dropped("%s: %v", esc(x), err)
			a.skipLogs[x] = true
			return
		}
		if h, err = a.refs.read(x); err != nil {
			a.rep.dropped("%s: %v", esc(x), err)
			a.skipLogs[x] = true
			return
		}
		host[x] = h
	}
	a.rep.dropped("%s: kept changing on the host while being adopted", esc(x))
	a.skipLogs[x] = true
}

// conflictRef keeps the host's value and stores the sandbox's object id
// under refs/jail/<run>/.
func (a *adopter) conflictRef(x, s, h string) {
	a.skipLogs[x] = true
	ids := oids(s)
	if len(ids) != 1 {
		a.rep.conflict("%s: changed on the host (now %s) and in the sandbox (%s); the host's kept", esc(x), describe(h), describe(s))
		return
	}
	name := "refs/jail/" + a.run + "/" + strings.TrimPrefix(x, "refs/")
	if !validRefName(name) {
		a.rep.conflict("%s: changed on the host and in the sandbox (%s); the host's kept", esc(x), s)
		return
	}
	if err := a.refs.update(name, "", s); err != nil {
		a.rep.conflict("%s: changed on the host and in the sandbox (%s); the host's kept; saving the sandbox's as %s failed: %v", esc(x), s, esc(name), err)
		return
	}
	a.rep.conflict("%s: changed on the host and in the sandbox; the host's kept, the sandbox's is %s", esc(x), esc(name))
}

// holdRef keeps the host's value of x and stores the sandbox's s under
// refs/jail/<run>/, because the commits it brings change paths the
// host's tools run code from (Options.Hold), or could not be listed
// (err).
//
// h is the host's value: the review command shows the commits from it on.
func (a *adopter) holdRef(x, h, s string, paths []string, err error) {
	// HEAD's reflog would name the held commit as well.
	a.skipLogs[x], a.skipLogs["HEAD"] = true, true
	why := heldWhy(paths, err)
	name := "refs/jail/" + a.run + "/" + strings.TrimPrefix(x, "refs/")
	if !validRefName(name) {
		a.rep.held("%s: %s; not moved", esc(x), why)
		return
	}
	if err := a.refs.update(name, "", s); err != nil {
		a.rep.held("%s: %s; not moved; saving the sandbox's as %s failed: %v", esc(x), why, esc(name), err)
		return
	}
	// The commands are meant to be pasted: a ref name may hold $, `, ;
	// and quotes, so each name is one shell word.
	from := ""
	if h != "" {
		from = shellWord(esc(x)) + ".."
	}
	a.rep.held("%s: %s; not moved, the sandbox's is %s: look at it with `git log -p %s%s`, and take it with `git update-ref %s %s`",
		esc(x), why, esc(name), from, shellWord(esc(name)), shellWord(esc(x)), shellWord(esc(name)))
}

// heldWhy says why refs are held: the paths their commits add or change,
// or err, the reason they could not be listed.
func heldWhy(paths []string, err error) string {
	if err != nil {
		return "their commits could not be checked for files the host's tools run code from (" + esc(err.Error()) + ")"
	}
	shown := make([]string, 0, 4)
	for i, p := range paths {
		if i == 3 {
			shown = append(shown, fmt.Sprintf("%d more", len(paths)-3))
			break
		}
		shown = append(shown, esc(p))
	}
	return "new commits add or change files the host's tools run code from (" + strings.Join(shown, ", ") + ")"
}

// shellWord is s as one word of a POSIX shell that expands nothing in it.
func shellWord(s string) string {
	plain := s != ""
	for _, c := range s {
		plain = plain && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._/@%+=:,-", c))
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// dirFileConflict finds a host ref that is a directory prefix of x, or of
// which x is one: git keeps loose refs as files, so they cannot coexist.
func dirFileConflict(host map[string]string, x string) string {
	if isPseudoRef(x) {
		return ""
	}
	for n := range host {
		if strings.HasPrefix(x, n+"/") || strings.HasPrefix(n, x+"/") {
			return n
		}
	}
	return ""
}

// adoptReflogs appends the lines a sandbox added to reflogs (logs/HEAD,
// logs/refs/...). A reflog is data git prints; each line is checked
// against git's format (object ids, identity, time stamp, a message
// without control characters) and appended only when the host's log does
// not already have it. A reflog of a ref that was refused or in conflict
// is not adopted; one whose ref deletion was applied is deleted too.
func (a *adopter) adoptReflogs(up *upperTree) {
	for _, p := range up.under("logs") {
		e := up.get(p)
		if e.kind == kindDir {
			e.used = true
			continue
		}
		ref := strings.TrimPrefix(p, "logs/")
		if e.kind != kindFile && e.kind != kindWhiteout {
			continue
		}
		e.used = true
		if !(ref == "HEAD" || validRefName(ref)) || strings.HasPrefix(ref, "refs/jail/") || isReplaceRef(ref) {
			a.rep.dropped("%s: not the reflog of a valid ref", esc(p))
			continue
		}
		if a.skipLogs[ref] {
			a.rep.dropped("%s: its ref was not adopted", esc(p))
			continue
		}
		if e.kind == kindWhiteout {
			if a.deleted[ref] {
				if err := unlinkBeneath(a.gitfd, p); err == nil {
					a.rep.applied("%s deleted", esc(p))
				}
			}
			continue
		}
		data, err := up.read(p, maxReflogFile)
		if err != nil {
			a.rep.dropped("%s: %v", esc(p), err)
			continue
		}
		host, _, err := readFile(a.gitfd, p, maxReflogFile, false)
		if err != nil && !errors.Is(err, unix.ENOENT) {
			a.rep.dropped("%s: the host's reflog: %v", esc(p), err)
			continue
		}
		have := map[string]bool{}
		for _, l := range strings.SplitAfter(string(host), "\n") {
			have[l] = true
		}
		var add strings.Builder
		bad, missing := 0, 0
		for _, l := range strings.SplitAfter(string(data), "\n") {
			if l == "" || have[l] {
				continue
			}
			if !validReflogLine(l, a.hexLen) {
				bad++
				continue
			}
			if !a.reflogObjects(l) {
				missing++
				continue
			}
			add.WriteString(l)
		}
		if bad > 0 {
			a.rep.dropped("%s: %d lines not in reflog format", esc(p), bad)
		}
		if missing > 0 {
			a.rep.dropped("%s: %d lines naming objects the host does not have", esc(p), missing)
		}
		if add.Len() == 0 {
			continue
		}
		if len(host) > 0 && host[len(host)-1] != '\n' {
			a.rep.dropped("%s: the host's reflog does not end with a newline; not appended", esc(p))
			continue
		}
		if err := appendFile(a.gitfd, p, []byte(add.String())); err != nil {
			a.rep.dropped("%s: append: %v", esc(p), err)
			continue
		}
		a.rep.applied("%s (+%d)", esc(p), strings.Count(add.String(), "\n"))
	}
}

// reflogObjects reports whether the old and new object ids of a reflog
// line (checked by validReflogLine) are on the host, or null: git fsck
// calls a reflog naming a missing object invalid.
func (a *adopter) reflogObjects(l string) bool {
	for _, id := range []string{l[:a.hexLen], l[a.hexLen+1 : 2*a.hexLen+1]} {
		if strings.Trim(id, "0") != "" && !a.objects.has(id) {
			return false
		}
	}
	return true
}

// validReflogLine: "<old> <new> <name> <<email>> <time> <tz>[\t<msg>]\n".
func validReflogLine(l string, hexLen int) bool {
	body, ok := strings.CutSuffix(l, "\n")
	if !ok || len(body) > 64<<10 {
		return false
	}
	for i := 0; i < len(body); i++ {
		if c := body[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	head, _, _ := strings.Cut(body, "\t")
	if len(head) < 2*hexLen+2 || !isHex(head[:hexLen], hexLen) || head[hexLen] != ' ' ||
		!isHex(head[hexLen+1:2*hexLen+1], hexLen) || head[2*hexLen+1] != ' ' {
		return false
	}
	id := head[2*hexLen+2:]
	lt, gt := strings.IndexByte(id, '<'), strings.LastIndexByte(id, '>')
	if lt < 0 || gt < lt || strings.Count(id, "<") != 1 || strings.Count(id, ">") != 1 {
		return false
	}
	f := strings.Fields(id[gt+1:])
	if len(f) != 2 || len(f[1]) != 5 || (f[1][0] != '+' && f[1][0] != '-') {
		return false
	}
	for _, c := range f[0] + f[1][1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// appendFile appends data to rel beneath dirfd (created 0644 with its
// parents when missing), in one write with O_APPEND, as git appends to
// reflogs.
func appendFile(dirfd int, rel string, data []byte) error {
	dir, base := splitName(rel)
	dfd, err := mkdirAll(dirfd, dir, 0o777)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	fd, err := openBeneath(dfd, base, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT, 0o644)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), base)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errNotRegular
	}
	// No fsync: git does not sync reflogs either (core.fsync's default),
	// and a lost reflog line loses no commit.
	_, err = f.Write(data)
	return err
}

// messages are text files git keeps between commands: the last commit
// message, a merge in progress. They are data git shows in an editor
// (which the host chooses), so text without control bytes is adopted.
var messages = []string{"COMMIT_EDITMSG", "MERGE_MSG", "SQUASH_MSG", "MERGE_MODE", "TAG_EDITMSG"}

func (a *adopter) adoptMessages(up *upperTree) {
	for _, n := range messages {
		e := up.get(n)
		if e == nil || (e.kind != kindFile && e.kind != kindWhiteout) {
			continue
		}
		e.used = true
		if e.kind == kindWhiteout {
			if err := unlinkBeneath(a.gitfd, n); err == nil {
				a.rep.applied("%s deleted", n)
			}
			continue
		}
		data, err := up.read(n, maxMessageFile)
		if err == nil {
			err = checkText(n, data)
		}
		if err == nil {
			err = writeFile(a.gitfd, n, data, 0o644)
		}
		if err != nil {
			a.rep.dropped("%s: %v", n, err)
			continue
		}
		a.rep.applied("%s", n)
	}
}

func checkText(name string, data []byte) error {
	if name == "MERGE_MODE" {
		if s := string(data); s != "" && s != "no-ff" && s != "no-ff\n" {
			return errors.New("MERGE_MODE is neither empty nor no-ff")
		}
		return nil
	}
	for _, c := range data {
		if c < 0x20 && c != '\n' && c != '\t' && c != '\r' || c == 0x7f {
			return fmt.Errorf("control byte 0x%02x in a message file", c)
		}
	}
	return nil
}

// writeFile replaces rel beneath dirfd with data through git's lock
// protocol.
func writeFile(dirfd int, rel string, data []byte, mode uint32) error {
	lk, err := lock(dirfd, rel, mode)
	if err != nil {
		return err
	}
	return lk.commit(data)
}

// unlinkBeneath removes the file rel, resolving its parent beneath dirfd
// without symlinks and unlinking the last name on the held parent.
func unlinkBeneath(dirfd int, rel string) error {
	dir, base := splitName(rel)
	if dir == "" {
		dir = "."
	}
	dfd, err := openDir(dirfd, dir)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return unix.Unlinkat(dfd, base, 0)
}
