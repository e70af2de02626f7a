#!/usr/bin/env bash
# Checks the image built by scripts/build-image.sh without running a container (containers cannot
# run on the development machines: setrlimit is denied). The image's filesystem is mounted with
# `podman image mount` (read-only) and its entry point is run under chroot as the image's user:
#
#   1. the image's user is not root (numeric uid resolved through the image's /etc/passwd);
#   2. a HEALTHCHECK is configured, and the entry point is rng-service; the labels name the
#      Debian snapshot and the base, and the Python packages in the image are exactly those of
#      requirements/image.txt (the lock file this checkout has, also copied into the image);
#   3. `rng-service --help` and the HEALTHCHECK's own `rng-service call ... health` parser exit 0;
#      scipy is not importable and `rng-certify` exits 2 naming the `certify` extra; the verify
#      page is installed and is the one served by default;
#   4. smoke test: in private mount and network namespaces, with the root filesystem read-only, a
#      tmpfs on /tmp, a writable state directory on /var/lib/rng-service and a read-only
#      /etc/rng-service (config.toml, keys/, and tls/ with development certificates that the
#      image's own `rng-service dev-ca` writes into a temporary directory), the image's CMD starts
#      on 0.0.0.0 with mTLS on the port its config names (not the default: the HEALTHCHECK must
#      follow it); the HEALTHCHECK's exact command answers over mTLS; a plaintext client
#      is refused; a spin over mTLS works for a configured game server and is UNAUTHENTICATED for
#      the healthcheck identity; `rng-audit export --target` over mTLS as an auditor verifies;
#      /metrics is served; SIGTERM stops it cleanly.
#
# Needs root (podman image mount, chroot, unshare, nsenter). Environment: IMAGE (default
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

# --- 2b. pinned inputs: labels and the Python lock ------------------------------------------------
label() { inspect "{{index .Config.Labels \"$1\"}}"; }
snapshot=$(label io.rng-service.debian-snapshot)
[[ $snapshot =~ ^([0-9]{8}T[0-9]{6}Z|unpinned)$ ]] || fail "label io.rng-service.debian-snapshot is '$snapshot'"
[ -n "$(label org.opencontainers.image.base.name)" ] || fail "no org.opencontainers.image.base.name label"
if [ "$snapshot" = unpinned ]; then
  [ -n "$(label io.rng-service.debian-inrelease-sha256)" ] \
    || fail "an unpinned base without the io.rng-service.debian-inrelease-sha256 label"
  ok "Debian base: unpinned snapshot, built from $(label io.rng-service.debian-mirror) bookworm InRelease of $(label io.rng-service.debian-release-date) (sha256 $(label io.rng-service.debian-inrelease-sha256))"
else
  ok "Debian base: snapshot $snapshot ($(label org.opencontainers.image.base.name))"
fi
lock=requirements/image.txt
cmp -s "$lock" "$mnt/opt/rng-service/requirements-image.txt" \
  || fail "the image was built from another lock than $lock (rebuild: scripts/build-image.sh)"
# Every locked distribution is installed at its locked version, and nothing else is (pip and the
# project itself apart).
sed -n 's/^\([A-Za-z0-9._-]*\)==\([^ ;\\]*\).*/\1==\2/p' "$lock" | tr 'A-Z_.' 'a-z--' | sort >"$work/locked.txt"
chroot "$mnt" /usr/bin/env -i /opt/rng-service/bin/python -m pip freeze --all --disable-pip-version-check 2>/dev/null \
  | grep -v -e '^pip==' -e '^rng-service' | sed 's/ @ .*//' | tr 'A-Z_.' 'a-z--' | sort >"$work/installed.txt"
[ -s "$work/locked.txt" ] || fail "no pins read from $lock"
diff "$work/locked.txt" "$work/installed.txt" >"$work/lock.diff" \
  || { cat "$work/lock.diff" >&2; fail "the image's Python packages differ from $lock"; }
ok "Python packages: exactly the $(wc -l <"$work/locked.txt") pins of $lock (sha256 $(sha256sum "$lock" | cut -c1-16)...)"

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
# The certification suite's libraries (the `certify` extra) are not in the image: rng-certify
# says what to install (exit 2), and nothing of the service imports them.
if in_image "$mnt" /opt/rng-service/bin/python -c "import scipy" >/dev/null 2>&1; then
  fail "scipy is importable in the image (the certify extra belongs to labs, not the service)"
fi
rc=0; in_image "$mnt" rng-certify --help >"$work/certify.txt" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "rng-service\[certify\]" "$work/certify.txt" \
  || { cat "$work/certify.txt" >&2; fail "rng-certify without the extra: exit $rc, expected 2 naming rng-service[certify]"; }
