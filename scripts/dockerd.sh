#!/usr/bin/env bash
# Makes sure a Docker engine answers on this machine, for the browser and
# desktop tools' tests (docs/container.md). An engine that already answers
# (a systemd unit, Docker Desktop, DOCKER_HOST) is used as is. Otherwise, as
# root, it starts Debian's dockerd in the background, with no bridge and no
# iptables rules (jail's containers run with --network none; image builds
# use the host's network), logging to $JAIL_DOCKERD_LOG, and waits until the
# API answers. A lock makes two callers at once start one engine. Without
# docker.io installed, or not root and no engine, it says so and exits 1.
set -euo pipefail

log=${JAIL_DOCKERD_LOG:-/var/log/jail-dockerd.log}
lock=${JAIL_DOCKERD_LOCK:-/run/jail-dockerd.lock}
sock=/var/run/docker.sock

answers() {
  if [ -n "${DOCKER_HOST:-}" ]; then
    docker version --format '{{.Server.APIVersion}}' >/dev/null 2>&1
  else
    # The API's own ping, not a CLI: the docker CLI may be absent or be
    # another build than the engine.
    curl -sf --max-time 2 --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1
  fi
}

answers && exit 0
if [ -n "${DOCKER_HOST:-}" ]; then
  echo "dockerd: DOCKER_HOST=$DOCKER_HOST does not answer; start that engine or unset DOCKER_HOST" >&2
  exit 1
fi
if ! command -v dockerd >/dev/null; then
  echo "dockerd: no Docker engine answers on $sock and dockerd is not installed (scripts/deps.sh installs docker.io)" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "dockerd: no Docker engine answers on $sock; start one as root (sudo $0)" >&2
  exit 1
fi

exec 9>"$lock"
flock 9
# A caller that held the lock before us may have started it meanwhile.
answers && exit 0

# A socket left by an engine that died would make dockerd refuse to start.
if [ -S "$sock" ] && ! answers; then
  rm -f "$sock"
fi
# cgroup v1 with no systemd: cgroupfs is dockerd's default driver; the
# hierarchies are mounted already. setsid: the engine outlives this script
# and its caller's terminal and process group. The lock's descriptor is
# closed in the engine, so the next caller is not blocked behind it.
setsid dockerd --bridge=none --iptables=false --ip6tables=false \
  --host "unix://$sock" >>"$log" 2>&1 9>&- </dev/null &
pid=$!
for _ in $(seq 1 300); do
  if answers; then
    echo "dockerd: started (pid $pid, log $log)" >&2
    exit 0
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "dockerd: the engine exited while starting; its log, $log, ends with:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
  sleep 0.2
done
echo "dockerd: the engine (pid $pid) did not answer within 60 s; see $log" >&2
exit 1
