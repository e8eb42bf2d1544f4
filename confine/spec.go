package confine

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
)

// MountKind says how one path of the new root is made.
type MountKind string

// The mount kinds. Each names one way a path of the sandbox's view is made;
// the child applies them in Spec order, parents before children.
const (
	// Bind binds a host path (Source, already resolved by the supervisor)
	// at Dest, read-only unless Writable.
	Bind MountKind = "bind"
	// Tmpfs mounts an empty private tmpfs at Dest (private /tmp, $HOME).
	Tmpfs MountKind = "tmpfs"
	// Hide covers Dest with an empty read-only object of the same type, so a
	// secret inside a bound tree (/etc/shadow) reads as empty.
	Hide MountKind = "hide"
	// Protect covers Dest, inside a writable bind, with a read-only view of
	// itself; a symlink at Dest is covered by an empty read-only file, so it
	// can be neither followed nor replaced.
	Protect MountKind = "protect"
	// Pin mounts Dest, inside a writable bind, onto itself: a mountpoint
	// can be neither renamed nor removed, and a pinned symlink still
	// resolves (the guard of jail's own paths, Layout.Guarded).
	Pin MountKind = "pin"
	// Symlink creates a symlink at Dest pointing to Source (merged /usr
	// layouts: /bin -> usr/bin).
	Symlink MountKind = "symlink"
	// File creates a file of jail's own at Dest, in the sandbox's own
	// tmpfs (the home), with Source as its content: the sandbox-side git
	// config that includes the user's.
	File MountKind = "file"
	// Proc mounts a fresh /proc of the sandbox's pid namespace.
	Proc MountKind = "proc"
	// Dev mounts a minimal /dev: null, zero, full, random, urandom, tty,
	// a private devpts with ptmx, and a private /dev/shm (of Size bytes).
	Dev MountKind = "dev"
	// Overlay mounts an overlay at Dest whose lower layer is the host
	// directory Source (read-only) and whose upper and work directories
	// are Upper and Work: the sandbox's changes land in Upper, never in
	// Source (a git directory, which jail adopts from Upper afterwards).
	Overlay MountKind = "overlay"
)

// Mount is one entry of the sandbox's file-system view.
type Mount struct {
	Kind MountKind `json:"kind"`
	// Source is the host path for Bind and the lower layer of Overlay
	// (absolute, no symlink in any component) and the link target for
	// Symlink.
	Source string `json:"source,omitempty"`
	// Upper and Work are an Overlay's upper and work directories: host
	// paths on one file system, outside every sandbox's view.
	Upper string `json:"upper,omitempty"`
	Work  string `json:"work,omitempty"`
	// Dest is the absolute path inside the sandbox.
	Dest string `json:"dest"`
	// Writable makes a Bind or Tmpfs writable; everything else is read-only.
	Writable bool `json:"writable,omitempty"`
	// Exec allows executing files under Dest (Landlock's execute right);
	// system directories, the workspace and /tmp have it.
	Exec bool `json:"exec,omitempty"`
	// Size bounds a Tmpfs (its size= option), or a Dev's /dev/shm, in
	// bytes; zero leaves the kernel's default, half of the memory.
	Size int64 `json:"size,omitempty"`
	// Dev and Ino, when Ino is not 0, are the identity of the object the
	// supervisor resolved: Source for Bind, Dest for Hide, Protect and
	// Pin. The init mounts nothing else: a name a concurrent sandbox
	// swapped (renameat2 RENAME_EXCHANGE) between the supervisor's
	// resolution and the mount fails the start instead of binding or
	// covering another object. A Hide with an identity whose Dest has
	// vanished is an error too; one without may find nothing to hide
	// (secrets that exist on some systems only, outside writable trees).
	Dev uint64 `json:"dev,omitempty"`
	Ino uint64 `json:"ino,omitempty"`
}

// NetMode is the network the sandbox gets.
type NetMode string

// Network modes handled by confine. Proxy modes build on NetNone: the
// child opens the proxy's listening sockets inside the fresh namespace (see Spec.Sockets).
const (
	NetNone NetMode = "none"
	NetHost NetMode = "host"
)

// Layer names one confinement layer, for error reports and degraded modes.
type Layer string

// The layers a launch sets up; each may be named in Spec.AllowDegraded.
const (
	LayerUserNS   Layer = "userns"
	LayerLandlock Layer = "landlock"
	LayerSeccomp  Layer = "seccomp"
	LayerCgroup   Layer = "cgroup"
)

// RLimit is one resource limit applied to the command.
type RLimit struct {
	Resource int    `json:"resource"`
	Cur      uint64 `json:"cur"`
	Max      uint64 `json:"max"`
}

