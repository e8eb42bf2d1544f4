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
