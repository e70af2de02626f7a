# syntax=docker/dockerfile:1
# Multi-stage build of rng-service from pinned inputs (docs/operations/deployment.md, "The container
# image"):
#
# - the Debian base: BASE_IMAGE, the Debian project's official bookworm image of 2025-12-29
#   (debuerreotype build of the snapshot.debian.org state DEBIAN_SNAPSHOT), pinned by digest, so
#   an engine pulls exactly those bytes or fails. The digest is the linux/amd64 image's, as
#   published in the Debian image checksums of that build (github.com/debuerreotype/
#   docker-debian-artifacts); for another architecture, take its digest from the same table;
# - Debian packages: python3 from snapshot.debian.org at DEBIAN_SNAPSHOT (the base's own date),
#   verified by apt against the Debian archive keyring, so they never drift either;
# - Python packages: requirements/image.txt, every distribution pinned with its sha256
#   (`make lock` regenerates it from pyproject.toml with pip-compile --generate-hashes), installed
#   with --require-hashes and wheels only; the project itself is built offline from the locked
#   setuptools and wheel.
#
# The base is replaceable: scripts/build-image.sh passes a debootstrap base (no registry is
# reachable on the development machines) and the DEBIAN_SNAPSHOT that base corresponds to. Both
# are recorded in the image's labels.
ARG BASE_IMAGE=docker.io/library/debian:bookworm-20251229@sha256:4216e8fe27fdd803d2822d08ed9de39825a41a47e34c32b71a23ac074f91eaf4
ARG DEBIAN_SNAPSHOT=20251229T000000Z

FROM ${BASE_IMAGE} AS base
ARG DEBIAN_SNAPSHOT
# python3 and its venv module from the snapshot, unless the base has them already (the
# debootstrap base of scripts/build-image.sh does). Check-Valid-Until=false: a snapshot's Release
# file is signed but its validity window has long passed, by design.
RUN if ! python3 -c "import ensurepip, venv" >/dev/null 2>&1; then \
      printf '%s\n' "Types: deb" \
        "URIs: http://snapshot.debian.org/archive/debian/${DEBIAN_SNAPSHOT}" \
        "Suites: bookworm bookworm-updates" "Components: main" \
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" "" \
        "Types: deb" \
        "URIs: http://snapshot.debian.org/archive/debian-security/${DEBIAN_SNAPSHOT}" \
        "Suites: bookworm-security" "Components: main" \
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" \
        > /etc/apt/sources.list.d/debian.sources \
      && rm -f /etc/apt/sources.list \
      && apt-get -o Acquire::Check-Valid-Until=false update \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
           python3 python3-venv \
      && rm -rf /var/lib/apt/lists/*; \
    fi

FROM base AS build
WORKDIR /src
# Dependencies first, in their own layer: rebuilt only when the lock changes. Every file pip
# fetches must match a hash in the lock (--require-hashes); only wheels (no sdist builds with
# unpinned build tools); --no-deps because the lock is the whole closure (pip check below).
COPY requirements/image.txt requirements/image.txt
RUN python3 -m venv /opt/rng-service \
 && /opt/rng-service/bin/pip install --no-cache-dir --disable-pip-version-check \
      --require-hashes --only-binary=:all: --no-deps -r requirements/image.txt \
 && cp requirements/image.txt /opt/rng-service/requirements-image.txt
COPY pyproject.toml README.md ./
COPY rng_service ./rng_service
COPY certification ./certification
COPY web/verify ./web/verify
# The project itself: built here from the locked setuptools and wheel, nothing fetched.
RUN /opt/rng-service/bin/pip install --no-cache-dir --disable-pip-version-check \
      --no-index --no-deps --no-build-isolation . \
 && /opt/rng-service/bin/pip check

FROM base
ARG BASE_IMAGE
ARG DEBIAN_SNAPSHOT
LABEL org.opencontainers.image.title="rng-service" \
      org.opencontainers.image.description="Certified RNG and audited outcome service" \
      org.opencontainers.image.base.name="${BASE_IMAGE}" \
      io.rng-service.debian-snapshot="${DEBIAN_SNAPSHOT}" \
      io.rng-service.python-lock="requirements/image.txt"
COPY --from=build /opt/rng-service /opt/rng-service
# /var/lib/rng-service is the SQLite log's directory (storage.path below): created here, since
# the service never creates a log's directory (a mistyped path is refused, not a second log).
RUN (getent group rng >/dev/null || groupadd --system --gid 10001 rng) \
 && (getent passwd rng >/dev/null || useradd --system --uid 10001 --gid rng --home-dir /var/lib/rng-service --shell /usr/sbin/nologin rng) \
 && mkdir -p /var/lib/rng-service /etc/rng-service \
 && chown rng:rng /var/lib/rng-service
# The gRPC port listens on the container's interface, so it must be mTLS (plaintext is refused
# off loopback). Mount read-only at run time, never bake into the image
# (docs/operations/deployment.md, "TLS material"; docs/operations/keys.md):
#   /etc/rng-service/tls/server.pem, server.key   the service's certificate and key
#   /etc/rng-service/tls/ca.pem                   the CA that issues client certificates
#   /etc/rng-service/tls/healthcheck.pem, .key    the HEALTHCHECK's client certificate
#   /etc/rng-service/keys/log-signing-key.pem     the checkpoint-signing key
#   /etc/rng-service/config.toml                  [log] names and the [[clients]] entries
# `rng-service dev-ca --out DIR --client healthcheck ...` writes these names for development.
ENV PATH=/opt/rng-service/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    RNG_SERVICE__SERVER__HOST=0.0.0.0 \
    RNG_SERVICE__METRICS__HOST=0.0.0.0 \
    RNG_SERVICE__STORAGE__PATH=/var/lib/rng-service/outcome-log.sqlite3 \
    RNG_SERVICE__SERVER__LOCK_DIR=/var/lib/rng-service/run \
    RNG_SERVICE__LOG__KEY_FILE=/etc/rng-service/keys/log-signing-key.pem \
    RNG_SERVICE__TLS__CERT_FILE=/etc/rng-service/tls/server.pem \
    RNG_SERVICE__TLS__KEY_FILE=/etc/rng-service/tls/server.key \
    RNG_SERVICE__TLS__CLIENT_CA_FILE=/etc/rng-service/tls/ca.pem
# Numeric, so that runtimes (Kubernetes runAsNonRoot) can tell it is not root.
USER 10001:10001
WORKDIR /var/lib/rng-service
VOLUME ["/var/lib/rng-service"]
EXPOSE 50051 9464
# The standard gRPC health service over mTLS with the `healthcheck` client certificate. Health is
# not role-checked: any certificate from the client CA may call it, so the healthcheck identity
# needs no [[clients]] entry, and without one it may call nothing else (UNAUTHENTICATED).
# --config reads the same file and RNG_SERVICE__* variables as the CMD, so the check follows the
# configured server.port; with server.host 0.0.0.0 it calls 127.0.0.1, which the server
# certificate must name (the development certificate does).
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
  CMD ["rng-service", "call", "--config", "/etc/rng-service/config.toml", "--timeout", "4", \
       "--ca", "/etc/rng-service/tls/ca.pem", \
       "--cert", "/etc/rng-service/tls/healthcheck.pem", \
       "--tls-key", "/etc/rng-service/tls/healthcheck.key", "health"]
ENTRYPOINT ["rng-service"]
CMD ["serve", "--config", "/etc/rng-service/config.toml"]
