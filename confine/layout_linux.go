//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Layout is the file-system view of a sandbox in host terms. Build turns it
// into Spec mounts, resolving every path first: containment decisions are
// made on resolved paths only.
type Layout struct {
	// Workspace is the read-write project directory and the command's cwd.
	Workspace string
	// Home is the caller's home; it becomes an empty private tmpfs, or
	// HomeDir.
	Home string
	// HomeDir, when set, is a host directory of the user's (the
	// workspace's persistent home) bound read-write at Home instead of the
	// tmpfs, so caches and an agent's state last between runs. It must be
	// a resolved path; the sandbox's init opens it refusing any symlink.
	HomeDir string
	// System directories are bound read-only and executable; a symlink
	// among them (merged /usr: /bin -> usr/bin) is recreated as a symlink.
	System []string
	// Secrets inside system directories are covered by empty objects.
	Secrets []string
	// SystemData are host directories bound read-only and not executable
	// where they exist: the package manager's databases, so `dpkg -l` and
	// `apt-cache policy` work (DefaultSystemData).
	SystemData []string
	// ReadOnly and ReadWrite are extra host paths (--ro, --rw).
	ReadOnly, ReadWrite []string
	// Resolved are ReadOnly paths that were resolved when they were
	// trusted (a project policy's ro entries): Build refuses one that no
	// longer resolves to itself (a symlink planted since).
	Resolved []string
	// Hidden paths are covered by empty objects (--hide).
	Hidden []string
	// Protected paths are relative to the workspace and stay read-only.
	Protected []string
	// Trees are ReadWrite trees that are protected as a workspace is
	// (the --rw repositories that get a git view of their own, package
	// gitview): Protected and each tree's own paths stay read-only there.
	Trees []Tree
	// WorkspaceReadOnly binds the workspace read-only (roles whose remit
	// is to look, not to change: their commands cannot write either).
	WorkspaceReadOnly bool
	// Extra are further mounts made by jail itself (a resolv.conf for the
	// transparent network mode); Bind sources are resolved like the rest.
	Extra []Mount
	// Made are mounts of directories jail made for this sandbox by
	// descriptor (the git view's, package gitview), whose host paths are
	// resolved already: they are neither resolved again nor facts of the
	// plan, since each run makes its own.
	Made []Mount
	// Guarded are host directories of jail's own (the user's policy, the
	// plan cache) that no sandbox may change. One that a writable bind
	// would show is created if missing and mounted read-only.
	Guarded []string
	// GuardedFiles are files no sandbox may change (a --policy file, the
	// user's policy file, which may be a symlink elsewhere); a missing one
	// is guarded by its directory.
	GuardedFiles []string
	// HiddenState are directories of jail's own state (the plan cache,
	// the audit log's directory, persistent data) that no sandbox may
	// read or change: wherever a writable bind shows one, it is created if
	// missing and covered by an empty read-only directory, with the way
	// to it pinned as for Guarded. Guarded paths inside one need nothing
	// more. A bind whose source lies inside one (a workspace's own
	// persistent home) is not affected: it does not show the directory.
	HiddenState []string
	// RootOnly are system directories (/etc, /opt) beneath which every
	// entry others may not read is hidden (rootonly_linux.go): set for a
	// caller that is root, whose sandbox would otherwise read them.
	RootOnly []string
	// TmpSize bounds the private /tmp and /var/tmp, ShmSize /dev/shm and
	// HomeSize the empty home, in bytes; zero leaves the kernel's default
	// (half of the memory, each).
	TmpSize, ShmSize, HomeSize int64
	// Outputs are files jail writes for the user after the sandbox ran
	// (--json-out); Build refuses one that a writable bind shows.
	Outputs []*Output
	// GitConfig shows the user's git config (~/.gitconfig,
	// ~/.config/git/config) read-only in an empty home, and gives git a
	// sandbox-side global config that includes it (gitconfig_linux.go).
	GitConfig bool
	// Env, set by Build, are variables the command needs for the view
	// Build made (GIT_CONFIG_GLOBAL); the caller's --env wins over them.
	Env []string
	// Path is the command's PATH, as entries: those under Home get their
	// tool roots bound read-only (toolpath_linux.go).
	Path []string
	// Homes are home directories (the caller's $HOME and its passwd
	// entry's) that the workspace must neither be nor contain: there the
	// sandbox could change the keys, shell start-up files and autostart
	// entries that run outside it later. Build refuses such a workspace
	// unless HomeWorkspace is set.
	Homes []string
	// HomeWorkspace allows a workspace that is or contains one of Homes.
	// Each such home is then bound read-only, its secrets (HomeWorkspaceSecrets)
	// are hidden, and only the ReadWrite paths inside it are writable
	// (an allowlist: the project directories named), each with the
	// protected paths of a workspace.
	HomeWorkspace bool
	// Facts, when not nil, records what Build observed of the host's file
	// system, for the plan cache (fast_linux.go).
	Facts *Facts
}

// Tree is a writable tree protected as a workspace (Layout.Trees).
type Tree struct {
	// Root is the tree's resolved path, one of Layout.ReadWrite's.
	Root string
	// Protected are its protected paths, relative to Root.
	Protected []string
}

// HomeWorkspaceSecrets are the paths, relative to a home, hidden when the
// home is part of the workspace (Layout.HomeWorkspace): HomeSecrets, and
// the credentials of further tools people keep there, agents' included,
// and the histories and browser profiles that hold them in passing.
// Reading is what this list stops; writing anywhere in such a home is
// refused unless a path is named writable.
func HomeWorkspaceSecrets() []string {
	out := HomeSecrets()
	for _, p := range []string{
		".my.cnf", ".pgpass", ".oci", ".config/doctl", ".config/containers/auth.json", ".config/hub",
		".config/glab-cli", ".config/op", ".config/rclone", ".s3cfg", ".boto", ".terraform.d/credentials.tfrc.json",
		".vault-token", ".yarnrc.yml", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
		".m2/settings.xml", ".gradle/gradle.properties", ".config/pip", ".config/keybase", ".mozilla",
		".config/google-chrome", ".config/chromium", ".config/BraveSoftware", ".thunderbird",
		".claude", ".claude.json", ".codex", ".config/gemini", ".gemini", ".aider", ".config/openai",
		".bash_history", ".zsh_history", ".python_history", ".psql_history", ".mysql_history",
		".lesshst", ".viminfo", ".local/share/fish/fish_history",
	} {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// DefaultSystem is the read-only, executable part of every sandbox.
func DefaultSystem() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}
}

