"""The one set of shared test fixtures (a pytest plugin: tests/conftest.py lists it in
`pytest_plugins`): the catalog loaded from real packages, the personas, a REAL Celery
worker process (never eager mode) on the test database, and `wait_for`.

Personas of the course module (`MODULE_SLUG`):
- alice_learner, dave_learner: learners;
- bob_instructor and erin_co_instructor: its two instructors;
- carol_other_course: instructor of another module only (a stranger to this one);
- sam_staff: a staff user with no enrollment anywhere.
Every persona signs in with `PASSWORD`.
"""

from __future__ import annotations

import functools
import os
import secrets
import signal
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from grader.protocol import Limits

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "exercises"
OTHER_MODULE_SLUG = "other-course"
PASSWORD = "correct-horse-battery"
WANTED_SLUGS = ("first-gradient", "chain-rule", "training-loop")
# How long a test waits for a grading, derived from the product's own limits rather than
# from a guess of the host's speed: every attempt the platform makes (config.settings.test:
# 3) may run out of three sandboxes' wall clocks (the reference's, the learner's, the
# scaled second run's), plus the backoffs between them. A passing test never waits it out;
# it only bounds how long a hung one takes to fail.
WAIT_TIMEOUT_S = 3 * 3 * Limits().wall_seconds + 60.0
WORKER_READY_TIMEOUT_S = 90.0
WORKER_STOP_TIMEOUT_S = 15.0
# How often a test's HTTP peer checks for shutdown: socketserver's default (0.5 s) made each
# test that stops one wait about half a second.
SERVER_POLL_INTERVAL_S = 0.01


def _listing() -> Any:
    from grader import spec

    return spec.load_module(EXERCISES)


MODULE_SLUG: str = _listing().slug
# The packages the tests use that exist on disk, in course order.
CATALOG_SLUGS: tuple[str, ...] = tuple(
    slug
    for slug in _listing().exercises
    if slug in WANTED_SLUGS and (EXERCISES / slug / "exercise.toml").is_file()
)


def wait_for(
    predicate: Callable[[], Any], *, timeout: float = WAIT_TIMEOUT_S, what: str = ""
) -> Any:
    """Polls `predicate` until it returns something truthy, and returns that."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what or predicate}")


# -- the sandbox shared by the grading tests ------------------------------------------------


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Any]:
    """The grading backend of the whole test process, as a worker process has its own:
    bubblewrap forking each CPU job from a torch-loaded zygote (as `make run` does), with a
    warm spare for any other job (each run still gets a fresh sandbox). The grading tests of
    tests/grader and tests/exercises share it; the cold, warm and zygote paths each keep
    their own tests in tests/sandbox. A zygote shared across jobs, as a deployment that
    chooses throughput runs it (GRADLAB_ZYGOTE_JOBS; the product default starts a
    torch-importing zygote per job)."""
    from grader.sandbox import SandboxConfig, build_backend

    backend = build_backend(SandboxConfig(warm=True, zygote=True, zygote_jobs=500))
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def reference_cache(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The reference captures of the whole test process (keyed by package content, seed and
    runtime, like a worker's): a package's reference runs once however many tests grade it."""
    from grader.cache import ReferenceCache

    return ReferenceCache(tmp_path_factory.mktemp("reference-cache"))


# -- catalog and personas --------------------------------------------------------------


@functools.cache
def _catalog_package(slug: str) -> Any:
    """A catalog package, parsed once per test process (a Package is immutable)."""
    from grader import spec

    return spec.load_package(EXERCISES / slug)


@pytest.fixture
def catalog(db: None) -> Any:
    """The course module holding CATALOG_SLUGS, loaded from exercises/ (only these
    packages, so another package being edited cannot break the tests), and an empty
    other module. Returns the course module.

    The first test of a process that needs it loads it through the services
    (`module_sync`, `exercise_sync`) into empty tables; later ones get the very rows that
    load wrote, written back whole (CatalogRows: ~10 queries instead of ~170, 17 ms of CPU
    instead of 66: some 30 s of the fast lane's), as of their own start."""
    from django.db import transaction

    from courses.models import Module

    with transaction.atomic():
        rows = _CATALOG_ROWS[0] if _CATALOG_ROWS else None
        if rows is not None and rows.tables_empty():
            rows.write_back()
        else:
            written = CatalogRows.of_load(_catalog_load)
            if written is not None and not _CATALOG_ROWS:
                _CATALOG_ROWS.append(written)
    return Module.objects.get(slug=MODULE_SLUG)


