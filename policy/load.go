package policy

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/BurntSushi/toml"
)

// Env is what loading needs from the process environment, passed in so tests and the
// supervisor decide it explicitly rather than the package reading globals.
type Env struct {
	// Home expands "~"; empty makes any "~" path an error.
	Home string
	// Workspace is the default workspace (jail's working directory or -w); must be absolute.
	Workspace string
	// XDGConfigHome locates the user policy file; empty means Home/.config.
	XDGConfigHome string
	// XDGStateHome locates the default audit log; empty means Home/.local/state.
	XDGStateHome string
	// MemTotal is the machine's memory in bytes: the defaults of [limits] memory and of the
	// tmpfs sizes are fractions of it, and a project file's value is compared with what they
	// come to. Zero (not known): a project file cannot set those keys.
	MemTotal int64
}

// FieldError is one problem in a policy file: where it is, which key, and what is accepted.
type FieldError struct {
	File string
	Line int // 0 when the position is unknown; Key still names the place
	Key  string
	Msg  string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads one policy file strictly and returns the effective policy: the file's settings on
// top of the defaults, with "~" expanded and paths cleaned. Every problem found is returned,
// joined, each as a *FieldError.
func Load(path string, env Env) (*Policy, error) {
	f, err := parseFile(path, env)
	if err != nil {
		return nil, err
	}
	f.expandLevel()
	p := f.policy
	p.applyDefaults(env)
	p.Sources = []string{path}
	return p, nil
}

// LoadBytes is Load for a policy held in memory; name is used in error messages.
func LoadBytes(name string, data []byte, env Env) (*Policy, error) {
	f, err := parse(name, data, env)
	if err != nil {
		return nil, err
	}
	f.expandLevel()
	p := f.policy
	p.applyDefaults(env)
	p.Sources = []string{name}
	return p, nil
}

// parsed is a file before defaults: what it set, and where.
type parsed struct {
	name   string
	policy *Policy
	md     toml.MetaData
	lines  map[string]int
	// implied holds the dotted keys the file's access level set (see expandLevel); they count
	// as defined, so tightening treats them like keys written out.
	implied map[string]bool
}

func (f *parsed) defined(key ...string) bool {
	return f.md.IsDefined(key...) || f.implied[strings.Join(key, ".")]
}

func (f *parsed) line(key string) int { return lookupLine(f.lines, key) }

// keysUnder lists the keys the file set directly under the table prefix (profiles, claude:
// allow, own, ...), each once, sorted.
func (f *parsed) keysUnder(prefix ...string) []string {
	var out []string
	for _, k := range f.md.Keys() {
		if len(k) == len(prefix)+1 && slices.Equal(k[:len(prefix)], prefix) && !slices.Contains(out, k[len(prefix)]) {
			out = append(out, k[len(prefix)])
		}
	}
	slices.Sort(out)
	return out
}

func parseFile(path string, env Env) (*parsed, error) {
	data, err := readPolicyFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("policy: read %s: %w", path, err)
	}
	return parse(path, data, env)
}

// maxPolicyBytes bounds a policy file; a larger one is refused unread.
const maxPolicyBytes = 1 << 20

// readPolicyFile reads a policy file, which must be a regular file of at most maxPolicyBytes:
// it is opened without blocking, so a FIFO planted at .jail/policy.toml cannot hold jail at
// start, and a device (a symlink to /dev/zero) is refused. With nofollow (the project file,
// which a sandbox could have written), a symlink is refused too, at the file or at its .jail
// directory: the project file is read from the workspace only, never from a file elsewhere
// whose content an error message could quote.
func readPolicyFile(path string, nofollow bool) ([]byte, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK
	if nofollow {
		flags |= syscall.O_NOFOLLOW
		if st, err := os.Lstat(filepath.Dir(path)); err == nil && st.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s is a symlink: a project policy must live in the workspace", filepath.Dir(path))
		}
	}
	f, err := os.OpenFile(path, flags, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symlink: a project policy must live in the workspace", path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	if st.Size() > maxPolicyBytes {
		return nil, fmt.Errorf("%d bytes, over the %d-byte limit of a policy file", st.Size(), maxPolicyBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPolicyBytes+1))
	if err == nil && len(b) > maxPolicyBytes {
		err = fmt.Errorf("grew over the %d-byte limit of a policy file while read", maxPolicyBytes)
	}
	return b, err
}