// DefaultSystemData are the package databases of Debian-like systems:
// read by dpkg and apt, written only by the host's package manager.
func DefaultSystemData() []string {
	return []string{"/var/lib/dpkg", "/var/lib/apt", "/var/cache/apt"}
}

// SharedTmp are the host's shared temporary directories. Every sandbox
// gets private ones at these paths; a workspace that is one of them, or
// contains one, is refused: other programs' sockets live there (tmux,
// ssh-agent, X11, D-Bus), and a sandbox that sees them can reach out.
func SharedTmp() []string { return []string{"/tmp", "/var/tmp"} }

// DefaultSecrets are the host secrets inside DefaultSystem.
func DefaultSecrets() []string {
	return []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
		"/etc/ssh", "/etc/security/opasswd", "/etc/ssl/private", "/etc/libvirt", "/etc/docker/key.json"}
}

// ResolvePath makes p absolute (relative to base), resolves every symlink
// and "..", and, when within is not empty, refuses a result outside it.
// It is the one function the supervisor uses before any containment check
// of a host path.
func ResolvePath(p, base, within string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte", p)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	r, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		return "", err
	}
	if within != "" && !pathWithin(r, within) {
		return "", fmt.Errorf("%s resolves to %s, outside %s", p, r, within)
	}
	return r, nil
}

func pathWithin(p, root string) bool { return within(p, root) }

// CheckWorkspace resolves the workspace and refuses one that is not a
// directory, contains a system directory or is the host's shared /tmp.
// It runs before anything is made in the workspace (the git view), so a
// refused workspace is left as it was.
func (l *Layout) CheckWorkspace() (string, error) {
	if !filepath.IsAbs(l.Workspace) {
		return "", fmt.Errorf("workspace %q must be an absolute path", l.Workspace)
	}
	ws, err := ResolvePath(l.Workspace, "/", "")
	if err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	if st, err := os.Stat(ws); err != nil || !st.IsDir() {
		return "", fmt.Errorf("workspace %s is not a directory", ws)
	}
	for _, sys := range append([]string{"/"}, l.System...) {
		if pathWithin(sys, ws) {
			return "", fmt.Errorf("workspace %s contains the system directory %s: choose a project directory with -w", ws, sys)
		}
	}
	for _, t := range SharedTmp() {
		if pathWithin(t, ws) {
			return "", fmt.Errorf("workspace %s is or contains %s, the host's shared temporary directory, where other programs keep their sockets (tmux, ssh-agent, X11): a sandbox that sees them can act outside; every sandbox has a private %s, so use a directory of its own as the workspace (-w \"$(mktemp -d)\")", ws, t, t)
		}
	}
	// Refused here, before anything (the git view's .git) is made in it.
	if _, err := l.homesInWorkspace(ws, nil); err != nil {
		return "", err
	}
	return ws, nil
}

// Check refuses, before anything is made on the host for a run (its
// persistent home, an agent profile's files, the git view), what Build
// would refuse about the layout as given: the workspace (CheckWorkspace)
// and the --ro and --rw paths, which must exist. It makes nothing and
// records no fact. Build checks all of it again.
func (l *Layout) Check() error {
	if _, err := l.CheckWorkspace(); err != nil {
		return err
	}
	for _, p := range l.ReadOnly {
		if _, err := userBind(p, false, nil); err != nil {
			return fmt.Errorf("--ro %s: %w", p, err)
		}
	}
	for _, p := range l.ReadWrite {
		if _, err := userBind(p, true, nil); err != nil {
			return fmt.Errorf("--rw %s: %w", p, err)
		}
	}
	return nil
}

