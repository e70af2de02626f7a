#!/usr/bin/env bash
# Builds the container image localhost/rng-service:dev with podman, on a machine that reaches no
# image registry: the base image is a Debian bookworm rootfs made with debootstrap and imported
# into podman as localhost/debian-bookworm-py:local (the recipe in ../shared/README.md).
#
# The imported base image is cached in podman's own storage, and the debootstrap rootfs as a
# tarball under $RNG_IMAGE_CACHE (default /var/cache/rng-service-image), so a second run skips
# debootstrap and only rebuilds the layers that changed.
#
# The Dockerfile's default base (python:3.11-slim) is untouched; only the build argument replaces
# it here. Needs root (debootstrap and podman's chroot isolation). Environment:
#   IMAGE=localhost/rng-service:dev   tag to build
#   BASE_IMAGE=localhost/debian-bookworm-py:local
#   DEBIAN_MIRROR=http://deb.debian.org/debian
#   REBUILD_BASE=1                    throw the cached base away and debootstrap again
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-localhost/rng-service:dev}
BASE_IMAGE=${BASE_IMAGE:-localhost/debian-bookworm-py:local}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${RNG_IMAGE_CACHE:-/var/cache/rng-service-image}
ROOTFS_TAR=$CACHE/debian-bookworm-py-rootfs.tar
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt

log() { printf '[build-image %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
  echo "error: scripts/build-image.sh needs root (debootstrap, podman --isolation=chroot)" >&2
  exit 1
fi

missing=()
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "${REBUILD_BASE:-0}" = 1 ]; then
  log "REBUILD_BASE=1: dropping $BASE_IMAGE and $ROOTFS_TAR"
  podman untag "$BASE_IMAGE" >/dev/null 2>&1 || true   # images built on it keep its layers
  rm -f "$ROOTFS_TAR"
fi

if podman image exists "$BASE_IMAGE"; then
  log "base image $BASE_IMAGE already present (cached)"
else
  mkdir -p "$CACHE"
  if [ ! -s "$ROOTFS_TAR" ]; then
    rootfs=$(mktemp -d "$CACHE/rootfs.XXXXXX")
    # debootstrap mounts /proc and /sys in the target (and, inside some containers, bind-mounts
    # the host's /dev): unmount whatever is left before deleting, and never cross a mount.
    drop_rootfs() {
      { findmnt -rn -o TARGET | grep -F "$rootfs/" || true; } | sort -r | while read -r m; do
        umount -l "$m" || true
      done
      rm -rf --one-file-system "$rootfs"
    }
    trap drop_rootfs EXIT
    log "debootstrap bookworm (minbase + python3, python3-venv, ca-certificates) into $rootfs"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
      bookworm "$rootfs" "$DEBIAN_MIRROR" >"$CACHE/debootstrap.log" 2>&1 || {
      echo "error: debootstrap failed; the last lines of $CACHE/debootstrap.log:" >&2
      tail -20 "$CACHE/debootstrap.log" >&2
      exit 1
    }
    # apt's package cache is not needed in the image.
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" --one-file-system -cf "$ROOTFS_TAR.partial" .
    mv "$ROOTFS_TAR.partial" "$ROOTFS_TAR"
    drop_rootfs
    trap - EXIT
  else
    log "using cached rootfs $ROOTFS_TAR"
  fi
  log "importing $ROOTFS_TAR as $BASE_IMAGE"
  podman import "$ROOTFS_TAR" "$BASE_IMAGE" >/dev/null
fi

log "building $IMAGE from $BASE_IMAGE"
# --format docker: the OCI image format has no HEALTHCHECK, and podman drops it with a warning.
podman build --isolation=chroot --format docker \
  -v "$CA_BUNDLE:$CA_BUNDLE:ro" \
  --build-arg "BASE_IMAGE=$BASE_IMAGE" \
  -t "$IMAGE" .
log "built $IMAGE ($(podman image inspect --format '{{.Id}}' "$IMAGE" | cut -c1-12))"
