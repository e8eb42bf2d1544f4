package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Risk orders what a tool call can do to the world. The zero value is ReadOnly; a tool that
// declares nothing is still classified by the static map, which only ever raises it.
type Risk int

// Risk levels, from the least to the most consequential.
const (
	ReadOnly  Risk = iota // no side effects
	Write                 // changes files inside the confinement
	Exec                  // runs arbitrary code; anything the sandbox allows may happen
	Dangerous             // creates persistent or privileged state; never approved unattended
)

// riskNames is indexed by Risk.
func riskNames() []string { return []string{"read_only", "write", "exec", "dangerous"} }

func (r Risk) String() string {
	if r < ReadOnly || r > Dangerous {
		return fmt.Sprintf("risk(%d)", int(r))
	}
	return riskNames()[r]
}

// ParseRisk accepts read_only, write, exec and dangerous.
func ParseRisk(s string) (Risk, error) {
	if i := slices.Index(riskNames(), s); i >= 0 {
		return Risk(i), nil
	}
	return 0, fmt.Errorf("unknown risk level %q (accepted: %s)", s, strings.Join(riskNames(), ", "))
}

// MarshalText lets risks appear by name in JSON output and audit records.
func (r Risk) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Capabilities name what a tool touches. Security profiles and roles work on capabilities, not
// names, so a tool added later is classified by what it does rather than by what it is called.
const (
	CapFSRead          = "fs.read"
	CapFSWrite         = "fs.write"
	CapProcessExec     = "process.exec"
	CapNetworkOutbound = "network.outbound"
	CapBrowser         = "browser"
	CapDesktop         = "desktop"
)

// Capabilities returns every capability jail knows, in a fixed order.
func Capabilities() []string {
	return []string{CapFSRead, CapFSWrite, CapProcessExec, CapNetworkOutbound, CapBrowser, CapDesktop}
}

// ToolInfo is what the policy needs to know about a tool. The tools package owns the tools; it
// hands their declarations to [Resolve] as a registry slice.
type ToolInfo struct {
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	Risk         Risk     `json:"risk"`
	Capabilities []string `json:"capabilities"`
}

// Catalogue is jail's static risk map: every tool name jail knows, in registry order, with the
// floor of its risk and its capabilities. A tool's own declaration can raise its risk but never
// lower it below this map (see [EffectiveRisk]). The browser_* and desktop_* entries are
// the Docker-backed categories (docs/container.md).
func Catalogue() []ToolInfo {
	r := []string{CapFSRead}
	return []ToolInfo{
		{"read", "read a file in the workspace", ReadOnly, r},
		{"ls", "list a directory", ReadOnly, r},
		{"glob", "find files by pattern", ReadOnly, r},
		{"grep", "search file contents", ReadOnly, r},
		{"write", "create or replace a file atomically", Write, []string{CapFSWrite}},
		{"edit", "replace one exact match in a file", Write, []string{CapFSRead, CapFSWrite}},
		{"bash", "run a shell command in the sandbox", Exec, []string{CapProcessExec}},
		{"bash_output", "read a background bash process's new output", ReadOnly, nil},
		{"bash_kill", "end a background bash process", Write, nil},
		{"web_fetch", "fetch a URL through the egress proxy", ReadOnly, []string{CapNetworkOutbound}},
		// The browser (docs/browser.md): Chromium in a network-less container, each of its
		// requests fetched by jail under [network]. Loading a page runs the page's code, so
		// navigate is exec; acting on a page is write; looking is read-only; evaluate and the
		// WebAuthn authenticator are exec and granted one by one.
		{"browser_navigate", "load a URL in the sandboxed browser", Exec, []string{CapBrowser}},
		{"browser_snapshot", "outline the browser page with element refs", ReadOnly, []string{CapBrowser}},
		{"browser_click", "click an element in the browser", Write, []string{CapBrowser}},
		{"browser_hover", "hover over an element in the browser", Write, []string{CapBrowser}},
		{"browser_type", "type into the browser page", Write, []string{CapBrowser}},
		{"browser_select", "choose options of a select in the browser", Write, []string{CapBrowser}},
		{"browser_press_key", "press a key in the browser page", Write, []string{CapBrowser}},
		{"browser_wait_for", "wait for text in the browser page", ReadOnly, []string{CapBrowser}},
		{"browser_screenshot", "capture the browser page", ReadOnly, []string{CapBrowser}},
		{"browser_tabs", "list, open, select or close browser tabs", Write, []string{CapBrowser}},
		{"browser_console", "read the browser page's console", ReadOnly, []string{CapBrowser}},
		{"browser_network", "list the browser's requests and refusals", ReadOnly, []string{CapBrowser}},
		{"browser_upload", "give a browser file input workspace files", Write, []string{CapBrowser}},
		{"browser_storage_get", "read one localStorage key of an origin", ReadOnly, []string{CapBrowser}},
		{"browser_storage_set", "set one localStorage key of an origin", Write, []string{CapBrowser}},
		{"browser_evaluate", "run JavaScript in the browser page", Exec, []string{CapBrowser}},
		{"browser_webauthn_create", "add a virtual passkey authenticator to the browser", Exec, []string{CapBrowser}},
		{"browser_webauthn_list", "list the virtual authenticator's passkeys", Exec, []string{CapBrowser}},
		{"browser_webauthn_delete", "delete a passkey of the virtual authenticator", Exec, []string{CapBrowser}},
		// The desktop (docs/desktop.md): an app in a network-less container. Launching runs
		// code; input drives that code, so it is exec too; looking is read-only.
		{"desktop_launch", "start an app on the virtual desktop", Exec, []string{CapDesktop, CapProcessExec}},
		{"desktop_screenshot", "capture the virtual desktop", ReadOnly, []string{CapDesktop}},
		{"desktop_click", "click on the virtual desktop", Exec, []string{CapDesktop}},
		{"desktop_move", "move the pointer on the virtual desktop", Exec, []string{CapDesktop}},
		{"desktop_drag", "drag with the pointer on the virtual desktop", Exec, []string{CapDesktop}},
		{"desktop_scroll", "scroll on the virtual desktop", Exec, []string{CapDesktop}},
		{"desktop_type", "type on the virtual desktop", Exec, []string{CapDesktop}},
		{"desktop_key", "press keys on the virtual desktop", Exec, []string{CapDesktop}},
		{"desktop_cursor_position", "where the pointer is on the virtual desktop", ReadOnly, []string{CapDesktop}},
		{"desktop_windows", "list the virtual desktop's windows", ReadOnly, []string{CapDesktop}},
		{"desktop_wait_for_window", "wait for a window on the virtual desktop", ReadOnly, []string{CapDesktop}},
	}
}