ok "no scipy in the image; rng-certify exits 2 naming the certify extra"
# The receipt-verification page ships in the image (pyproject's data-files) and is the page the
# service serves when verify_page.directory is empty.
page=$(in_image "$mnt" /opt/rng-service/bin/python -c \
  "from rng_service.verify_page import default_page_directory as d, load_page as l; p = d(); l(p); print(p)") \
  || fail "the verify page is not in the image (share/rng-service/verify)"
[ "$page" = /opt/rng-service/share/rng-service/verify ] || fail "the verify page resolves to $page"
ok "the verify page is in the image: $page"

# --- 4. serve with a read-only root, over mTLS -------------------------------------------------
# In private mount and network namespaces (unshare -m -n): the image's own ports (gRPC and 9464
# on 0.0.0.0, as in a container) without clashing with the host, and the HEALTHCHECK's command
# run exactly as configured. Every client runs in those namespaces through nsenter.
command -v nsenter >/dev/null 2>&1 || fail "nsenter is not installed (util-linux)"
command -v ip >/dev/null 2>&1 || fail "ip is not installed (iproute2: loopback in the namespace)"
etc=$work/etc   # becomes /etc/rng-service: config.toml, keys/, tls/ (development certificates)
mkdir -p "$work/state" "$etc/keys" "$etc/tls"
chown "$uid:$gid" "$work/state" "$etc/keys" "$etc/tls"
# Clients as in deploy/config/rng-service.toml: a game server and an auditor; the identity
# "healthcheck" has no entry (the health service is not role-checked).
grpc_port=50061   # not the default 50051: the HEALTHCHECK (call --config) must follow it
cat >"$etc/config.toml" <<TOML
[server]
port = $grpc_port

[log]
origin = "check-image.local/log"
key_file = "/etc/rng-service/keys/log-signing-key.pem"

[tls]
cert_file = "/etc/rng-service/tls/server.pem"
key_file = "/etc/rng-service/tls/server.key"
client_ca_file = "/etc/rng-service/tls/ca.pem"

[[clients]]
identity = "check-game"
roles = ["game_server"]
tables = ["CHECK"]

[[clients]]
identity = "check-auditor"
roles = ["auditor"]
TOML

# Runs inside `unshare -m -n`: the mounts and the network vanish with the namespaces. The image
# mount itself is read-only, which is what a read_only container root gives.
cat >"$work/ns.sh" <<'NS'
set -euo pipefail
mount --make-rprivate /
ip link set lo up
mount -t tmpfs -o mode=1777,size=64m tmpfs "$MNT/tmp"
mount -t proc proc "$MNT/proc"
mount --bind "$WORK/state" "$MNT/var/lib/rng-service"
mount --bind "$WORK/etc" "$MNT/etc/rng-service"
as_image() {
  chroot --userspec="$UIDGID" "$MNT" /usr/bin/env -i "${IMAGE_ENV[@]}" HOME=/var/lib/rng-service "$@"
}
as_image rng-service keygen --out /etc/rng-service/keys/log-signing-key.pem --name check-image.local/log \
  >"$WORK/pubkey.txt"
# Development certificates from the image's own dev-ca, into the temporary directory.
as_image rng-service dev-ca --out /etc/rng-service/tls \
  --client healthcheck --client check-game:game_server:CHECK --client check-auditor:auditor \
  >"$WORK/dev-ca.txt" 2>&1
mount -o remount,bind,ro "$MNT/etc/rng-service"
if touch "$MNT/opt/rng-service/.rw-test" 2>/dev/null; then echo "root filesystem is writable" >&2; exit 1; fi
if touch "$MNT/etc/rng-service/tls/.rw-test" 2>/dev/null; then echo "/etc/rng-service is writable" >&2; exit 1; fi
echo ready >"$WORK/ns-ready"
# The image's CMD and environment as they are: serve --config /etc/rng-service/config.toml on
# 0.0.0.0 with the RNG_SERVICE__TLS__* paths.
exec chroot --userspec="$UIDGID" "$MNT" /usr/bin/env -i "${IMAGE_ENV[@]}" HOME=/var/lib/rng-service \
  rng-service "${IMAGE_CMD[@]}"
NS
export MNT="$mnt" WORK="$work" UIDGID="$uid:$gid"
mapfile -t image_cmd < <(inspect '{{range .Config.Cmd}}{{println .}}{{end}}' | sed '/^$/d')
# Arrays cannot be exported: pass the image's environment and command through a sourced file.
{
  printf 'IMAGE_ENV=('; printf '%q ' "${image_env[@]}"; printf ')\n'
  printf 'IMAGE_CMD=('; printf '%q ' "${image_cmd[@]}"; printf ')\n'
  cat "$work/ns.sh"
} >"$work/ns-full.sh"
unshare -m -n bash "$work/ns-full.sh" >"$work/serve.log" 2>&1 &
server_pid=$!