func parse(name string, data []byte, env Env) (*parsed, error) {
	p := &Policy{}
	md, err := toml.Decode(string(data), p)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &FieldError{File: name, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message}
		}
		// Type errors come back as plain errors: "toml: line N (last key "k"): message".
		fe := &FieldError{File: name, Msg: err.Error()}
		if m := regexp.MustCompile(`^toml: (?:line (\d+) )?\(last key "([^"]*)"\): (.*)$`).FindStringSubmatch(err.Error()); m != nil {
			fe.Line, _ = strconv.Atoi(m[1])
			fe.Key, fe.Msg = m[2], m[3]
		}
		return nil, fe
	}
	f := &parsed{name: name, policy: p, md: md, lines: keyLines(string(data))}
	v := &validator{f: f, env: env}
	for _, k := range md.Undecoded() {
		v.add(k.String(), "unknown key (accepted here: %s)", strings.Join(acceptedKeys(k), ", "))
	}
	v.check()
	if len(v.errs) > 0 {
		sort.SliceStable(v.errs, func(i, j int) bool { return v.errs[i].(*FieldError).Line < v.errs[j].(*FieldError).Line })
		return nil, errors.Join(v.errs...)
	}
	f.recordOrigins()
	return f, nil
}

// acceptedKeys lists the TOML keys valid beside an unknown one, read from the struct tags so
// the message can never disagree with the schema.
func acceptedKeys(k toml.Key) []string {
	t := reflect.TypeOf(Policy{})
	for i, piece := range k[:len(k)-1] {
		if t.Kind() == reflect.Map {
			t = t.Elem()
			continue
		}
		found := false
		for j := 0; j < t.NumField(); j++ {
			if tag := strings.Split(t.Field(j).Tag.Get("toml"), ",")[0]; tag == piece {
				t, found = t.Field(j).Type, true
				break
			}
		}
		if !found || (t.Kind() != reflect.Struct && t.Kind() != reflect.Map) {
			return []string{"nothing below " + toml.Key(k[:i+1]).String()}
		}
	}
	if t.Kind() == reflect.Map {
		return []string{"any name"}
	}
	return tomlFields(t)
}

func tomlFields(t reflect.Type) []string {
	var keys []string
	for j := 0; j < t.NumField(); j++ {
		if tag := strings.Split(t.Field(j).Tag.Get("toml"), ",")[0]; tag != "" && tag != "-" {
			keys = append(keys, tag)
		}
	}
	return keys
}

// keyLines maps dotted key paths to the line they are defined on. BurntSushi/toml keeps key
// positions private, so this small scanner follows table headers and "key =" lines; it skips
// multi-line strings and arrays, which cannot hold keys. Keys it cannot place fall back to the
// nearest enclosing key (see lookupLine).
func keyLines(src string) map[string]int {
	lines := map[string]int{}
	table := ""
	inMulti := ""
	depth := 0 // open brackets of a multi-line array
	for i, raw := range strings.Split(src, "\n") {
		n := i + 1
		s := strings.TrimSpace(raw)
		if inMulti != "" {
			if strings.Count(s, inMulti)%2 == 1 {
				inMulti = ""
			}
			continue
		}
		if depth > 0 {
			depth += strings.Count(s, "[") - strings.Count(s, "]")
			continue
		}
		if s == "" || s[0] == '#' {
			continue
		}
		if strings.HasPrefix(s, "[") {
			h := strings.Trim(strings.SplitN(s, "]", 2)[0]+"]", "[]")
			if strings.HasPrefix(s, "[[") {
				h = strings.Trim(strings.SplitN(s, "]]", 2)[0], "[] ")
			}
			table = normKey(h)
			if _, ok := lines[table]; !ok {
				lines[table] = n
			}
			continue
		}
		eq := strings.Index(s, "=")
		if eq <= 0 {
			continue
		}
		key := normKey(s[:eq])
		if table != "" {
			key = table + "." + key
		}
		if _, ok := lines[key]; !ok {
			lines[key] = n
		}
		val := strings.TrimSpace(s[eq+1:])
		for _, q := range []string{`"""`, `'''`} {
			if strings.HasPrefix(val, q) && strings.Count(val, q)%2 == 1 {
				inMulti = q
			}
		}
		if strings.HasPrefix(val, "[") {
			depth = strings.Count(stripComment(val), "[") - strings.Count(stripComment(val), "]")
		}
	}
	return lines
}

