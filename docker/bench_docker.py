"""Docker sandbox latency, printed (never asserted):

    PYTHONPATH=platform:. .venv/bin/python docker/bench_docker.py [--runs N]

1. a bare container (create, start, wait, remove; `true`): the Engine's own cost
2. an empty job through DockerSandbox.run (the harness imports torch, runs nothing)
3. grading first-gradient and chain-rule through grader.engine.grade with a warm
   reference cache: one learner run in a fresh container each
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from grader.cache import ReferenceCache
from grader.engine import GradeJob, grade
from grader.protocol import PROTOCOL_VERSION, SandboxRequest
from grader.sandbox.docker import DockerSandbox
from grader.spec import load_package

ROOT = Path(__file__).resolve().parents[1]


def timed(runs: int, action: Callable[[], object]) -> list[float]:
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - started)
    return seconds


def line(label: str, seconds: list[float]) -> str:
    return (
        f"{label:<44} median {statistics.median(seconds):6.3f} s"
        f"  min {min(seconds):6.3f}  max {max(seconds):6.3f}  (n={len(seconds)})"
    )


def empty_job() -> SandboxRequest:
    envelope = (
        f'{{"protocol": {PROTOCOL_VERSION}, "kind": "script", "mode": "learner", "names": [],'
        ' "files": {"submission.py": ""}, "limits": {"stdout_bytes": 65536,'
        ' "tensor_elements": 100000}}'
    )
    return SandboxRequest(job_id="bench-empty", stdin=f"{envelope}\n{'0' * 32}\n".encode())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    sandbox = DockerSandbox(gpu=False)
    client = sandbox.client
    image = sandbox.image
    print(f"image {image}: {sandbox.runtime_key('cpu')}, load average {os.getloadavg()[0]:.1f}")

    def bare() -> None:
        container = client.containers.create(image, ["true"], network_mode="none")
        container.start()
        container.wait()
        container.remove(force=True)

    print(line("bare container (true)", timed(runs, bare)))
    print(line("empty job via DockerSandbox.run", timed(runs, lambda: sandbox.run(empty_job()))))
    with tempfile.TemporaryDirectory() as cache_dir:
        cache = ReferenceCache(cache_dir)
        for slug in ("first-gradient", "chain-rule"):
            package = load_package(ROOT / "exercises" / slug)
            job = GradeJob(package, package.solution)
            first = timed(1, lambda job=job: grade(job, sandbox=sandbox, cache=cache))
            print(line(f"grade {slug} (cold: reference + learner)", first))
            warm = timed(runs, lambda job=job: grade(job, sandbox=sandbox, cache=cache))
            print(line(f"grade {slug} (reference cached)", warm))


if __name__ == "__main__":
    main()
