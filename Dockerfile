# syntax=docker/dockerfile:1
# Multi-stage build of rng-service. The base is replaceable (podman build --build-arg BASE_IMAGE=...).
ARG BASE_IMAGE=python:3.11-slim

FROM ${BASE_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
# Dependencies first, in their own layer: rebuilt only when pyproject.toml changes.
RUN python3 -m venv /opt/rng-service \
 && /opt/rng-service/bin/pip install --no-cache-dir --upgrade pip \
 && python3 -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
 && /opt/rng-service/bin/pip install --no-cache-dir -r /tmp/requirements.txt
COPY rng_service ./rng_service
COPY certification ./certification
RUN /opt/rng-service/bin/pip install --no-cache-dir --no-deps . \
 && /opt/rng-service/bin/pip check

FROM ${BASE_IMAGE}
COPY --from=build /opt/rng-service /opt/rng-service
RUN (getent group rng >/dev/null || groupadd --system --gid 10001 rng) \
 && (getent passwd rng >/dev/null || useradd --system --uid 10001 --gid rng --home-dir /var/lib/rng-service --shell /usr/sbin/nologin rng) \
 && mkdir -p /var/lib/rng-service /etc/rng-service \
 && chown rng:rng /var/lib/rng-service
# The gRPC port listens on the container's interface, so it must be mTLS (plaintext is refused
# off loopback). Mount read-only at run time, never bake into the image (docs/operations.md):
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
# 127.0.0.1 is in the development server certificate's subjectAltName; a production server
# certificate must name it too (or change --target to a name it carries).
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
  CMD ["rng-service", "call", "--target", "127.0.0.1:50051", "--timeout", "4", \
       "--ca", "/etc/rng-service/tls/ca.pem", \
       "--cert", "/etc/rng-service/tls/healthcheck.pem", \
       "--key", "/etc/rng-service/tls/healthcheck.key", "health"]
ENTRYPOINT ["rng-service"]
CMD ["serve", "--config", "/etc/rng-service/config.toml"]
