// Package home keeps the sandbox's persistent home directories: one per
// workspace, under $XDG_DATA_HOME/jail/homes (~/.local/share/jail/homes),
// bound at $HOME in every run of that workspace, so the caches of Go, npm,
// pip and cargo and an agent's own state last between runs. A home is
// named after its workspace's identity (resolved path, device and inode),
// so two workspaces never share one, and a directory deleted and made
// again under the same name starts afresh.
//
// Everything here works by descriptor beneath the homes directory: jail's
// own directories (jail, homes, each home) are opened without following a
// symlink and used only when they belong to the user, and removal
// (jail clean) unlinks beneath held directory descriptors, so a sandbox
// that owns the inside of its home cannot turn a removal into one of
// something else. docs/home.md has the user-facing rules.
package home
