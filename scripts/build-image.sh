#!/usr/bin/env bash
# Builds the container image localhost/rng-service:dev with podman from this repository alone
# (the Dockerfile, requirements/image.txt and the sources), on a machine that reaches no image
# registry: the Dockerfile's base (a digest-pinned Debian image) is replaced by a Debian bookworm
# rootfs made here with debootstrap (minbase plus python3, python3-venv, ca-certificates) and
# imported into podman as localhost/debian-bookworm-py:local.
#
# The Debian state is pinned to a date. By default debootstrap reads the archive as it was at
# the Dockerfile's DEBIAN_SNAPSHOT, from snapshot.debian.org (the same date as the Dockerfile's
# base image), and the image is labelled with that snapshot. Where snapshot.debian.org is not
# reachable, it falls back to DEBIAN_FALLBACK_MIRROR (deb.debian.org) and says so: the image is
# then labelled "unpinned" with the date and sha256 of the signed InRelease file it was built
# from (the exact archive state: InRelease holds the hashes of every package index), which
# snapshot.debian.org can serve again later. debootstrap checks InRelease's signature with the
# Debian archive keyring either way.
#
# Python packages come only from requirements/image.txt (hash-locked; `make lock`): the
# Dockerfile installs it with --require-hashes. The base image stays in podman's storage and the
# rootfs tarball and its description (base.env) under $RNG_IMAGE_CACHE, so a second run skips
# debootstrap and only rebuilds the layers that changed.
#
# Needs root (debootstrap and podman's chroot isolation); installs podman and debootstrap with
# apt-get when missing. Environment:
#   IMAGE=localhost/rng-service:dev   tag to build
#   BASE_IMAGE=localhost/debian-bookworm-py:local
#   DEBIAN_SNAPSHOT=<the Dockerfile's>  snapshot.debian.org timestamp, e.g. 20251229T000000Z
#   DEBIAN_MIRROR=URL                 bootstrap from this mirror instead (labelled unpinned)
#   DEBIAN_FALLBACK_MIRROR=http://deb.debian.org/debian
#   REBUILD_BASE=1                    throw the cached base away and debootstrap again
#   PIP_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
#                                     the host's trust store, mounted over the base's for the
#                                     build (Debian's pip uses the system store), so that pip
#                                     reaches PyPI the way the host does (through a TLS-inspecting
#                                     proxy, for example); empty: the base's own. It decides only
#                                     whom pip trusts: every file is checked against the lock.
set -euo pipefail
cd "$(dirname "$0")/.."

dockerfile_arg() {  # the default of `ARG NAME=...` in the Dockerfile
  sed -n "s/^ARG $1=//p" Dockerfile | head -1
}

