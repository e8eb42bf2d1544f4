package confine

import (
	"fmt"
	"strings"
)

// BuildEnv is a sandbox's environment: the variables of caller (KEY=VALUE
// entries, jail's own environment) whose names pass matches (a name, or a
// prefix ending in *), then extra in order (jail run's --env, the
// policy's env_set): NAME passes the caller's value when it has one,
// NAME=VALUE sets one, in place of a passed value of the same name. PATH
// defaults to /usr/local/bin:/usr/bin:/bin and TMPDIR to the sandbox's own
// /tmp. The plan cache builds a cached run's environment with its C twin,
// jail_build_env in twins_linux.c, which must agree with it.
func BuildEnv(caller []string, pass []string, extra []string) ([]string, error) {
	keep := func(name string) bool {
		for _, p := range pass {
			if p == name || strings.HasSuffix(p, "*") && strings.HasPrefix(name, strings.TrimSuffix(p, "*")) {
				return true
			}
		}
		return false
	}
	vals := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	callerVal := map[string]string{}
	for _, kv := range caller {
		k, v, _ := strings.Cut(kv, "=")
		callerVal[k] = v
		if keep(k) {
			set(k, v)
		}
	}
	for _, e := range extra {
		k, v, hasVal := strings.Cut(e, "=")
		if k == "" || strings.ContainsAny(k, "\x00") {
			return nil, fmt.Errorf("--env %q: want NAME or NAME=VALUE", e)
		}
		if !hasVal {
			cv, ok := callerVal[k]
			if !ok {
				continue // asked to pass what is not set: nothing to pass
			}
			v = cv
		}
		set(k, v)
	}
	if _, ok := vals["PATH"]; !ok {
		set("PATH", "/usr/local/bin:/usr/bin:/bin")
	}
	// TMPDIR names the sandbox's own /tmp unless the caller set it with
	// --env NAME=VALUE (a path it bound with --rw, say).
	if _, ok := vals["TMPDIR"]; !ok {
		set("TMPDIR", "/tmp")
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vals[k])
	}
	return env, nil
}
