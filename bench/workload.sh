#!/usr/bin/env bash
# The workload section of `make bench`: real work inside `jail run` against
# the same work bare on the host, interleaved round after round
# (bench/interleave), so a drift in the machine's speed hits both alike:
#
#   go build  the second build of a small module (`go build -o /dev/null .`;
#             the build cache is warm on both sides: the host's in the
#             caller's home, jail's in the workspace's persistent home,
#             docs/home.md)
#   npx       the second start of a small package installed locally in the
#             module (`npx semver 1.2.3`; npm's cache in the home likewise)
#   git       `git status` in a repository of 10000 committed files
#
# Each pair reports the median of the per-round ratios jail/bare; the target
# is 1.2x or less. C, `jail run -- /bin/true` in the same workspace, is
# jail's fixed cost of a run there: (A-C)/B is the command's own work inside
# against bare. As root it measures again as the unprivileged user jailtest
# when that user exists.
#
# usage: bench/workload.sh [JAIL_BINARY] [INTERLEAVE_BINARY]
set -euo pipefail

jail_in=$(realpath "${1:-./jail}")
interleave_in=${2:-}
warmup=3 runs=${WORKLOAD_RUNS:-20}
go_bin=$(command -v go || echo /usr/local/go/bin/go)
go_bin=$(realpath "$go_bin")
for tool in "$go_bin" npm npx git setpriv; do
  command -v "$tool" >/dev/null || { echo "workload: $tool is missing (scripts/deps.sh installs it)" >&2; exit 1; }
done
case $go_bin in
  /usr/*|/opt/*) ;;
  *) echo "workload: go is $go_bin, outside /usr and /opt: the sandbox would not see it" >&2; exit 1 ;;
esac

tmp=$(mktemp -d /tmp/jail-workload.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
mkdir -m 755 "$tmp/bin"
cp "$jail_in" "$tmp/bin/jail"
if [ -n "$interleave_in" ]; then
  cp "$interleave_in" "$tmp/bin/interleave"
else
  (cd "$(dirname "$0")/.." && go build -o "$tmp/bin/interleave" ./bench/interleave)
fi
chmod 755 "$tmp/bin/jail" "$tmp/bin/interleave"
jail=$tmp/bin/jail
me=$(id -un)

as() {
  local who=$1
  shift
  if [ "$who" = "$me" ]; then
    "$@"
  else
    setpriv --reuid="$who" --regid="$who" --clear-groups --reset-env -- "$@"
  fi
}

# setup_as USER: the module (with semver installed locally) and the repository, owned by USER.
setup_as() {
  local who=$1 d="$tmp/$1"
  mkdir -m 755 "$d" "$d/mod" "$d/repo"
  cat >"$d/mod/go.mod" <<EOF
module example.com/workload

go 1.22
EOF
  cat >"$d/mod/main.go" <<'EOF'
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
)

func main() {
	b, _ := json.Marshal(map[string]int{"status": http.StatusOK})
	fmt.Fprintln(os.Stdout, string(b))
}
EOF
  echo '{"name":"workload","version":"1.0.0","private":true}' >"$d/mod/package.json"
  # A project in a git repository, as most are (go build stamps the VCS state).
  (cd "$d/mod" && git init -q && git config user.email b@e && git config user.name bench &&
    git add -A && git commit -qm module)
  (cd "$d/repo" && git init -q && git config user.email b@e && git config user.name bench &&
    for i in $(seq 0 99); do mkdir -p "d$i"; for j in $(seq 0 99); do echo "$i $j" >"d$i/f$j"; done; done &&
    git add -A && git commit -qm files)
  [ "$who" = "$me" ] || chown -R "$who:" "$d"
  # npm's configuration (registry, certificate authority) is the caller's.
  local -a npmenv=()
  [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && npmenv+=("NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS")
  local cafile
  cafile=$(npm config get cafile 2>/dev/null || true)
  local -a npmflags=(--no-audit --no-fund --no-update-notifier)
  [[ $cafile == /* ]] && npmflags+=(--cafile "$cafile")
  as "$who" env HOME="$(eval echo "~$who")" PATH="$PATH" "${npmenv[@]}" npm install --prefix "$d/mod" "${npmflags[@]}" semver@7.6.3 >"$d/npm.log" 2>&1 ||
    { echo "workload: npm install semver as $who failed:" >&2; cat "$d/npm.log" >&2; return 1; }
}

bench_as() {
  local who=$1 d="$tmp/$1"
  local home
  home=$(eval echo "~$who")
  local envs="HOME=$home PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin"
  local -a pairs=(
    "go build|$envs $jail run -w $d/mod -- $go_bin build -o /dev/null .|$envs $go_bin -C $d/mod build -o /dev/null .|$envs $jail run -w $d/mod -- /bin/true"
    "npx|$envs $jail run -w $d/mod -- npx semver 1.2.3|$envs npx semver 1.2.3|$envs $jail run -w $d/mod -- /bin/true"
    "git status|$envs $jail run -w $d/repo -- git status|$envs git -C $d/repo status|$envs $jail run -w $d/repo -- /bin/true"
  )
  echo "== workload as $who"
  local p name a b c
  for p in "${pairs[@]}"; do
    IFS='|' read -r name a b c <<<"$p"
    # shellcheck disable=SC2086 # word lists, as interleave splits them
    if ! (cd "$d/mod" && as "$who" env $a >"$d/probe.log" 2>&1) || ! (cd "$d/mod" && as "$who" env $b >>"$d/probe.log" 2>&1); then
      printf '%-10s fails, not timed: %s\n' "$name" "$(head -c 400 "$d/probe.log" | tr '\n' ' ')"
      continue
    fi
    echo "-- $name (A: in jail, B: bare, C: jail run -- /bin/true there)"
    (cd "$d/mod" && as "$who" "$tmp/bin/interleave" -n "$runs" -warmup "$warmup" -less C -- "$a" "$b" "$c") | sed 's/^/   /'
  done
}

echo "workload: $jail_in; $("$go_bin" version); node $(node --version); $(git --version)"
users=("$me")
if [ "$(id -u)" -eq 0 ] && id jailtest >/dev/null 2>&1; then
  users+=(jailtest)
fi
status=0
for u in "${users[@]}"; do
  setup_as "$u" || { status=1; continue; }
  bench_as "$u" || status=1
  # The persistent homes of the module and the repository go with them.
  as "$u" env HOME="$(eval echo "~$u")" "$jail" clean -w "$tmp/$u/mod" >/dev/null 2>&1 || true
  as "$u" env HOME="$(eval echo "~$u")" "$jail" clean -w "$tmp/$u/repo" >/dev/null 2>&1 || true
done
exit $status
