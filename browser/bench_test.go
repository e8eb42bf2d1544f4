package browser

import (
	"fmt"
	"testing"
)

// The figures of docs/browser.md: go test ./browser -run '^$' -bench . -benchtime 10x
// (real Chromium in its container; skipped without Docker and the image).

// BenchmarkFirstSnapshotCold is a new agent's first snapshot: the container's start,
// Chromium's, the sandbox check, a navigation and the snapshot.
func BenchmarkFirstSnapshotCold(b *testing.B) {
	site := app(b)
	for i := 0; i < b.N; i++ {
		tl := newTooling(b, b.TempDir(), b.TempDir(), site)
		tl.ok("a", "browser_navigate", fmt.Sprintf(`{"url":"http://page.test:%d/"}`, site.addr.Port()))
		tl.ok("a", "browser_snapshot", `{}`)
		b.StopTimer()
		tl.bs.Close()
		b.StartTimer()
	}
}

// warm is a tooling whose agent's browser runs and shows the test app.
func warm(b *testing.B) (*tooling, string) {
	site := app(b)
	tl := newTooling(b, b.TempDir(), b.TempDir(), site)
	tl.ok("a", "browser_navigate", fmt.Sprintf(`{"url":"http://page.test:%d/"}`, site.addr.Port()))
	return tl, tl.ok("a", "browser_snapshot", `{}`).Content
}

// BenchmarkFirstSnapshotWarm is a snapshot after a navigation in a running browser: what a
// task's first look costs when the agent's container is kept warm.
func BenchmarkFirstSnapshotWarm(b *testing.B) {
	tl, _ := warm(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tl.ok("a", "browser_navigate", `{"action":"reload"}`)
		tl.ok("a", "browser_snapshot", `{}`)
	}
}

// BenchmarkSnapshot is one snapshot of a loaded page.
func BenchmarkSnapshot(b *testing.B) {
	tl, _ := warm(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tl.ok("a", "browser_snapshot", `{}`)
	}
}

// BenchmarkClick is one click by ref with its report of what changed.
func BenchmarkClick(b *testing.B) {
	tl, snap := warm(b)
	ref := refOf(b, snap, `button "Greet"`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tl.ok("a", "browser_click", fmt.Sprintf(`{"ref":%q}`, ref))
	}
}
