#!/usr/bin/env bash
# Installs what building and testing jail needs on a fresh Debian or Ubuntu
# machine: a C toolchain and libseccomp for the static cgo build, and the
# programs the integration tests drive inside the sandbox (git, python3,
# gcc, util-linux, strace and gdb; tmux, vim and less for the interactive
# terminal), and Docker with debootstrap for the
# container images. Go itself must be 1.26 or newer; the go command fetches
# that toolchain from the module proxy when an older one is installed.
set -euo pipefail

pkgs=(gcc libc6-dev libseccomp-dev pkg-config git python3 make util-linux passwd procps curl iproute2 netcat-openbsd ca-certificates nodejs strace gdb tmux vim less patch unzip xxd sqlite3 yq)
# kubectl, which the classifier's tests run with an exec plugin: Debian ships it
# as kubernetes-client; a kubectl installed otherwise (a cloud SDK's) is kept.
command -v kubectl >/dev/null || pkgs+=(kubernetes-client)
# npm runs the MCP Inspector in integration/mcp_test.go. Debian packages it
# apart from nodejs; NodeSource's nodejs bundles it and conflicts with
# Debian's, so it is added only when missing.
command -v npm >/dev/null || pkgs+=(npm)
# The browser and desktop tools' containers (docs/container.md): Debian's
# engine, unless one is installed already (Docker's own docker-ce conflicts
# with docker.io), and debootstrap for make images' base.
command -v dockerd >/dev/null || pkgs+=(docker.io)
pkgs+=(debootstrap)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  elif command -v sudo >/dev/null; then
    sudo apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "deps: missing packages: ${missing[*]}; install them with: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

export PATH="$PATH:/usr/local/go/bin"
if ! command -v go >/dev/null; then
  echo "deps: Go 1.26 or newer is needed (https://go.dev/dl/); put it on PATH or in /usr/local/go" >&2
  exit 1
fi
