// Package container is jail's one way into Docker, shared by the Docker-backed tool
// categories (browser, desktop): the Engine API client, the hardened container every call
// runs in, the labels that mark it as jail's, the clean-up of orphans, the lifecycle of warm
// containers and the collection of a container's output into the audit log. Everything else
// in jail stays daemon-free: only these categories import this package, and the fences
// (internal/fence) keep it out of confine, policy, netns and tools.
//
// # The engine
//
// [Connect] talks to the engine named by DOCKER_HOST (else the local socket) through the
// Engine API with github.com/moby/moby/client, the API version negotiated with the engine
// (20.10 speaks 1.41; the client goes down to 1.40). No CLI is run and no CLI output is
// parsed. An engine that does not answer is an [UnavailableError], which says what to do;
// the tools that need one report it from their readiness check, so `jail check` lists them
// as unready with that reason and every other tool works as before.
//
// # The container
//
// [Engine.Start] makes one from a [Spec], always with:
//
//   - no network at all (network mode none), no published port;
//   - a non-root user (the caller's uid, or 65534 for root);
//   - every capability dropped, no-new-privileges;
//   - a read-only root, /tmp and /dev/shm as size-capped tmpfs;
//   - memory (no swap), CPU and pids limits from [docker] policy;
//   - jail's own init ([InitMain]) as pid 1, not dumpable, then the command;
//   - a seccomp profile: Docker's default plus only what Chromium's namespace sandbox
//     needs (clone with namespace flags, unshare, chroot), embedded in the binary
//     ([SeccompProfile]); Docker's default alone with [Spec.DefaultSeccomp];
//   - no log driver: Docker stores nothing; jail counts what the container writes;
//   - labels: [LabelManaged], the owner's uid, the supervisor that made it, the kind, and
//     the call's correlation ids.
//
// The container's stdio, attached before it starts, is the only channel to it: stdout and
// stderr arrive multiplexed on one stream and are split with stdcopy, stdin is written
// through the same connection.
//
// # Lifetime, and why a container cannot outlive jail
//
//	jail (supervisor) ── attach (one HTTP connection, StdinOnce) ── dockerd
//	                                                                  │ container stdin
//	                                              jail __container-init (pid 1)
//	                                                                  │ stdin relayed
//	                                                                  └─ the command
//
// The container is created with StdinOnce: when the one attached client goes away, for any
// reason including kill -9 of jail, dockerd closes the container's stdin. jail's init, bound
// read-only into every container at [BinaryPath], relays its stdin to the command; at EOF it
// closes the command's stdin, waits [Spec.Grace] for it to exit, then kills its process
// group and exits, which ends the container (AutoRemove deletes it). The guarantee therefore
// holds for any command, not only for one that behaves. At start, [Engine.RemoveOrphans]
// deletes containers carrying jail's label whose supervisor no longer runs (an engine that
// was stopped while a container ran, say).
//
// [Pool] keeps containers per call, per task or per agent ([docker] lifecycle); a kept one
// ends after [docker] idle_grace without a call.
//
// # Output and the audit log
//
// When a container ends, one record (type "container") goes to [Engine.Audit] with the
// correlation ids (agent, session, task, the requests it served), the exit, the duration and
// the byte and line counts of stdout and stderr; with [docker] raw_logs also the tail of its
// stderr, bounded by log_bytes. Collection waits at most [logDrainTimeout] for the stream's
// end.
package container
