"""Grading latency benchmark, stage by stage: prints figures, asserts nothing.

    python -m grader.authoring.bench [--exercise chain-rule] [--runs 20] [--backend bubblewrap]
                           [--measures grade,sandbox,docker,throughput]

`make bench` runs scripts/bench.py (the three sandbox paths end to end through the API),
which takes its "sandbox job alone" figure from sandbox_job_seconds below.

Measures, through the real sandbox:
  - grading one correct submission with the reference cache empty every run (cold: the
    reference runs too), with it warm (only the learner's run), and (bubblewrap) with a
    warm spare sandbox that imported torch before the submission arrived, and with the
    zygote (each job forked, freshly isolated, from a torch-loaded process);
  - the sandbox alone: start-to-exit of an empty job, without torch (a harness that only
    reads its stdin) and with the real harness on an empty submission (imports torch),
    in a cold sandbox and (bubblewrap) forked by the zygote;
  - (bubblewrap, when a Docker Engine is reachable) the same sandbox job in the Docker
    backend: a container per job against the zygote container (docker_zygote.py);
  - (bubblewrap) throughput: gradings a minute (reference cache warm) with CONCURRENCY
    graders at once, each with its own backend as each Celery worker process has, for
    the cold, warm-spare and zygote paths, and the ratios.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import math
import os
import secrets
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from grader.cache import ReferenceCache
from grader.engine import DEV_SEED, GradeJob, grade
from grader.protocol import InfrastructureError, Limits, RunStatus, SandboxRequest
from grader.runs.base import run_envelope
from grader.runs.learner import learner_envelope
from grader.runs.reference import reference_capture
from grader.sandbox import SandboxConfig, build_backend
from grader.sandbox.base import Sandbox
from grader.sandbox.bubblewrap import BubblewrapSandbox
from grader.sandbox.docker import DockerSandbox
from grader.spec import Package, load_package

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = ROOT / "exercises"
PREFERRED_EXERCISES = ("chain-rule", "first-gradient")
DEFAULT_RUNS = 20
WARM_UP_S = 120.0  # at most, for a warm sandbox to import torch on a busy host
# The groups of figures, in the order printed (--measures takes a subset).
MEASURES = ("grade", "sandbox", "docker", "throughput")
CONCURRENCY = 2  # graders at once in the throughput figures (make run's worker concurrency)
# A harness that reads the job and exits: what the sandbox costs without Python's imports.
EMPTY_HARNESS = "import sys\nsys.stdin.buffer.read()\n"


@dataclass(frozen=True)
class Figures:
    label: str
    seconds: tuple[float, ...]

    def line(self) -> str:
        ordered = sorted(self.seconds)
        p95 = ordered[max(math.ceil(0.95 * len(ordered)) - 1, 0)]
        cells = (min(ordered), statistics.median(ordered), p95)
        return f"{self.label:<46}" + "".join(f"{value * 1000:>10.0f}" for value in cells)


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    package = load_package(EXERCISES / (args.exercise or _default_exercise()))
    sandbox = build_backend(SandboxConfig(backend=args.backend))
    print(_header(package, sandbox, args))
    print(f"{'':<46}{'min ms':>10}{'median ms':>10}{'p95 ms':>10}")
    # One reference cache for every figure taken with the cache warm (the "cold" figure
    # empties its own each run): each reference capture runs once per runtime.
    with tempfile.TemporaryDirectory(prefix="gradlab-bench-") as folder:
        cache = ReferenceCache(folder)
        measures = set(args.measures.split(","))
        if "grade" in measures:
            for figures in _grade_figures(package, sandbox, cache, args.runs, args.device):
                print(figures.line(), flush=True)
        if "sandbox" in measures:
            for figures in _sandbox_figures(package, sandbox, cache, args.runs, args.device):
                print(figures.line(), flush=True)
        if sandbox.name == "bubblewrap" and "docker" in measures:
            _print_docker(package, cache, args.runs, args.device)
        if sandbox.name == "bubblewrap" and "throughput" in measures:
            _print_throughput(package, cache, args.runs, args.device)


def _print_throughput(package: Package, cache: ReferenceCache, runs: int, device: str) -> None:
    print(f"\ngradings a minute, {CONCURRENCY} at once, reference cache warm", flush=True)
    rates = {}
    for path in ("cold", "warm", "zygote"):
        rates[path] = _throughput(package, path, cache, runs, device)
        print(f"{path:<46}{rates[path]:>10.0f}", flush=True)
    ratios = ", ".join(f"{p} {rates['zygote'] / rates[p]:.1f}x" for p in ("cold", "warm"))
    print(f"zygote against {ratios}")


def _print_docker(package: Package, cache: ReferenceCache, runs: int, device: str) -> None:
    """The sandbox job in the Docker backend, cold and zygote, and their ratio; a line
    saying why not where no Engine (or image) is there."""
    cold, zygote = DockerSandbox(), DockerSandbox(zygote=True)
    try:
        print(f"\n{cold.runtime_key(device)}", flush=True)
    except InfrastructureError as why:
        print(f"\ndocker: not measured ({why})", flush=True)
        return
    try:
        medians = []
        for label, backend in (("cold", cold), ("zygote", zygote)):
            job = _empty_submission(backend, package, cache, device)  # starts the zygote
            label = f"sandbox, real harness, empty submission, docker {label}"
            figures = Figures(label, _times(job, runs))
            medians.append(statistics.median(figures.seconds))
            print(figures.line(), flush=True)
        print(f"docker zygote against docker cold {medians[0] / medians[1]:.1f}x (median)")
    finally:
        zygote.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m grader.authoring.bench", description=__doc__)
    parser.add_argument("--exercise", help="slug under exercises/ (default: chain-rule)")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--backend", default=os.environ.get("GRADLAB_SANDBOX", "bubblewrap"))
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument(
        "--measures",
        type=_measures,
        default=",".join(MEASURES),
        help=f"a comma-separated subset of {','.join(MEASURES)} (default: all)",
    )
    return parser


def _measures(value: str) -> str:
    unknown = set(value.split(",")) - set(MEASURES)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown measures {sorted(unknown)}: of {MEASURES}")
    return value


def _default_exercise() -> str:
    for slug in PREFERRED_EXERCISES:
        if (EXERCISES / slug / "exercise.toml").exists():
            return slug
    raise SystemExit(f"none of {PREFERRED_EXERCISES} exists under {EXERCISES}")


def _header(package: Package, sandbox: Sandbox, args: argparse.Namespace) -> str:
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    return (
        f"gradlab grading latency: {package.slug}, {sandbox.runtime_key(args.device)}, "
        f"{args.runs} runs each, {os.cpu_count()} CPUs, load average {load}"
    )


def _grade_figures(
    package: Package, sandbox: Sandbox, warm_cache: ReferenceCache, runs: int, device: str
) -> Iterator[Figures]:
    """Whole gradings: reference cache cold and warm, a warm spare, the zygote."""
    code = package.solution

    def cold() -> None:
        with tempfile.TemporaryDirectory(prefix="gradlab-bench-") as folder:
            _grade_ok(package, code, sandbox, ReferenceCache(folder), device)

    _grade_ok(package, code, sandbox, warm_cache, device)  # fills the cache

    def warm() -> None:
        _grade_ok(package, code, sandbox, warm_cache, device)

    yield Figures("grade, reference cache cold (reference runs too)", _times(cold, runs))
    yield Figures("grade, reference cache warm (learner runs only)", _times(warm, runs))
    if sandbox.name == "bubblewrap":
        yield _warm_sandbox_figures(package, code, warm_cache, runs, device)
    yield _zygote_figures(package, code, _zygote_backend(sandbox), warm_cache, runs, device)


def _sandbox_figures(
    package: Package, sandbox: Sandbox, warm_cache: ReferenceCache, runs: int, device: str
) -> Iterator[Figures]:
    """The sandbox alone: an empty job, and the real harness on an empty submission, cold
    and forked by the zygote."""
    if sandbox.name == "bubblewrap":  # other backends bake their harness into the image
        with _empty_harness() as harness:
            empty = build_backend(SandboxConfig(harness_dir=harness))
            job = _empty_job(empty, device)
            yield Figures("sandbox, empty job, no torch import", _times(job, runs))
    submission = _empty_submission(sandbox, package, warm_cache, device)
    yield Figures("sandbox, real harness, empty submission", _times(submission, runs))
    zygote = _zygote_backend(sandbox)
    try:
        forked = _empty_submission(zygote, package, warm_cache, device)  # starts the zygote
        yield Figures("sandbox, real harness, empty submission, zygote", _times(forked, runs))
    finally:
        zygote.close()


def _zygote_backend(sandbox: Sandbox) -> BubblewrapSandbox | DockerSandbox:
    """A backend like `sandbox`, in zygote mode."""
    if isinstance(sandbox, DockerSandbox):
        return DockerSandbox(image=sandbox.image, gpu=sandbox.gpu, zygote=True)
    return BubblewrapSandbox(zygote=True)


def _zygote_figures(
    package: Package,
    code: str,
    zygote: BubblewrapSandbox | DockerSandbox,
    cache: ReferenceCache,
    runs: int,
    device: str,
) -> Figures:
    """Each job forked by the zygote (torch imported once, before the first job)."""
    try:
        _grade_ok(package, code, zygote, cache, device)  # the first one starts the zygote

        def graded() -> None:
            _grade_ok(package, code, zygote, cache, device)

        seconds = _times(graded, runs)
    finally:
        zygote.close()
    return Figures("grade, cache warm, zygote", seconds)


def _throughput(
    package: Package, path: str, cache: ReferenceCache, runs: int, device: str
) -> float:
    """Gradings a minute with CONCURRENCY graders, each grading `runs` submissions back to
    back with its own backend (as each Celery worker process has its own): "cold", "warm"
    (a spare sandbox started after each job) or "zygote"; `cache` holds the reference."""
    backends = [
        BubblewrapSandbox(warm=path == "warm", zygote=path == "zygote") for _ in range(CONCURRENCY)
    ]
    code = package.solution
    try:
        if path != "cold":  # the reference is cached already: a cold backend has no start
            for backend in backends:  # starts the spare or the zygote
                _grade_ok(package, code, backend, cache, device)
        for backend in backends:
            if path == "warm" and not backend.wait_until_warm(WARM_UP_S):
                raise SystemExit("the warm sandbox did not become ready")

        def grader(backend: BubblewrapSandbox) -> None:
            for _ in range(runs):
                _grade_ok(package, code, backend, cache, device)

        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(CONCURRENCY) as pool:
            for done in [pool.submit(grader, backend) for backend in backends]:
                done.result()
        elapsed = time.perf_counter() - started
    finally:
        for backend in backends:
            backend.close()
    return CONCURRENCY * runs * 60.0 / elapsed


def _warm_sandbox_figures(
    package: Package, code: str, cache: ReferenceCache, runs: int, device: str
) -> Figures:
    """Warm bubblewrap sandboxes (torch imported before the job arrives), each job given
    the time to have its spare ready, as when submissions do not arrive back to back."""
    warm = BubblewrapSandbox(warm=True)
    try:
        _grade_ok(package, code, warm, cache, device)  # the first one starts cold

        def ready() -> None:
            if not warm.wait_until_warm(WARM_UP_S):
                raise SystemExit("the warm sandbox did not become ready")

        def graded() -> None:
            _grade_ok(package, code, warm, cache, device)

        seconds = _times(graded, runs, prepare=ready)
    finally:
        warm.close()
    return Figures("grade, cache warm, sandbox warm (spare ready)", seconds)


def _grade_ok(
    package: Package, code: str, sandbox: Sandbox, cache: ReferenceCache, device: str
) -> None:
    job = GradeJob(package, code, device=device, job_id=f"bench-{secrets.token_hex(4)}")
    report = grade(job, sandbox=sandbox, cache=cache)
    if not report.passed:
        raise SystemExit(f"the reference solution did not pass: {report.message or report.checks}")


def _empty_job(sandbox: Sandbox, device: str) -> Callable[[], None]:
    stdin = b"{}\n" + b"0" * 32 + b"\n"
    return lambda: _run_ok(sandbox, stdin, device)


@contextmanager
def _empty_harness() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="gradlab-bench-harness-"))
    try:
        (folder / "main.py").write_text(EMPTY_HARNESS)
        folder.chmod(0o755)  # the unprivileged sandbox user must be able to bind it
        (folder / "main.py").chmod(0o644)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _empty_submission(
    sandbox: Sandbox, package: Package, cache: ReferenceCache, device: str
) -> Callable[[], None]:
    reference = reference_capture(
        package, seed=DEV_SEED, device=device, sandbox=sandbox, cache=cache
    )
    envelope = learner_envelope(package, "", reference)

    def run() -> None:
        done = run_envelope(sandbox, envelope, package.manifest.limits, device, "bench-empty")
        if done.result.status is not RunStatus.OK:
            raise SystemExit(f"an empty submission failed: {done.result.message}")

    return run


def sandbox_job_seconds(
    package: Package, path: str, runs: int, device: str = "cpu"
) -> tuple[float, ...]:
    """The sandbox job alone, `runs` times: the package's solution run as a learner's
    (reference captured once, not timed) by a bubblewrap backend of `path`: "cold" (a
    fresh sandbox), "warm" (a torch-loaded spare, each run given the time to have it
    ready) or "zygote" (forked by a torch-loaded zygote). scripts/bench.py prints it."""
    backend = BubblewrapSandbox(warm=path == "warm", zygote=path == "zygote")
    try:
        reference = reference_capture(package, seed=0, device=device, sandbox=backend, cache=None)
        envelope = learner_envelope(package, package.solution, reference)

        def run() -> None:
            done = run_envelope(backend, envelope, package.manifest.limits, device, "bench-job")
            if done.result.status is not RunStatus.OK:
                raise SystemExit(f"the solution's sandbox job failed: {done.result.message}")

        def ready() -> None:
            if path == "warm" and not backend.wait_until_warm(WARM_UP_S):
                raise SystemExit("the warm sandbox did not become ready")

        run()  # the first one starts the spare or the zygote
        return _times(run, runs, prepare=ready)
    finally:
        backend.close()


def _run_ok(sandbox: Sandbox, stdin: bytes, device: str) -> None:
    result = sandbox.run(SandboxRequest("bench-empty", stdin, Limits(), device))
    if result.status is not RunStatus.OK:
        raise SystemExit(f"an empty job failed: {result.status.value} {result.message}")


def _times(
    action: Callable[[], None], runs: int, prepare: Callable[[], None] | None = None
) -> tuple[float, ...]:
    seconds = []
    for _ in range(runs):
        if prepare is not None:
            prepare()  # not timed
        started = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - started)
    return tuple(seconds)


if __name__ == "__main__":
    main()
