"""Chromium for any test (a `pytest_plugins` module of tests/conftest.py): the session's
Playwright browser, a page factory whose pages report console errors and CSP violations,
and screenshots. Debian's /usr/bin/chromium (scripts/setup-browser.sh installs it); without
it the tests skip, unless GRADLAB_REQUIRE_BROWSER=1 (CI), where they fail. A test using
`browser` or `new_page` carries the `browser` marker (tests/lanes.py). Screenshots land in
test-artifacts/screenshots/ (git-ignored).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
REQUIRE_BROWSER_ENV = "GRADLAB_REQUIRE_BROWSER"
LAPTOP = {"width": 1366, "height": 900}
TABLET = {"width": 820, "height": 1180}

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


# How long a page action or navigation may wait: an upper bound that a passing test never
# comes near, not a guess of the host's speed. The slowest step is an LTI launch in an LMS's
# frame (the login, the platform's storage, the launch and the exercise page's load) while
# three test processes and their Chromiums share two cores: with 20 s it ran out once in a
# fresh-machine rehearsal (3 December).
ACTION_TIMEOUT_MS = 120_000


@pytest.fixture
def new_page(browser: Any, page_problems: PageProblems) -> Iterator[Callable[..., Any]]:
    contexts: list[Any] = []

    def make(viewport: dict[str, int] = LAPTOP, **options: Any) -> Any:
        context = browser.new_context(viewport=viewport, **options)
        context.set_default_timeout(ACTION_TIMEOUT_MS)
        contexts.append(context)
        page = context.new_page()
        page_problems.listen(page)
        return page

    yield make
    for context in contexts:
        context.close()
    requests_finish()


def requests_finish(timeout_s: float = 30.0) -> None:
    """Waits for the live server's requests still in flight when the pages closed (the
    exercise page saves the draft on `pagehide`): one that ran on into the test's database
    flush took a row lock the TRUNCATE waited on, a deadlock. Each request is a thread of
    the live server (socketserver.ThreadingMixIn), named after process_request_thread."""
    for thread in threading.enumerate():
        if thread.name.endswith("(process_request_thread)"):
            thread.join(timeout_s)


@pytest.fixture
def screenshot() -> Callable[[Any, str], Path]:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page: Any, name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take