// Spec is everything the child needs to become the sandbox. It is built and
// validated by the supervisor, compiled into a plan (plan_linux.go), and the
// plan travels to the child over an inherited pipe, never in argv or the
// environment.
type Spec struct {
	// Argv is the command; Argv[0] is looked up in the sandbox's PATH.
	Argv []string `json:"argv"`
	// Env is the command's whole environment (already filtered).
	Env []string `json:"env"`
	// Dir is the command's working directory inside the sandbox.
	Dir string `json:"dir"`
	// UID and GID are the ids inside the sandbox; the supervisor maps them
	// to its own ids.
	UID int `json:"uid"`
	GID int `json:"gid"`
	// Hostname is the sandbox's host name (uts namespace).
	Hostname string `json:"hostname"`
	// Mounts build the new root, in order.
	Mounts []Mount `json:"mounts"`
	// Net is the network mode; anything but NetHost gets a fresh namespace.
	Net NetMode `json:"net"`
	// OffDNS, when set, answers the command's name lookups at once in a
	// sandbox without network (see OffDNS). It needs Net NetNone and no
	// socket of Sockets on 127.0.0.1:53.
	OffDNS *OffDNS `json:"off_dns,omitempty"`
	// ConnectPorts, when not nil, limits TCP connect to these ports with
	// Landlock (ABI >= 4); the proxy modes use it.
	ConnectPorts []uint16 `json:"connect_ports"` // nil and empty differ: empty allows no port
	// Seccomp are the compiled filter programs (see CompileSeccomp),
	// installed in order.
	Seccomp []Program `json:"seccomp"`
	// Sockets are listening sockets the child opens inside the sandbox's
	// network namespace (after loopback is up) and hands to the supervisor
	// (Cmd.Sockets): the egress proxy of the network modes serves on them,
	// with no process of its own inside.
	Sockets []Socket `json:"sockets,omitempty"`
	// RLimits are applied to the command before execve.
	RLimits []RLimit `json:"rlimits,omitempty"`
	// AllowDegraded names layers the caller accepts to run without.
	AllowDegraded []Layer `json:"allow_degraded,omitempty"`
	// Hold makes a sandbox ahead of its command: Start returns once pid 1
	// is confined and waiting, and Cmd.Exec gives it the command (Argv,
	// Env and Dir are then taken from Exec's arguments).
	Hold bool `json:"hold,omitempty"`
	// Foreground makes the command the terminal's foreground process group
	// (set when jail itself is in the foreground of a terminal on stdin).
	Foreground bool `json:"foreground,omitempty"`
	// PTY says the command's stdin is the slave of a pseudo-terminal jail
	// relays for (Terminal): the init makes it the command's controlling
	// terminal, in a session of its own. Foreground is then false.
	PTY bool `json:"pty,omitempty"`
}

// Program is one seccomp program; the plan carries it in the kernel's own
// struct sock_filter layout.
type Program []SockFilter

// MarshalBinary is the program in the kernel's struct sock_filter layout.
func (p Program) MarshalBinary() ([]byte, error) {
	raw := make([]byte, 8*len(p))
	for i, f := range p {
		b := raw[i*8:]
		binary.NativeEndian.PutUint16(b[0:], f.Code)
		b[2], b[3] = f.Jt, f.Jf
		binary.NativeEndian.PutUint32(b[4:], f.K)
	}
	return raw, nil
}

// programFromBytes reads instructions in the kernel's layout.
func programFromBytes(raw []byte) (Program, error) {
	if len(raw)%8 != 0 {
		return nil, fmt.Errorf("seccomp program of %d bytes is not whole instructions", len(raw))
	}
	p := make(Program, len(raw)/8)
	for i := range p {
		b := raw[i*8:]
		p[i] = SockFilter{Code: binary.NativeEndian.Uint16(b[0:]), Jt: b[2], Jf: b[3], K: binary.NativeEndian.Uint32(b[4:])}
	}
	return p, nil
}

// OffDNS is the name service of a sandbox without network. Without it a
// lookup fails with a temporary error (the host's name server has no route
// from the sandbox), which tools such as npm retry for minutes. With it,
// the sandbox's pid 1 answers every query on 127.0.0.1:53 at once with
// NXDOMAIN, a final answer, and /etc/resolv.conf is covered by an empty
// file so that every resolver asks there (no nameserver line means
// 127.0.0.1 to glibc, musl and Go alike).
type OffDNS struct {
	// Notice, if set, is reported once per sandbox, for the first A or
	// AAAA query of a name with a dot, with every "{name}" replaced by the
	// name (lower-cased; only letters, digits, '-', '_' and '.'; other
	// names are not reported). Printable ASCII without '"' or '\', at
	// most 400 bytes. The caller gets it through Cmd.Notice; the plan
	// cache prints it on stderr.
	Notice string `json:"notice,omitempty"`
}

