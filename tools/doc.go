// Package tools is jail's tool layer: the Tool contract, the Registry, the
// one path-resolution function, the core tools (read, write, edit, glob,
// grep, ls, bash), the worker that runs them inside a sandbox, and the two
// front ends that route a caller's calls to workers: the JSON-lines server
// (Server.Serve, `jail serve`) and the Model Context Protocol server
// (NewMCPServer over NewLineTransport, `jail mcp`), both through
// Server.Call, so the gate decides their calls alike.
//
// # Where code runs
//
// The supervisor (jail serve, jail mcp, jail tool) validates arguments, asks the
// policy gate, audits and routes; it never opens a path a tool names. Every
// call executes in a worker: the jail binary itself, run as the command of
// an ordinary sandbox (WorkerMain), so a file tool is confined by exactly
// the mounts, Landlock rules and seccomp filter that confine bash.
//
//	supervisor (Server)                    worker (WorkerMain, in a sandbox)
//	-------------------                    ---------------------------------
//	validate args, policy gate
//	{"id":1,"tool":"read",...}  -------->  Resolve(workspace fd, path) with
//	                                       openat2(RESOLVE_BENEATH|NO_MAGICLINKS)
//	                            <--------  {"id":1,"result":{...}}
//	{"cancel":1}                -------->  the call's context is cancelled;
//	                                       bash's whole process tree is killed
//
// # Paths
//
// Every path argument goes through [Resolve]: the kernel resolves it
// beneath the workspace's directory descriptor, so "../", absolute paths
// outside, symlinks that leave and a symlink swapped in mid-call all fail
// with the same "outside the workspace" error, with no window between a
// check and a use.
package tools
