//go:build linux

package launch

import (
	"testing"

	"github.com/jail-sandbox/jail/confine"
	"github.com/jail-sandbox/jail/policy"
)

func TestSpecNet(t *testing.T) {
	if specNet(policy.NetHost) != confine.NetHost || specNet(policy.NetProxy) != confine.NetNone || specNet(policy.NetTransparent) != confine.NetNone {
		t.Fatal("specNet: only host shares the host's network")
	}
}