def _catalog_load() -> None:
    """The catalog through the services, as `prepare` loads exercises/."""
    from courses.services import exercise_sync, module_sync

    listing = _listing()
    module = module_sync(slug=listing.slug, title=listing.title, objectives=listing.objectives)
    for order, slug in enumerate(listing.exercises):
        if slug in CATALOG_SLUGS:
            exercise_sync(module=module, package=_catalog_package(slug), order=order)
    module_sync(slug=OTHER_MODULE_SLUG, title="Other course", order=1)


@dataclass(frozen=True)
class CatalogRows:
    """The rows one load of the catalog wrote into empty tables (every concrete model's,
    each field as stored), and when it ran: written back in one insert per table, with
    the same keys (rolled back or flushed since; the sequences are past them) and each
    time the load stamped (created_at, published_at: inside [started, ended]) moved to
    the time of the write-back. Fields a model gains are copied with the rest."""

    tables: tuple[tuple[Any, tuple[dict[str, Any], ...]], ...]
    started: datetime
    ended: datetime

    @classmethod
    def of_load(cls, load: Callable[[], None]) -> CatalogRows | None:
        """Runs `load`; its rows, or None when a table it wrote to was not empty before
        (what it wrote then depends on what was there)."""
        from django.utils import timezone

        before = {model: _keys(model) for model in _concrete_models()}
        started = timezone.now()
        load()
        ended = timezone.now()
        tables = []
        for model, keys in before.items():
            new = model._base_manager.exclude(pk__in=keys).order_by("pk").values()
            if not new:
                continue
            if keys:
                return None
            tables.append((model, tuple(new)))
        return cls(tables=tuple(tables), started=started, ended=ended)

    def tables_empty(self) -> bool:
        return not any(model._base_manager.exists() for model, _ in self.tables)

    def write_back(self) -> None:
        """Inserts the rows (inside the caller's transaction: the foreign keys, deferred,
        are checked together)."""
        from django.db import connection
        from django.utils import timezone

        shift = timezone.now() - self.started
        for model, rows in self.tables:
            objects = [model(**{k: self._moved(v, shift) for k, v in row.items()}) for row in rows]
            if connection.vendor == "postgresql":
                _insert_values(connection, model, objects)
            else:
                model._base_manager.bulk_create(objects)

    def _moved(self, value: Any, shift: timedelta) -> Any:
        if isinstance(value, datetime) and self.started <= value <= self.ended:
            return value + shift
        return value


