package testutil

import "time"

// Eventually polls cond until it holds or timeout passed, and reports
// whether it held. It starts at a millisecond and backs off to 50ms, so a
// condition that is true at once costs nothing and a slow machine only
// makes the wait longer, never the test flaky the way a fixed sleep does.
func Eventually(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	wait := time.Millisecond
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(wait)
		wait = min(2*wait, 50*time.Millisecond)
	}
}
