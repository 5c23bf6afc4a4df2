"""Test lanes: which tests need the slow real parts, decided in one place.

The markers (declared in pyproject.toml) say what a test needs beyond the platform's
virtual environment, PostgreSQL and Redis:

    sandbox   runs code in the real bubblewrap sandbox
    docker    needs the Docker Engine and the sandbox image
    browser   drives Chromium
    worker    starts a real Celery worker process (which grades in the sandbox)
    processes starts Python interpreters or servers of its own (a fresh django.setup(), a
              bounded child, gunicorn): about a second of CPU each
    heavy     needs none of that, but takes a second or more of a quiet 2-core host on its
              own (property fuzzing of the whole API, migrations down and up, line-counting
              complexity bounds, 50 concurrent submissions, sweeps of every package)

A test gets a marker when its module or function says so, when it lives in a folder whose
tests all need it (FOLDER_MARKERS), or when it uses a fixture that needs it
(FIXTURE_MARKERS). `make test-fast` deselects all six; `make test` runs them all, and
its SQLite pass (scripts/test.sh --sqlite) leaves out only the four real parts.

A guard makes a missing marker loud in every lane: while a test runs, starting bwrap, a
`python -m grader run`, the Docker Engine (CLI or socket), a Celery worker, `scripts/run.sh`
or Playwright's driver without the marker that covers it fails the test with the marker to
add, even when the code under test swallows the error. It watches this process through
Python's audit hooks (subprocess.Popen, socket.connect), so `make test-fast` never runs
slow work silently and `make test` catches the marking mistake before the fast lane does.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

SLOW_MARKERS = ("sandbox", "docker", "browser", "worker")
# Tests that need none of the real parts but start interpreters of their own, or take a
# second or more alone: the edit-test loop leaves them out, both passes of `make test` run
# them.
PROCESS_MARKERS = ("processes", "heavy")
WITHOUT_REAL_PARTS = " and ".join(f"not {marker}" for marker in SLOW_MARKERS)
# `make test`'s SQLite pass: the tests without the real parts that reach the database,
# directly (`database`: pytest-django's access, which it refuses to every other test) or
# through an interpreter or server of their own that may (`processes`). The rest cannot
# reach a database, so their verdict is the PostgreSQL pass's, already given.
SQLITE_PASS = f"{WITHOUT_REAL_PARTS} and (database or processes)"
FAST_LANE = " and ".join(f"not {marker}" for marker in (*SLOW_MARKERS, *PROCESS_MARKERS))
# Property tests (hypothesis, schemathesis) try a third of their examples in the fast lane,
# the edit-test loop, and in `make test`'s SQLite pass (-m WITHOUT_REAL_PARTS); `make
# test`'s PostgreSQL pass tries them all.
FEWER_EXAMPLES_LANES = (FAST_LANE, WITHOUT_REAL_PARTS, SQLITE_PASS)
FAST_LANE_EXAMPLE_SHARE = 3

TESTS_DIR = Path(__file__).resolve().parent

# tests/<folder>/...: every test there needs these.
FOLDER_MARKERS: dict[str, tuple[str, ...]] = {
    "sandbox": ("sandbox",),
    "docker": ("docker",),
}

# A test using one of these fixtures (directly or through another fixture) needs these.
FIXTURE_MARKERS: dict[str, tuple[str, ...]] = {
    # the real bubblewrap sandbox
    "sandbox": ("sandbox",),
    "grade_code": ("sandbox",),
    "backend": ("sandbox",),
    "bubblewrap_raw": ("sandbox",),
    "run_raw": ("sandbox",),
    # a real Celery worker process grades in the sandbox
    "start_worker": ("worker", "sandbox"),
    "grading_worker": ("worker", "sandbox"),
    "shared_worker": ("worker", "sandbox"),
    # Chromium
    "browser": ("browser",),
    "new_page": ("browser",),
    "signed_in": ("browser",),
    # the Docker Engine
    "docker_client": ("docker",),
    "sandbox_image": ("docker",),
    "platform_image": ("docker",),
    "docker_sandbox": ("docker",),
    # gunicorn on a free port
    "web_server": ("processes",),
    # pytest-django's database access (a test without it cannot reach the database)
    "db": ("database",),
    "transactional_db": ("database",),
    "django_db_reset_sequences": ("database",),
    "django_db_serialized_rollback": ("database",),
    "live_server": ("database",),
}

# A parametrized fixture whose parameter names a backend that needs more.
PARAM_MARKERS: dict[str, tuple[str, ...]] = {"docker": ("docker",)}


def markers_for(folder: str, fixtures: Iterable[str], params: Iterable[Any]) -> set[str]:
    """The markers a test needs from where it lives, the fixtures it uses and its params."""
    needed = set(FOLDER_MARKERS.get(folder, ()))
    for name in fixtures:
        needed.update(FIXTURE_MARKERS.get(name, ()))
    for value in params:
        if isinstance(value, str):
            needed.update(PARAM_MARKERS.get(value, ()))
    return needed


def _reaches_database(item: pytest.Item) -> bool:
    """pytest-django lets a test reach the database only through its `django_db` marker or
    a database fixture (FIXTURE_MARKERS)."""
    return item.get_closest_marker("django_db") is not None


def _folder_of(item: pytest.Item) -> str:
    try:
        relative = item.path.resolve().relative_to(TESTS_DIR)
    except ValueError:
        return ""
    return relative.parts[0] if len(relative.parts) > 1 else ""


# The order tests start in: the slowest kinds first, so that under pytest-xdist the many
# short tests fill the processes' last minutes instead of one long story running alone
# (ModuleScheduling below hands the modules out in this order).
START_ORDER = ("browser", "worker", "docker", "sandbox")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        params = callspec.params.values() if callspec is not None else ()
        fixtures = getattr(item, "fixturenames", ())
        needed = markers_for(_folder_of(item), fixtures, params)
        if _reaches_database(item):
            needed.add("database")
        for name in sorted(needed):
            item.add_marker(name)
    items[:] = slowest_kinds_first(items)


def start_rank(markers: Iterable[str]) -> int:
    """Where a test with these markers starts: 0 for a browser test ... len(START_ORDER)
    for a test that needs none of the slow parts."""
    present = set(markers)
    return next((i for i, name in enumerate(START_ORDER) if name in present), len(START_ORDER))


def slowest_kinds_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The items ordered by the slowest kind in their module (a module's tests stay
    together and in their order, so its module-scoped fixtures are set up once)."""
    ranks: dict[Path, int] = {}
    for item in items:
        rank = start_rank(marker.name for marker in item.iter_markers())
        ranks[item.path] = min(rank, ranks.get(item.path, rank))
    return sorted(items, key=lambda item: ranks[item.path])


