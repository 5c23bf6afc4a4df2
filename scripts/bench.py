"""The end-to-end grading benchmark (`make bench`): prints figures, asserts nothing.

    PYTHONPATH=platform:. .venv/bin/python scripts/bench.py             # 20 idle runs, burst 300
    PYTHONPATH=platform:. .venv/bin/python scripts/bench.py --quick     # 5 idle runs, burst 30

For each sandbox path (cold: a fresh sandbox per job; warm: a torch-loaded spare sandbox;
zygote: each job forked, freshly isolated, from a torch-loaded zygote) it starts the whole
platform as `make run` does (scripts/run.sh: gunicorn, a Celery worker of concurrency 2
and its beat) on a private PostgreSQL database, a private redis-server and a free port,
and measures through the public API (/api/v1/):
  - idle: chain-rule's solution submitted alone, RUNS times, each once the previous one is
    graded and the worker has been idle IDLE_GAP_S: POST to graded on the client's clock
    (from sending the POST to the first GET that reads "graded", polled every POLL_S), and
    the server's stages of each, read from its database (created -> claimed by a worker
    process -> graded, of which the learner's sandbox run);
  - burst: BURST submissions at once, right and wrong ones in turn (the exercise's solution
    and its known wrong solutions): the time from the first POST to the last graded and
    gradings a minute; every verdict is checked (right ones pass, wrong ones do not);
then, with the stack stopped, the sandbox job alone: chain-rule's solution run by the
sandbox backend as a worker process runs it (grader.authoring.bench.sandbox_job_seconds). Prints
the three paths side by side and the zygote's ratios to the others.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import psycopg
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

ROOT = Path(__file__).resolve().parents[1]
EXERCISE = "chain-rule"
PATHS = {  # the sandbox settings of each path (scripts/run.sh reads them)
    "cold": {"GRADLAB_SANDBOX_WARM": "0", "GRADLAB_SANDBOX_ZYGOTE": "0"},
    "warm": {"GRADLAB_SANDBOX_WARM": "1", "GRADLAB_SANDBOX_ZYGOTE": "0"},
    "zygote": {"GRADLAB_SANDBOX_WARM": "1", "GRADLAB_SANDBOX_ZYGOTE": "1"},
}
RUNS, QUICK_RUNS = 20, 5
BURST, QUICK_BURST = 300, 30
IDLE_GAP_S = 3.0  # a warm spare imports torch in about 1.5 s of CPU
POLL_S = 0.02  # the idle runs' client polls
DRAIN_POLL_S = 0.25  # the burst's
POSTERS = 8  # clients posting the burst at once
WORKER_CONCURRENCY = 2  # scripts/run.sh's default: `make run`
START_TIMEOUT_S = 240.0
GRADE_TIMEOUT_S = 1800.0
RETRIES = 3  # per request, on a dropped connection
LOG_TAIL = 4000  # characters of the stack's log printed when a path fails
PG = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
TOKEN_LINE = re.compile(r"username=demo-learner\s+password=\S+\s+token=([0-9a-f]{40})")
FINAL = ("graded", "failed")


@dataclass
class PathFigures:
    """What one path measured: seconds, one entry per submission."""

    path: str
    idle: list[float] = field(default_factory=list)  # POST sent -> "graded" read
    posted: list[float] = field(default_factory=list)  # POST sent -> its 201 read
    claimed: list[float] = field(default_factory=list)  # created -> claimed (server)
    graded: list[float] = field(default_factory=list)  # claimed -> graded (server)
    sandbox_run: list[float] = field(default_factory=list)  # the learner's run (report)
    read: list[float] = field(default_factory=list)  # client total - created -> graded
    sandbox_job: list[float] = field(default_factory=list)  # grader.authoring.bench, stack stopped
    burst: int = 0
    drain_s: float = 0.0
    verdicts: str = ""

    @property
    def per_minute(self) -> float:
        return self.burst * 60.0 / self.drain_s if self.drain_s > 0 else 0.0


def quantile(values: Sequence[float], q: float) -> float:
    """The median for 0.5, else the nearest rank (as grader.authoring.bench's p95)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    if q == 0.5:
        return statistics.median(ordered)
    return ordered[max(math.ceil(q * len(ordered)) - 1, 0)]


# -- the stack ----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Stack:
    url: str
    token: str
    database_url: str
    log: Path


@contextlib.contextmanager
def _redis(folder: Path) -> Iterator[str]:
    port = _free_port()
    server = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "",
         "--appendonly", "no", "--dir", str(folder)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = f"redis://127.0.0.1:{port}/0"
        for _ in range(100):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


@contextlib.contextmanager
def _database(name: str) -> Iterator[str]:
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{PG}/{name}"
    finally:
        with psycopg.connect(f"{PG}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def stack(path: str, folder: Path) -> Iterator[Stack]:
    """scripts/run.sh with `path`'s sandbox settings, its own database, broker and port."""
    port = _free_port()
    with _redis(folder) as redis_url, _database(f"gradlab_bench_{os.getpid()}") as database:
        env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
        env.update(
            PATHS[path], PORT=str(port), DATABASE_URL=database, REDIS_URL=redis_url,
            CELERY_BROKER_URL=redis_url, GRADLAB_VAR_DIR=str(folder / "var"),
            GRADLAB_RATE_LIMIT_COUNT="100000", WORKER_CONCURRENCY=str(WORKER_CONCURRENCY),
        )  # fmt: skip
        log = folder / "stack.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                ["bash", "scripts/run.sh"], cwd=ROOT, env=env, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        try:
            token = _wait_up(process, log, f"http://127.0.0.1:{port}")
            yield Stack(f"http://127.0.0.1:{port}", token, database, log)
        finally:
            _stop(process)


def _wait_up(process: subprocess.Popen[bytes], log: Path, url: str) -> str:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline and process.poll() is None:
        found = TOKEN_LINE.search(log.read_text(encoding="utf-8", errors="replace"))
        with contextlib.suppress(requests.RequestException):
            if found and requests.get(f"{url}/healthz/live", timeout=2).ok:
                return found.group(1)
        time.sleep(0.5)
    tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
    raise SystemExit(f"the stack did not start ({log}):\n{tail}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


# -- measuring through the API ------------------------------------------------------------


class Client:
    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Token {stack.token}"
        # A connection the server dropped as it was reused is tried again: GETs are safe to
        # repeat, and each POST carries an Idempotency-Key (a repeat replays its answer).
        retry = Retry(total=RETRIES, backoff_factor=0.05, allowed_methods=None, status=0)
        self.session.mount("http://", HTTPAdapter(max_retries=retry))

    def submit(self, code: str) -> str:
        body = {"exercise": EXERCISE, "code": code}
        response = self.session.post(
            f"{self.stack.url}/api/v1/submissions/", json=body, timeout=60,
            headers={"Idempotency-Key": uuid.uuid4().hex},
        )  # fmt: skip
        response.raise_for_status()
        return str(response.json()["url"])

    def get(self, url: str) -> dict:
        response = self.session.get(url, timeout=60)
        response.raise_for_status()
        return dict(response.json())

    def wait(self, url: str, poll_s: float) -> dict:
        deadline = time.monotonic() + GRADE_TIMEOUT_S
        while time.monotonic() < deadline:
            body = self.get(url)
            if body["status"] in FINAL:
                return body
            time.sleep(poll_s)
        raise SystemExit(f"{url} was not graded within {GRADE_TIMEOUT_S:.0f} s")


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _stages(database: str, ids: list[int]) -> dict[int, tuple[float, float, float]]:
    """Per submission, from the server's rows: created -> claimed, claimed -> graded and
    the learner's sandbox run (the report's duration_s), in seconds."""
    query = (
        "SELECT id, extract(epoch FROM started_at - created_at),"
        " extract(epoch FROM graded_at - started_at), (report->>'duration_s')::float"
        " FROM submissions_submission WHERE id = ANY(%s)"
    )
    with psycopg.connect(database) as connection:
        rows = connection.execute(query, (ids,)).fetchall()
    return {row[0]: (float(row[1]), float(row[2]), float(row[3] or 0.0)) for row in rows}


def measure_idle(client: Client, code: str, runs: int, gap_s: float, figures: PathFigures) -> None:
    ids: list[int] = []
    for _ in range(runs):
        time.sleep(gap_s)
        started = time.perf_counter()
        url = client.submit(code)
        figures.posted.append(time.perf_counter() - started)
        body = client.wait(url, POLL_S)
        total = time.perf_counter() - started
        if body["status"] != "graded" or not body["passed"]:
            raise SystemExit(f"the solution was not graded as passing: {body}")
        figures.idle.append(total)
        server = _when(body["graded_at"]) - _when(body["created_at"])
        figures.read.append(total - server.total_seconds())
        ids.append(int(body["id"]))
    stages = _stages(client.stack.database_url, ids)
    for submission in ids:
        claimed, graded, run = stages[submission]
        figures.claimed.append(claimed)
        figures.graded.append(graded)
        figures.sandbox_run.append(run)


def burst_codes(count: int) -> list[tuple[str, bool]]:
    """`count` submissions, right and wrong in turn: (code, should pass)."""
    folder = ROOT / "exercises" / EXERCISE
    manifest = tomllib.loads((folder / "exercise.toml").read_text(encoding="utf-8"))
    wrong = [(folder / entry["file"]).read_text(encoding="utf-8") for entry in manifest["wrong"]]
    right = (folder / "solution.py").read_text(encoding="utf-8")
    return [(right, True) if i % 2 == 0 else (wrong[(i // 2) % len(wrong)], False)
            for i in range(count)]  # fmt: skip


def measure_burst(client: Client, count: int, figures: PathFigures) -> None:
    codes = burst_codes(count)
    with ThreadPoolExecutor(POSTERS) as pool:
        urls = list(pool.map(lambda item: client.submit(item[0]), codes))
    for url in urls:  # in order: the oldest first, as they are graded
        client.wait(url, DRAIN_POLL_S)
    bodies = [client.get(url) for url in urls]
    created = min(_when(body["created_at"]) for body in bodies)
    graded = max(_when(body["graded_at"]) for body in bodies)
    figures.burst = count
    figures.drain_s = (graded - created).total_seconds()
    figures.verdicts = _verdicts(bodies, [should for _, should in codes])


def _verdicts(bodies: list[dict], should_pass: list[bool]) -> str:
    right = [b for b, should in zip(bodies, should_pass, strict=True) if should]
    wrong = [b for b, should in zip(bodies, should_pass, strict=True) if not should]
    failed = sum(1 for b in bodies if b["status"] == "failed")
    text = (f"{sum(bool(b['passed']) for b in right)}/{len(right)} right ones passed, "
            f"{sum(bool(b['passed']) for b in wrong)}/{len(wrong)} wrong ones passed")  # fmt: skip
    return text + (f", {failed} FAILED to grade" if failed else "")


def measure_path(path: str, runs: int, burst: int, gap_s: float) -> PathFigures:
    figures = PathFigures(path)
    code = (ROOT / "exercises" / EXERCISE / "solution.py").read_text(encoding="utf-8")
    with (
        tempfile.TemporaryDirectory(prefix=f"gradlab-bench-{path}-") as folder,
        stack(path, Path(folder)) as running,
        _log_shown_on_failure(running.log),
    ):
        client = Client(running)
        warm_up = 2 * WORKER_CONCURRENCY  # each worker process's first jobs start its helpers
        with ThreadPoolExecutor(warm_up) as pool:
            urls = list(pool.map(lambda _: client.submit(code), range(warm_up)))
        for url in urls:
            client.wait(url, DRAIN_POLL_S)
        measure_idle(client, code, runs, gap_s, figures)
        if burst:
            measure_burst(client, burst, figures)
    figures.sandbox_job = list(_sandbox_job(path, runs))
    return figures


@contextlib.contextmanager
def _log_shown_on_failure(log: Path) -> Iterator[None]:
    try:
        yield
    except BaseException:
        tail = log.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL:]
        print(f"the stack's log ({log}) ends:\n{tail}", file=sys.stderr, flush=True)
        raise


def _sandbox_job(path: str, runs: int) -> tuple[float, ...]:
    from grader.authoring import bench
    from grader.spec import load_package

    return bench.sandbox_job_seconds(load_package(ROOT / "exercises" / EXERCISE), path, runs)


# -- the table ----------------------------------------------------------------------------


ROWS: tuple[tuple[str, str, float], ...] = (  # label, figures' attribute, quantile
    ("POST -> graded, idle, p50 ms", "idle", 0.5),
    ("POST -> graded, idle, p95 ms", "idle", 0.95),
    ("  POST answered (201), p50 ms", "posted", 0.5),
    ("  created -> claimed by a worker, p50 ms", "claimed", 0.5),
    ("  claimed -> graded, p50 ms", "graded", 0.5),
    ("    of which the learner's sandbox run, p50 ms", "sandbox_run", 0.5),
    ("  the rest (POST before its row, polls), p50 ms", "read", 0.5),
    ("sandbox job alone, p50 ms", "sandbox_job", 0.5),
    ("sandbox job alone, p95 ms", "sandbox_job", 0.95),
)
LABEL = 48


def table(figures: list[PathFigures]) -> list[str]:
    lines = [f"{'':<{LABEL}}" + "".join(f"{f.path:>10}" for f in figures)]
    for label, attribute, q in ROWS:
        cells = (quantile(getattr(f, attribute), q) * 1000 for f in figures)
        lines.append(f"{label:<{LABEL}}" + "".join(f"{cell:>10.0f}" for cell in cells))
    if any(f.burst for f in figures):
        burst = max(f.burst for f in figures)
        lines.append(f"{f'burst of {burst}: drained in s':<{LABEL}}"
                     + "".join(f"{f.drain_s:>10.1f}" for f in figures))  # fmt: skip
        lines.append(f"{f'burst of {burst}: gradings a minute':<{LABEL}}"
                     + "".join(f"{f.per_minute:>10.0f}" for f in figures))  # fmt: skip
        lines += [f"burst verdicts, {f.path}: {f.verdicts}" for f in figures]
    return lines


def ratios(figures: list[PathFigures]) -> list[str]:
    by_path = {f.path: f for f in figures}
    zygote = by_path.get("zygote")
    if zygote is None:
        return []
    lines = []
    for other in (f for f in figures if f.path != "zygote"):
        parts = [
            f"POST -> graded p50 {_ratio(other.idle, zygote.idle)}",
            f"sandbox job p50 {_ratio(other.sandbox_job, zygote.sandbox_job)}",
        ]
        if zygote.per_minute and other.per_minute:
            parts.append(f"burst gradings a minute {zygote.per_minute / other.per_minute:.1f}x")
        lines.append(f"zygote against {other.path} (x: times as fast): " + ", ".join(parts))
    return lines


def _ratio(slow: list[float], fast: list[float]) -> str:
    return f"{quantile(slow, 0.5) / quantile(fast, 0.5):.1f}x"


def header(runs: int, burst: int, gap_s: float) -> str:
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    return (
        f"gradlab end to end: {EXERCISE} through /api/v1/ (scripts/run.sh: gunicorn, Celery "
        f"worker of concurrency {WORKER_CONCURRENCY}, Redis, PostgreSQL), {os.cpu_count()} "
        f"CPUs, load average {load}\nidle: {runs} submissions one at a time, {gap_s:g} s "
        f"apart; burst: {burst} at once, right and wrong in turn"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="scripts/bench.py", description=__doc__.split("\n")[0])
    quick = f"{QUICK_RUNS} idle runs, burst {QUICK_BURST}"
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--runs", type=int, help=f"idle submissions per path (default {RUNS})")
    parser.add_argument("--burst", type=int, help=f"submissions in the burst (default {BURST})")
    parser.add_argument("--idle-gap", type=float, default=IDLE_GAP_S)
    parser.add_argument("--paths", default=",".join(PATHS), help="of cold,warm,zygote")
    args = parser.parse_args(argv)
    runs = args.runs or (QUICK_RUNS if args.quick else RUNS)
    burst = args.burst if args.burst is not None else (QUICK_BURST if args.quick else BURST)
    paths = [p for p in args.paths.split(",") if p]
    if unknown := set(paths) - set(PATHS):
        parser.error(f"unknown paths: {sorted(unknown)}")
    print(header(runs, burst, args.idle_gap), flush=True)
    figures = []
    for path in paths:
        figures.append(measure_path(path, runs, burst, args.idle_gap))
        print(f"  {path}: measured", file=sys.stderr, flush=True)
    print("\n".join(["", *table(figures), *ratios(figures)]), flush=True)


if __name__ == "__main__":
    main()
