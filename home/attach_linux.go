//go:build linux

package home

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/jail-sandbox/jail/confine"
)

// Attach gives layout, when persistent is set, the persistent home of its
// workspace: the home
// under root (Root's result) is opened, made when missing, and bound at
// the caller's home userHome instead of an empty tmpfs. It returns nil,
// and leaves the empty home, when the caller has no home directory or
// the workspace contains the home (the home is then the workspace
// itself). Every sandbox of a workspace gets the same home, those of one
// `jail serve` session at once included: Open and the mountpoints Build
// makes in it tolerate a second sandbox making the same names.
//
// Whatever Attach decides, the homes of other workspaces stay out of
// reach of a sandbox whose binds would show them (a workspace that
// contains the caller's home): root is hidden there.
func Attach(layout *confine.Layout, root, userHome string, persistent bool) (*Home, error) {
	var h *Home
	if st, err := os.Stat(userHome); err == nil && st.IsDir() && root != "" && persistent {
		ws, err := confine.ResolvePath(layout.Workspace, "/", "")
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		if !within(filepath.Clean(userHome), ws) {
			if h, err = Open(root, ws); err != nil {
				return nil, fmt.Errorf("%w (or set [sandbox] home = \"empty\")", err)
			}
			layout.HomeDir = h.Path
		}
	}
	if _, err := os.Lstat(root); err == nil {
		for _, b := range append([]string{layout.Workspace}, append(layout.ReadWrite, layout.ReadOnly...)...) {
			if within(root, b) {
				layout.Hidden = append(layout.Hidden, root)
				break
			}
		}
	}
	return h, nil
}

// within reports whether p is root or beneath it.
func within(p, root string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}
