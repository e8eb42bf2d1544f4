// Package agent applies an agent profile (policy.Profile: claude, codex,
// gemini, aider, opencode, or one a policy defines) to a run's layout: the
// agent's own state directories from the host, read-write, with its
// settings, hooks and instructions inside them read-only, and the files it
// rewrites by renaming over them seeded into the workspace's persistent
// home instead of bound. docs/agents.md has the decisions and why.
package agent