// Companion names the tool a tool goes with: bash_output and bash_kill act only on the
// background processes a bash call started, so they are granted exactly when bash is (an
// explicit deny of them still wins). Empty means the tool stands alone.
func Companion(name string) string {
	switch name {
	case "bash_output", "bash_kill":
		return "bash"
	}
	return ""
}

// catalogueEntry returns the static entry for name.
func catalogueEntry(name string) (ToolInfo, bool) {
	for _, t := range Catalogue() {
		if t.Name == name {
			return t, true
		}
	}
	return ToolInfo{}, false
}

func catalogueNames() []string {
	var names []string
	for _, t := range Catalogue() {
		names = append(names, t.Name)
	}
	return names
}

// EffectiveRisk is the stricter of the static map and the tool's own declaration, so a tool
// cannot talk itself down, and a tool unknown to the map keeps whatever it declares.
func EffectiveRisk(t ToolInfo) Risk {
	if s, ok := catalogueEntry(t.Name); ok && s.Risk > t.Risk {
		return s.Risk
	}
	return t.Risk
}

// effectiveCaps is the union of the static and declared capabilities, for the same reason.
func effectiveCaps(t ToolInfo) []string {
	caps := slices.Clone(t.Capabilities)
	if s, ok := catalogueEntry(t.Name); ok {
		for _, c := range s.Capabilities {
			if !slices.Contains(caps, c) {
				caps = append(caps, c)
			}
		}
	}
	return caps
}

// Tool profiles, from the narrowest to the widest.
const (
	ProfileMinimal = "minimal" // read-only file tools
	ProfileCoding  = "coding"  // minimal + write, edit, bash
	ProfileFull    = "full"    // every tool in the registry
)

func profileNames() []string { return []string{ProfileMinimal, ProfileCoding, ProfileFull} }

// profileIncludes reports whether a tool belongs to a profile. minimal and coding are named
// lists; full is everything, including tools registered later.
func profileIncludes(profile, tool string) bool {
	minimal := []string{"read", "ls", "glob", "grep"}
	switch profile {
	case ProfileMinimal:
		return slices.Contains(minimal, tool)
	case ProfileCoding:
		return slices.Contains(minimal, tool) || slices.Contains([]string{"write", "edit", "bash"}, tool)
	case ProfileFull:
		return true
	}
	return false
}

// Security profiles strip tools by capability on top of everything else.
const (
	SecurityPersonal = "personal" // a person at their own machine: nothing extra stripped
	SecurityDaemon   = "daemon"   // unattended service: no process execution, no desktop
	SecurityPublic   = "public"   // strangers drive it: only reading is left
)

func securityNames() []string { return []string{SecurityPersonal, SecurityDaemon, SecurityPublic} }

// securityStrips lists the capabilities a security profile removes.
func securityStrips(profile string) []string {
	switch profile {
	case SecurityDaemon:
		return []string{CapProcessExec, CapDesktop}
	case SecurityPublic:
		return []string{CapProcessExec, CapFSWrite, CapBrowser, CapDesktop, CapNetworkOutbound}
	}
	return nil
}

// UnmarshalText reads a risk by name, so explain's JSON round-trips.
func (r *Risk) UnmarshalText(b []byte) error {
	v, err := ParseRisk(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}
