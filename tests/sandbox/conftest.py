"""Fixtures for the sandbox tests: the real backends, raw jobs, leftover checks."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_helpers import (
    RAW_HARNESS,
    REQUIRE_DOCKER_ENV,
    SHARED_ZYGOTE_JOBS,
    RawRun,
    assert_no_leftovers,
    docker_unavailable_reason,
    job_prefix,
    raw_job,
)

from grader.protocol import Limits, SandboxRequest, SandboxResult
from grader.sandbox import SandboxConfig, build_backend
from grader.sandbox.base import Sandbox
from grader.sandbox.bubblewrap import BubblewrapSandbox


@pytest.fixture(scope="session")
def zygote_raw() -> Iterator[BubblewrapSandbox]:
    """One bubblewrap backend in zygote mode running the raw test harness, for the whole
    session (its zygote imports torch once: a zygote shared across jobs, as a deployment
    that chooses throughput runs it)."""
    backend = BubblewrapSandbox(
        harness_dir=RAW_HARNESS, zygote=True, zygote_jobs=SHARED_ZYGOTE_JOBS
    )
    yield backend
    backend.close()


@pytest.fixture(params=["cold", "zygote"])
def bubblewrap_raw(
    request: pytest.FixtureRequest, zygote_raw: BubblewrapSandbox
) -> BubblewrapSandbox:
    """The real bubblewrap backend, running the raw test harness instead of the real one:
    a fresh sandbox per job ("cold"), or forked per job by the zygote ("zygote")."""
    if request.param == "zygote":
        return zygote_raw
    return BubblewrapSandbox(harness_dir=RAW_HARNESS)


@pytest.fixture
def run_raw(bubblewrap_raw: BubblewrapSandbox) -> Iterator[RawRun]:
    """Runs python code as the sandbox's main program; asserts nothing is left behind."""
    prefix = job_prefix()
    jobs = itertools.count()

    def run(code: str, *, device: str = "cpu", **limits: object) -> SandboxResult:
        request = SandboxRequest(
            job_id=f"{prefix}-{next(jobs)}",
            stdin=raw_job(code),
            limits=Limits().replace(**limits),
            device=device,
        )
        return bubblewrap_raw.run(request)

    yield run
    assert_no_leftovers(prefix)


# The backends whose isolation differs. A warm spare is the cold sandbox's very chain
# (BubblewrapSandbox._command), started before its job: test_bubblewrap_warm.py checks that
# it keeps every limit and serves one job, and the attacks run on the cold one.
BACKEND_PARAMS = [
    "bubblewrap",
    "bubblewrap-zygote",
    pytest.param("docker", marks=pytest.mark.docker),
    pytest.param("docker-zygote", marks=pytest.mark.docker),
]


@pytest.fixture(scope="module", params=BACKEND_PARAMS)
def backend(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    """Each real sandbox backend, with the real harness ("bubblewrap-zygote": each job
    forked, freshly isolated, by a torch-loaded zygote; "docker-zygote": the same, the
    zygote in a long-lived container). One per module and backend: a module's tests run
    backend by backend, in file order."""
    if request.param.startswith("docker"):
        reason = docker_unavailable_reason()
        if reason is not None:
            if os.environ.get(REQUIRE_DOCKER_ENV) == "1":
                pytest.fail(f"{REQUIRE_DOCKER_ENV}=1 but Docker is unavailable: {reason}")
            pytest.skip(reason)
    if request.param in {"bubblewrap-zygote", "docker-zygote"}:
        name = request.param.removesuffix("-zygote")
        # a zygote shared across jobs, as a deployment that chooses throughput runs it
        config = SandboxConfig(backend=name, zygote=True, zygote_jobs=SHARED_ZYGOTE_JOBS)
        kept = build_backend(config)
        yield kept
        kept.close()  # type: ignore[attr-defined]
        return
    yield build_backend(SandboxConfig(backend=request.param))


BACKENDS = [param if isinstance(param, str) else param.values[0] for param in BACKEND_PARAMS]


def _backend_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return None if callspec is None else callspec.params.get("backend")


def _left_out(item: pytest.Item) -> bool:
    """Whether `item` runs on a backend its `not_on_backends` mark leaves out."""
    mark = item.get_closest_marker("not_on_backends")
    return mark is not None and _backend_of(item) in mark.args


@pytest.hookimpl(trylast=True)  # after pytest's own ordering by fixture parameters
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselects the backends a test's `not_on_backends` mark leaves out, then keeps each
    module's tests of the `backend` fixture backend by backend in BACKEND_PARAMS's order:
    pytest orders a module-scoped parameter by the first test it sees, and a module whose
    first test leaves "bubblewrap" out could otherwise start a backend twice, or tear a
    Docker backend down in a test of another backend (tests/lanes.py's guard)."""
    left_out = [item for item in items if _left_out(item)]
    if not left_out:
        return
    config.hook.pytest_deselected(items=left_out)
    kept = [item for item in items if not _left_out(item)]
    modules = {item.path for item in left_out}
    slots = [index for index, item in enumerate(kept) if item.path in modules]
    first: dict[Path, int] = {}  # where each of those modules starts
    for index in slots:
        first.setdefault(kept[index].path, index)
    order = sorted(slots, key=lambda i: (first[kept[i].path], _backend_rank(kept[i]), i))
    items[:] = kept
    for slot, index in zip(slots, order, strict=True):
        items[slot] = kept[index]


def _backend_rank(item: pytest.Item) -> int:
    """Where the item's backend comes in BACKEND_PARAMS (-1: a test without one)."""
    backend = _backend_of(item)
    return BACKENDS.index(backend) if backend in BACKENDS else -1
