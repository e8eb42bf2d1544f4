//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPersistentHomeCleanModes: a sandbox that makes its home's directories unreadable and
// unwritable (a locked directory inside a read-only one) cannot keep `jail clean` from removing
// its home, and what an interrupted removal leaves (.removing-ID-*) is listed by a dry run and
// removed by the next clean of the workspace.
func TestPersistentHomeCleanModes(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-homemodes-")
		r.cleanAfter(t, ws)
		res := r.sh(t, ws, `mkdir -p ~/d/e && touch ~/d/e/f && chmod 000 ~/d/e && chmod 500 ~/d && mkdir -p ~/x/y && chmod 0 ~/x/y ~/x && chmod 0 ~ && echo ok`)
		mustExit(t, res, 0)
		h := r.sandboxHomes(t)[ws]
		if h == "" {
			t.Fatal("no home recorded for the workspace")
		}
		res = r.jail(t, call{dir: ws, args: []string{"clean"}})
		mustExit(t, res, 0)
		if _, err := os.Lstat(h); !os.IsNotExist(err) {
			t.Fatalf("jail clean left %s: %v\n%s%s", h, err, res.stdout, res.stderr)
		}
		homes := filepath.Dir(h)
		if m, _ := filepath.Glob(filepath.Join(homes, ".removing-"+filepath.Base(h)+"-*")); len(m) != 0 {
			t.Fatalf("jail clean left %v", m)
		}

		// An interrupted removal: the home renamed aside, its tree still there.
		res = r.sh(t, ws, `mkdir -p ~/d/e && touch ~/d/e/f && chmod 000 ~/d/e && chmod 500 ~/d && echo ok`)
		mustExit(t, res, 0)
		h = r.sandboxHomes(t)[ws]
		trash := filepath.Join(homes, ".removing-"+filepath.Base(h)+"-00112233")
		if err := os.Rename(h, trash); err != nil {
			t.Fatal(err)
		}
		res = r.jail(t, call{dir: ws, args: []string{"clean", "--all", "--dry-run"}})
		mustExit(t, res, 0)
		if !strings.Contains(res.stdout, trash) || !strings.Contains(res.stdout, "interrupted") {
			t.Fatalf("jail clean --all --dry-run does not list %s:\n%s%s", trash, res.stdout, res.stderr)
		}
		res = r.jail(t, call{dir: ws, args: []string{"clean"}})
		mustExit(t, res, 0)
		if _, err := os.Lstat(trash); !os.IsNotExist(err) {
			t.Fatalf("jail clean left %s: %v\n%s%s", trash, err, res.stdout, res.stderr)
		}
		if _, err := os.Lstat(h + ".json"); !os.IsNotExist(err) {
			t.Fatalf("jail clean left the record %s.json: %v", h, err)
		}
	})
}
