#!/usr/bin/env bash
# make images: builds jail's container images from Debian's packages, with
# no container registry (docs/container.md):
#
#   1. a base: debootstrap --variant=minbase bookworm from deb.debian.org,
#      imported with `docker import`;
#   2. each image of images/*/Dockerfile, built FROM that base with apt.
#
# Every image carries the SHA-256 of its inputs (the base's recipe, suite and
# mirror; an image's directory and its base's hash) in the label
# org.jail-sandbox.inputs; an image whose label matches is not built again.
# Names: JAIL_BASE_IMAGE, JAIL_BROWSER_IMAGE, JAIL_DESKTOP_IMAGE (the
# defaults are the policy's defaults, [docker] in policy.toml.example).
# Arguments name the images to build (browser, desktop); none builds all.
set -euo pipefail
cd "$(dirname "$0")"

suite=${JAIL_IMAGE_SUITE:-bookworm}
mirror=${JAIL_IMAGE_MIRROR:-http://deb.debian.org/debian}
base=${JAIL_BASE_IMAGE:-jail-base:$suite}
label=org.jail-sandbox.inputs

declare -A name=(
  [browser]=${JAIL_BROWSER_IMAGE:-jail-browser:local}
  [desktop]=${JAIL_DESKTOP_IMAGE:-jail-desktop:local}
)

built_hash() {
  docker image inspect --format "{{ index .Config.Labels \"$label\" }}" "$1" 2>/dev/null || true
}

dir_hash() {
  # Names and contents, in a stable order, so a renamed file counts too.
  (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

# The base's recipe is this function: its text is part of the base's hash,
# so editing the rest of this script rebuilds nothing.
build_base() {
  local root start=$SECONDS
  root=$(mktemp -d /var/tmp/jail-base.XXXXXX)
  trap 'rm -rf "$root" "$root.log"' EXIT
  debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.log" 2>&1 || {
    tail -n 30 "$root.log" >&2
    exit 1
  }
  # apt inside docker build fetches from the same mirror.
  echo "deb $mirror $suite main" >"$root/etc/apt/sources.list"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" --numeric-owner -c . |
    docker import --change "LABEL $label=$base_hash" --change 'CMD ["/bin/bash"]' - "$base" >/dev/null
  rm -rf "$root" "$root.log"
  trap - EXIT
  echo "images: $base built in $((SECONDS - start)) s"
}

base_hash=$( { declare -f build_base; echo "$suite $mirror"; } | sha256sum | cut -d' ' -f1)
if [ "$(built_hash "$base")" = "$base_hash" ]; then
  echo "images: $base is up to date"
else
  echo "images: building $base (debootstrap $suite, minbase)"
  build_base
fi

want=("$@")
[ ${#want[@]} -gt 0 ] || want=(browser desktop)
for img in "${want[@]}"; do
  [ -f "$img/Dockerfile" ] || { echo "images: no images/$img/Dockerfile" >&2; exit 1; }
  h=$( { echo "$base_hash"; dir_hash "$img"; } | sha256sum | cut -d' ' -f1)
  if [ "$(built_hash "${name[$img]}")" = "$h" ]; then
    echo "images: ${name[$img]} is up to date"
    continue
  fi
  echo "images: building ${name[$img]}"
  start=$SECONDS
  # The host's network: jail's engine may run without a bridge
  # (scripts/dockerd.sh), and apt needs deb.debian.org.
  out=$(mktemp)
  docker build -q --network host --build-arg "BASE=$base" --label "$label=$h" -t "${name[$img]}" "$img" >"$out" 2>&1 || {
    tail -n 40 "$out" >&2
    rm -f "$out"
    exit 1
  }
  rm -f "$out"
  echo "images: ${name[$img]} built in $((SECONDS - start)) s"
done
