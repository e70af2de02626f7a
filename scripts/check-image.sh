#!/usr/bin/env bash
# Checks the image built by scripts/build-image.sh without running a container (containers cannot
# run on the development machines: setrlimit is denied). The image's filesystem is mounted with
# `podman image mount` (read-only) and its entry point is run under chroot as the image's user:
#
#   1. the image's user is not root (numeric uid resolved through the image's /etc/passwd);
#   2. a HEALTHCHECK is configured, and the entry point is rng-service;
#   3. `rng-service --help` and the HEALTHCHECK's own `rng-service call ... health` parser exit 0;
#   4. smoke test: in a private mount namespace, with the root filesystem read-only, a tmpfs on
#      /tmp, a writable state directory on /var/lib/rng-service and a read-only key directory
#      (what deploy/docker-compose.yml gives it), `rng-service serve` starts on loopback ports,
#      answers the gRPC health check and a spin, serves /metrics, and stops cleanly on SIGTERM.
#
# Needs root (podman image mount, chroot, unshare). Environment: IMAGE (default
# localhost/rng-service:dev).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-localhost/rng-service:dev}
fail() { echo "check-image: FAIL: $*" >&2; exit 1; }
ok() { echo "check-image: ok: $*"; }

[ "$(id -u)" -eq 0 ] || fail "needs root (podman image mount, chroot, unshare)"
command -v podman >/dev/null 2>&1 || fail "podman is not installed (scripts/build-image.sh installs it)"
podman image exists "$IMAGE" || fail "$IMAGE not found; build it with scripts/build-image.sh"

inspect() { podman image inspect --format "$1" "$IMAGE"; }

