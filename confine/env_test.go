package confine

import (
	"reflect"
	"testing"
)

func TestBuildEnv(t *testing.T) {
	caller := []string{
		"PATH=/opt/bin:/usr/bin",
		"HOME=/home/u",
		"LANG=C.UTF-8",
		"LC_ALL=de_DE.UTF-8",
		"LC_CTYPE=C",
		"LCX=not-a-locale",
		"LC=no-underscore",
		"AWS_SECRET_ACCESS_KEY=hunter2",
		"GITHUB_TOKEN=ghp_x",
		"TMPDIR=/var/tmp/u",
		"EQ=a=b",
		"EMPTY=",
	}
	pass := []string{"PATH", "HOME", "LANG", "LC_*", "EMPTY", "NOT_SET"}
	cases := []struct {
		name   string
		caller []string
		extra  []string
		want   []string
	}{
		{"pass-list and LC_* wildcard", caller, nil, []string{
			"PATH=/opt/bin:/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=de_DE.UTF-8", "LC_CTYPE=C",
			"EMPTY=", "TMPDIR=/tmp",
		}},
		{"--env NAME passes the caller's value", caller, []string{"GITHUB_TOKEN", "EQ"}, []string{
			"PATH=/opt/bin:/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=de_DE.UTF-8", "LC_CTYPE=C",
			"EMPTY=", "GITHUB_TOKEN=ghp_x", "EQ=a=b", "TMPDIR=/tmp",
		}},
		{"--env NAME=VALUE sets, and overrides a passed value in place", caller, []string{"FOO=bar", "LANG=C", "X=a=b", "Y="}, []string{
			"PATH=/opt/bin:/usr/bin", "HOME=/home/u", "LANG=C", "LC_ALL=de_DE.UTF-8", "LC_CTYPE=C",
			"EMPTY=", "FOO=bar", "X=a=b", "Y=", "TMPDIR=/tmp",
		}},
		{"--env NAME not set in the caller passes nothing", caller, []string{"NOT_SET", "ALSO_NOT_SET"}, []string{
			"PATH=/opt/bin:/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=de_DE.UTF-8", "LC_CTYPE=C",
			"EMPTY=", "TMPDIR=/tmp",
		}},
		{"no PATH gets a default", []string{"HOME=/h"}, nil, []string{
			"HOME=/h", "PATH=/usr/local/bin:/usr/bin:/bin", "TMPDIR=/tmp",
		}},
		{"a later duplicate in the caller wins", []string{"HOME=/a", "HOME=/b"}, nil, []string{
			"HOME=/b", "PATH=/usr/local/bin:/usr/bin:/bin", "TMPDIR=/tmp",
		}},
		{"empty caller", nil, nil, []string{"PATH=/usr/local/bin:/usr/bin:/bin", "TMPDIR=/tmp"}},
	}
	for _, c := range cases {
		got, err := BuildEnv(c.caller, pass, c.extra)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
	for _, bad := range []string{"", "=value", "A\x00B=c"} {
		if env, err := BuildEnv(caller, pass, []string{bad}); err == nil {
			t.Errorf("--env %q accepted: %q", bad, env)
		}
	}
	// A prefix wildcard matches the prefix only, not a name equal to the
	// pattern without its star, nor names that merely contain it.
	got, _ := BuildEnv([]string{"XDG_=1", "XDG_DATA_HOME=/d", "MY_XDG_X=2"}, []string{"XDG_*"}, nil)
	if want := []string{"XDG_=1", "XDG_DATA_HOME=/d", "PATH=/usr/local/bin:/usr/bin:/bin", "TMPDIR=/tmp"}; !reflect.DeepEqual(got, want) {
		t.Errorf("XDG_* wildcard: got %q, want %q", got, want)
	}
}
