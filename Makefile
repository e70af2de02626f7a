# The one entry point. `make run` and `make test` do all set-up on a fresh machine.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PY ?= $(shell for p in python3.13 python3.12 python3.11 python3; do command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1 && { command -v $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONFIG ?= config/dev.toml
PYTEST_ARGS ?=

.PHONY: help install system-deps proto layers lint test test-fast run soak bench image clean

help:
	@echo "make run     start the service on 127.0.0.1:50051 (SQLite under ./var, development key)"
	@echo "make test    install everything the tests need (system packages too) and run the whole suite"
	@echo "make lint    ruff + mypy --strict + the layer contracts (lint-imports)"
	@echo "make layers  rewrite the layer contracts in pyproject.toml from docs/architecture.md"
	@echo "make bench   full benchmarks (writes bench/results/*.json)"
	@echo "make soak    long soak and load runs"
	@echo "make image   build and check localhost/rng-service:dev with podman (as root)"

$(STAMP): pyproject.toml
	@test -n "$(PY)" || { echo "error: Python 3.11 or newer is needed (python3.11 not found on PATH)"; exit 1; }
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check --upgrade pip 2>&1 | { grep -v '^WARNING: Location' || true; }
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]' 2>&1 | { grep -v '^WARNING: Location' || true; }
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
	$(BIN)/lint-imports --no-logo --no-cache

test: install system-deps lint
	$(BIN)/python -m pytest -m "not soak" $(PYTEST_ARGS)

test-fast: install
	$(BIN)/python -m pytest -m "not soak and not slow" -x -q $(PYTEST_ARGS)

run: install
	$(BIN)/rng-service dev-run --config $(CONFIG)

soak: install system-deps
	RNG_SOAK=1 $(BIN)/python -m pytest -m soak $(PYTEST_ARGS)

bench: install system-deps
	$(BIN)/python -m bench

image:
	bash scripts/build-image.sh && bash scripts/check-image.sh

clean:
	rm -rf $(VENV) var build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache .import_linter_cache