mnt=$(podman image mount "$IMAGE")
work=$(mktemp -d /tmp/check-image.XXXXXX)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  podman image unmount "$IMAGE" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# --- 1. non-root user ----------------------------------------------------------------------------
user=$(inspect '{{.Config.User}}')
[ -n "$user" ] || fail "the image has no USER (it would run as root)"
u=${user%%:*}
g=${user#*:}; [ "$g" != "$user" ] || g=
if [[ $u =~ ^[0-9]+$ ]]; then uid=$u; else
  uid=$(awk -F: -v n="$u" '$1 == n {print $3}' "$mnt/etc/passwd")
  [ -n "$uid" ] || fail "USER $u is not in the image's /etc/passwd"
fi
if [ -z "$g" ]; then gid=$(awk -F: -v n="$uid" '$3 == n {print $4}' "$mnt/etc/passwd")
elif [[ $g =~ ^[0-9]+$ ]]; then gid=$g
else gid=$(awk -F: -v n="$g" '$1 == n {print $3}' "$mnt/etc/group"); fi
[ -n "$gid" ] || fail "cannot resolve the group of USER $user"
[ "$uid" -ne 0 ] || fail "USER $user is root"
[ "$gid" -ne 0 ] || fail "USER $user has group root"
ok "non-root user: USER $user = uid $uid gid $gid"

# --- 2. healthcheck and entry point -------------------------------------------------------------
hc=$(inspect '{{if .Config.Healthcheck}}{{join .Config.Healthcheck.Test " "}}{{end}}')
[ -n "$hc" ] || fail "no HEALTHCHECK (was the image built with --format docker?)"
ok "HEALTHCHECK: $hc"
entrypoint=$(inspect '{{join .Config.Entrypoint " "}}')
[ "$entrypoint" = "rng-service" ] || fail "ENTRYPOINT is '$entrypoint', expected rng-service"
ok "ENTRYPOINT: $entrypoint, CMD: $(inspect '{{join .Config.Cmd " "}}')"

# The image's environment, so the entry point runs as it would in a container.
mapfile -t image_env < <(inspect '{{range .Config.Env}}{{println .}}{{end}}' | sed '/^$/d')
in_image() {  # in_image ROOT CMD...: run CMD under chroot ROOT as the image's user and environment
  local root=$1; shift
  chroot --userspec="$uid:$gid" "$root" /usr/bin/env -i "${image_env[@]}" HOME=/var/lib/rng-service "$@"
}

# --- 3. the entry point under chroot ------------------------------------------------------------
in_image "$mnt" rng-service --help >"$work/help.txt" 2>&1 \
  || { cat "$work/help.txt" >&2; fail "rng-service --help exited non-zero"; }
grep -q "usage: rng-service" "$work/help.txt" || fail "rng-service --help printed no usage"
ok "rng-service --help exits 0 as uid $uid under chroot"
in_image "$mnt" rng-service call --help >/dev/null || fail "rng-service call --help exited non-zero"
ok "the HEALTHCHECK's command line parses (rng-service call --help)"

# --- 4. serve with a read-only root ------------------------------------------------------------
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
grpc_port=$(free_port)
metrics_port=$(free_port)
mkdir -p "$work/state" "$work/keys"
chown "$uid:$gid" "$work/state" "$work/keys"

# Runs inside `unshare -m`: the mounts vanish with the namespace. The image mount itself is
# read-only, which is what a read_only container root gives.
cat >"$work/ns.sh" <<'EOF'
set -euo pipefail
mount --make-rprivate /
mount -t tmpfs -o mode=1777,size=64m tmpfs "$MNT/tmp"
mount -t proc proc "$MNT/proc"
mount --bind "$WORK/state" "$MNT/var/lib/rng-service"
mount --bind "$WORK/keys" "$MNT/etc/rng-service"
chroot --userspec="$UIDGID" "$MNT" /usr/bin/env -i "${IMAGE_ENV[@]}" HOME=/var/lib/rng-service \
  rng-service keygen --out /etc/rng-service/log-signing-key.pem --name check-image >"$WORK/pubkey.txt"
mount -o remount,bind,ro "$MNT/etc/rng-service"
if touch "$MNT/opt/rng-service/.rw-test" 2>/dev/null; then echo "root filesystem is writable" >&2; exit 1; fi
exec chroot --userspec="$UIDGID" "$MNT" /usr/bin/env -i "${IMAGE_ENV[@]}" HOME=/var/lib/rng-service \
  RNG_SERVICE__SERVER__HOST=127.0.0.1 RNG_SERVICE__SERVER__PORT="$GRPC_PORT" \
  RNG_SERVICE__METRICS__HOST=127.0.0.1 RNG_SERVICE__METRICS__PORT="$METRICS_PORT" \
  RNG_SERVICE__LOG__KEY_FILE=/etc/rng-service/log-signing-key.pem \
  RNG_SERVICE__LOG__KEY_NAME=check-image RNG_SERVICE__LOG__ORIGIN=check-image.local/log \
  rng-service serve
EOF
export MNT="$mnt" WORK="$work" UIDGID="$uid:$gid" GRPC_PORT="$grpc_port" METRICS_PORT="$metrics_port"
# Arrays cannot be exported: pass the image's environment through a sourced file.
{ printf 'IMAGE_ENV=('; printf '%q ' "${image_env[@]}"; printf ')\n'; cat "$work/ns.sh"; } >"$work/ns-full.sh"
unshare -m bash "$work/ns-full.sh" >"$work/serve.log" 2>&1 &
server_pid=$!

# The client runs in the host's mount namespace against the image's (read-only) filesystem.
healthy=
for _ in $(seq 1 60); do
  if ! kill -0 "$server_pid" 2>/dev/null; then cat "$work/serve.log" >&2; fail "rng-service serve exited"; fi
  if in_image "$mnt" rng-service call --target "127.0.0.1:$grpc_port" --timeout 2 health \
       >"$work/health.txt" 2>&1; then healthy=1; break; fi
  sleep 0.5
done
[ -n "$healthy" ] || { cat "$work/serve.log" "$work/health.txt" >&2; fail "no healthy answer within 30 s"; }
ok "serve with a read-only root: health check answers ($(tr '\n' ' ' <"$work/health.txt"))"
in_image "$mnt" rng-service call --target "127.0.0.1:$grpc_port" spin --wheel double_zero \
  --table CHECK --round R1 --request-id check-image-1 >"$work/spin.txt" 2>&1 \
  || { cat "$work/spin.txt" "$work/serve.log" >&2; fail "a spin failed"; }
ok "spin: $(head -1 "$work/spin.txt")"
python3 - "$metrics_port" <<'EOF' || fail "/metrics does not show the spin"
import sys, urllib.request
body = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
assert "rng_outcomes_total{" in body and "rng_generator_up 1.0" in body, body[:2000]
EOF
ok "/metrics serves rng_outcomes_total and rng_generator_up 1"
[ -s "$work/state/outcome-log.sqlite3" ] || fail "no SQLite log in the state volume"
ok "the log is in the state volume ($(ls "$work/state" | tr '\n' ' '))"
# SIGTERM (what `docker stop` sends) must finish in-flight work and exit 0.
kill -TERM "$server_pid"
status=0; wait "$server_pid" || status=$?
server_pid=
[ "$status" -eq 0 ] || { cat "$work/serve.log" >&2; fail "rng-service exited $status on SIGTERM"; }
grep -q '"stopped"' "$work/serve.log" || { cat "$work/serve.log" >&2; fail "no clean stop logged"; }
ok "SIGTERM: clean stop, exit status 0"
echo "check-image: all checks passed for $IMAGE"