def _insert_values(connection: Any, model: Any, objects: list[Any]) -> None:
    """One INSERT ... VALUES (...), (...) of the objects, every concrete field as stored.
    Not bulk_create: on PostgreSQL it sends many rows as UNNEST of one array per column,
    which psycopg's client-side binding writes as array literals in Python, escaping each
    quote of every statement and file by a regular expression: 20 ms of CPU per test."""
    fields = model._meta.concrete_fields
    quote = connection.ops.quote_name
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    sql = (
        f"INSERT INTO {quote(model._meta.db_table)} "
        f"({', '.join(quote(field.column) for field in fields)}) "
        f"VALUES {', '.join([row] * len(objects))}"
    )
    params = [  # as Django's insert prepares each value (auto_now_add stamps now)
        field.get_db_prep_save(field.pre_save(obj, True), connection)
        for obj in objects
        for field in fields
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


_CATALOG_ROWS: list[CatalogRows] = []  # this test process's, once the first load ran


def _concrete_models() -> list[Any]:
    from django.apps import apps

    return [
        model
        for model in apps.get_models(include_auto_created=True)
        if model._meta.managed and not model._meta.proxy
    ]


def _keys(model: Any) -> list[Any]:
    return list(model._base_manager.values_list("pk", flat=True))


def persona(username: str, *, module_slug: str | None = None, role: str = "", **flags: Any) -> Any:
    """A user signing in with PASSWORD, enrolled in `module_slug` with `role` if given."""
    from accounts.services import user_get_or_create
    from courses.models import Module
    from courses.roster import enrollment_set

    user = user_get_or_create(username=username, password=PASSWORD)
    for name, value in flags.items():
        setattr(user, name, value)
    if flags:
        user.save(update_fields=list(flags))
    if module_slug is not None:
        enrollment_set(user=user, module=Module.objects.get(slug=module_slug), role=role)
    return user


@pytest.fixture
def alice_learner(catalog: Any) -> Any:
    return persona("alice_learner", module_slug=MODULE_SLUG, role="learner")


@pytest.fixture
def dave_learner(catalog: Any) -> Any:
    return persona("dave_learner", module_slug=MODULE_SLUG, role="learner")


@pytest.fixture
def bob_instructor(catalog: Any) -> Any:
    return persona("bob_instructor", module_slug=MODULE_SLUG, role="instructor")


@pytest.fixture
def erin_co_instructor(catalog: Any) -> Any:
    return persona("erin_co_instructor", module_slug=MODULE_SLUG, role="instructor")


@pytest.fixture
def carol_other_course(catalog: Any) -> Any:
    return persona("carol_other_course", module_slug=OTHER_MODULE_SLUG, role="instructor")


@pytest.fixture
def sam_staff(catalog: Any) -> Any:
    return persona("sam_staff", is_staff=True)


# -- real HTTP peers (a fake LMS, a webhook receiver) -------------------------------------


@contextmanager
def serving(server: socketserver.BaseServer) -> Iterator[None]:
    """Serves `server` from a daemon thread while the block runs, then stops and closes it."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": SERVER_POLL_INTERVAL_S}, daemon=True
    )
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# -- a real Celery worker ------------------------------------------------------------------


@dataclass
class Worker:
    process: subprocess.Popen[bytes]
    log: Path
    queue: str
    env: dict[str, str] = field(default_factory=dict)

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def tail(self, chars: int = 4000) -> str:
        """The end of the log, for a failed assertion's message."""
        return self.output()[-chars:]

    def logged(self, *texts: str, count: int = 1) -> str:
        """The log once each of `texts` is in it at least `count` times: the worker's pool
        processes write their lines after the database row a test waits for may already
        say the outcome, so a test reads the log only once the line it asserts on is there
        (or fails with the log after WAIT_TIMEOUT_S)."""

        def written() -> str:
            log = self.output()
            return log if all(log.count(text) >= count for text in texts) else ""

        try:
            return str(wait_for(written, what=f"{texts} in the worker's log"))
        except AssertionError as missing:
            raise AssertionError(f"{missing}:\n{self.tail()}") from None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signals the worker's whole process group (main process and pool children)."""
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            return
        if sig == signal.SIGKILL:
            self.process.wait(timeout=WORKER_STOP_TIMEOUT_S)

    def stop(self) -> None:
        """SIGTERM to the worker's process group (SIGKILL after WORKER_STOP_TIMEOUT_S),
        back once no process of the group is left: a straggler (a pool process, one of
        its sandboxes) would keep its connection to the test database, whose drop at the
        end of the session then fails, or take the next test's messages."""
        if self.process.poll() is None:
            self.kill(signal.SIGTERM)
            try:
                self.process.wait(timeout=WORKER_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.kill(signal.SIGKILL)
        if not _group_gone(self.process.pid, WORKER_STOP_TIMEOUT_S):
            self.kill(signal.SIGKILL)
            _group_gone(self.process.pid, WORKER_STOP_TIMEOUT_S)


def _group_gone(group: int, timeout_s: float) -> bool:
    """Whether process group `group` is empty within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _database_url() -> str:
    from django.db import connection

    db = connection.settings_dict
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


def purge_queue(queue: str) -> None:
    import redis
    from django.conf import settings

    redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(queue)


def queue_length(queue: str) -> int:
    """Messages waiting in a Redis queue (what a worker has not taken yet)."""
    import redis
    from django.conf import settings

    return int(redis.Redis.from_url(settings.CELERY_BROKER_URL).llen(queue))


@pytest.fixture
def worker_queue(settings: Any) -> str:
    """A private queue: another worker on this machine (a `make run`, another test run)
    never takes our jobs. The names stay `grading`/`grading-gpu` outside tests."""
    queue = f"grading-test-{os.getpid()}-{secrets.token_hex(3)}"
    settings.GRADLAB_QUEUE_CPU = queue
    settings.GRADLAB_QUEUE_GPU = queue
    settings.GRADLAB_QUEUE_AUTHORING = queue
    return queue


def launch_worker(
    queue: str,
    folder: Path,
    cache_dir: Path,
    *,
    index: int = 0,
    beat: bool = False,
    concurrency: int = 1,
    **extra_env: str,
) -> Worker:
    """A running `celery worker` process on the test database, consuming `queue`; its log,
    state and beat schedule in `folder`. `concurrency` pool processes, each with its own
    torch-loaded zygote: one unless the test needs two jobs at once."""
    from django.conf import settings

    log = folder / f"worker-{index}.log"
    # The URLs below are this test process's own (config.settings.test already chose its
    # Redis database under pytest-xdist): the worker must not choose again.
    inherited = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
    env = {
        **inherited,
        "PYTHONPATH": f"{ROOT / 'platform'}{os.pathsep}{ROOT}",
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": _database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "REDIS_URL": settings.CELERY_BROKER_URL,
        "GRADLAB_QUEUE_CPU": queue,
        "GRADLAB_QUEUE_GPU": queue,
        "GRADLAB_QUEUE_AUTHORING": queue,
        "GRADLAB_CACHE_DIR": str(cache_dir),
        "GRADLAB_VAR_DIR": str(folder / "var"),
        **extra_env,
    }
    command = [
        sys.executable, "-m", "celery", "-A", "config.celery_app", "worker",
        "-Q", queue, "--concurrency", str(concurrency), "--pool", "prefork",
        "--without-heartbeat", "--without-gossip", "--without-mingle",
        "--hostname", f"{queue}-{index}@%h", "--loglevel", "INFO",
    ]  # fmt: skip
    if beat:
        command += ["--beat", "--schedule", str(folder / f"beat-{index}")]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    worker = Worker(process=process, log=log, queue=queue, env=extra_env)
    try:
        _wait_ready(worker)
    except BaseException:
        worker.stop()
        raise
    return worker


@pytest.fixture
def start_worker(
    worker_queue: str, transactional_db: None, tmp_path: Path, reference_cache: Any
) -> Iterator[Callable[..., Worker]]:
    """start_worker(beat=False, concurrency=1, **env) -> a new running worker process on the test
    database, for a test that kills, stops or configures its worker (a test that only needs
    its submissions graded uses `grading_worker`). Like `make run`'s worker, each pool
    process forks its jobs from a torch-loaded zygote (config.settings.test; started while
    the worker starts); a test of the cold or warm path passes GRADLAB_SANDBOX_ZYGOTE="0".
    Its reference cache is the test process's (`reference_cache`): a package's reference
    runs once per test process, not once per worker; a test that needs the reference to
    run passes a GRADLAB_CACHE_DIR of its own."""
    started: list[Worker] = []

    def start(*, beat: bool = False, concurrency: int = 1, **extra_env: str) -> Worker:
        worker = launch_worker(
            worker_queue, tmp_path, reference_cache.directory, index=len(started), beat=beat,
            concurrency=concurrency, **extra_env,
        )  # fmt: skip
        started.append(worker)
        return worker

    purge_queue(worker_queue)
    yield start
    for worker in started:
        worker.stop()
    purge_queue(worker_queue)


@pytest.fixture(scope="session")
def shared_worker(
    django_db_setup: None, tmp_path_factory: pytest.TempPathFactory, reference_cache: Any
) -> Iterator[Worker]:
    """The test process's one worker with the default settings, on a queue of its own,
    started by the first test that asks for `grading_worker`: a worker's start (Django,
    Celery, a torch-loaded zygote per pool process: ~3 s of CPU, 4-8 s of a busy 2-core
    machine) is paid once per test process instead of once per test."""
    queue = f"grading-test-{os.getpid()}-shared"
    purge_queue(queue)
    worker = launch_worker(  # two pool processes: it grades every grading test's jobs
        queue, tmp_path_factory.mktemp("shared-worker"), reference_cache.directory, concurrency=2
    )
    yield worker
    worker.stop()
    purge_queue(queue)


@pytest.fixture
def grading_worker(
    shared_worker: Worker, transactional_db: None, settings: Any
) -> Iterator[Worker]:
    """A running worker with the default settings that grades this test's submissions:
    the test process's shared one (its log holds earlier tests' lines too). It must stay
    as it is: a test that kills, stops or reconfigures a worker uses `start_worker`."""
    if shared_worker.process.poll() is not None:
        pytest.fail(f"the shared worker has exited:\n{shared_worker.output()}")
    settings.GRADLAB_QUEUE_CPU = shared_worker.queue
    settings.GRADLAB_QUEUE_GPU = shared_worker.queue
    settings.GRADLAB_QUEUE_AUTHORING = shared_worker.queue
    purge_queue(shared_worker.queue)
    yield shared_worker
    purge_queue(shared_worker.queue)


def _wait_ready(worker: Worker) -> None:
    deadline = time.monotonic() + WORKER_READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if worker.process.poll() is not None:
            pytest.fail(f"the worker exited with {worker.process.returncode}:\n{worker.output()}")
        if " ready." in worker.output():
            return
        time.sleep(0.2)
    pytest.fail(f"the worker was not ready within {WORKER_READY_TIMEOUT_S} s:\n{worker.output()}")