in_ns() {  # in_ns CMD...: run CMD in the service's namespaces, under chroot as the image's user
  nsenter -t "$server_pid" -m -n chroot --userspec="$uid:$gid" "$mnt" /usr/bin/env -i \
    "${image_env[@]}" HOME=/var/lib/rng-service "$@"
}
tls_as() {  # tls_as IDENTITY: the --ca/--cert/--tls-key arguments of a development certificate
  tls_args=(--ca /etc/rng-service/tls/ca.pem --cert "/etc/rng-service/tls/$1.pem"
            --tls-key "/etc/rng-service/tls/$1.key")
}
mapfile -t hc_argv < <(inspect '{{range .Config.Healthcheck.Test}}{{println .}}{{end}}' | sed '/^$/d')
[ "${hc_argv[0]}" = CMD ] || fail "HEALTHCHECK is not in exec form: ${hc_argv[*]}"
hc_argv=("${hc_argv[@]:1}")

healthy=
for _ in $(seq 1 60); do
  if ! kill -0 "$server_pid" 2>/dev/null; then cat "$work/serve.log" >&2; fail "rng-service serve exited"; fi
  # The HEALTHCHECK's own command line, unchanged: mTLS with the healthcheck certificate.
  if [ -e "$work/ns-ready" ] && in_ns "${hc_argv[@]}" >"$work/health.txt" 2>&1; then
    healthy=1; break
  fi
  sleep 0.5
done
[ -n "$healthy" ] || { cat "$work/serve.log" "$work/health.txt" >&2; fail "the HEALTHCHECK got no healthy answer within 30 s"; }
ok "the image's CMD serves mTLS on 0.0.0.0 with a read-only root; the HEALTHCHECK answers $(tr '\n' ' ' <"$work/health.txt")"
if grep -q plaintext "$work/serve.log"; then cat "$work/serve.log" >&2; fail "the service logged plaintext mode"; fi
if in_ns rng-service call --target "127.0.0.1:$grpc_port" --timeout 3 health >"$work/plain.txt" 2>&1; then
  fail "a plaintext health check was answered"
fi
ok "a plaintext client is refused ($(tail -1 "$work/plain.txt" | cut -c1-80))"
tls_as check-game
in_ns rng-service call --target "127.0.0.1:$grpc_port" "${tls_args[@]}" spin --wheel double_zero \
  --table CHECK --round R1 --request-id check-image-1 >"$work/spin.txt" 2>&1 \
  || { cat "$work/spin.txt" "$work/serve.log" >&2; fail "a spin over mTLS failed"; }
ok "spin over mTLS as check-game: $(head -1 "$work/spin.txt")"
tls_as healthcheck
if in_ns rng-service call --target "127.0.0.1:$grpc_port" "${tls_args[@]}" spin --wheel double_zero \
     --table CHECK --round R2 >"$work/hc-spin.txt" 2>&1; then
  fail "the healthcheck identity could spin"
fi
grep -q UNAUTHENTICATED "$work/hc-spin.txt" \
  || { cat "$work/hc-spin.txt" >&2; fail "a spin as healthcheck did not end UNAUTHENTICATED"; }
ok "the healthcheck identity may not spin (UNAUTHENTICATED)"
tls_as check-auditor
in_ns rng-audit "${tls_args[@]}" export --target "127.0.0.1:$grpc_port" --out /tmp/log.export \
  >"$work/export.txt" 2>&1 || { cat "$work/export.txt" >&2; fail "rng-audit export --target over mTLS failed"; }
verify_status=0
in_ns rng-audit verify /tmp/log.export --key /etc/rng-service/keys/log-signing-key.pem.vkey \
  >"$work/verify.txt" 2>&1 || verify_status=$?
# 4: everything verified but truncation, NOT CHECKED with no kept checkpoint (docs/cli.md, 9)
{ [ "$verify_status" = 4 ] && grep -q "^NOT CHECKED: truncation" "$work/verify.txt"; } \
  || { cat "$work/export.txt" "$work/verify.txt" >&2; fail "rng-audit verify failed (exit status $verify_status)"; }
ok "rng-audit export --target over mTLS as check-auditor verifies: $(head -1 "$work/verify.txt")"
nsenter -t "$server_pid" -n python3 - 9464 <<'PY' || fail "/metrics does not show the spin"
import sys, urllib.request
body = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
assert "rng_outcomes_total{" in body and "rng_generator_up 1.0" in body, body[:2000]
PY
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
