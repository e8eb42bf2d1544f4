#!/usr/bin/env bash
# Startup cost of `jail run -- /bin/true` against bare /bin/true and a
# comparable bubblewrap sandbox, measured interleaved (bench/interleave runs
# the three in turn, round after round, and reports the median of the
# per-round ratios, so a drift in the machine's speed hits all alike), plus
# jail's peak RSS from /usr/bin/time. As root it measures again as the
# unprivileged user jailtest when that user exists: the unprivileged launch
# takes a different path (no cgroup delegation, user namespace required).
#
# usage: bench/run.sh [JAIL_BINARY] [INTERLEAVE_BINARY]
#        (defaults ./jail and bench/interleave built into a temporary file;
#        `make bench` builds both)
set -euo pipefail

jail_in=${1:-./jail}
if [ ! -x "$jail_in" ]; then
  echo "bench: $jail_in is not an executable jail binary (build it with: make build)" >&2
  exit 1
fi
jail_in=$(realpath "$jail_in")

warmup=5 runs=50 rss_runs=5
interleave_in=${2:-}

# Tools: bwrap, GNU time, setpriv.
missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
[ -x /usr/bin/time ] || missing+=(time)
command -v setpriv >/dev/null || missing+=(util-linux)
if ((${#missing[@]})); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "bench: missing ${missing[*]}; install with: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  log=$(mktemp)
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
fi

tmp=$(mktemp -d /tmp/jail-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
# A world-readable copy, so the unprivileged user can run the same binary.
mkdir -m 755 "$tmp/bin"
cp "$jail_in" "$tmp/bin/jail"
chmod 755 "$tmp/bin/jail"
jail="$tmp/bin/jail"
if [ -n "$interleave_in" ]; then
  cp "$interleave_in" "$tmp/bin/interleave"
else
  (cd "$(dirname "$0")/.." && go build -o "$tmp/bin/interleave" ./bench/interleave)
fi
chmod 755 "$tmp/bin/interleave"
cd "$tmp"
me=$(id -un)

# as USER CMD... runs CMD as USER (root: directly).
as() {
  local who=$1
  shift
  if [ "$who" = "$me" ]; then
    "$@"
  else
    setpriv --reuid="$who" --regid="$who" --clear-groups --reset-env -- "$@"
  fi
}

# bench_as USER: prints the table rows for one identity.
bench_as() {
  local who=$1 ws="$tmp/ws-$1" out="$tmp/out-$1"
  mkdir -m 755 "$ws" "$out"
  [ "$who" = "$me" ] || chown "$who:" "$ws" "$out"

  local jail_cmd="$jail run -w $ws -- /bin/true"
  # The same run with the plan cache off: what a first run in a directory
  # costs (docs/plan-cache.md).
  local planned_cmd="JAIL_PLAN_CACHE=off $jail_cmd"
  # The harness path: a JSON result and a timeout, as an agent harness
  # runs every call (served by the plan cache too).
  local harness_cmd="$jail run -w $ws --json --timeout 10m -- /bin/true"
  local bwrap_cmd="bwrap --unshare-all --ro-bind / / --bind $ws $ws --dev /dev --proc /proc --die-with-parent /bin/true"
  # Each command must work before it is timed; a failing one is reported
  # and left out rather than timed as a fast failure.
  local -a cmds=()
  local name cmd
  for name in jail bare bwrap planned harness; do
    case $name in
      jail) cmd=$jail_cmd ;;
      bare) cmd=/bin/true ;;
      bwrap) cmd=$bwrap_cmd ;;
      planned) cmd=$planned_cmd ;;
      harness) cmd=$harness_cmd ;;
    esac
    # shellcheck disable=SC2086 # the commands are word lists, as interleave splits them
    if ! as "$who" env $cmd >"$out/probe-$name.log" 2>&1; then
      printf '%-8s %-6s fails, not timed: %s\n' "$who" "$name" "$(head -c 300 "$out/probe-$name.log" | tr '\n' ' ')"
      [ "$name" = jail ] && return 1
      continue
    fi
    cmds+=("$cmd")
  done

  local rss max_rss=0 max_planned=0 i
  for ((i = 0; i < rss_runs; i++)); do
    # shellcheck disable=SC2086
    rss=$(as "$who" /usr/bin/time -f %M -o "$out/rss" $jail_cmd >/dev/null 2>&1 && cat "$out/rss")
    if ((rss > max_rss)); then max_rss=$rss; fi
    # shellcheck disable=SC2086
    rss=$(as "$who" env JAIL_PLAN_CACHE=off /usr/bin/time -f %M -o "$out/rss" $jail_cmd >/dev/null 2>&1 && cat "$out/rss")
    if ((rss > max_planned)); then max_planned=$rss; fi
  done

  echo "== as $who"
  # -ref C: every jail row against bubblewrap (C) too (E/C is the harness path).
  if ! as "$who" "$tmp/bin/interleave" -n "$runs" -warmup "$warmup" -ref C -- "${cmds[@]}"; then
    echo "bench: interleave failed as $who" >&2
    return 1
  fi
  echo "jail peak RSS (GNU time, max of $rss_runs runs): $max_rss KiB ($((max_rss / 1024)) MiB) from the plan cache, $max_planned KiB ($((max_planned / 1024)) MiB) planned (JAIL_PLAN_CACHE=off)"
}

echo "jail startup: $jail_in; bwrap $(bwrap --version | awk '{print $2}'); kernel $(uname -r)"
users=("$me")
if [ "$(id -u)" -eq 0 ] && id jailtest >/dev/null 2>&1; then
  users+=(jailtest)
fi
status=0
for u in "${users[@]}"; do
  bench_as "$u" || status=1
done
exit $status
