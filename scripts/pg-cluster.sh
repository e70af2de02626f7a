#!/usr/bin/env bash
# A throwaway local PostgreSQL cluster for trying the service's postgres storage driver by hand
# (the tests make their own, see tests/postgres_cluster.py).
#
#   scripts/pg-cluster.sh start        creates and starts one under /tmp, prints its directory
#                                      and the settings that point the service at it
#   scripts/pg-cluster.sh stop DIR     stops it and deletes DIR
#
# PostgreSQL refuses to run as root, and Debian keeps its binaries off PATH: as root the cluster
# runs as the `postgres` user in a directory that user owns. It listens on a unix socket in that
# directory only (no TCP port), with trust authentication: for local experiments, nothing else.
set -euo pipefail

usage() { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

bindir() {
  local dir=""
  if command -v pg_config >/dev/null 2>&1; then dir=$(pg_config --bindir); fi
  if [ -z "$dir" ] || [ ! -x "$dir/initdb" ]; then
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  fi
  if [ -z "$dir" ] || [ ! -x "$dir/initdb" ]; then
    echo "error: PostgreSQL is not installed; install the Debian package postgresql" >&2
    exit 1
  fi
  echo "$dir"
}

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

cmd=${1:-}
case "$cmd" in
  start)
    bin=$(bindir)
    dir=$(mktemp -d /tmp/rng-pg-manual.XXXXXX)
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; fi
    port=5432
    as_owner "$bin/initdb" -D "$dir/data" --username=postgres --auth=trust --encoding=UTF8 \
      --no-instructions >/dev/null
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
      -o "-c listen_addresses='' -c unix_socket_directories='$dir' -p $port" start >/dev/null
    "$bin/psql" -h "$dir" -p "$port" -U postgres -qc "CREATE DATABASE rng_log" >/dev/null
    cat <<EOF
cluster: $dir (log: $dir/server.log)
point the service at it, e.g. for make run:
  export RNG_SERVICE__STORAGE__DRIVER=postgres
  export RNG_SERVICE__STORAGE__POSTGRES_DSN='host=$dir port=$port dbname=rng_log user=postgres'
stop and remove it with:
  scripts/pg-cluster.sh stop $dir
EOF
    ;;
  stop)
    dir=${2:-}
    [ -n "$dir" ] || usage
    case "$dir" in /tmp/rng-pg-manual.*) ;; *) echo "error: $dir is not a cluster made by this script" >&2; exit 2;; esac
    bin=$(bindir)
    if [ -f "$dir/data/postmaster.pid" ]; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    fi
    rm -rf "$dir"
    echo "stopped and removed $dir"
    ;;
  *) usage ;;
esac
