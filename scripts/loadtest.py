"""A bounded load test on loopback: a burst of submissions through the API while SIGKILL
hits busy grading pool processes of this host (and, optionally, the broker is restarted
once and N pollers read submissions' status all along); prints submitted, graded, lost,
graded twice, POST-to-graded p50/p95 (the server's created_at -> graded_at) and the status
polls' p50/p95 latency.

    PYTHONPATH=platform:. .venv/bin/python scripts/loadtest.py --url http://127.0.0.1:8000 \\
        --token <learner token> --exercise chain-rule --count 30 --kills 5 \\
        --worker-pid <main pid of the celery worker> --worker-log var/worker.log \\
        --pollers 50 --restart-after 20 --restart-command "<restarts the broker>"

A busy pool process is a Celery pool child (its parent is a Celery worker) that has a child
of its own (the sandbox it runs). "graded twice": a submission with more check results than
its exercise has checks, or (with --worker-log) graded by two attempts in the worker's log.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
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
    restarts: int = 0
    seconds: list[float] = field(default_factory=list)
    polls: list[float] = field(default_factory=list)  # seconds per status poll
    poll_errors: int = 0
    wall_s: float = 0.0

    def as_json(self) -> dict[str, object]:
        return {
            "submitted": self.submitted, "graded": self.graded, "failed": self.failed,
            "lost": self.lost, "graded_twice": self.graded_twice, "kills": self.kills,
            "broker_restarts": self.restarts,
            "p50_s": _quantile(self.seconds, 0.5), "p95_s": _quantile(self.seconds, 0.95),
            "polls": len(self.polls), "poll_errors": self.poll_errors,
            "poll_p50_ms": _ms(_quantile(self.polls, 0.5)),
            "poll_p95_ms": _ms(_quantile(self.polls, 0.95)),
            "wall_s": round(self.wall_s, 1),
        }  # fmt: skip


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    if q == 0.5:
        return round(statistics.median(ordered), 3)
    return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)], 3)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


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
        workers: set[int], timeout: float, check_count: int, worker_logs: list[Path],
        pollers: int = 0, restart_command: str = "",
        restart_after: float = 0.0) -> Figures:  # fmt: skip
    session = requests.Session()
    session.headers["Authorization"] = f"Token {token}"
    figures = Figures()
    started = time.monotonic()
    deadline = started + timeout
    stop: list[bool] = []
    with ThreadPoolExecutor(max_workers=12 + pollers) as pool:
        killer = pool.submit(_kill_busy, kills, workers, deadline, stop)
        restarter = pool.submit(_restart_once, restart_command, restart_after, stop)
        urls = list(pool.map(lambda _: _submit(session, url, exercise, code), range(count)))
        figures.submitted = len(urls)
        polling = [pool.submit(_poll, token, urls, figures, stop) for _ in range(pollers)]
        bodies = _wait_all(session, urls, deadline)
        stop.append(True)
        figures.kills = killer.result()
        figures.restarts = restarter.result()
        for poller in polling:
            poller.result()
    figures.wall_s = time.monotonic() - started
    for body in bodies.values():
        _count(figures, body, check_count)
    figures.lost = figures.submitted - figures.graded - figures.failed
    figures.graded_twice += _graded_twice_in_logs(worker_logs)
    return figures


_figures_lock = threading.Lock()


def _poll(token: str, urls: list[str], figures: Figures, stop: list[bool]) -> None:
    """One client reading random submissions' status until the run ends."""
    session = requests.Session()
    session.headers["Authorization"] = f"Token {token}"
    while not stop:
        began = time.monotonic()
        try:
            ok = session.get(random.choice(urls), timeout=30).status_code == 200
        except requests.RequestException:
            ok = False
        took = time.monotonic() - began
        with _figures_lock:
            if ok:
                figures.polls.append(took)
            else:
                figures.poll_errors += 1
        time.sleep(0.2)


def _restart_once(command: str, after: float, stop: list[bool]) -> int:
    """Runs `command` (restarts the broker) once, `after` seconds into the run."""
    if not command:
        return 0
    until = time.monotonic() + after
    while time.monotonic() < until:
        if stop:
            return 0
        time.sleep(0.2)
    # the operator's own command line, as given
    done = subprocess.run(command, shell=True, check=False, timeout=120)
    print(f"loadtest: broker restart command exited {done.returncode}", file=sys.stderr)
    return 1 if done.returncode == 0 else 0


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
    parser.add_argument(
        "--pollers",
        type=int,
        default=0,
        help="clients reading random submissions' status all along",
    )
    parser.add_argument(
        "--restart-command", default="", help="a shell command that restarts the broker, run once"
    )
    parser.add_argument(
        "--restart-after",
        type=float,
        default=10.0,
        help="seconds into the run when --restart-command runs",
    )
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
                  check_count=checks, worker_logs=args.worker_log,
                  pollers=min(args.pollers, 200), restart_command=args.restart_command,
                  restart_after=args.restart_after)  # fmt: skip
    print(json.dumps(figures.as_json()))
    return 0 if figures.lost == 0 and figures.graded_twice == 0 else 1


def _checks_of(exercise: str) -> int:
    import tomllib

    package = Path("exercises") / exercise / "exercise.toml"
    return len(tomllib.loads(package.read_text(encoding="utf-8"))["checks"])


if __name__ == "__main__":
    sys.exit(main())
