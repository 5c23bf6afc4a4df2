"""Browser tests: Debian's Chromium (driven by Playwright) against a live Django server,
with a REAL Celery worker process grading through the real sandbox.

- The live server is pytest-django's `live_server` (a thread of this process, on the
  test database; data is committed, so the worker process sees it).
- The catalog, the personas (alice_learner, bob_instructor, ...) and the worker
  (`grading_worker`: `celery -A config.celery_app worker` on the test database, consuming
  a queue of its own) come from tests/gradlab_fixtures.py, shared with tests/platform.
- Chromium, its pages and screenshots come from tests/browser_fixtures.py (any folder's
  tests may use them); this file adds signing in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from browser_fixtures import LAPTOP
from gradlab_fixtures import PASSWORD


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