func stripComment(s string) string {
	if i := strings.LastIndex(s, "#"); i >= 0 && !strings.ContainsAny(s[i:], `"'`) {
		return s[:i]
	}
	return s
}

// normKey turns ` a . "b c" ` into `a."b c"`, the form toml.Key.String produces.
func normKey(s string) string {
	parts := strings.Split(s, ".")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if len(p) >= 2 && (p[0] == '"' || p[0] == '\'') {
			p = p[1 : len(p)-1]
		}
		parts[i] = toml.Key{p}.String()
	}
	return strings.Join(parts, ".")
}

func lookupLine(lines map[string]int, key string) int {
	for k := key; k != ""; {
		if n, ok := lines[k]; ok {
			return n
		}
		i := strings.LastIndex(k, ".")
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return 0
}

// validator collects every semantic problem rather than stopping at the first, so `jail policy
// check` shows a user the whole list at once.
type validator struct {
	f    *parsed
	env  Env
	errs []error
}

func (v *validator) add(key, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{File: v.f.name, Line: v.f.line(key), Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) check() {
	p := v.f.policy
	s := &p.Sandbox
	s.Workspace = v.absPath("sandbox.workspace", s.Workspace)
	for _, l := range []struct {
		key  string
		list []string
	}{{"sandbox.ro", s.RO}, {"sandbox.rw", s.RW}, {"sandbox.hide", s.Hide}} {
		for i := range l.list {
			l.list[i] = v.absPath(l.key, l.list[i])
		}
	}
	for i, pat := range s.Protected {
		c := filepath.Clean(pat)
		if filepath.IsAbs(pat) || c == ".." || strings.HasPrefix(c, "../") || pat == "" {
			v.add("sandbox.protected", "%q must be relative to the workspace, without .. (e.g. \".git/hooks\")", pat)
			continue
		}
		if _, err := filepath.Match(c, ""); err != nil {
			v.add("sandbox.protected", "bad glob %q: %v", pat, err)
		}
		s.Protected[i] = c
	}
	v.oneOf("sandbox.home", s.Home, homeModes())
	for _, e := range s.Env {
		if !envPattern(e) {
			v.add("sandbox.env", "%q is not a variable name (accepted: NAME or a prefix like LC_*)", e)
		}
	}
	for k := range s.EnvSet {
		if !envPattern(k) || strings.HasSuffix(k, "*") {
			v.add("sandbox.env_set."+k, "%q is not a variable name", k)
		}
	}
	v.duration("limits.timeout", p.Limits.Timeout)
	v.duration("approval.ask_timeout", p.Approval.AskTimeout)
	v.nonNegative("limits.pids", p.Limits.Pids)
	v.nonNegative("limits.output_chars", p.Limits.OutputChars)
	v.nonNegative("tools.disclosure_budget", p.Tools.DisclosureBudget)
	if p.Sandbox.RootOnly != "" {
		v.oneOf("sandbox.root_only", p.Sandbox.RootOnly, []string{RootOnlyHide, RootOnlyShow})
	}

	n := &p.Network
	v.oneOf("network.mode", n.Mode, netModes())
	for _, h := range n.Allow {
		if err := checkAllowHost(h); err != nil {
			v.add("network.allow", "%v", err)
		}
	}
	for _, h := range n.Deny {
		if err := checkHost(h); err != nil {
			v.add("network.deny", "%v", err)
		}
	}
	for _, c := range n.AllowPrivate {
		if _, err := netip.ParsePrefix(c); err != nil {
			v.add("network.allow_private", "%q is not a CIDR (accepted: e.g. \"10.0.0.0/8\", \"fd00::/8\")", c)
		}
	}
	if n.Resolver != "" {
		if _, err := netip.ParseAddr(n.Resolver); err != nil {
			if _, err := netip.ParseAddrPort(n.Resolver); err != nil {
				v.add("network.resolver", "%q is not an IP address or IP:port", n.Resolver)
			}
		}
	}
	for _, l := range []struct {
		key  string
		list []string
	}{{"seccomp.deny", p.Seccomp.Deny}, {"seccomp.allow", p.Seccomp.Allow}} {
		for _, name := range l.list {
			if !isSyscall(name) {
				v.add(l.key, "%q is not a Linux x86_64 or arm64 syscall name", name)
			}
		}
	}

	d := &p.Docker
	if d.Lifecycle != "" {
		v.oneOf("docker.lifecycle", d.Lifecycle, []string{LifecycleCall, LifecycleTask, LifecycleAgent})
	}
	v.duration("docker.idle_grace", d.IdleGrace)
	v.nonNegative("docker.pids", d.Pids)
	if d.CPUs < 0 {
		v.add("docker.cpus", "%v is negative (accepted: a number of CPUs such as 1.5, or 0 for the default)", d.CPUs)
	}
	if d.DesktopSize != "" {
		if _, _, err := ParseScreenSize(d.DesktopSize); err != nil {
			v.add("docker.desktop_size", "%v", err)
		}
	}

	t := &p.Tools
	v.oneOf("tools.profile", t.Profile, profileNames())
	v.oneOf("tools.security", t.Security, securityNames())
	v.tools("tools.allow", t.Allow)
	v.tools("tools.also_allow", t.AlsoAllow)
	v.tools("tools.deny", t.Deny)

	roleName := regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
	for name, r := range p.Roles {
		key := "roles." + toml.Key{name}.String()
		if _, ok := builtinRole(name); ok {
			v.add(key, "%q is a built-in role and its remit is fixed; define a role with another name", name)
			continue
		}
		if !roleName.MatchString(name) {
			v.add(key, "role names are lower-case letters, digits, - and _")
		}
		for _, c := range r.Remit {
			if !slices.Contains(Capabilities(), c) {
				v.add(key+".remit", "unknown capability %q (accepted: %s)", c, strings.Join(Capabilities(), ", "))
			}
		}
		if r.MaxRisk != "" {
			if _, err := ParseRisk(r.MaxRisk); err != nil {
				v.add(key+".max_risk", "%v", err)
			}
		}
		v.oneOf(key+".workspace", r.Workspace, []string{"rw", "ro"})
		v.tools(key+".defaults", r.Defaults)
		if r.Workspace == "" {
			r.Workspace = "ro"
			if slices.Contains(r.Remit, CapFSWrite) {
				r.Workspace = "rw"
			}
			p.Roles[name] = r
		}
		if role, ok := p.role(name); ok {
			for _, d := range r.Defaults {
				if t, ok := catalogueEntry(d); ok {
					if in, why := role.inRemit(t); !in {
						v.add(key+".defaults", "default %q is %s", d, why)
					}
				}
			}
		}
	}
	for name, a := range p.Agents {
		key := "agents." + toml.Key{name}.String()
		if a.Role != "" {
			if _, ok := p.role(a.Role); !ok {
				v.add(key+".role", "unknown role %q (accepted: built-in %s, or a [roles.NAME] table)", a.Role, strings.Join(builtinRoleNames(), ", "))
			}
		}
		v.tools(key+".grants", a.Grants)
		v.tools(key+".denies", a.Denies)
	}

	a := &p.Approval
	v.oneOf("approval.unattended_policy", a.UnattendedPolicy, []string{"allow", "deny"})
	v.toolsOrActions("approval.auto_approve", a.AutoApprove)
	v.toolsOrActions("approval.require_approval", a.RequireApproval)
	a.GrantsFile = v.absPath("approval.grants_file", a.GrantsFile)
	v.duration("approval.approver_timeout", a.ApproverTimeout)
	if len(a.Approver) > 0 {
		// The command is absolute so that what runs does not depend on jail's PATH.
		if a.Approver[0] == "" {
			v.add("approval.approver", "an empty program name (accepted: [\"/abs/path/cmd\", \"arg\", ...])")
		} else {
			a.Approver[0] = v.absPath("approval.approver", a.Approver[0])
		}
	}

	for _, id := range p.Guards.Disable {
		if !slices.Contains(GuardIDs(), id) {
			v.add("guards.disable", "unknown guard id %q (accepted: %s)", id, strings.Join(GuardIDs(), ", "))
		}
	}
	for _, l := range []struct {
		key  string
		list []string
	}{{"guards.hard", p.Guards.Hard}, {"guards.soft", p.Guards.Soft}} {
		for _, re := range l.list {
			if _, err := regexp.Compile(re); err != nil {
				v.add(l.key, "bad regular expression %q: %v", re, err)
			}
		}
	}
	v.validateProfiles(p)
	p.Audit.Path = v.absPath("audit.path", p.Audit.Path)
	v.oneOf("access.level", p.Access.Level, levelNames())
}

// envPattern accepts a variable name, or a prefix ending in * (LC_*).
func envPattern(e string) bool {
	return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\*?$`).MatchString(e)
}

func builtinRoleNames() []string {
	var names []string
	for _, r := range BuiltinRoles() {
		names = append(names, r.Name)
	}
	return names
}

// absPath expands "~" and requires the result to be absolute. Glob characters are kept: they
// are expanded later by [ExpandGlobs] against a root the caller chooses.
func (v *validator) absPath(key, p string) string {
	if p == "" {
		return ""
	}
	out, err := expandHome(p, v.env.Home)
	if err != nil {
		v.add(key, "%v", err)
		return p
	}
	if !filepath.IsAbs(out) {
		v.add(key, "%q is relative (accepted: an absolute path, or one starting with ~/)", p)
		return p
	}
	return filepath.Clean(out)
}

func (v *validator) duration(key string, d interface{ Seconds() float64 }) {
	parts := strings.Split(key, ".")
	if v.f.defined(parts...) && v.f.md.Type(parts...) != "String" {
		v.add(key, "durations are strings with a unit (accepted: e.g. \"30s\", \"10m\", \"1h\")")
		return
	}
	if d.Seconds() < 0 {
		v.add(key, "must not be negative")
	}
}

func (v *validator) nonNegative(key string, n int64) {
	if n < 0 {
		v.add(key, "must not be negative")
	}
}

func (v *validator) oneOf(key, val string, accepted []string) {
	if val != "" && !slices.Contains(accepted, val) {
		v.add(key, "unknown value %q (accepted: %s)", val, strings.Join(accepted, ", "))
	}
}

func (v *validator) tools(key string, names []string) {
	for _, n := range names {
		if _, ok := catalogueEntry(n); !ok {
			v.add(key, "unknown tool %q (accepted: %s)", n, strings.Join(catalogueNames(), ", "))
		}
	}
}

// expandHome expands a leading "~" or "~/" with home. "~user" is refused: jail never looks up
// other users.
func expandHome(p, home string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		if strings.HasPrefix(p, "~") {
			return "", fmt.Errorf("%q: only ~ and ~/ are expanded, not ~user", p)
		}
		return p, nil
	}
	if home == "" || !filepath.IsAbs(home) {
		return "", fmt.Errorf("%q: cannot expand ~ without an absolute home directory", p)
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~")), nil
}

// parseProjectFile is parseFile for the untrusted project file: no symlink is followed
// (readPolicyFile).
func parseProjectFile(path string, env Env) (*parsed, error) {
	data, err := readPolicyFile(path, true)
	if err != nil {
		return nil, fmt.Errorf("policy: read %s: %w", path, err)
	}
	return parse(path, data, env)
}
