//go:build linux

package launch

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/jail-sandbox/jail/confine"
)

// A sandbox refused for what the workspace holds now does not end a
// server; a layer the machine lacks does.
func TestLastingStartError(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("start a worker: %w", &StartError{125, "cannot start the sandbox: ", &confine.LayerError{Layer: confine.LayerMount, Stage: "plan", Errno: syscall.ESTALE}, ""}), false},
		{&StartError{2, "", errors.New("placeholder appeared"), ""}, false},
		{&StartError{125, "", &confine.LayerError{Layer: confine.LayerUserNS, Stage: "unshare", Errno: syscall.EPERM}, ""}, true},
		{&StartError{125, "", &confine.LayerError{Layer: confine.LayerLandlock, Stage: "landlock"}, ""}, true},
		{errors.New("no worker"), true},
	} {
		if got := lastingStartError(c.err); got != c.want {
			t.Errorf("lastingStartError(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
