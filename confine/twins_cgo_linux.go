//go:build linux && cgo

package confine

// The C twins of Go functions (twins_linux.c), called from Go so that
// twins_test.go can hold each against its twin on the same inputs. Only
// the tests call these.

/*
#include <stdlib.h>
#include "early_linux.h"
*/
import "C"

import "unsafe"

// cStrings is a NULL-terminated C array of copies of s; free releases it.
func cStrings(s []string) (arr **C.char, free func()) {
	ptrs := C.calloc(C.size_t(len(s)+1), C.size_t(unsafe.Sizeof((*C.char)(nil))))
	a := unsafe.Slice((**C.char)(ptrs), len(s)+1)
	for i, v := range s {
		a[i] = C.CString(v)
	}
	return (**C.char)(ptrs), func() {
		for _, p := range a[:len(s)] {
			C.free(unsafe.Pointer(p))
		}
		C.free(ptrs)
	}
}

// cBuildEnv is jail_build_env, the plan cache's BuildEnv, over the
// caller's environment caller.
func cBuildEnv(caller, pass, extra []string) []string {
	envp, f1 := cStrings(caller)
	defer f1()
	p, f2 := cStrings(pass)
	defer f2()
	x, f3 := cStrings(extra)
	defer f3()
	var n C.uint32_t
	env := C.jail_build_env(envp, p, C.uint32_t(len(pass)), x, C.uint32_t(len(extra)), &n)
	if env == nil {
		return nil
	}
	// The entries it made itself are not freed: this is for tests.
	defer C.free(unsafe.Pointer(env))
	out := make([]string, 0, int(n))
	for _, e := range unsafe.Slice(env, int(n)) {
		out = append(out, C.GoString(e))
	}
	return out
}

// cHMAC is jail_hmac_sha256, the plan cache entry's authentication.
func cHMAC(key [32]byte, msg []byte) [32]byte {
	var out [32]byte
	var m *C.uint8_t
	if len(msg) > 0 {
		m = (*C.uint8_t)(unsafe.Pointer(&msg[0]))
	}
	C.jail_hmac_sha256((*C.uint8_t)(unsafe.Pointer(&key[0])), m, C.size_t(len(msg)), (*C.uint8_t)(unsafe.Pointer(&out[0])))
	return out
}

// cCacheName is jail_cache_name, planCacheName's twin.
func cCacheName(uid int, cwd string, args []string) string {
	var out [32]C.char
	c := C.CString(cwd)
	defer C.free(unsafe.Pointer(c))
	a, free := cStrings(args)
	defer free()
	C.jail_cache_name(&out[0], C.unsigned(uid), c, a, C.int(len(args)))
	return C.GoString(&out[0])
}

// cJSONString is jail_json_string of s in room bytes (line: with
// policy.MarshalLine's escapes).
func cJSONString(s string, line bool, room int) string {
	c := C.CString(s)
	defer C.free(unsafe.Pointer(c))
	buf := C.malloc(C.size_t(room + 1))
	defer C.free(buf)
	l := C.int(0)
	if line {
		l = 1
	}
	w := (*C.char)(buf)
	e := C.jail_json_string(w, (*C.char)(unsafe.Add(buf, room)), c, l)
	return C.GoStringN(w, C.int(uintptr(unsafe.Pointer(e))-uintptr(buf)))
}

// cResultJSON is jail_result_json of r with the policy's hash, and error
// and stage for a run that ended before its command did; ok is false when
// the line does not fit in room bytes.
func cResultJSON(r *Result, policy, errMsg, stage string, room int) (line string, ok bool) {
	var strs []*C.char
	str := func(s string) *C.char {
		c := C.CString(s)
		strs = append(strs, c)
		return c
	}
	defer func() {
		for _, c := range strs {
			C.free(unsafe.Pointer(c))
		}
	}()
	b2i := func(b bool) C.int {
		if b {
			return 1
		}
		return 0
	}
	j := C.struct_jail_result{
		exit_code:     C.int(r.ExitCode),
		signal:        str(r.Signal),
		timed_out:     b2i(r.TimedOut),
		duration_ms:   C.longlong(r.DurationMS),
		max_rss_kb:    C.long(r.MaxRSSKB),
		limits:        str(string(r.Limits)),
		limits_note:   str(r.LimitsNote),
		oom_killed:    b2i(r.OOMKilled),
		pids_limited:  b2i(r.PidsLimited),
		pids_ended:    b2i(r.PidsEnded),
		memory_ended:  b2i(r.MemoryEnded),
		policy_sha256: str(policy),
		error:         str(errMsg),
		stage:         str(stage),
	}
	buf := C.malloc(C.size_t(room + 1))
	defer C.free(buf)
	n := C.jail_result_json((*C.char)(buf), C.size_t(room), &j)
	if n < 0 {
		return "", false
	}
	return C.GoStringN((*C.char)(buf), n), true
}
