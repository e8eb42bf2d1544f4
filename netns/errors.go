package netns

import "errors"

// Sentinel errors. Callers match them with errors.Is; the wrapping error says which name or
// entry was at fault.
var (
	// ErrBadName: a host name has control characters, spaces, is over-long, or is otherwise not
	// a plain DNS name or IP literal.
	ErrBadName = errors.New("invalid host name")
	// ErrBadRule: an allow, deny or allow_private entry cannot be used (syntax, bare "*", a
	// wildcard over a public suffix such as "*.com").
	ErrBadRule = errors.New("invalid network rule")
	// ErrDenied: the rules, the address checks or the approval gate refused a connection. The
	// wrapping *DenyError carries the reason.
	ErrDenied = errors.New("connection denied")
	// ErrByteLimit: a connection carried Config.MaxBytes and was cut.
	ErrByteLimit = errors.New("connection byte limit reached")
	// ErrNotLinux: network namespaces, and so Listen, LoopbackUp and socket passing, need
	// Linux.
	ErrNotLinux = errors.New("network namespaces need Linux")
	// errHeaderTooLarge: a proxy request's header block passed maxHeaderBytes.
	errHeaderTooLarge = errors.New("header too large")
	// ErrNeedPrivilege: entering another process's network namespace needs CAP_SYS_ADMIN both
	// over that namespace and in the caller's own user namespace (the kernel's netns_install);
	// an unprivileged supervisor in the initial user namespace does not have the second.
	ErrNeedPrivilege = errors.New("setns into the sandbox network namespace needs CAP_SYS_ADMIN in the supervisor's user namespace")
)

// DenyError is a refused connection and why. Reason is short and safe to put in a header.
type DenyError struct {
	Host   string
	Port   int
	Reason string
}

func (e *DenyError) Error() string { return "netns: " + e.Host + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrDenied) true.
func (e *DenyError) Unwrap() error { return ErrDenied }
