// Package testutil holds what the module's tests share instead of copying:
// finding host processes by their command line, waiting for a condition
// with [Eventually] instead of a fixed sleep, and a DNS server for test
// names. It is imported by tests only and imports nothing of the module.
package testutil