// Socket is one listening socket of Spec.Sockets.
type Socket struct {
	// Network is "tcp" or "udp".
	Network string `json:"network"`
	// Addr is a loopback address with a fixed port ("127.0.0.1:3128"): the
	// namespace is the sandbox's own, so no port can be taken already, and
	// the command's environment can name it before the sandbox exists.
	Addr string `json:"addr"`
}

// SockFilter is one classic BPF instruction of a seccomp program.
type SockFilter struct {
	Code uint16 `json:"c"`
	Jt   uint8  `json:"t"`
	Jf   uint8  `json:"f"`
	K    uint32 `json:"k"`
}

// Degraded reports whether the caller accepted running without l.
func (s *Spec) Degraded(l Layer) bool {
	for _, d := range s.AllowDegraded {
		if d == l {
			return true
		}
	}
	return false
}

// Validate checks the Spec's shape: absolute clean paths, a known mount kind
// for every entry, and no mount hidden under a later one.
func (s *Spec) Validate() error {
	if !s.Hold && (len(s.Argv) == 0 || s.Argv[0] == "") {
		return fmt.Errorf("spec: no command given")
	}
	if !isCleanAbs(s.Dir) {
		return fmt.Errorf("spec: working directory %q must be an absolute clean path", s.Dir)
	}
	for i, m := range s.Mounts {
		if !isCleanAbs(m.Dest) || m.Dest == "/" {
			return fmt.Errorf("spec: mount %d: destination %q must be an absolute clean path other than /", i, m.Dest)
		}
		switch m.Kind {
		case Bind:
			if !isCleanAbs(m.Source) {
				return fmt.Errorf("spec: mount %d: bind source %q must be an absolute clean path", i, m.Source)
			}
		case Overlay:
			for _, p := range []string{m.Source, m.Upper, m.Work} {
				if !isCleanAbs(p) {
					return fmt.Errorf("spec: mount %d: overlay layer %q must be an absolute clean path", i, p)
				}
			}
		case Symlink:
			if m.Source == "" {
				return fmt.Errorf("spec: mount %d: symlink %s has no target", i, m.Dest)
			}
		case Tmpfs, Hide, Protect, Pin, Proc, Dev, File:
		default:
			return fmt.Errorf("spec: mount %d: unknown kind %q", i, m.Kind)
		}
		// A later mount at or above an earlier one would cover it: the
		// earlier entry would silently do nothing.
		for _, later := range s.Mounts[i+1:] {
			if later.Kind != Protect && later.Kind != Hide && later.Kind != Pin && within(m.Dest, later.Dest) {
				return fmt.Errorf("spec: mount %s (%s) is covered by the later mount %s (%s): list parents first", m.Dest, m.Kind, later.Dest, later.Kind)
			}
		}
	}
	switch s.Net {
	case NetNone, NetHost:
	default:
		return fmt.Errorf("spec: unknown network mode %q (want none or host)", s.Net)
	}
	if d := s.OffDNS; d != nil {
		if s.Net != NetNone {
			return fmt.Errorf("spec: OffDNS needs the sandbox's own network namespace")
		}
		if len(d.Notice) > 400 {
			return fmt.Errorf("spec: OffDNS notice longer than 400 bytes")
		}
		for i := 0; i < len(d.Notice); i++ {
			if c := d.Notice[i]; c < ' ' || c >= 0x7f || c == '"' || c == '\\' {
				return fmt.Errorf("spec: OffDNS notice %q: printable ASCII without quotes or backslashes only", d.Notice)
			}
		}
	}
	for _, so := range s.Sockets {
		if s.OffDNS != nil && so.Network == "udp" && strings.HasSuffix(so.Addr, ":53") {
			return fmt.Errorf("spec: socket %s: OffDNS answers on port 53 itself", so.Addr)
		}
		if so.Network != "tcp" && so.Network != "udp" {
			return fmt.Errorf("spec: socket %s: network %q (want tcp or udp)", so.Addr, so.Network)
		}
		ap, err := netip.ParseAddrPort(so.Addr)
		if err != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 {
			return fmt.Errorf("spec: socket %q: want a loopback address with a fixed port", so.Addr)
		}
		if s.Net == NetHost {
			return fmt.Errorf("spec: sockets need the sandbox's own network namespace, not the host's")
		}
	}
	return nil
}

func isCleanAbs(p string) bool {
	return p != "" && filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0)
}

// within reports whether p is root or lies beneath it. Both must be clean
// and absolute.
func within(p, root string) bool {
	if root == "/" {
		return true
	}
	return p == root || strings.HasPrefix(p, root+"/")
}

// More layer names used in error reports.
const (
	LayerMount  Layer = "mount"
	LayerPrivs  Layer = "privileges"
	LayerNet    Layer = "network"
	LayerLimits Layer = "limits"
	LayerExec   Layer = "exec"
)
