//go:build linux

package confine

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Operations of the plan; plan_linux.c carries them out in order. The
// numbers are shared with the C enum (jail_linux.h) and must not change meaning.
const (
	opEnd      = 0
	opDumpable = 1
	opHostname = 2
	opLoopback = 3
	opSockets  = 4
	opPrivate  = 5
	opSource   = 6
	opNewRoot  = 7
	opBind     = 8
	opTmpfs    = 9
	opHide     = 10
	opProtect  = 11
	opSymlink  = 12
	opProc     = 13
	opDev      = 14
	opPivot    = 15
	opNNP      = 16
	opLandlock = 17
	opCloexec  = 18
	opCaps     = 19
	opSeccomp  = 20
	opExec     = 21
	opUnshare  = 22
	opLock     = 23
	opHold     = 24
	opPin      = 25
	opDNS      = 26
	opOverlay  = 27
	opFile     = 28
	// opMore ends a plan's first part: the rest comes on fd 5 within the
	// u32 milliseconds it carries. Only the plan cache's run sends one
	// (fast_linux.c), never a compiled plan.
	opMore = 29
)

// Mount attributes (linux/mount.h).
const (
	attrRdonly = 0x1
	attrNosuid = 0x2
	attrNodev  = 0x4
)

const planMagic = "JAILPLN1"

// plan is the encoder of the child's instructions: every value native
// endian, every string length-prefixed and NUL-terminated.
type plan struct{ b []byte }

func (p *plan) u32(v uint32) { p.b = binary.NativeEndian.AppendUint32(p.b, v) }
func (p *plan) u64(v uint64) { p.b = binary.NativeEndian.AppendUint64(p.b, v) }
func (p *plan) op(o uint32)  { p.u32(o) }
func (p *plan) str(s string) {
	p.u32(uint32(len(s)))
	p.b = append(p.b, s...)
	p.b = append(p.b, 0)
}
func (p *plan) bytes(b []byte) {
	p.u32(uint32(len(b)))
	p.b = append(p.b, b...)
}

// compilePlan turns a validated Spec into the child's instructions. Every
// decision the child would otherwise make (which mountpoints to create,
// which Landlock rights a rule carries on this kernel, which layers are
// skipped) is made here, where it is tested; the child only executes.
// abi is the kernel's Landlock ABI (0: none).
// planHeader is the first part of the plan: enough for the child to create
// its namespaces and fork pid 1 while the supervisor prepares the rest.
// Its size is fixed (planHeaderSize) so the child reads exactly it.
// namespaceFlags are the namespaces the sandbox of s is made of: every
// sandbox's, and a network namespace unless the caller asked for the
// host's network by name.
func namespaceFlags(s *Spec) uint64 {
	flags := uint64(cloneFlags)
	if s.Net != NetHost {
		flags |= unix.CLONE_NEWNET
	}
	return flags
}

func planHeader(s *Spec, hostUID, hostGID int) []byte {
	p := &plan{b: []byte(planMagic)}
	p.op(opUnshare)
	p.u64(namespaceFlags(s))
	p.u32(uint32(s.UID))
	p.u32(uint32(hostUID))
	p.u32(uint32(s.GID))
	p.u32(uint32(hostGID))
	return p.b
}

// planHeaderSize is len(planHeader(...)): PLAN_HEADER_SIZE in
// jail_linux.h, which the init reads exactly that much of first.
const planHeaderSize = 8 + 4 + 8 + 4*4

// compilePlanBody is the rest of the plan, which pid 1 carries out.
func compilePlanBody(s *Spec, abi int) ([]byte, error) {
	body, _, err := compilePlan(s, abi)
	return body, err
}

// compilePlan is compilePlanBody that also says where the exec operation
// starts: body[:setup] is what a plan cache entry keeps (fast_linux.go),
// as each run brings its own command. setup is len(body) for a held
// sandbox, which has no exec operation.
func compilePlan(s *Spec, abi int) (body []byte, setup int, err error) {
	body, setup, _, err = compilePlanIDs(s, abi)
	return body, setup, err
}

// compilePlanIDs is compilePlan that also returns, for each Protect
// mount, where in the body its identity (device, then inode: two u64s)
// is: a cached run makes its placeholders afresh and writes their
// identities there (fast_linux.c).
func compilePlanIDs(s *Spec, abi int) (body []byte, setup int, ids map[string]int, err error) {
	ids = map[string]int{}
	body, err = compileSetup(s, abi, ids)
	if err != nil || s.Hold {
		return body, len(body), ids, err
	}
	p := &plan{b: body}
	if err := p.exec(s); err != nil {
		return nil, 0, nil, err
	}
	return p.b, len(body), ids, nil
}

// identity writes a mount's expected device and inode (0, 0: not checked).
func (p *plan) identity(m Mount) {
	p.u64(m.Dev)
	p.u64(m.Ino)
}

