#!/usr/bin/env bash
# Launch cost of jail's git view (docs/git.md): `jail run -- /bin/true`,
# planned (JAIL_PLAN_CACHE=off) and from the plan cache, in a plain
# directory, in a tree of 100k files with node_modules and no repository,
# and in that tree as a repository with two submodules and a nested
# repository, and a plain directory with that repository as a --rw tree.
# With a second binary (BASE, say a build from before the git
# view) every row is measured for both, interleaved round by round.
#
# usage: bench/git.sh JAIL_BINARY [BASE_BINARY] [INTERLEAVE_BINARY]
set -euo pipefail

jail_in=$(realpath "${1:-./jail}")
base_in=${2:-}
interleave_in=${3:-}
runs=${RUNS:-30} warmup=${WARMUP:-3}

tmp=$(mktemp -d /tmp/jail-gitbench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/home"
cp "$jail_in" "$tmp/bin/jail"
[ -n "$base_in" ] && cp "$(realpath "$base_in")" "$tmp/bin/base"
if [ -n "$interleave_in" ]; then
  cp "$interleave_in" "$tmp/bin/interleave"
else
  (cd "$(dirname "$0")/.." && go build -o "$tmp/bin/interleave" ./bench/interleave)
fi
export HOME=$tmp/home
export GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@b GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@b GIT_CONFIG_NOSYSTEM=1
# Each binary has a plan cache (and git state) of its own: their entries
# for one directory and one argument list would replace each other.
for b in jail base; do
  mkdir -p "$tmp/home-$b/.cache" "$tmp/home-$b/.local/state"
done

# tree DIR: 100k files: 90k in node_modules (900 packages of 100 files in
# 10 directories), 10k in src (500 directories of 20 files), nothing else.
tree() {
  local d=$1
  mkdir -p "$d"
  python3 - "$d" <<'EOF'
import os, sys
root = sys.argv[1]
for p in range(900):
    for s in range(10):
        d = os.path.join(root, "node_modules", "pkg%03d" % p, "lib%d" % s)
        os.makedirs(d, exist_ok=True)
        for f in range(10):
            open(os.path.join(d, "f%d.js" % f), "w").close()
for m in range(25):
    for s in range(20):
        d = os.path.join(root, "src", "mod%02d" % m, "part%02d" % s)
        os.makedirs(d, exist_ok=True)
        for f in range(20):
            open(os.path.join(d, "f%d.go" % f), "w").close()
EOF
}

plain=$tmp/plain
mkdir -p "$plain"
big=$tmp/big
tree "$big"
repo=$tmp/repo
tree "$repo"
(
  cd "$repo"
  git init -q -b main
  printf 'node_modules/\n' >.gitignore
  git add -A && git commit -qm tree
  for m in liba libb; do
    git init -q -b main "$tmp/$m" && git -C "$tmp/$m" commit -q --allow-empty -m "$m"
    git -c protocol.file.allow=always submodule add -q "$tmp/$m" "deps/$m"
  done
  git commit -qm submodules
  git init -q -b main vendor/nested && git -C vendor/nested commit -q --allow-empty -m nested
)
echo "files: $(find "$big" -type f | wc -l) in the tree; $(find "$repo" -type f -not -path '*/.git/*' | wc -l) in the repository's work tree"

cmds=()
labels=()
# The last row: a plain workspace with the repository as a --rw tree
# (planned each time either way: docs/git.md, "--rw trees").
for ws in "$plain" "$big" "$repo" rw; do
  for b in jail base; do
    [ -x "$tmp/bin/$b" ] || continue
    for mode in cached planned; do
      [ "$ws" = rw ] && [ $mode = cached ] && continue
      env="XDG_CACHE_HOME=$tmp/home-$b/.cache XDG_STATE_HOME=$tmp/home-$b/.local/state"
      [ $mode = planned ] && env="$env JAIL_PLAN_CACHE=off"
      cmd="env $env $tmp/bin/$b run -w $ws -- /bin/true"
      [ "$ws" = rw ] && cmd="env $env $tmp/bin/$b run -w $plain --rw $repo -- /bin/true"
      # shellcheck disable=SC2086
      $cmd >/dev/null 2>&1 || { echo "bench: $cmd fails" >&2; exit 1; }
      $cmd >/dev/null 2>&1
      cmds+=("$cmd")
      labels+=("$(basename "$ws") $b $mode")
    done
  done
done
for i in "${!labels[@]}"; do
  printf '%s = %s\n' "$(printf "\\x$(printf %x $((65 + i)))")" "${labels[$i]}"
done
"$tmp/bin/interleave" -n "$runs" -warmup "$warmup" -- "${cmds[@]}"
