# The README's commands: `make run`, `make test` and, while editing, `make test-fast`.
# Everything else is a step of those.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PY := .venv/bin/python
export PYTHONPATH := platform:.
# What the fast lane leaves out (tests/lanes.py marks the tests that need these): the real
# parts, the tests that start interpreters or servers of their own (`processes`: a fresh
# django.setup(), a bounded child, gunicorn) and those that take a second or more alone
# (`heavy`: fuzzing, migrations, complexity bounds), which both passes of `make test` run.
FAST_LANE := not sandbox and not docker and not browser and not worker and not processes and not heavy
# Test processes (pytest-xdist): three on the 2-core reference machine. The suite waits
# for part of its time (workers and Chromium starting, Docker, wall clocks), and a third
# process fills it (figures: docs/measurements.md). Three exposed races between test
# processes that two hid (the Docker janitors of two workers, a cgroup read mid-creation,
# a tight wall clock), each fixed. The fast lane, busy on the CPU throughout, keeps two.
# 0 runs the tests in pytest's own process (`scripts/test.sh <paths>`).
TEST_PROCESSES ?= 3
FAST_LANE_PROCESSES ?= 2

.PHONY: help venv setup run test test-fast lint pytest pytest-fast bench services sandbox \
	docker-setup browser-setup lock

help:
	@echo "make run       - set up and run the platform on embedded defaults (SQLite, local Redis, bubblewrap)"
	@echo "make test      - set up and run the whole test suite (PostgreSQL, Redis, worker, Docker, Chromium)"
	@echo "make test-fast - the tests that need no sandbox, Docker, browser, worker or processes of their own (edit-test loop)"
	@echo "make bench     - end-to-end grading benchmark: cold, warm spare, zygote (prints figures)"
	@echo "make lock      - re-pin requirements/*.lock after editing requirements/*.in"

venv:             ## the platform's virtual environment only (.venv, from requirements/dev.lock)
	bash scripts/setup-python.sh --platform-only

setup:            ## Python venvs: the platform's (.venv) and the sandbox runtime (/opt/gradlab/sandbox-env)
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

# mypy's cache lives outside the checkout: a fresh clone on the same machine starts from it
# (mypy re-checks every module whose source or dependencies changed).
MYPY_CACHE_DIR ?= $(HOME)/.cache/gradlab/mypy

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy --cache-dir "$(MYPY_CACHE_DIR)" grader platform

# The second pass: the platform's tests that reach the database (pages, API, mastery, analytics, authoring, LTI,
# integrations) again on `make run`'s SQLite, without the slow parts.
pytest:
	bash scripts/test.sh -n $(TEST_PROCESSES)
	bash scripts/test.sh --sqlite -n $(FAST_LANE_PROCESSES) tests/platform tests/lti tests/integrations tests/reliability

pytest-fast:
	bash scripts/test.sh -n $(FAST_LANE_PROCESSES) -m "$(FAST_LANE)"

test: sandbox services docker-setup browser-setup lint pytest

test-fast: venv services pytest-fast

lock: venv        ## pip-compile each list against the one it builds on: base -> prod -> dev
	cd requirements && for list in base prod dev; do \
	  ../.venv/bin/pip-compile -q --strip-extras --no-emit-index-url --no-emit-find-links \
	    --output-file=$$list.lock $$list.in || exit 1; \
	done

bench: sandbox services  ## scripts/bench.py: the three sandbox paths end to end (BENCH_ARGS=--quick)
	$(PY) scripts/bench.py $(BENCH_ARGS)