// Build turns the layout into mounts for a Spec, creating placeholders for
// missing protected paths. The caller must call Release on the returned
// Placeholders after the sandbox exited, even on error.
func (l *Layout) Build() ([]Mount, *Placeholders, error) {
	ph := &Placeholders{}
	ws, err := l.CheckWorkspace()
	if err != nil {
		return nil, ph, err
	}
	l.Facts.realpath(l.Workspace, ws)
	l.Facts.fileType(ws, unix.S_IFDIR)
	if l.HomeDir != "" {
		// The persistent home is named after the workspace's inode.
		var st unix.Stat_t
		if err := unix.Lstat(ws, &st); err != nil {
			return nil, ph, fmt.Errorf("workspace: %w", err)
		}
		l.Facts.dir(ws, &st)
	}
	homes, err := l.homesInWorkspace(ws, l.Facts)
	if err != nil {
		return nil, ph, err
	}

	var ms []Mount
	for _, d := range l.System {
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil {
			if !errors.Is(err, unix.ENOENT) {
				l.Facts.Unsure()
			}
			l.Facts.fileType(d, 0)
			continue // /lib32 and friends exist on some systems only
		}
		l.Facts.fileType(d, st.Mode)
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			target, err := os.Readlink(d)
			if err != nil {
				return nil, ph, err
			}
			// Only links that stay inside the system tree are recreated.
			r, err := ResolvePath(d, "/", "/usr")
			if err != nil {
				return nil, ph, fmt.Errorf("system directory %s: %w", d, err)
			}
			l.Facts.link(d, target)
			l.Facts.realpath(d, r)
			ms = append(ms, Mount{Kind: Symlink, Source: target, Dest: d})
			continue
		}
		ms = append(ms, Mount{Kind: Bind, Source: d, Dest: d, Exec: true})
	}
	for _, s := range l.Secrets {
		ms = append(ms, Mount{Kind: Hide, Dest: s})
	}
	ms = append(ms,
		Mount{Kind: Bind, Source: "/sys", Dest: "/sys"},
		Mount{Kind: Proc, Dest: "/proc"},
		Mount{Kind: Dev, Dest: "/dev", Size: l.ShmSize},
		Mount{Kind: Tmpfs, Dest: "/tmp", Writable: true, Exec: true, Size: l.TmpSize},
		Mount{Kind: Tmpfs, Dest: "/var/tmp", Writable: true, Exec: true, Size: l.TmpSize},
	)
	for _, d := range l.SystemData {
		// Bound only where it is a real directory reached through no
		// symlink: anything else is left out rather than followed.
		r := resolvedOrNone(d)
		l.Facts.realpath(d, r)
		if r != d || pathWithin(d, ws) {
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil {
			l.Facts.Unsure()
			continue
		}
		l.Facts.fileType(d, st.Mode)
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			ms = append(ms, Mount{Kind: Bind, Source: d, Dest: d})
		}
	}
	home := filepath.Clean(l.Home)
	// A home the user binds itself (--rw ~, --ro ~) is theirs to show;
	// a bind of a parent (--ro /home) still gets the empty home over it.
	// A home inside a tree the user binds (--ro /home) is covered by an
	// empty read-only directory there: a tmpfs cannot be made inside a
	// bound host tree, and the home stays hidden.
	boundWhole, boundParent, homeBound := false, false, false
	for _, p := range append(append([]string{}, l.ReadOnly...), l.ReadWrite...) {
		boundWhole = boundWhole || filepath.Clean(p) == home
		boundParent = boundParent || filepath.IsAbs(p) && filepath.Clean(p) != home && pathWithin(home, filepath.Clean(p))
	}
	homeTmpfs := false
	if l.Home != "" && filepath.IsAbs(home) && home != "/" && !pathWithin(home, ws) && !pathWithin(home, "/tmp") && !boundWhole {
		kind := Tmpfs
		if boundParent {
			kind = Hide
		}
		homeTmpfs = kind == Tmpfs
		m := Mount{Kind: kind, Dest: home, Writable: kind == Tmpfs, Exec: kind == Tmpfs}
		if kind == Tmpfs && l.HomeDir != "" {
			homeBound = true
			var st unix.Stat_t
			if err := unix.Lstat(l.HomeDir, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Getuid() {
				return nil, ph, fmt.Errorf("persistent home %s: not a directory of this user's (jail clean removes it)", l.HomeDir)
			}
			l.Facts.dir(l.HomeDir, &st)
			m = Mount{Kind: Bind, Source: l.HomeDir, Dest: home, Writable: true, Exec: true}
		} else if kind == Tmpfs {
			m.Size = l.HomeSize
		}
		ms = append(ms, m)
	}
	ms = append(ms, Mount{Kind: Bind, Source: ws, Dest: ws, Writable: !l.WorkspaceReadOnly, Exec: true})
	for _, h := range homes {
		// The home read-only, its secrets covered; the ReadWrite paths
		// bound below are the only writable places in it.
		if h == ws {
			ms[len(ms)-1].Writable = false
		} else {
			ms = append(ms, Mount{Kind: Bind, Source: h, Dest: h, Exec: true})
		}
		var secrets []string
		for _, sec := range HomeWorkspaceSecrets() {
			secrets = append(secrets, filepath.Join(h, sec))
		}
		// jail's own state (the plan cache, the audit log) is hidden
		// here as wherever a writable bind shows it.
		for _, st := range l.HiddenState {
			if pathWithin(st, h) {
				secrets = append(secrets, st)
			}
		}
		for _, sec := range secrets {
			if _, err := os.Lstat(sec); err == nil && !slices.ContainsFunc(ms, func(m Mount) bool { return m.Dest == sec }) {
				ms = append(ms, Mount{Kind: Hide, Dest: sec})
			}
		}
	}
	for _, p := range l.ReadOnly {
		m, err := userBind(p, false, l.Facts)
		if err != nil {
			return nil, ph, fmt.Errorf("--ro %s: %w", p, err)
		}
		if slices.Contains(l.Resolved, p) && m.Source != filepath.Clean(p) {
			return nil, ph, fmt.Errorf("ro %s (from the project policy) resolves to %s now, not to itself as when it was checked: refusing to bind it", p, m.Source)
		}
		ms = append(ms, m)
	}
	var projects []string // writable project directories inside a home of the workspace
	for _, p := range l.ReadWrite {
		m, err := userBind(p, true, l.Facts)
		if err != nil {
			return nil, ph, fmt.Errorf("--rw %s: %w", p, err)
		}
		ms = append(ms, m)
		if m.Source == m.Dest && slices.ContainsFunc(homes, func(h string) bool { return pathWithin(m.Source, h) }) {
			projects = append(projects, m.Source)
		}
	}
	for _, p := range l.Hidden {
		if !filepath.IsAbs(p) {
			p = filepath.Join(ws, p)
		}
		ms = append(ms, Mount{Kind: Hide, Dest: filepath.Clean(p)})
	}
	var own []string // sources of jail's own mounts (Extra, Made)
	for _, m := range l.Extra {
		layers := []*string{}
		switch m.Kind {
		case Bind:
			layers = append(layers, &m.Source)
		case Overlay:
			layers = append(layers, &m.Source, &m.Upper, &m.Work)
		}
		for _, p := range layers {
			src, err := ResolvePath(*p, "/", "")
			if err != nil {
				return nil, ph, fmt.Errorf("mount %s: %w", m.Dest, err)
			}
			l.Facts.realpath(*p, src)
			*p = src
		}
		ms = append(ms, m)
		if m.Kind == Bind || m.Kind == Overlay {
			own = append(own, m.Source)
		}
	}
	ms = append(ms, l.Made...)
	for _, m := range l.Made {
		if m.Kind == Bind || m.Kind == Overlay {
			own = append(own, m.Source)
		}
	}
	l.Env = nil
	if homeTmpfs {
		// The tool roots PATH needs in the home, after every mount the
		// user asked for: one of those may show an entry already.
		ms = append(ms, l.toolPaths(home, ms)...)
		if l.GitConfig {
			gm, env := l.gitConfig(home, ms)
			ms = append(ms, gm...)
			l.Env = append(l.Env, env...)
		}
	}
	protected := l.Protected
	guards, err := l.guard(ms)
	if err != nil {
		return nil, ph, err
	}
	ms = append(ms, guards...)
	if !l.WorkspaceReadOnly {
		// Inside a home that is part of the workspace, the writable
		// project directories named are workspaces of their own.
		for _, root := range append([]string{ws}, projects...) {
			prot, err := protect(root, protected, ph, l.Facts)
			if err != nil {
				return nil, ph, err
			}
			ms = append(ms, prot...)
		}
		for _, t := range l.Trees {
			prot, err := protect(t.Root, t.Protected, ph, l.Facts)
			if err != nil {
				return nil, ph, fmt.Errorf("--rw %s: %w", t.Root, err)
			}
			ms = append(ms, prot...)
		}
	}
	if err := l.checkOutputs(ms); err != nil {
		return nil, ph, err
	}
	// Once every other mount is known: what the sandbox sees of /etc and
	// /opt under them is theirs, not the host's entry.
	hides, err := l.rootOnly(ms)
	if err != nil {
		return nil, ph, err
	}
	ms = append(ms, hides...)
	sortMounts(ms)
	if homeBound {
		if ms, err = homeMountpoints(l.HomeDir, home, ws, ms); err != nil {
			return nil, ph, err
		}
	}
	// Last, once every mountpoint exists on the host: what each mount
	// must find there, and the pins of the way to it.
	if err := identify(ms, l.Facts, l.stateDirs(), own); err != nil {
		return nil, ph, err
	}
	if ms, err = pinParents(ms, l.Facts); err != nil {
		return nil, ph, err
	}
	sortMounts(ms)
	// Before the init mounts anything: a run ending meanwhile must find
	// every object this sandbox will sit on held (holds_linux.go).
	if err := ph.hold(ms, ws, l.HomeDir, l.stateDirs()); err != nil {
		return nil, ph, err
	}
	return ms, ph, nil
}

