"""Browser tests: Debian's Chromium (driven by Playwright) against a live Django server,
with a REAL Celery worker process grading through the real sandbox.

- The live server is pytest-django's `live_server` (a thread of this process, on the
  test database; data is committed, so the worker process sees it).
- The worker is `celery -A config.celery_app worker` started as a subprocess on the same
  test database and Redis broker. It consumes a queue of its own (GRADLAB_QUEUE_CPU is
  overridden for these tests), so another worker on this machine never takes our jobs.
- Chromium is /usr/bin/chromium (scripts/setup-browser.sh installs it). Without it the
  tests skip, unless GRADLAB_REQUIRE_BROWSER=1 (CI), where they fail.
- Screenshots land in test-artifacts/screenshots/ (git-ignored).
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
WORKER_READY_TIMEOUT_S = 60.0
WORKER_STOP_TIMEOUT_S = 15.0
REQUIRE_BROWSER_ENV = "GRADLAB_REQUIRE_BROWSER"
LAPTOP = {"width": 1366, "height": 900}
TABLET = {"width": 820, "height": 1180}
PASSWORD = "correct-horse-battery"
COURSE_SLUGS = ("first-gradient", "chain-rule", "training-loop")

# Playwright's sync API keeps an event loop on this thread; the ORM calls of the fixtures
# are still plain synchronous code, so Django's async-safety guard would misfire.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def _browser_required() -> bool:
    return os.environ.get(REQUIRE_BROWSER_ENV, "") == "1"


def _missing(reason: str) -> None:
    if _browser_required():
        pytest.fail(f"{reason} ({REQUIRE_BROWSER_ENV}=1): run scripts/setup-browser.sh")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        _missing(f"{CHROMIUM} is not installed")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the Playwright Python package is not installed")
    vendor = ROOT / "platform" / "web" / "static" / "web" / "vendor" / "codemirror"
    if not vendor.exists():
        _missing("front-end assets are missing: run scripts/setup-browser.sh --assets-only")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class PageProblems:
    """Console errors and Content-Security-Policy violations seen by a page."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def listen(self, page: Any) -> None:
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.errors.append(message.text)


@pytest.fixture
def page_problems() -> PageProblems:
    return PageProblems()


@pytest.fixture
def new_page(browser: Any, page_problems: PageProblems) -> Iterator[Callable[..., Any]]:
    contexts: list[Any] = []

    def make(viewport: dict[str, int] = LAPTOP, **options: Any) -> Any:
        context = browser.new_context(viewport=viewport, **options)
        context.set_default_timeout(20_000)
        contexts.append(context)
        page = context.new_page()
        page_problems.listen(page)
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def screenshot() -> Callable[[Any, str], Path]:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page: Any, name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


# --- the platform: exercises, people, worker ----------------------------------------------


@pytest.fixture
def course(settings: Any) -> Any:
    """The module with the exercises these tests use, loaded from exercises/ on disk
    (only these packages, so another package being edited cannot break the tests)."""
    from django.db import transaction

    from courses.services import exercise_sync, module_sync
    from grader import spec

    listing = spec.load_module(settings.GRADLAB_EXERCISES_DIR)
    root = Path(settings.GRADLAB_EXERCISES_DIR)
    with transaction.atomic():
        module = module_sync(slug=listing.slug, title=listing.title)
        for order, slug in enumerate(listing.exercises):
            if slug in COURSE_SLUGS and (root / slug / spec.MANIFEST).is_file():
                package = spec.load_package(root / slug)
                exercise_sync(module=module, package=package, order=order)
    return module


def _person(username: str, module: Any, role: str) -> Any:
    from accounts.services import enrollment_set, user_get_or_create

    user = user_get_or_create(username=username, password=PASSWORD)
    enrollment_set(user=user, module=module, role=role)
    return user


@pytest.fixture
def alice_learner(course: Any) -> Any:
    return _person("alice_learner", course, "learner")


@pytest.fixture
def bob_instructor(course: Any) -> Any:
    return _person("bob_instructor", course, "instructor")


@pytest.fixture
def carol_other_learner(course: Any) -> Any:
    return _person("carol_other_learner", course, "learner")


@pytest.fixture
def worker_queue(settings: Any) -> str:
    queue = f"grading-browser-{os.getpid()}-{secrets.token_hex(3)}"
    settings.GRADLAB_QUEUE_CPU = queue
    settings.GRADLAB_QUEUE_GPU = queue
    return queue


@pytest.fixture
def grading_worker(worker_queue: str, transactional_db: None, tmp_path: Path) -> Iterator[Any]:
    """A real Celery worker process on the test database, consuming our own queue."""
    from django.conf import settings
    from django.db import connection

    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    url = (
        f"postgres://{db.get('USER') or 'postgres'}{password}@{db.get('HOST') or '127.0.0.1'}"
        f":{db.get('PORT') or 5432}/{db['NAME']}"
    )
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'platform'}{os.pathsep}{ROOT}",
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": url,
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "REDIS_URL": settings.CELERY_BROKER_URL,
        "GRADLAB_CACHE_DIR": str(tmp_path / "reference-cache"),
        "GRADLAB_VAR_DIR": str(tmp_path / "var"),
    }
    log = tmp_path / "worker.log"
    command = [
        sys.executable, "-m", "celery", "-A", "config.celery_app", "worker", "-Q", worker_queue,
        "--concurrency", "1", "--pool", "solo", "--without-gossip", "--without-mingle",
        "--without-heartbeat", "--loglevel", "INFO", "--hostname", f"{worker_queue}@%h",
    ]  # fmt: skip
    _purge(worker_queue)
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        _wait_ready(process, log)
        yield process
    finally:
        _stop(process)
        _purge(worker_queue)


def _purge(queue: str) -> None:
    import redis
    from django.conf import settings

    redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(queue)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=WORKER_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _wait_ready(process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + WORKER_READY_TIMEOUT_S
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if " ready." in text:
            return
        if process.poll() is not None:
            pytest.fail(f"the Celery worker exited with {process.returncode}:\n{text[-4000:]}")
        time.sleep(0.2)
    pytest.fail(f"the Celery worker was not ready in time:\n{log.read_text()[-4000:]}")


def sign_in(page: Any, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


@pytest.fixture
def signed_in(new_page: Callable[..., Any], live_server: Any) -> Callable[..., Any]:
    def open_as(user: Any, viewport: dict[str, int] = LAPTOP, **options: Any) -> Any:
        page = new_page(viewport, **options)
        sign_in(page, live_server.url, user.get_username())
        return page

    return open_as
