"""Warm bubblewrap sandboxes (warm=True / GRADLAB_SANDBOX_WARM=1): torch is imported
before the job arrives, yet every sandbox still serves exactly one job."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_helpers import (
    FORK_UNTIL_REFUSED,
    RAW_HARNESS,
    assert_no_leftovers,
    gradlab_cgroups,
    job_prefix,
    raw_job,
)

from grader.protocol import Limits, RunStatus, SandboxRequest, SandboxResult
from grader.sandbox.bubblewrap import BubblewrapSandbox

pytestmark = pytest.mark.sandbox

WARM_UP_S = 60.0
PROBE = """
import json, os, sys
before = sorted(os.listdir("/tmp"))
open(f"/tmp/{os.getpid()}-{NONCE}", "w").write("x")
init_started = open("/proc/1/stat").read().rsplit(")", 1)[1].split()[19]
print(json.dumps({"tmp_before": before, "init_started": init_started,
                  "torch_loaded": "torch" in sys.modules}))
"""


@pytest.fixture
def warm_backend() -> Iterator[BubblewrapSandbox]:
    backend = BubblewrapSandbox(harness_dir=RAW_HARNESS, warm=True)
    yield backend
    backend.close()


def run(backend: BubblewrapSandbox, prefix: str, code: str, **limits: object) -> SandboxResult:
    request = SandboxRequest(
        f"{prefix}-{secrets.token_hex(2)}", raw_job(code), Limits().replace(**limits)
    )
    return backend.run(request)


def test_each_warm_sandbox_serves_one_job_in_fresh_namespaces(
    warm_backend: BubblewrapSandbox,
) -> None:
    prefix = job_prefix()
    seen = []
    for _ in range(3):
        result = run(warm_backend, prefix, PROBE)
        assert result.status is RunStatus.OK, result.message
        seen.append(json.loads(result.stdout))
        assert warm_backend.wait_until_warm(WARM_UP_S)
    assert [s["tmp_before"] for s in seen] == [[], [], []]
    # a new pid namespace each time: its init started at a different moment
    # (namespace inode numbers are recycled, so they prove nothing)
    assert len({s["init_started"] for s in seen}) == 3
    assert [s["torch_loaded"] for s in seen] == [False, True, True]  # the first one is cold
    assert_no_leftovers(prefix)


def test_a_warm_sandbox_keeps_every_limit(warm_backend: BubblewrapSandbox) -> None:
    prefix = job_prefix()
    assert run(warm_backend, prefix, "pass").status is RunStatus.OK
    assert warm_backend.wait_until_warm(WARM_UP_S)
    memory = run(warm_backend, prefix, "block = bytearray(2 * 1024**3)")
    assert memory.status is RunStatus.MEMORY
    assert warm_backend.wait_until_warm(WARM_UP_S)
    loop = run(warm_backend, prefix, "while True:\n    pass", wall_seconds=2)
    assert loop.status is RunStatus.TIMEOUT  # not warm for these limits: a cold start
    assert warm_backend.wait_until_warm(WARM_UP_S)  # torch loaded before the 2 s start
    assert run(warm_backend, prefix, "pass", wall_seconds=2).status is RunStatus.OK
    assert warm_backend.wait_until_warm(WARM_UP_S)
    loop = run(warm_backend, prefix, "while True:\n    pass", wall_seconds=2)
    assert loop.status is RunStatus.TIMEOUT and loop.duration_s >= 2
    assert warm_backend.wait_until_warm(WARM_UP_S)
    flood = run(warm_backend, prefix, "import os\nwhile True:\n    os.write(1, b'x' * 65536)")
    assert flood.status is RunStatus.OUTPUT_LIMIT
    assert warm_backend.wait_until_warm(WARM_UP_S)
    forks = run(warm_backend, prefix, FORK_UNTIL_REFUSED, pids=Limits().pids)
    assert forks.status is RunStatus.OK and int(forks.stdout) < Limits().pids
    assert_no_leftovers(prefix)


def _warm_cgroups() -> set[Path]:
    return {c for c in gradlab_cgroups() if c.name.startswith(f"warm-{os.getpid()}-")}


def test_closing_a_warm_backend_stops_its_spare_sandbox(warm_backend: BubblewrapSandbox) -> None:
    # Other backends of this test session (e.g. a session-wide warm one) keep live spares.
    others = _warm_cgroups()
    assert run(warm_backend, job_prefix(), "pass").status is RunStatus.OK
    assert warm_backend.wait_until_warm(WARM_UP_S)
    spare = _warm_cgroups() - others
    assert spare
    warm_backend.close()
    assert not spare & gradlab_cgroups()
    assert not warm_backend.wait_until_warm(1)