// homeMountpoints creates, in the persistent home on the host, the
// mountpoints of the binds whose nearest enclosing bind is the home
// (--ro ~/.cargo/bin, an agent's ~/.claude, the tool roots PATH needs):
// the init creates nothing inside a bound host tree. Symlinks and files
// jail would make in a private home (a PATH entry that is a symlink, the
// sandbox-side git config) are made in the persistent home instead, and
// left out of the mounts: a symlink when missing, a file when missing
// (what the sandbox changed in it lasts, like the rest of the home). The
// home is the sandbox's to write, so each component is opened beneath the
// home's descriptor without following a symlink; something planted in the
// way refuses the launch (jail clean removes it) rather than being
// followed.
func homeMountpoints(homeDir, home, ws string, ms []Mount) ([]Mount, error) {
	var binds []string
	for _, m := range ms {
		if m.Kind == Bind {
			binds = append(binds, m.Dest)
		}
	}
	hfd, err := unix.Open(homeDir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("persistent home %s: %w", homeDir, err)
	}
	defer unix.Close(hfd)
	inWay := func(dest string, err error) error {
		return fmt.Errorf("persistent home: %s: %w (jail clean -w %s starts the home afresh)", dest, err, ws)
	}
	out := ms[:0:0]
	for _, m := range ms {
		nested := false
		for _, b := range binds {
			nested = nested || b != home && b != m.Dest && pathWithin(b, home) && pathWithin(m.Dest, b)
		}
		if m.Dest == home || !pathWithin(m.Dest, home) || nested {
			out = append(out, m)
			continue
		}
		rel, _ := filepath.Rel(home, m.Dest)
		switch m.Kind {
		case Bind:
			var st unix.Stat_t
			if err := unix.Stat(m.Source, &st); err != nil {
				return nil, fmt.Errorf("mount %s: %w", m.Dest, err)
			}
			if err := mkdirBeneath(hfd, rel, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
				return nil, inWay(m.Dest, err)
			}
		case Symlink, File:
			if dir := filepath.Dir(rel); dir != "." {
				if err := mkdirBeneath(hfd, dir, true); err != nil {
					return nil, inWay(m.Dest, err)
				}
			}
			if err := makeInHome(hfd, rel, m); err != nil {
				return nil, inWay(m.Dest, err)
			}
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

// makeInHome makes the symlink or file m at rel beneath the home's
// descriptor unless it is there already (a symlink with the same target,
// else the link is replaced; any regular file, which the sandbox may have
// changed). Another sandbox of the same workspace may make or replace the
// same name meanwhile (jail serve starts several at once): a name that
// appears between the look and the make is looked at again.
func makeInHome(hfd int, rel string, m Mount) error {
	dir, name := filepath.Split(rel)
	pfd := hfd
	if dir != "" {
		fd, err := openIn(hfd, filepath.Clean(dir))
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		pfd = fd
	}
	var err error
	for range 3 {
		if err = makeOnce(pfd, name, rel, m); !errors.Is(err, unix.EEXIST) && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	return err
}

// makeOnce is one attempt of makeInHome at pfd/name.
func makeOnce(pfd int, name, rel string, m Mount) error {
	// Sandboxes starting at once in one persistent home race to make the
	// same file: the one that loses sees EEXIST and takes the other's, as
	// it would have taken it a moment later.
	err := makeOnceTry(pfd, name, rel, m)
	if errors.Is(err, unix.EEXIST) {
		err = makeOnceTry(pfd, name, rel, m)
	}
	return err
}

// makeOnceTry is one attempt of makeOnce.
func makeOnceTry(pfd int, name, rel string, m Mount) error {
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		switch {
		case m.Kind == Symlink && st.Mode&unix.S_IFMT == unix.S_IFLNK:
			buf := make([]byte, 4096)
			if n, err := unix.Readlinkat(pfd, name, buf); err == nil && string(buf[:n]) == m.Source {
				return nil
			}
			// The host's link changed (a version manager switched
			// versions): the link itself is replaced, never followed.
			if err := unix.Unlinkat(pfd, name, 0); err != nil {
				return err
			}
			return unix.Symlinkat(m.Source, pfd, name)
		case m.Kind == File && st.Mode&unix.S_IFMT == unix.S_IFREG:
			return nil
		}
		return fmt.Errorf("%s is in the way", fileKind(st.Mode))
	}
	if m.Kind == Symlink {
		return unix.Symlinkat(m.Source, pfd, name)
	}
	fd, err := unix.Openat(pfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), rel)
	_, werr := f.WriteString(m.Source)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// mkdirBeneath makes rel beneath dirfd, a directory or (dir false) an
// empty file as its last component, without following any symlink.
func mkdirBeneath(dirfd int, rel string, dir bool) error {
	parts := strings.Split(rel, "/")
	for i := range parts {
		prefix := strings.Join(parts[:i+1], "/")
		last := i == len(parts)-1
		fd, err := openIn(dirfd, prefix)
		if err == nil {
			var st unix.Stat_t
			err = unix.Fstat(fd, &st)
			unix.Close(fd)
			if err != nil {
				return err
			}
			if isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR; (!last || dir) && !isDir || last && !dir && st.Mode&unix.S_IFMT != unix.S_IFREG {
				return fmt.Errorf("%s is in the way (%s)", prefix, fileKind(st.Mode))
			}
			continue
		}
		if !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%s: %w", prefix, err)
		}
		pfd := dirfd
		if i > 0 {
			if pfd, err = openIn(dirfd, strings.Join(parts[:i], "/")); err != nil {
				return err
			}
		}
		if !last || dir {
			err = unix.Mkdirat(pfd, parts[i], 0o755)
		} else {
			var f int
			f, err = unix.Openat(pfd, parts[i], unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
			if err == nil {
				unix.Close(f)
			}
		}
		if pfd != dirfd {
			unix.Close(pfd)
		}
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("%s: %w", prefix, err)
		}
	}
	return nil
}

func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return "a symlink"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFREG:
		return "a file"
	}
	return "not a file or directory"
}

