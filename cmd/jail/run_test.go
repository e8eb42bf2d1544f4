//go:build linux

package main

import (
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64 // 0 means refused
	}{
		{"1", 1},
		{"4096", 4096},
		{"1024K", 1024 << 10},
		{"1k", 1 << 10},
		{"512M", 512 << 20},
		{"512m", 512 << 20},
		{"2G", 2 << 30},
		{"8g", 8 << 30},
		{"0", 0},
		{"0M", 0},
		{"-1", 0},
		{"-5G", 0},
		{"M", 0},
		{"G", 0},
		{"1.5G", 0},
		{"2GB", 0},
		{"2T", 0},
		{" 2G", 0},
		{"abc", 0},
	}
	for _, c := range cases {
		got, err := parseSize(c.in)
		switch {
		case c.want == 0 && err == nil:
			t.Errorf("parseSize(%q) = %d, want an error", c.in, got)
		case c.want != 0 && (err != nil || got != c.want):
			t.Errorf("parseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

func TestParseRunFlags(t *testing.T) {
	o, err := parseRunFlags([]string{"-w", "ws", "--ro", "/a", "--ro", "/b", "--env", "X", "--env", "Y=1",
		"--memory", "1G", "--pids", "64", "--timeout", "30s", "--capture", "--output-limit", "10",
		"--allow-degraded", "landlock,seccomp", "--net", "host", "--", "make", "-j4"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.Workdir != "ws" || !reflect.DeepEqual([]string(o.RO), []string{"/a", "/b"}) ||
		!reflect.DeepEqual([]string(o.Env), []string{"X", "Y=1"}) || o.Memory != 1<<30 || o.Pids != 64 ||
		o.Timeout != 30*time.Second || !o.Capture || !o.JSON || o.OutputLimit != 10 || !o.OutputLimitSet ||
		o.Net != "host" || !reflect.DeepEqual(o.Argv, []string{"make", "-j4"}) {
		t.Errorf("parsed %+v", o)
	}
	if o, err := parseRunFlags([]string{"true"}, io.Discard); err != nil || o.OutputLimitSet || o.OutputLimit != 0 || o.JSON {
		t.Errorf("defaults: %+v, %v", o, err)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no command given"},
		{[]string{"--"}, "no command given"},
		{[]string{"--memory", "lots", "--", "true"}, "--memory"},
		{[]string{"--memory", "0", "--", "true"}, "--memory"},
		{[]string{"--pids", "-1", "--", "true"}, "--pids"},
		{[]string{"--timeout", "-1s", "--", "true"}, "--timeout"},
		{[]string{"--output-limit", "-1", "--", "true"}, "--output-limit"},
		{[]string{"--allow-degraded", "userns", "--", "true"}, `--allow-degraded "userns"`},
		{[]string{"--allow-degraded", "landlock,mount", "--", "true"}, `--allow-degraded "mount"`},
		{[]string{"--net", "bridge", "--", "true"}, `--net "bridge"`},
		{[]string{"--no-such-flag", "--", "true"}, "no-such-flag"},
	} {
		_, err := parseRunFlags(c.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.args, err, c.want)
		}
	}
}
