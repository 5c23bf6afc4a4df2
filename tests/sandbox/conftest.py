"""Fixtures for the sandbox tests: the real backends, raw jobs, leftover checks."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

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