// homesInWorkspace returns the homes (Layout.Homes, resolved) that the
// workspace ws is or contains, and refuses them unless the layout allows
// a home as the workspace. The plan of a run with such a home is not
// cached (its hidden secrets are looked up afresh on every run): facts
// records that.
func (l *Layout) homesInWorkspace(ws string, facts *Facts) ([]string, error) {
	var in []string
	for _, h := range l.Homes {
		if !filepath.IsAbs(h) || filepath.Clean(h) == "/" {
			continue
		}
		r, err := ResolvePath(h, "/", "")
		if err != nil {
			r = filepath.Clean(h)
		}
		if pathWithin(r, ws) && !slices.Contains(in, r) {
			in = append(in, r)
		}
	}
	if len(in) == 0 {
		return nil, nil
	}
	if !l.HomeWorkspace {
		what := "is the home directory"
		if in[0] != ws {
			what = "contains the home directory"
		}
		return nil, fmt.Errorf("refusing the workspace %s: it %s %s, where a sandbox could change the keys (~/.ssh/authorized_keys), shell start-up files (~/.bashrc, ~/.profile), PATH directories (~/.local/bin) and autostart entries (~/.config/systemd, ~/.config/autostart) that run outside it later, and read ~/.ssh and ~/.aws. Run in a project directory instead (cd ~/project, or -w ~/project), or pass --home-workspace (policy: [sandbox] home_workspace = true) to run with the home read-only, its secrets hidden, and only the --rw paths you name writable (docs/workspace.md)", ws, what, in[0])
	}
	facts.Unsure()
	return in, nil
}

// identify records in each mount the identity the init checks: the
// source of every bind (but jail's own, Extra and Made, from outside
// writable trees), and the object at every hide, protect and pin
// inside a writable bind (reached through that bind's source without
// following symlinks). A hide there whose target does not exist is
// dropped: there is nothing to hide, and the fact that it is absent is
// recorded. Pins and protects already carry theirs.
func identify(ms []Mount, facts *Facts, state, own []string) error {
	for i := range ms {
		m := &ms[i]
		switch m.Kind {
		case Bind, Overlay:
			w, _ := writableParent(ms, m.Source)
			if slices.ContainsFunc(state, func(d string) bool { return pathWithin(m.Source, d) }) ||
				slices.Contains(own, m.Source) && w == nil {
				// jail's own state, or a mount of jail's own from outside
				// every writable tree (a git view's directory, made for
				// each run): out of every sandbox's reach, and new on
				// every run of a cached plan.
				continue
			}
			// An overlay's lower directory (a workspace's git directory)
			// is checked as a bind's source is.
			st, err := statNoSymlinks(unix.AT_FDCWD, m.Source)
			if err != nil {
				return fmt.Errorf("mount %s: %w", m.Source, err)
			}
			m.Dev, m.Ino = st.Dev, st.Ino
		case Hide:
			w, rel := writableParent(ms, m.Dest)
			if w == nil || coveredByHide(ms, m.Dest) {
				// Out of every sandbox's reach, or inside a tree an
				// earlier hide covers (it then finds nothing to hide).
				continue
			}
			st, err := statBeneath(w.Source, rel)
			if errors.Is(err, unix.ENOENT) {
				facts.fileType(m.Dest, 0)
				m.Kind = "" // dropped below
				continue
			}
			if err != nil {
				return fmt.Errorf("hide %s: %w", m.Dest, err)
			}
			facts.fileType(m.Dest, st.Mode)
			m.Dev, m.Ino = st.Dev, st.Ino
		}
	}
	return nil
}

// coveredByHide reports whether a hide of a parent of dest covers it.
func coveredByHide(ms []Mount, dest string) bool {
	return slices.ContainsFunc(ms, func(o Mount) bool { return o.Kind == Hide && o.Dest != dest && pathWithin(dest, o.Dest) })
}

// stateDirs are HiddenState, as named and resolved.
func (l *Layout) stateDirs() []string {
	var out []string
	for _, d := range l.HiddenState {
		out = append(out, filepath.Clean(d))
		if r := resolvedOrNone(d); r != "" && r != filepath.Clean(d) {
			out = append(out, r)
		}
	}
	return out
}

// writableParent returns the bind whose tree shows dest, when that bind
// is writable and dest lies strictly inside it, and dest relative to it.
func writableParent(ms []Mount, dest string) (*Mount, string) {
	var deepest *Mount
	for i := range ms {
		b := &ms[i]
		if (b.Kind == Bind || b.Kind == Overlay) && b.Dest != dest && pathWithin(dest, b.Dest) && (deepest == nil || len(b.Dest) > len(deepest.Dest)) {
			deepest = b
		}
	}
	if deepest == nil || !deepest.Writable {
		return nil, ""
	}
	return deepest, strings.TrimPrefix(strings.TrimPrefix(dest, deepest.Dest), "/")
}

// pinParents adds a Pin, with its identity, for every directory between
// a writable bind's root and each bind or hide inside it, so that no
// sandbox can rename a parent away and rebuild the path around what was
// mounted (the protected paths' walk pins its own). Mounts dropped by
// identify go.
func pinParents(ms []Mount, facts *Facts) ([]Mount, error) {
	taken := map[string]bool{}
	var out []Mount
	for _, m := range ms {
		if m.Kind != "" {
			taken[m.Dest] = true
			out = append(out, m)
		}
	}
	for _, m := range ms {
		if m.Kind != Bind && m.Kind != Hide {
			continue
		}
		w, rel := writableParent(ms, m.Dest)
		if w == nil {
			continue
		}
		parts := strings.Split(rel, "/")
		for i := 1; i < len(parts); i++ {
			sub := filepath.Join(parts[:i]...)
			dest := filepath.Join(w.Dest, sub)
			if taken[dest] {
				continue
			}
			st, err := statBeneath(w.Source, sub)
			if err != nil {
				return nil, fmt.Errorf("pin %s: %w", dest, err)
			}
			facts.fileType(dest, st.Mode)
			taken[dest] = true
			out = append(out, Mount{Kind: Pin, Dest: dest, Dev: st.Dev, Ino: st.Ino})
		}
	}
	return out, nil
}

