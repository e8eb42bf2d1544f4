package confine

import (
	"strings"
	"testing"
)

// validSpec is the smallest Spec Validate accepts, with one mount of every
// kind in an order a Layout would produce.
func validSpec() *Spec {
	return &Spec{
		Argv: []string{"/bin/true"},
		Dir:  "/work",
		Net:  NetNone,
		Mounts: []Mount{
			{Kind: Bind, Source: "/usr", Dest: "/usr", Exec: true},
			{Kind: Symlink, Source: "usr/bin", Dest: "/bin"},
			{Kind: Proc, Dest: "/proc"},
			{Kind: Dev, Dest: "/dev"},
			{Kind: Tmpfs, Dest: "/tmp", Writable: true, Exec: true},
			{Kind: Bind, Source: "/srv/work", Dest: "/work", Writable: true, Exec: true},
			{Kind: Hide, Dest: "/usr/secret"},
			{Kind: Protect, Dest: "/work/.git"},
		},
	}
}

func TestValidate(t *testing.T) {
	if err := validSpec().Validate(); err != nil {
		t.Fatalf("the valid spec was refused: %v", err)
	}
	cases := []struct {
		name   string
		modify func(s *Spec)
		want   string // substring of the error; "" means valid
	}{
		{"nil argv", func(s *Spec) { s.Argv = nil }, "no command"},
		{"empty argv0", func(s *Spec) { s.Argv = []string{"", "x"} }, "no command"},
		{"empty dir", func(s *Spec) { s.Dir = "" }, "working directory"},
		{"relative dir", func(s *Spec) { s.Dir = "work" }, "working directory"},
		{"unclean dir", func(s *Spec) { s.Dir = "/work/../etc" }, "working directory"},
		{"trailing slash dir", func(s *Spec) { s.Dir = "/work/" }, "working directory"},
		{"relative dest", func(s *Spec) { s.Mounts[0].Dest = "usr" }, "destination"},
		{"unclean dest", func(s *Spec) { s.Mounts[0].Dest = "/usr/./lib" }, "destination"},
		{"dest is root", func(s *Spec) { s.Mounts = []Mount{{Kind: Tmpfs, Dest: "/"}} }, "destination"},
		{"NUL in dest", func(s *Spec) { s.Mounts[2].Dest = "/pro\x00c" }, "destination"},
		{"relative bind source", func(s *Spec) { s.Mounts[0].Source = "usr" }, "bind source"},
		{"empty bind source", func(s *Spec) { s.Mounts[0].Source = "" }, "bind source"},
		{"unclean bind source", func(s *Spec) { s.Mounts[0].Source = "/usr/../etc" }, "bind source"},
		{"symlink without target", func(s *Spec) { s.Mounts[1].Source = "" }, "no target"},
		{"relative symlink target is fine", func(s *Spec) { s.Mounts[1].Source = "../usr/bin" }, ""},
		{"unknown kind", func(s *Spec) { s.Mounts[0].Kind = "aufs" }, `unknown kind "aufs"`},
		{"overlay without layers", func(s *Spec) { s.Mounts[0].Kind = Overlay }, `overlay layer "" must be an absolute clean path`},
		{"empty kind", func(s *Spec) { s.Mounts[0].Kind = "" }, "unknown kind"},
		{"child before parent", func(s *Spec) {
			s.Mounts = []Mount{{Kind: Bind, Source: "/usr/lib", Dest: "/usr/lib"}, {Kind: Bind, Source: "/usr", Dest: "/usr"}}
		}, "covered by the later mount /usr"},
		{"same dest twice", func(s *Spec) {
			s.Mounts = []Mount{{Kind: Tmpfs, Dest: "/tmp"}, {Kind: Bind, Source: "/var/tmp", Dest: "/tmp"}}
		}, "covered by the later mount /tmp"},
		{"tmpfs over the workspace after it", func(s *Spec) {
			s.Mounts = append(s.Mounts, Mount{Kind: Tmpfs, Dest: "/work"})
		}, "covered by the later mount /work"},
		{"protect at the same path is not a cover", func(s *Spec) {
			s.Mounts = append(s.Mounts, Mount{Kind: Protect, Dest: "/work"})
		}, ""},
		{"hide above an earlier mount is not a cover", func(s *Spec) {
			s.Mounts = append(s.Mounts, Mount{Kind: Hide, Dest: "/usr"})
		}, ""},
		{"sibling with a common prefix is not covered", func(s *Spec) {
			s.Mounts = []Mount{{Kind: Bind, Source: "/usr/lib", Dest: "/usr/lib"}, {Kind: Bind, Source: "/usr/li", Dest: "/usr/li"}}
		}, ""},
		{"empty net", func(s *Spec) { s.Net = "" }, "unknown network mode"},
		{"bridge net", func(s *Spec) { s.Net = "bridge" }, `unknown network mode "bridge"`},
		{"host net", func(s *Spec) { s.Net = NetHost }, ""},
		{"tcp and udp sockets on loopback", func(s *Spec) {
			s.Sockets = []Socket{{Network: "tcp", Addr: "127.0.0.1:3128"}, {Network: "udp", Addr: "[::1]:53"}}
		}, ""},
		{"socket network", func(s *Spec) { s.Sockets = []Socket{{Network: "unix", Addr: "127.0.0.1:1"}} }, `network "unix"`},
		{"socket off loopback", func(s *Spec) { s.Sockets = []Socket{{Network: "tcp", Addr: "0.0.0.0:3128"}} }, "loopback address"},
		{"socket without a port", func(s *Spec) { s.Sockets = []Socket{{Network: "tcp", Addr: "127.0.0.1:0"}} }, "fixed port"},
		{"socket by name", func(s *Spec) { s.Sockets = []Socket{{Network: "tcp", Addr: "localhost:80"}} }, "loopback address"},
		{"off dns", func(s *Spec) { s.OffDNS = &OffDNS{Notice: "jail: {name} is off (--allow {name})"} }, ""},
		{"off dns in the host's namespace", func(s *Spec) { s.Net = NetHost; s.OffDNS = &OffDNS{} }, "own network namespace"},
		{"off dns notice with a quote", func(s *Spec) { s.OffDNS = &OffDNS{Notice: `a "b"`} }, "without quotes"},
		{"off dns notice with a control byte", func(s *Spec) { s.OffDNS = &OffDNS{Notice: "a\x1b[2J"} }, "printable ASCII"},
		{"off dns and a dns socket", func(s *Spec) {
			s.OffDNS = &OffDNS{}
			s.Sockets = []Socket{{Network: "udp", Addr: "127.0.0.1:53"}}
		}, "answers on port 53 itself"},
		{"socket in the host's namespace", func(s *Spec) {
			s.Net = NetHost
			s.Sockets = []Socket{{Network: "tcp", Addr: "127.0.0.1:3128"}}
		}, "own network namespace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := validSpec()
			c.modify(s)
			err := s.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("accepted, want an error containing %q", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

func TestDegraded(t *testing.T) {
	s := &Spec{AllowDegraded: []Layer{LayerCgroup, LayerSeccomp}}
	if !s.Degraded(LayerSeccomp) || !s.Degraded(LayerCgroup) {
		t.Error("a listed layer is not reported as degraded")
	}
	if s.Degraded(LayerLandlock) || (&Spec{}).Degraded(LayerLandlock) {
		t.Error("an unlisted layer is reported as degraded")
	}
}
