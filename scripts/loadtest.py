"""A bounded load test on loopback: a burst of submissions through the API while SIGKILL
hits busy grading pool processes of this host; prints submitted, graded, lost, graded twice
and POST-to-graded p50/p95 (the server's created_at -> graded_at).

    PYTHONPATH=platform:. .venv/bin/python scripts/loadtest.py --url http://127.0.0.1:8000 \\
        --token <learner token> --exercise chain-rule --count 30 --kills 5 \\
        --worker-pid <main pid of the celery worker> --worker-log var/worker.log

A busy pool process is a Celery pool child (its parent is a Celery worker) that has a child
of its own (the sandbox it runs). "graded twice": a submission with more check results than
its exercise has checks, or (with --worker-log) graded by two attempts in the worker's log.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import requests

PROC = Path("/proc")
FINAL = ("graded", "failed")
GRADED_LINE = re.compile(r"submission (\d+) attempt \d+: graded")


@dataclass
class Figures:
    submitted: int = 0
    graded: int = 0
    failed: int = 0
    lost: int = 0
    graded_twice: int = 0
    kills: int = 0
    seconds: list[float] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        ordered = sorted(self.seconds)
        return {
            "submitted": self.submitted, "graded": self.graded, "failed": self.failed,
            "lost": self.lost, "graded_twice": self.graded_twice, "kills": self.kills,
            "p50_s": round(statistics.median(ordered), 2) if ordered else None,
            "p95_s": round(ordered[max(0, int(0.95 * len(ordered)) - 1)], 2) if ordered else None,
        }  # fmt: skip


def _cmdline(pid: int) -> list[bytes]:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def _parent(pid: int) -> int:
    try:
        return int((PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _is_celery_worker(pid: int) -> bool:
    argv = _cmdline(pid)
    return any(b"celery" in part for part in argv) and b"worker" in argv


def busy_pool_processes(workers: set[int]) -> list[int]:
    """Pool children of the Celery workers `workers` (main pids) running a sandbox now."""
    pids = [int(entry.name) for entry in PROC.iterdir() if entry.name.isdigit()]
    parents = {pid: _parent(pid) for pid in pids}
    pool = {pid for pid, parent in parents.items()
            if parent in workers and _is_celery_worker(pid)}  # fmt: skip
    return sorted({parent for parent in parents.values() if parent in pool})


def _submit(session: requests.Session, url: str, exercise: str, code: str) -> str:
    response = session.post(f"{url}/api/v1/submissions/", json={"exercise": exercise,
                            "code": code}, timeout=60)  # fmt: skip
    response.raise_for_status()
    return str(response.json()["url"])


def _kill_busy(kills: int, workers: set[int], deadline: float, stop: list[bool]) -> int:
    done = 0
    while done < kills and time.monotonic() < deadline and not stop:
        busy = busy_pool_processes(workers)
        if busy:
            try:
                os.kill(random.choice(busy), signal.SIGKILL)
                done += 1
            except ProcessLookupError:
                pass
            time.sleep(1.0)
        time.sleep(0.2)
    return done


def run(*, url: str, token: str, exercise: str, code: str, count: int, kills: int,
        workers: set[int], timeout: float, check_count: int,
        worker_logs: list[Path]) -> Figures:  # fmt: skip
    session = requests.Session()
    session.headers["Authorization"] = f"Token {token}"
    figures = Figures()
    deadline = time.monotonic() + timeout
    stop: list[bool] = []
    with ThreadPoolExecutor(max_workers=9) as pool:
        killer = pool.submit(_kill_busy, kills, workers, deadline, stop)
        urls = list(pool.map(lambda _: _submit(session, url, exercise, code), range(count)))
        figures.submitted = len(urls)
        bodies = _wait_all(session, urls, deadline)
        stop.append(True)
        figures.kills = killer.result()
    for body in bodies.values():
        _count(figures, body, check_count)
    figures.lost = figures.submitted - figures.graded - figures.failed
    figures.graded_twice += _graded_twice_in_logs(worker_logs)
    return figures


def _wait_all(session: requests.Session, urls: list[str], deadline: float) -> dict[str, dict]:
    finished: dict[str, dict] = {}
    while len(finished) < len(urls) and time.monotonic() < deadline:
        for item in urls:
            if item not in finished:
                body = session.get(item, timeout=60).json()
                if body["status"] in FINAL:
                    finished[item] = body
        time.sleep(0.5)
    return finished


def _count(figures: Figures, body: dict, check_count: int) -> None:
    if body["status"] == "failed":
        figures.failed += 1
        return
    figures.graded += 1
    if len(body["checks"]) > check_count:
        figures.graded_twice += 1
    created = datetime.fromisoformat(body["created_at"].replace("Z", "+00:00"))
    graded = datetime.fromisoformat(body["graded_at"].replace("Z", "+00:00"))
    figures.seconds.append((graded - created).total_seconds())


def _graded_twice_in_logs(logs: list[Path]) -> int:
    seen: dict[str, int] = {}
    for log in logs:
        for match in GRADED_LINE.finditer(log.read_text(encoding="utf-8", errors="replace")):
            seen[match.group(1)] = seen.get(match.group(1), 0) + 1
    return sum(1 for times in seen.values() if times > 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--token", required=True)
    parser.add_argument("--exercise", default="chain-rule")
    parser.add_argument("--code-file", type=Path, default=Path("exercises/chain-rule/solution.py"))
    parser.add_argument("--checks", type=int, default=0, help="checks of the exercise (0: read)")
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--worker-log", type=Path, action="append", default=[])
    parser.add_argument("--worker-pid", type=int, action="append", default=[],
                        help="main pid of a Celery worker whose busy pool processes get "
                        "the SIGKILLs (repeatable; none: no kills)")  # fmt: skip
    args = parser.parse_args(argv)
    if not args.url.startswith(("http://127.0.0.1", "http://localhost", "http://[::1]")):
        parser.error("loopback only: --url must be http://127.0.0.1:<port> or localhost")
    checks = args.checks or _checks_of(args.exercise)
    figures = run(url=args.url, token=args.token, exercise=args.exercise,
                  code=args.code_file.read_text(encoding="utf-8"), count=min(args.count, 1000),
                  kills=args.kills, workers=set(args.worker_pid), timeout=args.timeout,
                  check_count=checks,
                  worker_logs=args.worker_log)  # fmt: skip
    print(json.dumps(figures.as_json()))
    return 0 if figures.lost == 0 and figures.graded_twice == 0 else 1


def _checks_of(exercise: str) -> int:
    import tomllib

    package = Path("exercises") / exercise / "exercise.toml"
    return len(tomllib.loads(package.read_text(encoding="utf-8"))["checks"])


if __name__ == "__main__":
    sys.exit(main())
