//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxNamesEscaped: names the sandbox chooses reach jail's own
// messages on the caller's stderr (the terminal, usually): a repository it
// made and jail reduced, an editor file it made and jail moved aside, a
// protected path the EBUSY hint names, a file in .git the adoption summary
// lists as dropped. Each name carries OSC 52 (sets the clipboard), a
// title sequence, CR and a newline that would start a line passing for
// jail's own. Judged on what the host's terminal would receive: no ESC,
// BEL, CR or C1 byte from the sandbox, no forged line, and the name
// shown escaped (docs/terminal.md, "jail's own messages").
func TestSandboxNamesEscaped(t *testing.T) {
	needGit(t)
	// The name, as the shell's printf makes it, and as jail must show it.
	const made = `x\033]52;c;ZWNobyBwd24K\007\r\njail: forged\302\233y`
	const shown = `x\x1b]52;c;ZWNobyBwd24K\x07\x0d\x0ajail: forged\u009by`
	forEachPath(t, func(t *testing.T, r runner) {
		for _, c := range []struct {
			name, script string
			setup        func(ws string)
			want         string // what the line jail prints says
			shown        string // the name as it shows, when not as shown says
		}{
			{name: "repository reduced", script: `git init -q "$(printf '` + made + `')"`, want: "were reduced to what runs nothing"},
			{name: "editor file moved aside", script: `mkdir -p "$(printf '` + made + `')/.vscode"`, want: "were moved aside"},
			{name: "EBUSY hint", script: `mv "$(printf '` + made + `')/.vscode" elsewhere`, want: "Device or resource busy: jail holds it in place",
				// The sandbox's init escapes in C, every byte outside printable ASCII.
				shown: `x\x1b]52;c;ZWNobyBwd24K\x07\x0d\x0ajail: forged\xc2\x9by`,
				setup: func(ws string) {
					if err := os.MkdirAll(filepath.Join(ws, "x\x1b]52;c;ZWNobyBwd24K\x07\r\njail: forged\u009by", ".vscode"), 0o755); err != nil {
						t.Fatal(err)
					}
					r.own(t, ws)
				}},
			{name: "adoption summary", script: `printf x > ".git/$(printf '` + made + `')"`, want: "git: dropped",
				setup: func(ws string) { r.gitRepo(t, ws) }},
		} {
			t.Run(c.name, func(t *testing.T) {
				ws := r.dir(t, "jail-it-ws-")
				if c.setup != nil {
					c.setup(ws)
				}
				res := r.sh(t, ws, c.script)
				var line string
				for _, l := range strings.Split(res.stderr, "\n") {
					if strings.HasPrefix(l, "jail: ") && strings.Contains(l, c.want) {
						line = l
					}
				}
				if line == "" {
					t.Fatalf("no line saying %q:\n%q", c.want, res.stderr)
				}
				want := shown
				if c.shown != "" {
					want = c.shown
				}
				if !strings.Contains(line, want) {
					t.Errorf("the name is not shown escaped (want %q in it):\n%q", want, line)
				}
				jailLines := strings.Join(filterLines(res.stderr, "jail: "), "\n")
				if strings.ContainsAny(jailLines, "\x1b\x07\r\u009b") {
					t.Errorf("a control byte the sandbox chose reached jail's messages:\n%q", res.stderr)
				}
				if strings.Contains(res.stderr, "\njail: forged") || strings.HasPrefix(res.stderr, "jail: forged") {
					t.Errorf("the sandbox's name began a line of jail's:\n%q", res.stderr)
				}
			})
		}
	})
}

// TestToolOutputInert: jail tool prints its result for a person; what the
// command wrote reaches the terminal inside JSON with every control
// character escaped, C1 (CSI as U+009B) and DEL included.
func TestToolOutputInert(t *testing.T) {
	forEach(t, func(t *testing.T, r runner) {
		ws := r.dir(t, "jail-it-ws-")
		pol := filepath.Join(r.dir(t, "jail-it-cfg-"), "p.toml")
		r.writeFile(t, pol, "[approval]\nauto_approve = [\"bash\"]\n[audit]\nenabled = false\n")
		res := r.jail(t, call{dir: ws, args: []string{"tool", "--policy", pol, "-w", ws, "bash", `{"command":"printf 'a\\302\\2332Jb\\033]52;c;eA==\\007c\\177d'"}`}})
		mustExit(t, res, 0)
		if strings.ContainsAny(res.stdout, "\x1b\x07\x7f\u009b") {
			t.Errorf("a control character reached the terminal raw: %q", res.stdout)
		}
		if !strings.Contains(res.stdout, `a\u009b2Jb\u001b]52;c;eA==\u0007c\u007fd`) {
			t.Errorf("the output is not in the result, escaped: %q", res.stdout)
		}
	})
}

// filterLines are the lines of s that begin with prefix (jail's own; the
// command's stderr is the command's).
func filterLines(s, prefix string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}
