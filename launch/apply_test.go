//go:build linux

package launch

import (
	"slices"
	"strings"
	"testing"

	"github.com/jail-sandbox/jail/policy"
)

func TestApplyAllow(t *testing.T) {
	for _, c := range []struct {
		net, policyMode string
		allow           []string
		wantNet, err    string
	}{
		{"", "", []string{"registry.npmjs.org"}, policy.NetProxy, ""},
		{"", policy.NetNone, []string{"a.example:8443"}, policy.NetProxy, ""},
		{"", policy.NetTransparent, []string{"a.example"}, "", ""},
		{policy.NetTransparent, "", []string{"a.example"}, policy.NetTransparent, ""},
		{policy.NetNone, "", []string{"a.example"}, "", "--net none"},
		{policy.NetHost, "", []string{"a.example"}, "", "--net host"},
		{"", policy.NetHost, []string{"a.example"}, "", `mode = "host"`},
		{"", "", []string{"https://a.example/x"}, "", `--allow "https://a.example/x": a URL is not a host: use --allow a.example`},
		{"", "", []string{"a.example:99999"}, "", "want 1-65535"},
		{"", "", []string{"a.*.example"}, "", "whole first label"},
	} {
		p := &policy.Policy{}
		p.Network.Mode = c.policyMode
		p.Network.Allow = []string{"kept.example"}
		o := &Options{Net: c.net, Allow: c.allow}
		err := applyAllow(o, p)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: error %v, want %q", c, err, c.err)
			}
			continue
		}
		if err != nil || o.Net != c.wantNet || !slices.Equal(p.Network.Allow, append([]string{"kept.example"}, c.allow...)) {
			t.Errorf("%+v: net %q allow %v err %v", c, o.Net, p.Network.Allow, err)
		}
	}
}
