package gitstate

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/git-adoption.md from the tables")

// adoptionDoc renders docs/git-adoption.md from the allowlist itself, so
// the document is the code's own list.
func adoptionDoc() string {
	var b strings.Builder
	b.WriteString(`# What jail adopts from a sandbox's git directory

Generated from ` + "`gitstate/allow.go`" + ` by ` + "`go test ./gitstate -run TestAdoptionDoc -update-docs`" + `;
a test fails when this file and the code disagree. The package doc of ` + "`gitstate`" + ` has the details.

Inside the sandbox a git directory is an overlay: the host's ` + "`.git`" + ` read-only below, a private
directory on top, ` + "`objects/`" + ` included. Nothing the sandbox writes there reaches the host's
` + "`.git`" + ` while it runs. When it ends, jail copies back an allowlist of validated state and names
everything else it dropped, so that nothing the sandbox wrote can make the host's git run a
program later. Repositories made inside from nothing (` + "`git init`" + `, ` + "`git clone`" + `) are adopted the
same way into the host's empty ` + "`.git`" + `, with a config jail writes itself.

## Adopted

- **Objects**: new loose objects (each inflated and hashed: content that does not hash to its
  name is refused) and packs, streamed as one pack into the host's git as from an untrusted
  remote: ` + "`git index-pack --strict`" + ` (` + "`git unpack-objects --strict`" + ` for fewer than 100 loose
  objects), run by jail with no system or global config and a git directory of its own. Git
  names each object by its content, checks it with fsck's rules and checks that every object it
  links to is in the stream or on the host; jail moves the result into the host's ` + "`objects/`" + ` by
  descriptor, never replacing a file there. The host's objects are never rewritten or deleted.
  When the stream is refused, no ref naming one of its objects is adopted and the sandbox's git
  state is kept aside (` + "`kept-<run>`" + ` in jail's state directory).
- **Refs**: ` + "`refs/**`" + ` (loose and ` + "`packed-refs`" + `), ` + "`HEAD`" + `, ` + "`ORIG_HEAD`" + `, ` + "`MERGE_HEAD`" + `,
  ` + "`CHERRY_PICK_HEAD`" + `, ` + "`REVERT_HEAD`" + `: valid ref names, values an object id the host has (after the objects
  came in) or ` + "`ref: refs/...`" + `. A symbolic value is judged by what it finally resolves to among the
  host's refs once the others were adopted: one through ` + "`refs/jail/`" + ` (where the held commits are; the
  sandbox can read the run's name), to a ref the host does not have (an unborn branch is kept only
  as a new repository's ` + "`HEAD`" + `), or longer than git follows is dropped and named, for ` + "`HEAD`" + `,
  branches and a linked worktree's ` + "`HEAD`" + `, in every repository adopted. Three-way against the state at launch: a ref only the sandbox changed is
  applied; one only the host changed keeps the host's value; one both changed keeps the host's,
  and the sandbox's is saved as ` + "`refs/jail/<run>/<ref>`" + ` and reported as a conflict. Written with
  git's lock protocol, so a git running at the same time is safe. Nothing under
  ` + "`refs/replace/`" + ` is added, changed or deleted: git would show and check out the object a
  replace ref names in place of the one the host has.
- **Reflogs** (` + "`logs/**`" + `): new lines in git's reflog format naming objects the host has, appended.
- **Messages**: ` + "`COMMIT_EDITMSG`" + `, ` + "`MERGE_MSG`" + `, ` + "`SQUASH_MSG`" + `, ` + "`TAG_EDITMSG`" + ` (text),
  ` + "`MERGE_MODE`" + `.
- **Index**: when the host's index did not change during the run, the host's ` + "`HEAD`" + ` names the
  commit the sandbox's did, and it parses (versions 2-4,
  checksum, paths git accepts), and it stages no new gitlink (a nested repository whose
  ` + "`core.fsmonitor`" + ` the host's ` + "`git status`" + ` would run) except for submodules jail adopted.
  A split index (` + "`core.splitIndex`" + `) is read with the entries of its shared index
  (` + "`sharedindex.*`" + `, the sandbox's or the host's) and adopted written whole (git splits it
  again on its next write); a sparse index is refused. What could hide a change from the host's ` + "`git status`" + ` and
  ` + "`git diff`" + ` is cleared: the skip-worktree and assume-unchanged flags on every path whose entry
  did not have them in the host's index, the stat data of every entry that is not the host's own
  byte for byte (git looks at those files again), and every extension (the cache tree, which
  ` + "`git commit`" + ` would write as the commit's tree, the untracked cache, the fsmonitor token,
  resolve-undo; git rebuilds its caches). An index whose changed entries name an object the
  host does not have is refused. The run's line names the flags and the extensions other than
  caches it cleared.
- **Config**: only the keys below, with the values shown; every other key the sandbox added,
  changed or removed is dropped and named. A remote whose ` + "`url`" + ` or ` + "`pushurl`" + ` is refused (a
  local path, ` + "`file://`" + `, a transport helper: ` + "`git clone /path sub`" + ` inside) is left out whole, with
  the ` + "`branch.<name>.remote`" + ` and ` + "`merge`" + ` keys that track it, and the line says how to add it on
  the host: a fetch refspec without a URL is a remote git fetches from nowhere, and a branch
  tracking a remote name that is not one is taken for a path. A remote that existed at launch
  keeps the host's ` + "`url`" + `, ` + "`pushurl`" + ` and ` + "`push`" + ` refspecs: the sandbox's changes to them are dropped
  and named (with the ` + "`git remote set-url`" + ` to run on the host), since a ` + "`pushurl`" + ` of its choosing
  with ` + "`+refs/*:refs/*`" + ` would make the host's next ` + "`git push`" + ` send the repository to it, a channel out
  for a sandbox without network. A remote the sandbox added is adopted, and its ` + "`url`" + ` and
  ` + "`pushurl`" + ` are named with their values on the run's line, but nothing routes the host's
  branches to it: a ` + "`branch.<name>.remote`" + ` or ` + "`pushremote`" + ` naming it is dropped and named (with
  the ` + "`git config`" + ` to run on the host), ` + "`remote.pushDefault`" + ` is never adopted, and the remote
  is left out whole when it would become the remote of a branch that names none (git takes the
  only remote, else ` + "`origin`" + `: one named ` + "`origin`" + `, or any when the host had no remote or
  one not named ` + "`origin`" + `). A repository made in the sandbox (` + "`git init`" + `, ` + "`git clone`" + `, at the root
  or in a subdirectory) had no remote on the host, so each of its remotes is left out whole this
  way, named with its ` + "`url`" + ` and ` + "`pushurl`" + ` values and the ` + "`git remote add`" + ` to run, with the
  ` + "`branch.<name>.remote`" + `, ` + "`pushremote`" + ` and ` + "`merge`" + ` keys that route a branch to one. The host's file is rewritten under
  ` + "`config.lock`" + `, the rest of it byte for byte.

| key | values | what for |
|---|---|---|
`)
	for _, r := range configAllow {
		key := r.section + "."
		if r.sub != nil {
			key += "<name>."
		}
		key += r.name
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", key, r.values, r.why)
	}
	b.WriteString(`
## Never adopted

` + "`hooks/`" + `, ` + "`info/`" + `, ` + "`commondir`" + `, ` + "`gitdir`" + `, ` + "`config.worktree`" + `, ` + "`worktrees/`" + `,
` + "`modules/`" + `, ` + "`rebase-merge/`" + `, ` + "`rebase-apply/`" + `, ` + "`sequencer/`" + ` (todo lists hold ` + "`exec`" + `
lines), ` + "`FETCH_HEAD`" + `, ` + "`shallow`" + ` (except in a new repository), ` + "`sharedindex.*`" + ` (read into the index), lock files,
` + "`refs/replace/`" + `, deletions and rewrites of the host's objects, ` + "`objects/info/alternates`" + ` and
` + "`objects/info/http-alternates`" + `, the rest of ` + "`objects/info/`" + ` and ` + "`commit-graph`" + ` files (caches),
symlinks, FIFOs, devices, hard-linked and oversized files, and any other name. When the sandbox's
side holds more than the limits (100000 names, 2 GiB read, 1 GiB per file by default), nothing is
adopted.

These config keys are named with a sharper reason when dropped (they make git run a program, or
read another file or repository); like every key not in the table, they are never adopted:

`)
	b.WriteString("`" + strings.Join(dangerousConfig, "`, `") + "`\n")
	b.WriteString(heldDoc)
	return b.String()
}

