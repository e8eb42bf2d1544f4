// Package gitstate carries a sandbox's git changes back into the host's
// git directory without carrying anything that could make the host's git
// run a program later.
//
// # Threat model
//
// Inside a sandbox a git directory is an overlayfs: the host's .git,
// objects/ included, is the read-only lower, a private directory the
// upper. The sandbox can write anything into the upper: hooks, config
// keys that name programs (core.fsmonitor, core.pager, alias.x = !cmd,
// filter.*, include.path, ...), commondir, rebase todo lists with exec
// lines, an index staging a gitlink to a repository it planted or hiding
// a change behind skip-worktree, objects whose content is not what their
// name says, whiteouts over the host's objects, alternates. When the sandbox has ended, jail, with the user's full rights
// and outside any sandbox, calls Adopt, which copies back only an
// allowlist of validated state; everything else is dropped and named in
// the Report. The guarantee: nothing Adopt writes names a program, a
// script, another git directory or another config file, so the host's git
// reading the result runs only what it ran before; and nothing it writes
// changes what the host's git shows or checks out for what the host
// already had.
//
// Which host operations trust which bytes the sandbox wrote, after
// adoption: the host's checkout, reset, stash, diff, log and show read
// objects without checking their hashes, so they trust only objects git
// itself named by their content on the way in (Objects, below), never a
// file the sandbox put under objects/; existing objects are never
// rewritten. git status and git diff trust the index's stat data and
// flags to skip looking at a file, so an adopted index carries neither
// unless they were the host's (Index). git commit trusts the index's
// cache tree, which is never adopted. Refs, reflogs and message files are
// names and text git prints. The work tree itself is not this package's:
// the sandbox writes it live, and the host sees what it wrote.
//
// Every file is opened with openat2 beneath a held directory descriptor
// (RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS), in the upper
// and in the host's git directory; nothing is opened by a path string.
// Symlinks, FIFOs, sockets, devices (other than overlayfs whiteouts),
// hard-linked and oversized files in the upper are never read. The upper's
// listing is bounded (Limits); when a bound is hit nothing is adopted.
//
// # Use
//
//	base, err := gitstate.Take(gitdirFD)            // at launch
//	... the sandbox runs ...
//	rep, err := gitstate.Adopt(gitdirFD, upperFD, base, gitstate.Options{RunID: id})
//	fmt.Fprintln(os.Stderr, "jail:", rep.Summary())
//
// A Snapshot can be kept as bytes (MarshalBinary, UnmarshalSnapshot).
// ReadConfig parses a config file (sections, subsections, keys, values in
// order, includes listed but not followed) for callers that need to find
// core.hooksPath or include targets.
//
// # Objects
//
// The objects the sandbox added (loose objects and packs in the upper's
// objects/) come in first, as from an untrusted remote. Each loose object
// the host does not have is inflated and hashed, and refused when its
// content does not hash to its name; the rest, with the upper's packs'
// entries, becomes one pack stream that jail feeds to the system's git
// (/usr/bin/git, never one found on $PATH) as `git index-pack --strict
// --stdin --fix-thin`, or `git unpack-objects --strict` for fewer than
// 100 loose objects (git's own fetch.unpackLimit). That git runs with a
// fixed environment (no system or global config, GIT_DIR a directory jail
// makes in Options.Scratch with a config of jail's, the host's objects an
// alternate it only reads): it names every object by the hash of its
// content, checks each with fsck's rules, dies on an object whose name the
// host has with other content, and refuses a stream with an object that
// links to one neither in it nor on the host. What it wrote is then moved
// into the host's objects/ by descriptor with RENAME_NOREPLACE (copied
// across file systems, linked in without replacing), a pack's .idx last;
// nothing there is replaced or removed. Whiteouts over the host's objects,
// rewritten copies of them, alternates, commit-graph and every other file
// under objects/ are dropped. When the stream is refused, the Report says
// why and is Incomplete: a ref naming a missing object is not adopted.
//
// # Refs
//
// Refs under refs/ (loose and packed-refs) and the pseudo-refs HEAD,
// ORIG_HEAD, MERGE_HEAD, CHERRY_PICK_HEAD and REVERT_HEAD are adopted when
// their names pass git's check-ref-format rules and their values are an
// object id of the repository's format (SHA-1 or SHA-256) or, for HEAD and
// refs/, "ref: refs/..." (judged by what it resolves to among the host's
// refs: never into refs/jail/, nor to a ref the host lacks; symrefWhy).
// A ref is never made to point at an object the
// host does not have after the objects came in (a loose object or an
// entry of a pack's .idx; alternates are not consulted). Reflog lines
// naming an object the host does not have are left out. FETCH_HEAD is
// not adopted, nor is a deletion of HEAD. Nothing under refs/replace/ is
// added, changed or deleted: git reads the object a replace ref names
// wherever it would read the one its name names (checkout, diff, log,
// show), so one would swap the content of what the host already has.
//
// The comparison is three-way, per ref: the Snapshot (base), the host now,
// and the sandbox's intent, read from the upper alone. A ref counts as
// changed by the sandbox only with evidence in the upper (its loose file
// written or whited out, packed-refs rewritten), so a change the host made
// to the live lower during the run, such as git gc packing refs, is never
// taken for the sandbox's. Only the sandbox changed it: applied. Only the
// host: the host's kept. Both, differently: the host's kept and the
// sandbox's object id stored as refs/jail/<RunID>/<ref minus "refs/">
// (refs/jail/<RunID>/HEAD for a pseudo-ref), reported as a Conflict.
//
// Writes follow git's protocol: "<ref>.lock" created O_EXCL beneath the
// held directory, the value checked again under the lock (so a concurrent
// git or a second adoption makes it a conflict rather than a lost update),
// renameat over the ref. Like git (core.fsync's default) single files are
// not fsynced; one syncfs at the end of Adopt and AdoptNew makes the
// result durable before the caller removes the sandbox's copy. Deleting a packed ref rewrites packed-refs
// under packed-refs.lock, keeping every other line byte for byte.
//
// # Reflogs and messages
//
// Lines the sandbox added to logs/HEAD and logs/refs/... are appended to the
// host's reflogs when each matches git's reflog line format (no control
// characters), except for refs that were dropped or in conflict.
// COMMIT_EDITMSG, MERGE_MSG, SQUASH_MSG, TAG_EDITMSG (text without control
// bytes) and MERGE_MODE ("no-ff" or empty) are adopted: git shows them in
// the host's own editor and runs nothing from them.
//
// # Config
//
// The sandbox's config is compared with the Snapshot's key by key (a key's
// whole list of values is one unit). A key it added, changed or removed
// is applied only when it is on the allowlist (user.name, user.email,
// remote.<name>.url|pushurl|fetch|push|tagopt|prune|prunetags,
// branch.<name>.remote|pushremote|merge|rebase, core.autocrlf|eol|safecrlf,
// init.defaultBranch, pull.rebase|ff, merge.ff, fetch.prune,
// push.default|autoSetupRemote) and its value passes the key's check: URLs
// only for the network transports and scp-like addresses (no ext::, fd::
// or other helper, no file:// or local path, no leading "-"), booleans
// where git would otherwise open an editor, valid ref and remote names.
// A key the host changed too keeps the host's value (a Conflict). Every
// other changed key is dropped and named. The host's file is rewritten
// under config.lock, every untouched byte and the file's mode kept, and
// parsed back before it is renamed into place.
//
// ParseConfig is a complete parser of git's syntax, checked against the
// real git and fuzzed.
//
// # Index
//
// The sandbox's index is adopted only when the host's index is unchanged
// since the Snapshot (same content; checked again under index.lock), the
// host's HEAD (after the refs were adopted) names the commit the sandbox's
// HEAD named (else the index would show changes undoing the difference),
// and ParseIndex accepts it: versions 2, 3 and 4, the checksum
// verified, entries in git's order with modes git writes, every path one
// git's verify_path accepts on any platform (no ".git" component in any
// spelling), and a sparse index ("sdir") refused. A split index ("link":
// most entries in sharedindex.<hash>) is first made whole with Unsplit,
// its shared index read from the upper or else the host's git directory;
// the host's git splits it again on its next write when core.splitIndex
// is set. An index that stages a gitlink (mode 160000) the
// host's index did not have is refused unless Options.Submodules names
// its path: the host's git status would descend into that repository and
// run its core.fsmonitor. What is adopted is the entries alone: every
// extension is left out (the cache tree, which git commit would write as
// the commit's tree whatever the entries say; the untracked cache and the
// fsmonitor token, which hide files from git status; resolve-undo; the
// offset tables), and git rebuilds its caches. The assume-valid
// (assume-unchanged) and skip-worktree flags are cleared on every entry
// whose path did not have them in the host's index, and the stat data on
// every entry that is not byte for byte the host's, so the host's git
// looks at those files again instead of taking them for unchanged. An
// index whose changed entries name an object the host does not have is
// refused. The Report names the flags and the extensions other than
// caches it cleared.
//
// # New repositories
//
// AdoptNew takes a whole repository the sandbox made in a private
// directory (git init, git clone) into the host's empty .git: objects
// (verified as above, the new repository's shallow boundary given to the
// verifying git), refs, packed-refs,
// reflogs, shallow, the message files, the index (same gitlink rule), and
// a config jail writes itself with only the repository-format keys
// (core.repositoryformatversion, core.filemode, core.bare = false,
// core.logallrefupdates, extensions.objectformat for SHA-256) and the
// allowlisted keys. HEAD is written last. No hooks, no info/, nothing else.
//
// # What it does not cover
//
// Verifying objects costs a run of git over what the sandbox added:
// nothing for a run that wrote no object, tens of milliseconds for a
// commit, seconds for a large clone (docs/git.md has the figures). A ref
// may be adopted that points at a commit
// whose tree holds a gitlink; the index rule does not see it until the
// host checks that commit out, so the repository such a gitlink names must
// itself be harmless (jail reduces repositories the sandbox made with
// AdoptNew). An overlay mounted with metacopy would leave data-less files
// in the upper (holes that read as zeros); they are refused as bad values.
//
// # Never adopted
//
// hooks/, info/, commondir, gitdir, config.worktree, worktrees/, modules/,
// rebase-merge/, rebase-apply/, sequencer/, FETCH_HEAD, shallow, the
// sharedindex.* files themselves (read into the index), lock
// files, whiteouts and rewrites of the host's objects, objects/info/
// (alternates included), commit-graph files, and any name not listed
// above.
package gitstate