// statNoSymlinks stats path (relative to dirfd) as the init opens it:
// no symlink in any component, the last one included.
func statNoSymlinks(dirfd int, path string) (unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := unix.Openat2(dirfd, path, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return st, err
	}
	defer unix.Close(fd)
	err = unix.Fstat(fd, &st)
	return st, err
}

// statBeneath stats rel beneath the directory root without following
// any symlink.
func statBeneath(root, rel string) (unix.Stat_t, error) {
	var st unix.Stat_t
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return st, err
	}
	defer unix.Close(rfd)
	fd, err := openIn(rfd, rel)
	if err != nil {
		return st, err
	}
	defer unix.Close(fd)
	err = unix.Fstat(fd, &st)
	return st, err
}

// guard returns the mounts that keep each guarded path (a directory of
// jail's own, such as the user's policy or the plan cache, or a policy
// file) unchangeable in the sandbox, wherever a writable bind shows it:
// the path itself read-only (Protect; a missing directory is created
// first), every symlink met while resolving it pinned (Pin: a mountpoint
// can be neither removed nor replaced, and a pinned symlink still
// resolves), and every directory between the writable bind's root and
// each of these pinned, so nothing on the way can be moved aside and
// rebuilt. A path that a deeper mount covers (read-only, hidden), or that
// is out of the user's reach, needs nothing.
func (l *Layout) guard(ms []Mount) ([]Mount, error) {
	taken := map[string]bool{}
	for _, m := range ms {
		taken[m.Dest] = true
	}
	mounts := readMounts()
	srcs := writableSources(ms, mounts)
	var out []Mount
	add := func(o string, kind MountKind) {
		for _, v := range showing(ms, mounts, srcs, o) {
			parts := strings.Split(v.rel, "/")
			for i := 1; i < len(parts); i++ {
				dest := filepath.Join(v.m.Dest, filepath.Join(parts[:i]...))
				if !taken[dest] {
					taken[dest] = true
					out = append(out, Mount{Kind: Pin, Dest: dest})
				}
			}
			dest := filepath.Join(v.m.Dest, v.rel)
			if v.rel != "" && !taken[dest] || kind == Protect || kind == Hide {
				taken[dest] = true
				out = append(out, Mount{Kind: kind, Dest: dest})
			}
		}
	}
	type guarded struct {
		path       string
		file, hide bool
	}
	var all []guarded
	var hidden []string // resolved HiddenState, and as named
	for _, g := range l.HiddenState {
		if filepath.IsAbs(g) {
			all = append(all, guarded{g, false, true})
			hidden = append(hidden, filepath.Clean(g), resolvedOrNone(g))
		}
	}
	inHidden := func(p string) bool {
		for _, h := range hidden {
			if h != "" && pathWithin(p, h) {
				return true
			}
		}
		return false
	}
	for _, g := range l.Guarded {
		all = append(all, guarded{g, false, false})
	}
	for _, g := range l.GuardedFiles {
		all = append(all, guarded{g, true, false})
	}
	for _, g := range all {
		if !filepath.IsAbs(g.path) {
			continue
		}
		if !g.hide && (inHidden(filepath.Clean(g.path)) || inHidden(resolvedOrNone(g.path))) {
			l.Facts.realpath(g.path, resolvedOrNone(g.path))
			continue // covered whole by a hidden state directory
		}
		final := Protect
		if g.hide {
			final = Hide
		}
		r, objects, err := resolveWalk(g.path)
		for _, o := range objects {
			l.Facts.fileType(o, unix.S_IFLNK)
			if t, err := os.Readlink(o); err == nil {
				l.Facts.link(o, t)
			}
			add(o, Pin)
		}
		if err != nil {
			// An unreadable directory on the way (EACCES) or a loop: the
			// symlinks met so far are pinned, and the last directory
			// reached is made read-only (the user may own it, and so may
			// its sandbox: it could chmod it open otherwise).
			l.Facts.realpath(g.path, "")
			if r != "" {
				add(r, Protect)
			}
			continue
		}
		var st unix.Stat_t
		exists := unix.Lstat(r, &st) == nil
		if g.file && exists && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1 && changeableByUser(&st) {
			return nil, fmt.Errorf("%s (a policy, grants or approver file of jail's) has %d hard links: a sandbox could change it through another of its names; keep one (cp it to a file of its own)", g.path, st.Nlink)
		}
		if g.file && !exists {
			// A missing file is guarded by its directory, so that it
			// cannot be created either.
			r = filepath.Dir(r)
			exists = unix.Lstat(r, &st) == nil
		}
		if !exists && len(showing(ms, mounts, srcs, r)) > 0 {
			err := os.MkdirAll(r, 0o700)
			if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EROFS) || errors.Is(err, unix.EPERM) {
				// Not creatable now, yet a sandbox owning a directory on
				// the way could chmod it: the nearest existing one is
				// made read-only instead.
				l.Facts.realpath(g.path, resolvedOrNone(g.path))
				if a := nearestExisting(r); a != "" {
					add(a, Protect)
				}
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("guarded path %s: %w", g.path, err)
			}
			r2, _, err := resolveWalk(g.path)
			if g.file && err == nil {
				r2 = filepath.Dir(r2)
			}
			if err != nil || r2 != r {
				return nil, fmt.Errorf("guarded path %s changed while it was created", g.path)
			}
		}
		l.Facts.realpath(g.path, resolvedOrNone(g.path))
		if _, err := os.Lstat(r); err == nil {
			add(r, final)
		}
	}
	return out, nil
}

// changeableByUser reports whether the caller, and so its sandbox (which
// holds no capability), may write the inode st, or chmod it writable.
func changeableByUser(st *unix.Stat_t) bool {
	return int(st.Uid) == os.Getuid() || st.Mode&0o022 != 0
}

// nearestExisting is p or its closest ancestor that exists.
func nearestExisting(p string) string {
	for a := p; ; a = filepath.Dir(a) {
		if _, err := os.Lstat(a); err == nil {
			return a
		}
		if a == "/" {
			return ""
		}
	}
}

// source is a place where a writable bind shows a part of a file system:
// the bind's source, or a host mount inside it (a directory mounted
// there, perhaps the home under another name), as the device and the path
// within that file system, with where it appears below the bind's
// destination.
type source struct {
	m         Mount
	view      string // relative to m.Dest
	dev, path string
}

// fsMount is one mount of /proc/self/mountinfo: its device (major:minor),
// the path of its root within that file system, and its mountpoint.
type fsMount struct{ dev, root, point string }