IMAGE=${IMAGE:-localhost/rng-service:dev}
BASE_IMAGE=${BASE_IMAGE:-localhost/debian-bookworm-py:local}
DEBIAN_SNAPSHOT=${DEBIAN_SNAPSHOT:-$(dockerfile_arg DEBIAN_SNAPSHOT)}
DEBIAN_FALLBACK_MIRROR=${DEBIAN_FALLBACK_MIRROR:-http://deb.debian.org/debian}
CACHE=${RNG_IMAGE_CACHE:-/var/cache/rng-service-image}
ROOTFS_TAR=$CACHE/debian-bookworm-py-rootfs.tar
BASE_ENV=$CACHE/base.env
LOCK=requirements/image.txt

log() { printf '[build-image %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
  echo "error: scripts/build-image.sh needs root (debootstrap, podman --isolation=chroot)" >&2
  exit 1
fi
[[ $DEBIAN_SNAPSHOT =~ ^[0-9]{8}T[0-9]{6}Z$ ]] \
  || { echo "error: DEBIAN_SNAPSHOT '$DEBIAN_SNAPSHOT' is not a snapshot timestamp (YYYYMMDDTHHMMSSZ)" >&2; exit 1; }
[ -s "$LOCK" ] || { echo "error: $LOCK is missing: run make lock" >&2; exit 1; }
grep -q -- "--require-hashes" Dockerfile \
  || { echo "error: the Dockerfile does not install $LOCK with --require-hashes" >&2; exit 1; }

missing=()
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v curl >/dev/null 2>&1 || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Where the base comes from: the snapshot when reachable, else the fallback mirror.
snapshot_url=http://snapshot.debian.org/archive/debian/$DEBIAN_SNAPSHOT
if [ -n "${DEBIAN_MIRROR:-}" ]; then
  mirror=$DEBIAN_MIRROR
  [ "$mirror" = "$snapshot_url" ] || pinned=unpinned
elif curl -fsS --max-time 20 -o /dev/null "$snapshot_url/dists/bookworm/InRelease" 2>/dev/null; then
  mirror=$snapshot_url
else
  log "WARNING: $snapshot_url is not reachable; bootstrapping from $DEBIAN_FALLBACK_MIRROR" \
      "instead: the image is labelled unpinned, with the archive state it was built from"
  mirror=$DEBIAN_FALLBACK_MIRROR
  pinned=unpinned
fi
wanted_snapshot=${pinned:-$DEBIAN_SNAPSHOT}

# The cached base is reused only if it was made from the same source.
if [ "${REBUILD_BASE:-0}" = 1 ] || ! [ -s "$BASE_ENV" ] \
   || [ "$(sed -n 's/^BASE_MIRROR=//p' "$BASE_ENV")" != "$mirror" ] \
   || [ "$(sed -n 's/^BASE_SNAPSHOT=//p' "$BASE_ENV")" != "$wanted_snapshot" ]; then
  log "dropping any cached base ($BASE_IMAGE, $ROOTFS_TAR): made from another source or unrecorded"
  podman untag "$BASE_IMAGE" >/dev/null 2>&1 || true   # images built on it keep its layers
  rm -f "$ROOTFS_TAR" "$BASE_ENV"
fi

if podman image exists "$BASE_IMAGE" && [ -s "$BASE_ENV" ]; then
  log "base image $BASE_IMAGE already present (cached)"
else
  mkdir -p "$CACHE"
  if [ ! -s "$ROOTFS_TAR" ] || [ ! -s "$BASE_ENV" ]; then
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
    log "debootstrap bookworm from $mirror (minbase + python3, python3-venv, ca-certificates)"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
      bookworm "$rootfs" "$mirror" >"$CACHE/debootstrap.log" 2>&1 || {
      echo "error: debootstrap failed; the last lines of $CACHE/debootstrap.log:" >&2
      tail -20 "$CACHE/debootstrap.log" >&2
      exit 1
    }
    # The archive state it was made from: the signed InRelease debootstrap verified.
    inrelease=$(find "$rootfs/var/lib/apt/lists" -maxdepth 1 \( -name '*_dists_bookworm_InRelease' \
                  -o -name '*_dists_bookworm_Release' \) | sort | head -1)
    [ -n "$inrelease" ] || { echo "error: no (In)Release file left by debootstrap" >&2; exit 1; }
    release_date=$(sed -n 's/^Date: //p' "$inrelease" | head -1)
    {
      echo "BASE_MIRROR=$mirror"
      echo "BASE_SNAPSHOT=$wanted_snapshot"
      echo "BASE_RELEASE_DATE=$release_date"
      echo "BASE_INRELEASE_SHA256=$(sha256sum "$inrelease" | cut -d' ' -f1)"
    } >"$BASE_ENV.partial"
    # apt's package cache and lists are not needed in the image.
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" --one-file-system -cf "$ROOTFS_TAR.partial" .
    mv "$ROOTFS_TAR.partial" "$ROOTFS_TAR"
    mv "$BASE_ENV.partial" "$BASE_ENV"
    drop_rootfs
    trap - EXIT
  else
    log "using cached rootfs $ROOTFS_TAR"
  fi
  log "importing $ROOTFS_TAR as $BASE_IMAGE"
  podman import "$ROOTFS_TAR" "$BASE_IMAGE" >/dev/null
fi
base_value() { sed -n "s/^$1=//p" "$BASE_ENV"; }
snapshot=$(base_value BASE_SNAPSHOT)
log "base: $(base_value BASE_MIRROR), snapshot $snapshot, bookworm InRelease of" \
    "$(base_value BASE_RELEASE_DATE) (sha256 $(base_value BASE_INRELEASE_SHA256))"

build_args=(
  --build-arg "BASE_IMAGE=$BASE_IMAGE"
  --build-arg "DEBIAN_SNAPSHOT=$snapshot"
  --label "io.rng-service.debian-mirror=$(base_value BASE_MIRROR)"
  --label "io.rng-service.debian-release-date=$(base_value BASE_RELEASE_DATE)"
  --label "io.rng-service.debian-inrelease-sha256=$(base_value BASE_INRELEASE_SHA256)"
  --label "io.rng-service.python-lock-sha256=$(sha256sum "$LOCK" | cut -d' ' -f1)"
)
PIP_CA_BUNDLE=${PIP_CA_BUNDLE-/etc/ssl/certs/ca-certificates.crt}
if [ -n "$PIP_CA_BUNDLE" ] && [ -s "$PIP_CA_BUNDLE" ]; then
  build_args+=(-v "$PIP_CA_BUNDLE:/etc/ssl/certs/ca-certificates.crt:ro")
fi
log "building $IMAGE from $BASE_IMAGE with $LOCK"
# --format docker: the OCI image format has no HEALTHCHECK, and podman drops it with a warning.
podman build --isolation=chroot --format docker "${build_args[@]}" -t "$IMAGE" .
log "built $IMAGE ($(podman image inspect --format '{{.Id}}' "$IMAGE" | cut -c1-12))"