# --- how pytest-xdist shares the work --------------------------------------------------------


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown under -p no:xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under `-n N` (xdist's default `--dist load`), each test module is one unit of work;
    another `--dist` given on the command line is kept."""
    if config.getoption("dist", "no") != "load":
        return None
    return ModuleScheduling(config, log)


class ModuleScheduling(LoadScopeScheduling):
    """Modules handed out whole, in collection order (slowest kinds first), to whichever
    test process is free. xdist's `load` gave the first process the first quarter of the
    collection in one batch (176 of 1415 tests: every slow module), so it ran 370 s alone
    after the other had run dry; and a module split across processes set its
    module-scoped fixtures (a sandbox backend and its reference runs) up in each."""

    def __init__(self, config: pytest.Config, log: Any) -> None:
        super().__init__(config, log)
        self.config.option.loadscopereorder = False  # keep the slowest kinds first

    def _split_scope(self, nodeid: str) -> str:
        return module_of(nodeid)


def module_of(nodeid: str) -> str:
    """The unit of work of a test: its module ("tests/x.py::test_y[p]" -> "tests/x.py")."""
    return nodeid.split("::", 1)[0]


# --- the guard -----------------------------------------------------------------------------


def _basename(value: object) -> str:
    return os.path.basename(os.fsdecode(value)) if isinstance(value, str | bytes) else ""


def _argv(args: object) -> list[str]:
    if isinstance(args, str | bytes):
        return [os.fsdecode(args)]
    if isinstance(args, Sequence):
        return [os.fsdecode(a) if isinstance(a, str | bytes | os.PathLike) else "" for a in args]
    return []


def marker_for_command(executable: object, args: object) -> str | None:
    """The marker a test needs to start this process, or None when any test may."""
    argv = _argv(args)
    names = {_basename(executable), *(_basename(a) for a in argv[:1])}
    words = set(argv)
    if "bwrap" in names:
        return "sandbox"
    if names & {"docker", "dockerd"} or any("docker/build-" in a for a in argv):
        return "docker"
    if "celery" in words and "worker" in words:
        return "worker"
    if any(a.endswith("scripts/run.sh") for a in argv):
        return "worker"
    if any("playwright" in a or "chromium" in a for a in argv[:1]) or "playwright" in str(
        executable
    ):
        return "browser"
    if _runs_grader(argv):
        return "sandbox"
    return None


def _runs_grader(argv: list[str]) -> bool:
    """`python -m grader run ...` grades in the sandbox (`check` may not: it validates first)."""
    for index, word in enumerate(argv[:-2]):
        if word == "-m" and argv[index + 1] == "grader" and argv[index + 2] == "run":
            return True
    return False


def marker_for_socket(address: object) -> str | None:
    if isinstance(address, str | bytes) and _basename(address) == "docker.sock":
        return "docker"
    return None


class LaneViolation(RuntimeError):
    """A test started something slow that its markers do not declare."""


@dataclass
class Guard:
    """Tracks the running test's markers; the audit hook checks what it starts."""

    markers: set[str] | None = None  # None: no test is running (collection, session start)
    violations: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self, needed: str | None, what: str) -> None:
        if needed is None or self.markers is None or needed in self.markers:
            return
        message = (
            f"this test starts {what} but is not marked `{needed}`: add "
            f"@pytest.mark.{needed} (or use a fixture that implies it, tests/lanes.py)"
        )
        with self.lock:
            self.violations.append(message)
        raise LaneViolation(message)

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if self.markers is None:
            return
        if event == "subprocess.Popen":
            executable, argv = args[0], args[1]
            shown = " ".join(_argv(argv))[:200] or _basename(executable)
            self.check(marker_for_command(executable, argv), f"`{shown}`")
        elif event == "socket.connect":
            self.check(marker_for_socket(args[1]), f"a connection to {args[1]!r}")

    def begin(self, item: pytest.Item) -> None:
        with self.lock:
            self.violations.clear()
        self.markers = {marker.name for marker in item.iter_markers()}

    def end(self) -> list[str]:
        self.markers = None
        with self.lock:
            found, self.violations = self.violations, []
        return found


GUARD = Guard()
_installed = False
_fast_lane = False


def pytest_configure(config: pytest.Config) -> None:
    global _installed, _fast_lane
    _fast_lane = config.getoption("markexpr", "") in FEWER_EXAMPLES_LANES
    if not _installed:  # audit hooks cannot be removed: one per process, shared by runs
        sys.addaudithook(GUARD.audit)
        _installed = True


def examples(count: int) -> int:
    """How many examples a property test tries: `count`, or a third of it (at least 2) when
    this run is the fast lane or the SQLite pass (FEWER_EXAMPLES_LANES). Read while test
    modules are imported, after pytest_configure."""
    return max(2, count // FAST_LANE_EXAMPLE_SHARE) if _fast_lane else count


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    GUARD.begin(item)
    try:
        return (yield)
    finally:
        GUARD.end()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    with GUARD.lock:
        found, GUARD.violations = GUARD.violations, []
    if not found:
        return report
    message = "\n".join(dict.fromkeys(found))
    if report.failed:
        report.sections.append(("tests/lanes.py guard", message))
    else:
        report.outcome = "failed"
        report.longrepr = f"tests/lanes.py guard: {message}"
    return report