// compileSetup is every operation of the body before the command's; the
// offset of each Protect mount's identity is recorded in ids.
func compileSetup(s *Spec, abi int, ids map[string]int) ([]byte, error) {
	p := &plan{}
	p.op(opHostname)
	p.str(s.Hostname)
	if s.Net != NetHost {
		p.op(opLoopback)
	}
	if s.OffDNS != nil {
		p.op(opDNS)
		p.str(s.OffDNS.Notice)
	}
	if len(s.Sockets) > 0 {
		p.op(opSockets)
		p.u32(uint32(len(s.Sockets)))
		for _, so := range s.Sockets {
			ap, err := netip.ParseAddrPort(so.Addr)
			if err != nil || !ap.Addr().Is4() {
				return nil, fmt.Errorf("spec: socket %q: want an IPv4 loopback address and port", so.Addr)
			}
			udp := uint32(0)
			if so.Network == "udp" {
				udp = 1
			}
			a4 := ap.Addr().As4()
			p.u32(udp)
			p.b = append(p.b, a4[:]...) // network byte order, as sin_addr wants
			p.u32(uint32(ap.Port()))
		}
	}

	// Every host object is opened before the new root covers /tmp.
	p.op(opPrivate)
	src := map[int]uint32{}
	next := uint32(0)
	for i, m := range s.Mounts {
		switch m.Kind {
		case Bind:
			p.op(opSource)
			p.u32(next)
			p.str(m.Source)
			p.identity(m)
			src[i] = next
			next++
		case Overlay:
			// Three sources in a row: lower, upper, work.
			src[i] = next
			// The lower is checked (a tree a sandbox may write holds it);
			// upper and work are jail's own.
			for j, path := range []string{m.Source, m.Upper, m.Work} {
				p.op(opSource)
				p.u32(next)
				p.str(path)
				if j == 0 {
					p.identity(m)
				} else {
					p.identity(Mount{})
				}
				next++
			}
		}
	}
	devBase := next
	for i, m := range s.Mounts {
		if m.Kind == Dev {
			for _, n := range devNodes() {
				p.op(opSource)
				p.u32(next)
				p.str("/dev/" + n)
				p.identity(Mount{})
				next++
			}
			src[i] = devBase
			break
		}
	}
	if next > 256 {
		return nil, fmt.Errorf("spec: %d bind sources; at most 256", next)
	}
	p.op(opNewRoot)

	// Destinations under a bound host tree must already exist there:
	// creating a mountpoint would write to the host.
	var hostTrees []Mount
	insideHost := func(dest string) bool {
		for _, d := range hostTrees {
			if within(dest, d.Dest) {
				return true
			}
		}
		return false
	}
	// ontoItself reports whether a bind's destination, inside a bound host
	// tree, is its own source seen through the deepest such tree: the init
	// then checks that the object there is the source it opened.
	ontoItself := func(m Mount) bool {
		var deepest *Mount
		for i := range hostTrees {
			if within(m.Dest, hostTrees[i].Dest) && (deepest == nil || len(hostTrees[i].Dest) >= len(deepest.Dest)) {
				deepest = &hostTrees[i]
			}
		}
		// An overlay shows its own inodes, not its lower's.
		if deepest == nil || deepest.Kind != Bind {
			return false
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(m.Dest, deepest.Dest), "/")
		return filepath.Join(deepest.Source, rel) == m.Source
	}
	for i, m := range s.Mounts {
		switch m.Kind {
		case Bind:
			attr := uint64(attrNosuid | attrNodev)
			if !m.Writable {
				attr |= attrRdonly
			}
			p.op(opBind)
			p.u32(src[i])
			p.str(m.Dest)
			p.u64(attr)
			inside := insideHost(m.Dest)
			p.u32(boolU32(!inside))
			p.u32(boolU32(inside && m.Ino != 0 && ontoItself(m)))
			hostTrees = append(hostTrees, m)
		case Tmpfs:
			if insideHost(m.Dest) {
				return nil, fmt.Errorf("spec: tmpfs at %s inside a bound host tree: use hide", m.Dest)
			}
			p.op(opTmpfs)
			p.str(m.Dest)
			p.u32(boolU32(m.Writable))
			p.u64(uint64(max(m.Size, 0)))
		case Hide:
			p.op(opHide)
			p.str(m.Dest)
			p.identity(m)
		case Protect:
			p.op(opProtect)
			p.str(m.Dest)
			if ids != nil {
				ids[m.Dest] = len(p.b)
			}
			p.identity(m)
		case Pin:
			p.op(opPin)
			p.str(m.Dest)
			p.identity(m)
		case Overlay:
			if !insideHost(m.Dest) {
				return nil, fmt.Errorf("spec: overlay at %s outside a bound host tree", m.Dest)
			}
			p.op(opOverlay)
			p.u32(src[i])
			p.u32(src[i] + 1)
			p.u32(src[i] + 2)
			p.str(m.Dest)
			hostTrees = append(hostTrees, m)
		case Symlink:
			if insideHost(m.Dest) {
				return nil, fmt.Errorf("spec: symlink at %s inside a bound host tree", m.Dest)
			}
			p.op(opSymlink)
			p.str(m.Source)
			p.str(m.Dest)
		case File:
			if insideHost(m.Dest) {
				return nil, fmt.Errorf("spec: file at %s inside a bound host tree", m.Dest)
			}
			p.op(opFile)
			p.str(m.Dest)
			p.bytes([]byte(m.Source))
		case Proc:
			p.op(opProc)
			p.str(m.Dest)
		case Dev:
			p.op(opDev)
			p.str(m.Dest)
			for j := range devNodes() {
				p.u32(devBase + uint32(j))
			}
			p.u64(uint64(max(m.Size, 0)))
		}
	}
	if s.OffDNS != nil {
		// Last, over whatever the mounts put there: with no nameserver
		// line, every resolver asks 127.0.0.1, where pid 1 answers.
		p.op(opHide)
		p.str("/etc/resolv.conf")
		p.identity(Mount{})
	}
	p.op(opPivot)
	p.op(opLock)
	// Not dumpable from here on (after op_lock, which must still open its
	// own /proc/self/uid_map): the command never sees a dumpable pid 1.
	p.op(opDumpable)
	p.op(opNNP)

	if err := planLandlock(p, s, abi); err != nil {
		return nil, err
	}
	p.op(opCloexec)
	p.op(opCaps)
	if len(s.Seccomp) == 0 && !s.Degraded(LayerSeccomp) {
		return nil, &LayerError{Layer: LayerSeccomp, Stage: "seccomp", Msg: "no filter compiled", Fix: seccompFix}
	}
	for _, prog := range s.Seccomp {
		raw, err := prog.MarshalBinary()
		if err != nil {
			return nil, err
		}
		p.op(opSeccomp)
		p.bytes(raw)
	}

	if s.Hold {
		p.op(opHold)
	}
	return p.b, nil
}

