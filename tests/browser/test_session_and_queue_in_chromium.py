"""The exercise page's live status in Chromium: a queued submission says where it stands
in the queue, and a session that expired while the page was open says "sign in again"
(instead of "not accepted" or "lost contact"), the code left in the editor. No worker
consumes the queue here: the submissions stay queued."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MODULE = "autograd-backprop"
EDITOR = "#code-editor .cm-content"
CODE = "import torch\nx = torch.tensor(2.0, requires_grad=True)\n"


@pytest.fixture
def no_worker(settings: Any) -> None:
    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-browser-session-test"


def _exercise(page: Any, base_url: str) -> None:
    page.goto(f"{base_url}/modules/{MODULE}/chain-rule/")
    page.wait_for_selector(EDITOR)
    page.locator(EDITOR).click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(CODE)


def _status(page: Any) -> str:
    return str(page.locator("#live-status").inner_text())


def test_a_queued_submission_shows_its_place_in_the_queue(
    live_server: Any, signed_in: Any, alice_learner: Any, no_worker: None
) -> None:
    page = signed_in(alice_learner)
    _exercise(page, live_server.url)

    page.get_by_role("button", name="Submit for grading").click()

    page.wait_for_function(
        "() => document.getElementById('live-status').innerText.includes('next in line')"
    )
    assert _status(page).startswith("Queued: next in line")


def test_a_submit_after_the_session_expired_says_sign_in_again_and_keeps_the_code(
    live_server: Any, signed_in: Any, alice_learner: Any, no_worker: None
) -> None:
    from submissions.models import Submission

    page = signed_in(alice_learner)
    _exercise(page, live_server.url)
    sessions = [c for c in page.context.cookies() if c["name"] == "sessionid"]
    assert sessions
    page.context.clear_cookies(name="sessionid")  # as the session's expiry would

    page.get_by_role("button", name="Submit for grading").click()

    page.wait_for_function("() => document.getElementById('live-status').dataset.state === 'error'")
    assert _status(page).startswith("Your session expired: sign in again")
    assert page.input_value("textarea#id_code") == CODE
    assert not Submission.objects.exists()


def test_a_grade_awaited_after_the_session_expired_says_sign_in_again(
    live_server: Any, signed_in: Any, alice_learner: Any, no_worker: None
) -> None:
    page = signed_in(alice_learner)
    _exercise(page, live_server.url)
    page.get_by_role("button", name="Submit for grading").click()
    page.wait_for_function(
        "() => document.getElementById('live-status').innerText.startsWith('Queued')"
    )

    page.context.clear_cookies(name="sessionid")

    page.wait_for_function("() => document.getElementById('live-status').dataset.state === 'error'")
    assert _status(page).startswith("Your session expired: sign in again")