func TestAdoptionDoc(t *testing.T) {
	const path = "../docs/git-adoption.md"
	want := adoptionDoc()
	if *updateDocs {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./gitstate -run TestAdoptionDoc -update-docs)", err)
	}
	if string(got) != want {
		t.Fatalf("%s is out of date: run go test ./gitstate -run TestAdoptionDoc -update-docs", path)
	}
}

const heldDoc = `
## Commits that change files the host runs code from

The sandbox cannot write the hooks directory, ` + "`.envrc`" + `, ` + "`.vscode/`" + ` and the other protected
names in the workspace, but in its view of the git directory it can write a blob and stage or
commit it at such a path (` + "`git update-index --cacheinfo 100755,$BLOB,.githooks/pre-commit`" + `).
Adopted as is, the host's next ` + "`git restore`" + `, ` + "`checkout`" + `, ` + "`reset --hard`" + ` or ` + "`stash`" + ` would write
the sandbox's file into the work tree, and the host's next commit (or ` + "`cd`" + `, or editor) would run it.
So, before a ref is moved, the host's own git lists the paths the commits new since launch add or
change (` + "`git log --raw`" + ` over the commits reachable from the sandbox's value and from none of the
launch's refs, with a fixed environment), and a path is a **file the host's tools run code from**
when:

- it lies in a hooks directory the host's git uses (` + "`core.hooksPath`" + ` of the repository's, the
  user's and the system's config, within the work tree), or
- it is a work-tree file the host's git reads config from or runs, as its config names it (the
  repository's ` + "`config`" + ` and ` + "`config.worktree`" + `, the user's and the system's, and the files they
  include): an ` + "`include.path`" + ` / ` + "`includeIf.*.path`" + ` target (` + "`../.gitconfig`" + `), or a word of a
  key that runs a program or names a driver file (` + "`core.fsmonitor = tools/fsmon`" + `, a filter's
  ` + "`sh scripts/clean.sh`" + `, ` + "`core.editor`" + `, ` + "`core.pager`" + `, ` + "`core.sshCommand`" + `, ` + "`credential.helper`" + `,
  ` + "`diff.*.textconv`" + `, ` + "`merge.*.driver`" + `, ` + "`alias.*`" + `, ` + "`core.attributesFile`" + `, ...), taken relative to
  the work tree as git runs them; the sandbox cannot write such a file in the workspace either
  (it is read-only in its view), or
- one of its components is a protected name (` + "`sandbox.protected`" + `'s names and the names protected
  after the run: ` + "`.vscode`" + `, ` + "`.envrc`" + `, ` + "`.husky`" + `, ` + "`.claude`" + `, ` + "`lefthook*`" + `, ... at any depth; when a
  killed run is recovered without its names, every name beginning with a dot), or
- it is a ` + "`.gitattributes`" + ` that sets a ` + "`filter`" + `, ` + "`diff`" + ` or ` + "`merge`" + ` driver other than git-lfs's (the
  host's config says what each runs), a ` + "`.gitmodules`" + ` that sets any key but ` + "`path`" + `, ` + "`url`" + `,
  ` + "`branch`" + `, ` + "`shallow`" + `, ` + "`ignore`" + `, ` + "`fetchRecurseSubmodules`" + ` or names a URL that is neither a
  network one nor relative (` + "`./`" + `, ` + "`../`" + `), or any ` + "`.lfsconfig`" + ` (where git-lfs sends the host's
  credentials).

Such a ref is **held**: the host's value stays, the sandbox's is stored as
` + "`refs/jail/<run>/<ref>`" + `, its reflog lines (and HEAD's) are not adopted, and a line names the ref,
the paths and two commands: ` + "`git log -p REF..refs/jail/<run>/REF`" + ` to look at it and
` + "`git update-ref REF refs/jail/<run>/REF`" + ` to take it (each name one shell word, quoted when it
holds anything a shell would read). A repository made in the sandbox is held the same way (its
branch, a detached ` + "`HEAD`" + `, and its ` + "`packed-refs`" + ` all together under ` + "`refs/jail/<run>/`" + `, taken with
` + "`git fetch --update-head-ok . '+refs/jail/<run>/*:refs/*'`" + `). A ref whose commits cannot be listed
(git missing, more than 60 s or 64 MiB of output) is held too.

"New since launch" means not reachable from the host's own refs: the refs under ` + "`refs/jail/`" + `
(what jail held or kept aside from earlier runs, which the next sandbox sees) do not count. A held
commit stays held however many runs later a sandbox points a branch, a tag, a notes ref or a
pseudo-ref at it, on both launch paths; only the host's ` + "`git update-ref`" + ` takes it.

An **index** that stages, at such a path, content (mode and object) the host's index did not have
is not adopted, whether or not it was committed: the host's ` + "`git restore`" + ` reads the index. The
files in the work tree are untouched by all of this (the sandbox could not write them there).
`