func readMounts() []fsMount {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []fsMount
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 {
			out = append(out, fsMount{dev: f[2], root: unescapeMount(f[3]), point: unescapeMount(f[4])})
		}
	}
	return out
}

// fsPath maps a resolved host path to its file system and its path within
// it, through the mount that shows it (the deepest mountpoint containing
// it; of several at one place, the last mounted). No path is stat'ed, so
// a dead mount (an unanswered FUSE server) cannot hang jail here.
func fsPath(mounts []fsMount, p string) (dev, path string, ok bool) {
	best := -1
	for i, m := range mounts {
		if pathWithin(p, m.point) && (best < 0 || len(m.point) >= len(mounts[best].point)) {
			best = i
		}
	}
	if best < 0 {
		return "", "", false
	}
	m := mounts[best]
	return m.dev, filepath.Join(m.root, strings.TrimPrefix(strings.TrimPrefix(p, m.point), "/")), true
}

// writableSources lists what every writable bind of ms shows: its source
// and each host mount inside it.
func writableSources(ms []Mount, mounts []fsMount) []source {
	var out []source
	for _, m := range ms {
		if m.Kind != Bind || !m.Writable {
			continue
		}
		if dev, path, ok := fsPath(mounts, m.Source); ok {
			out = append(out, source{m: m, dev: dev, path: path})
		}
		for _, mt := range mounts {
			if mt.point != m.Source && pathWithin(mt.point, m.Source) {
				out = append(out, source{m: m, view: strings.TrimPrefix(strings.TrimPrefix(mt.point, m.Source), "/"), dev: mt.dev, path: mt.root})
			}
		}
	}
	return out
}

// unescapeMount decodes the octal escapes of a mountinfo path (\040).
func unescapeMount(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// view is a writable bind through which a guarded host path shows, and
// the path's place relative to the bind's destination.
type view struct {
	m   Mount
	rel string
}

// showing returns the writable binds through which the host path o is
// visible and writable in the sandbox: o's file system and path lie
// beneath one of their sources (whatever the name the host gives either),
// and no deeper mount of the sandbox covers where it appears.
func showing(ms []Mount, mounts []fsMount, srcs []source, o string) []view {
	dev, path, ok := fsPath(mounts, o)
	if !ok {
		return nil
	}
	var out []view
	seen := map[string]bool{}
	for _, sc := range srcs {
		if sc.dev != dev || !pathWithin(path, sc.path) {
			continue
		}
		rel := filepath.Join(sc.view, strings.TrimPrefix(strings.TrimPrefix(path, sc.path), "/"))
		if rel == "." {
			rel = ""
		}
		at := filepath.Join(sc.m.Dest, rel)
		deepest := sc.m
		for _, c := range ms {
			if len(c.Dest) > len(deepest.Dest) && pathWithin(at, c.Dest) {
				deepest = c
			}
		}
		if deepest.Dest == sc.m.Dest && !seen[at] {
			seen[at] = true
			out = append(out, view{sc.m, rel})
		}
	}
	return out
}

// resolveWalk resolves p as the kernel would, component by component,
// also where its tail does not exist yet (a missing part is kept as
// named, after every symlink before it, dangling ones included, has been
// followed; a ".." after a missing component leaves the last existing
// directory as the result). It returns the result and every symlink it
// followed, and, when a component that is not a directory stands in the
// way, that component as the result. On an error, the symlinks followed
// until then are returned with it.
func resolveWalk(p string) (string, []string, error) {
	var objects []string
	// Not cleaned first: ".." after a symlink is the symlink target's
	// parent, as the kernel resolves it.
	todo := strings.Split(p, "/")
	cur := "/"
	for links := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		var st unix.Stat_t
		err := unix.Lstat(next, &st)
		if errors.Is(err, unix.ENOENT) {
			if slices.Contains(todo, "..") {
				return cur, objects, nil
			}
			return filepath.Join(append([]string{next}, todo...)...), objects, nil
		}
		if err != nil {
			return cur, objects, err
		}
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			if links++; links > 40 {
				return cur, objects, unix.ELOOP
			}
			t, err := os.Readlink(next)
			if err != nil {
				return cur, objects, err
			}
			objects = append(objects, next)
			if filepath.IsAbs(t) {
				cur = "/"
			}
			todo = append(strings.Split(t, "/"), todo...)
		case st.Mode&unix.S_IFMT != unix.S_IFDIR && len(todo) > 0:
			// A file where a directory should be: covering it keeps the
			// sandbox from putting a directory there.
			return next, objects, nil
		default:
			cur = next
		}
	}
	return cur, objects, nil
}

// resolvedOrNone is p resolved, or "" when it does not exist (a
// realpath fact that must keep failing).
func resolvedOrNone(p string) string {
	r, err := ResolvePath(p, "/", "")
	if err != nil {
		return ""
	}
	return r
}

// userBind resolves an extra path given by the user. The source is the
// resolved path; the destination is the path as given, so the command
// finds it where the user named it.
func userBind(p string, writable bool, facts *Facts) (Mount, error) {
	if !filepath.IsAbs(p) {
		return Mount{}, errors.New("must be an absolute path")
	}
	src, err := ResolvePath(p, "/", "")
	if err != nil {
		return Mount{}, err
	}
	facts.realpath(p, src)
	if src == "/" {
		return Mount{}, errors.New("binding the whole root is not a sandbox")
	}
	return Mount{Kind: Bind, Source: src, Dest: filepath.Clean(p), Writable: writable, Exec: true}, nil
}

// sortMounts orders mounts parents first (by depth), keeping the given
// order among equals, and covering kinds (hide, protect) after the trees
// they cover.
func sortMounts(ms []Mount) {
	rank := func(m Mount) int {
		d := strings.Count(m.Dest, "/") * 2
		if m.Kind == Hide || m.Kind == Protect || m.Kind == Pin {
			d++
		}
		return d
	}
	sort.SliceStable(ms, func(i, j int) bool { return rank(ms[i]) < rank(ms[j]) })
}

