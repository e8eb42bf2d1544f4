// Package policy decides, for every command jail runs and every tool call an agent makes, whether
// it may proceed, under which confinement, and why.
//
// It is the supervisor's side of jail: it parses and validates the one TOML policy file, resolves
// an agent's toolset from its role's remit, grants and denies, classifies risk, runs the command
// guards, drives the approval gate and writes the audit log. It never confines anything itself and
// imports no confinement, Docker or browser code; the lead's confine package receives plain values
// (absolute paths, durations, byte counts) from [Policy].
//
// # Loading
//
// [Load] reads one file strictly: unknown keys, wrong types, bad durations or sizes, relative paths
// where absolute ones are needed and unknown tools, roles, capabilities or risk levels are errors
// that name the file, the line and the key. [LoadLayered] reads the user file and then the
// project file, which is untrusted and may only tighten; every key it tried to widen is returned
// as a [Widening] and ignored. A policy that fails to load never falls back to something more open.
//
// # Deciding
//
// [Resolve] is the one function that turns a policy, a registry and a subject (agent or role) into
// a [Toolset]; `jail policy explain` prints it and the runtime [Gate] enforces it, so what an
// operator reads is what an agent gets. The gate runs the documented approval order (see [Gate]).
//
// # Recording
//
// [Policy.Hash] fingerprints the effective policy; every [AuditRecord] carries it, so a result
// read months later still says which policy produced it.
package policy
