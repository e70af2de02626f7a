# The one entry point. `make run` and `make test` do all set-up on a fresh machine.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PY ?= $(shell for p in python3.13 python3.12 python3.11 python3; do command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1 && { command -v $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONFIG ?= config/dev.toml
PYTEST_ARGS ?=
# make test's pytest worker processes (pytest-xdist; 0 = one process). --dist loadscope keeps
# a module's tests, and so its module-scoped fixtures (a started service, a collected log), on
# one worker; each worker starts its own PostgreSQL cluster (tests/postgres_cluster.py). The
# tests marked serial (a PostgreSQL outage or failover under load) run afterwards, alone: with
# another worker busy on the same cores, a call during the outage can hang past its bounds.
TEST_WORKERS ?= 2

# The image's Python lock (make lock): resolved for the image's Python, 3.11 on Debian bookworm.
LOCK := requirements/image.txt
LOCK_PY ?= $(shell command -v python3.11)
LOCK_VENV := .venv-lock
PIP_TOOLS := pip-tools==7.6.2

.PHONY: help install system-deps proto layers lint test test-fast run soak bench image lock clean

help:
	@echo "make run     start the service on 127.0.0.1:50051 (SQLite under ./var, development key)"
	@echo "make test    install everything the tests need (system packages too) and run the whole suite"
	@echo "make lint    ruff + mypy --strict + the layer contracts (lint-imports)"
	@echo "make layers  rewrite the import contracts in .importlinter from docs/architecture.md"
	@echo "make bench   full benchmarks (writes bench/results/*.json)"
	@echo "make soak    long soak and load runs"
	@echo "make image   build and check localhost/rng-service:dev with podman (as root)"
	@echo "make lock    regenerate requirements/image.txt, the image's hash-locked Python packages"
	@echo "             (UPGRADE=1: newest versions allowed by pyproject.toml)"

$(STAMP): pyproject.toml
	@test -n "$(PY)" || { echo "error: Python 3.11 or newer is needed (python3.11 not found on PATH)"; exit 1; }
	@echo "install [1/3]: creating the virtual environment $(VENV) with $(PY)"
	$(PY) -m venv $(VENV)
	@echo "install [2/3]: upgrading pip in $(VENV)"
	$(BIN)/pip install --quiet --disable-pip-version-check --upgrade pip 2>&1 | { grep -v '^WARNING: Location' || true; }
	@echo "install [3/3]: installing rng-service and its dependencies into $(VENV) (about a minute on a fresh clone; pip names each package as it goes)"
	$(BIN)/pip install --disable-pip-version-check --progress-bar off -e '.[dev,certify]' 2>&1 | { grep --line-buffered -v '^WARNING: Location' || true; }
	@echo "install: done"
	@touch $@

install: $(STAMP)

system-deps:
	@bash scripts/install-system-deps.sh

proto: install
	$(BIN)/python scripts/gen_proto.py

layers: install
	$(BIN)/python scripts/layer_contracts.py

lint: install
	$(BIN)/ruff check rng_service certification tests bench scripts
	$(BIN)/ruff format --check rng_service certification tests bench scripts
	$(BIN)/mypy rng_service certification
	$(BIN)/python scripts/layer_contracts.py --check
	$(BIN)/lint-imports --no-logo --no-cache .importlinter

test: install system-deps lint
	$(BIN)/python -m pytest -m "not soak and not serial" -n $(TEST_WORKERS) --dist loadscope $(PYTEST_ARGS)
	$(BIN)/python -m pytest -m "serial and not soak" $(PYTEST_ARGS) || [ $$? -eq 5 ]  # 5: none selected

test-fast: install
	$(BIN)/python -m pytest -m "not soak and not slow" -x -q $(PYTEST_ARGS)

# ./var holds config/dev.toml's SQLite log, key and locks: the service never creates a log's
# directory (a mistyped storage.path is refused, not a second log), so make run does.
run: install
	mkdir -p var
	@echo "run: starting rng-service dev-run --config $(CONFIG) (JSON log lines follow; serving once the \"listening\" line appears)"
	$(BIN)/rng-service dev-run --config $(CONFIG)

soak: install system-deps
	RNG_SOAK=1 $(BIN)/python -m pytest -m soak $(PYTEST_ARGS)

bench: install system-deps
	$(BIN)/python -m bench

# Installs exactly $(LOCK) (pip --require-hashes in the Dockerfile), then checks the image's
# packages against it (scripts/check-image.sh).
image: $(LOCK)
	bash scripts/build-image.sh && bash scripts/check-image.sh

# pip-compile (pip-tools) pins pyproject.toml's dependencies, their dependencies and the build
# backend (setuptools, wheel) with the sha256 of every file PyPI has for each pinned version.
# Only PyPI is asked (the local pip configuration's extra indexes and find-links are ignored),
# so the hashes are those an image build downloads. Existing pins are kept unless UPGRADE=1.
lock:
	@test -n "$(LOCK_PY)" || { echo "error: make lock needs python3.11 (the image's Python) on PATH, or LOCK_PY=..."; exit 1; }
	@$(LOCK_PY) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11) or sys.platform != "linux")' \
	  || { echo "error: make lock resolves for the image: Python 3.11 on Linux ($(LOCK_PY) is not)"; exit 1; }
	@test -x $(LOCK_VENV)/bin/pip-compile || { $(LOCK_PY) -m venv $(LOCK_VENV) \
	  && $(LOCK_VENV)/bin/pip install --quiet --disable-pip-version-check '$(PIP_TOOLS)'; }
	env -u PIP_FIND_LINKS -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null \
	  $(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras \
	  --build-deps-for wheel --no-emit-index-url --index-url https://pypi.org/simple \
	  $(if $(UPGRADE),--upgrade) --output-file $(LOCK) pyproject.toml

clean:
	rm -rf $(VENV) $(LOCK_VENV) var build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache .import_linter_cache