// exec adds the command: the last operation of a plan, or all of what a
// held sandbox is sent by Cmd.Exec.
func (p *plan) exec(s *Spec) error {
	for _, a := range append(append([]string{s.Dir}, s.Argv...), s.Env...) {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("spec: argument or variable %q contains a NUL byte", a)
		}
	}
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return fmt.Errorf("spec: no command given")
	}
	p.op(opExec)
	p.u32(uint32(len(s.Argv)))
	for _, a := range s.Argv {
		p.str(a)
	}
	p.u32(uint32(len(s.Env)))
	for _, e := range s.Env {
		p.str(e)
	}
	p.str(s.Dir)
	// 0: a session of its own, no terminal; 1: a job of the caller's
	// session, the terminal's foreground group; 2: a session of its own
	// on jail's pty (TERM_* in pid1_linux.c).
	switch {
	case s.PTY:
		p.u32(2)
	default:
		p.u32(boolU32(s.Foreground))
	}
	if len(s.RLimits) > 16 {
		return fmt.Errorf("spec: %d rlimits; at most 16", len(s.RLimits))
	}
	p.u32(uint32(len(s.RLimits)))
	for _, rl := range s.RLimits {
		p.u32(uint32(rl.Resource))
		p.u64(rl.Cur)
		p.u64(rl.Max)
	}
	return nil
}

// planLandlock adds the Landlock operation for this kernel's ABI, or
// refuses when the Spec needs what the kernel cannot do.
func planLandlock(p *plan, s *Spec, abi int) error {
	if abi <= 0 {
		if s.Degraded(LayerLandlock) {
			return nil
		}
		return &LayerError{Layer: LayerLandlock, Stage: "landlock", Msg: "Landlock is not available in this kernel", Fix: landlockFix}
	}
	handled := landlockFSRights(abi)
	var net, scoped uint64
	if s.ConnectPorts != nil {
		if abi < 4 {
			if !s.Degraded(LayerLandlock) {
				return &LayerError{Layer: LayerLandlock, Stage: "landlock", Msg: fmt.Sprintf("TCP port rules need Landlock ABI 4, this kernel has %d", abi),
					Fix: "upgrade to Linux 6.7 or later, or run with --allow-degraded=landlock (the network namespace still confines traffic)"}
			}
		} else {
			net = llConnectTCP
		}
	}
	if abi >= 6 {
		// Abstract unix sockets have no path, so mounts cannot hide the
		// host's; scoping stops them, and signals to processes outside.
		scoped = llScopeAbstractUnix | llScopeSignal
	}
	rules := landlockRules(s)
	p.op(opLandlock)
	p.u64(handled)
	p.u64(net)
	p.u64(scoped)
	p.u32(uint32(len(rules)))
	for _, r := range rules {
		p.u64(r.Access & handled)
		p.str(r.Path)
	}
	if net == 0 {
		p.u32(0)
		return nil
	}
	p.u32(uint32(len(s.ConnectPorts)))
	for _, port := range s.ConnectPorts {
		p.u64(uint64(port))
	}
	return nil
}

func boolU32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
