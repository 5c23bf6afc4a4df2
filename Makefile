# The README's two commands: `make run` and `make test`. Everything else is a step of those.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PY := .venv/bin/python
export PYTHONPATH := platform:.

.PHONY: help setup run test lint pytest bench services sandbox docker-setup browser-setup

help:
	@echo "make run   - set up and run the platform on embedded defaults (SQLite, local Redis, bubblewrap)"
	@echo "make test  - set up and run the whole test suite (PostgreSQL, Redis, worker, Docker, Chromium)"
	@echo "make bench - grading latency benchmark (prints figures)"

setup:            ## Python venvs: the platform's (.venv) and the sandbox runtime's (.sandbox-env)
	bash scripts/setup-python.sh

sandbox: setup    ## bubblewrap and the unprivileged sandbox user
	bash scripts/setup-sandbox.sh

services:         ## Redis (and PostgreSQL for tests) reachable on localhost
	bash scripts/setup-services.sh

docker-setup: setup  ## Docker Engine and the offline-built sandbox image
	bash scripts/setup-docker.sh

browser-setup:    ## front-end assets (npm) and, for tests, Debian's Chromium
	bash scripts/setup-browser.sh

run: sandbox
	bash scripts/setup-browser.sh --assets-only
	bash scripts/run.sh

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy grader platform

pytest:
	bash scripts/test.sh

test: sandbox services docker-setup browser-setup lint pytest

bench: sandbox
	$(PY) -m grader.bench