// protect walks each protected path beneath the workspace without following
// symlinks and picks what to cover: the path itself if it exists, the first
// component that is a symlink or a file, or a placeholder directory made
// at the first missing component. Every directory on the way is pinned
// (a mountpoint cannot be renamed), so the protected name cannot be moved
// aside with its parent and rebuilt. A glob in the last component
// (*.code-workspace) protects the names that match at launch.
func protect(ws string, rels []string, ph *Placeholders, facts *Facts) ([]Mount, error) {
	wsfd, err := unix.Open(ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	defer unix.Close(wsfd)
	var plain, globs []string
	for _, r := range rels {
		r = filepath.Clean(r)
		if filepath.IsAbs(r) || r == "." || r == ".." || strings.HasPrefix(r, "../") {
			return nil, fmt.Errorf("protected path %q must be relative to the workspace and stay inside it", r)
		}
		dir, base := filepath.Split(r)
		switch {
		case hasGlob(dir):
			return nil, fmt.Errorf("protected path %q: a glob may only be in its last component", r)
		case hasGlob(base):
			globs = append(globs, r)
		default:
			plain = append(plain, r)
		}
	}
	var out []Mount
	var dests []string
	covered := func(r string) bool {
		for _, d := range dests {
			if within(filepath.Join(ws, r), d) {
				return true
			}
		}
		return false
	}
	one := func(r string) error {
		if covered(r) {
			return nil // a protected parent (or its placeholder) covers it
		}
		ms, err := protectOne(wsfd, ws, r, ph, facts)
		if err != nil {
			return fmt.Errorf("protected path %s: %w", r, err)
		}
		dests = append(dests, ms[len(ms)-1].Dest)
		out = append(out, ms...)
		return nil
	}
	// Globs are matched before any placeholder exists: a pattern that
	// matches a placeholder's name (lefthook* and lefthook.yml) would
	// record it as a match, which the plan cache, checking the facts
	// before it makes placeholders, would never find again.
	matches := map[string][]string{}
	for _, g := range globs {
		dir, pat := filepath.Split(g)
		matches[g] = matchIn(wsfd, filepath.Clean(dir), pat)
	}
	for _, r := range plain {
		if err := one(r); err != nil {
			return nil, err
		}
	}
	for _, g := range globs {
		dir, pat := filepath.Split(g)
		dir = filepath.Clean(dir)
		if covered(dir) {
			continue
		}
		names := matches[g]
		facts.glob(filepath.Join(ws, dir), pat, names)
		for _, n := range names {
			if err := one(filepath.Join(dir, n)); err != nil {
				return nil, err
			}
		}
	}
	// Deepest covers win: a protected parent's mount already covers a
	// child; a pin at a protected object's place is that object's mount.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Dest < out[j].Dest })
	var ms []Mount
	seen := map[string]bool{}
	for _, m := range out {
		if seen[m.Dest] {
			continue
		}
		coveredByProtect := false
		for _, d := range dests {
			coveredByProtect = coveredByProtect || (m.Dest != d && within(m.Dest, d)) || (m.Kind == Pin && m.Dest == d)
		}
		if coveredByProtect {
			continue
		}
		seen[m.Dest] = true
		ms = append(ms, m)
	}
	return ms, nil
}

// hasGlob reports whether a path holds glob syntax.
func hasGlob(p string) bool { return strings.ContainsAny(p, "*?[") }

// matchIn lists the names in the directory rel beneath wsfd (opened
// without following symlinks; none when it cannot be opened) that match
// pat, sorted.
func matchIn(wsfd int, rel, pat string) []string {
	if rel == "." {
		rel = ""
	}
	var fd int
	var err error
	if rel == "" {
		fd, err = unix.Openat(wsfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	} else {
		fd, err = openDirIn(wsfd, rel)
	}
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), rel)
	all, _ := f.Readdirnames(-1)
	f.Close()
	var names []string
	for _, n := range all {
		if ok, _ := filepath.Match(pat, n); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// protectOne returns the mounts protecting r: a Pin for each directory
// on the way, then the Protect of what stands for r, each with the
// identity the init checks. Each component it looks at is recorded in
// facts: its type decides.
func protectOne(wsfd int, ws, r string, ph *Placeholders, facts *Facts) ([]Mount, error) {
	for attempt := 0; ; attempt++ {
		ms, err := protectWalk(wsfd, ws, r, ph, facts)
		// A name that appeared between the walk and the mkdir (a
		// concurrent run made its placeholder there): walk again, the
		// other run's placeholder is then taken over.
		if errors.Is(err, errAppeared) && attempt < 3 {
			continue
		}
		return ms, err
	}
}

func protectWalk(wsfd int, ws, r string, ph *Placeholders, facts *Facts) ([]Mount, error) {
	parts := strings.Split(r, "/")
	var ms []Mount
	for i := range parts {
		prefix := strings.Join(parts[:i+1], "/")
		abs := filepath.Join(ws, prefix)
		fd, err := openIn(wsfd, prefix)
		if errors.Is(err, unix.ENOENT) {
			facts.fileType(abs, 0)
			p, err := ph.create(wsfd, prefix)
			if err != nil {
				return nil, err
			}
			facts.placeholder(abs)
			return append(ms, Mount{Kind: Protect, Dest: abs, Dev: p.dev, Ino: p.ino}), nil
		}
		if err != nil {
			return nil, err
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil {
			return nil, err
		}
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		if isDir {
			// Another run's placeholder stands for this component: rely
			// on it (the plan then depends on that run: not cached).
			if p, ok, err := ph.takeOver(wsfd, prefix); err != nil {
				return nil, err
			} else if ok {
				facts.Unsure()
				return append(ms, Mount{Kind: Protect, Dest: abs, Dev: p.dev, Ino: p.ino}), nil
			}
		}
		facts.fileType(abs, st.Mode)
		last := i == len(parts)-1
		if last || !isDir {
			// The path itself, or a symlink or file in its way: covering
			// it covers everything the protected path could become.
			if !last && st.Mode&unix.S_IFMT != unix.S_IFLNK && st.Mode&unix.S_IFMT != unix.S_IFREG {
				return nil, fmt.Errorf("%s is neither a directory, a file nor a symlink", prefix)
			}
			return append(ms, Mount{Kind: Protect, Dest: abs, Dev: st.Dev, Ino: st.Ino}), nil
		}
		ms = append(ms, Mount{Kind: Pin, Dest: abs, Dev: st.Dev, Ino: st.Ino})
	}
	return nil, fmt.Errorf("protected path %q is empty", r)
}

// devNodes are the device files of the minimal /dev.
func devNodes() []string { return []string{"null", "zero", "full", "random", "urandom", "tty"} }

// openIn opens rel beneath dirfd without following any symlink, the final
// component included: a symlink there is returned as itself.
func openIn(dirfd int, rel string) (int, error) {
	return unix.Openat2(dirfd, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}
