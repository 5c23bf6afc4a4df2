"""gradlab launched inside an LMS's frame in Chromium with third-party cookies blocked, as a
learner of a Canvas or Moodle course meets it: the LMS's course page (the fake platform, on
127.0.0.1) frames gradlab (on localhost: another site) and starts the OIDC login in the frame
with a form post, without `lti1p3_new_window`; gradlab's strict Content-Security-Policy is on.

- With Canvas's platform storage (`lti_storage_target`, the LMS page's storage frame written
  from Canvas's source) the state goes through the LMS's storage, the launch completes in the
  frame, and the learner submits there (a partitioned session and CSRF cookie), also when
  the storage frame is still loading as the login asks.
- Where the LMS names a storage frame that is not there, the login page offers the login
  in a new window, which completes on its own.
- Where the frame keeps no cookie at all (a Safari-like policy, emulated by turning off
  gradlab's partitioned cookies: its SameSite=None cookies are then third-party ones), the
  continue page opens gradlab in a new window, and deep linking completes from it: the
  window hands the signed answer back to the LMS's frame, which posts it there (where
  Moodle's content dialog expects it), and closes.

No worker consumes the queue: a submission stays queued, which is all the session and CSRF
need to show."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from browser_fixtures import ACTION_TIMEOUT_MS, CHROMIUM, CHROMIUM_ARGS

# tests/lti's fake platform; `conftest` is not imported by name: with tests/lti collected in
# the same run, that name is tests/lti/conftest.py.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lti"))
from fake_platform import (
    CLIENT_ID,
    COURSE_ID,
    DEPLOYMENT_ID,
    INSTRUCTOR,
    ISSUER,
    FakePlatform,
    running_platform,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Chromium as tests/browser_fixtures.py launches it, plus Chromium's own switch for the
# coming default: third-party cookies blocked, partitioned (CHIPS) cookies kept.
NO_THIRD_PARTY_COOKIES = "--test-third-party-cookie-phaseout"
# One renderer process for the LMS's page and gradlab's frame. With site isolation, the frame
# moves to another process at each navigation between 127.0.0.1 and localhost, and
# Playwright (1.55, with Debian's newer Chromium) now and then misses the move: the browser
# goes on to the exercise page, but Playwright's frame stays at the LMS's /auth page with
# no execution context, and every wait on it hangs (2 in 66 launches with the CPU loaded;
# none in 120 with this switch). Cookie partitioning, the CSP and postMessage do not
# depend on the process model.
ONE_PROCESS_FOR_FRAMES = ["--disable-site-isolation-trials",
                          "--disable-features=IsolateOrigins,site-per-process"]  # fmt: skip
LAPTOP = {"width": 1366, "height": 900}
EXERCISE_PAGE = "/modules/autograd-backprop/first-gradient/"
EDITOR = "#code-editor .cm-content"
CODE = "import torch\nx = torch.tensor(2.0, requires_grad=True)\n"


@pytest.fixture(scope="module")
def chromium(browser: Any) -> Iterator[Any]:
    """A Chromium that blocks third-party cookies, started by the session's Playwright
    (tests/browser/conftest.py): a second `sync_playwright()` in the same process fails
    ("Sync API inside the asyncio loop") once the session's is running."""
    blocking = browser.browser_type.launch(
        executable_path=str(CHROMIUM),
        args=[*CHROMIUM_ARGS, NO_THIRD_PARTY_COOKIES, *ONE_PROCESS_FOR_FRAMES],
    )
    yield blocking
    blocking.close()


@pytest.fixture
def lms(catalog: Any, settings: Any) -> Iterator[FakePlatform]:
    """The fake platform registered with the tool, its course bound to the catalog module;
    nothing about frames is configured."""
    from lti_tool.models import LtiDeployment, LtiRegistration

    from lti.keys import jwks, keys_ensure
    from lti.models import ContextBinding

    settings.GRADLAB_LTI_FRAME_ANCESTORS = []
    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-browser-lti-test"
    keys_ensure()
    with running_platform() as platform:
        registration = LtiRegistration.objects.create(
            name="Fake LMS", issuer=ISSUER, client_id=CLIENT_ID, auth_url=platform.auth_url,
            token_url=platform.token_url, keyset_url=platform.keyset_url,
        )  # fmt: skip
        deployment = LtiDeployment.objects.create(
            registration=registration, deployment_id=DEPLOYMENT_ID, is_active=True
        )
        ContextBinding.objects.create(deployment=deployment, context_id=COURSE_ID,
                                      module=catalog, origin="operator")  # fmt: skip
        platform.tool_jwks = jwks()
        platform.registration_uuid = str(registration.uuid)  # type: ignore[attr-defined]
        yield platform


class Problems:
    """Console errors (Content-Security-Policy violations among them) of every page."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def listen(self, page: Any) -> Any:
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))
        return page

    def _console(self, message: Any) -> None:
        # The browser asks each origin for a favicon, which neither serves: not a problem.
        if message.type == "error" and not message.location["url"].endswith("/favicon.ico"):
            self.errors.append(f"{message.text} ({message.location['url']})")


@pytest.fixture
def lms_page(chromium: Any) -> Iterator[tuple[Any, Problems]]:
    context = chromium.new_context(viewport=LAPTOP)
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    problems = Problems()
    context.on("page", problems.listen)
    yield problems.listen(context.new_page()), problems
    context.close()


def _course_url(
    lms: FakePlatform, live_server: Any, *, storage: bool, forwarder: bool = True,
    forwarder_delay_ms: int = 0, **claims: Any,
) -> str:  # fmt: skip
    login = f"{live_server.url}/lti/login/{lms.registration_uuid}/"  # type: ignore[attr-defined]
    query = {"login": login, "hint": json.dumps(claims), "storage": "1" if storage else "0",
             "forwarder": "1" if forwarder else "0",
             "forwarder_delay_ms": str(forwarder_delay_ms)}  # fmt: skip
    if "sub" in claims:
        query["sub"] = claims["sub"]
    return f"{lms.base_url}/course?{urlencode(query)}"


def _launch_and_submit_in_the_frame(page: Any, course_url: str, live_server: Any) -> None:
    """The learner's launch through the LMS's storage, then a submission in the frame."""
    from submissions.models import Submission

    page.goto(course_url)
    frame = page.frame(name="tool")
    frame.wait_for_url(f"{live_server.url}{EXERCISE_PAGE}")
    frame.wait_for_selector(EDITOR)
    frame.locator(EDITOR).click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(CODE)
    frame.get_by_role("button", name="Submit for grading").click()
    frame.wait_for_function(
        "() => document.getElementById('live-status').innerText.startsWith('Queued')"
    )

    submission = Submission.objects.get()
    assert submission.learner.lti_users.get().sub == "learner-1"
    assert submission.code.replace("\r\n", "\n") == CODE  # a form post sends CRLF
    assert len(page.context.pages) == 1  # no new window was needed


def test_with_platform_storage_a_learner_launches_and_submits_inside_the_lms_frame(
    lms: FakePlatform, live_server: Any, lms_page: tuple[Any, Problems]
) -> None:
    page, problems = lms_page
    assert live_server.url.startswith("http://localhost:") and "127.0.0.1" in lms.base_url

    _launch_and_submit_in_the_frame(page, _course_url(lms, live_server, storage=True), live_server)
    assert problems.errors == []


def test_a_storage_frame_still_loading_when_the_login_asks_answers_once_it_has_loaded(
    lms: FakePlatform, live_server: Any, lms_page: tuple[Any, Problems]
) -> None:
    # The LMS answers its storage frame's page 2 s late: the tool's login page asks while
    # the frame still holds its first document (about:blank), which drops the message.
    page, problems = lms_page
    course = _course_url(lms, live_server, storage=True, forwarder_delay_ms=2000)

    _launch_and_submit_in_the_frame(page, course, live_server)
    assert problems.errors == []


def test_where_the_frame_keeps_no_cookie_deep_linking_completes_from_a_new_window(
    lms: FakePlatform, live_server: Any, lms_page: tuple[Any, Problems], settings: Any
) -> None:
    # Not partitioned, a SameSite=None; Secure cookie is a third-party one: not kept here.
    settings.GRADLAB_LTI_PARTITIONED_COOKIES = False
    page, problems = lms_page
    claims = {"roles": [INSTRUCTOR], "sub": "teacher-1", **lms.deep_link_claims()}

    page.goto(_course_url(lms, live_server, storage=False, **claims))
    frame = page.frame(name="tool")
    frame.wait_for_url(f"{live_server.url}/lti/continue/**")
    offer = frame.get_by_role("link", name="Open gradlab in a new window")
    with page.context.expect_page() as opened:
        offer.click()
    window = opened.value
    window.wait_for_url(f"{live_server.url}/lti/deep-link/")
    window.check('input[value="chain-rule"]')
    with window.expect_event("close"):  # the answer went back to the frame
        window.get_by_role("button", name="Add to the course").click()
    frame.wait_for_url(f"{lms.base_url}/deep_link_return")

    [response] = lms.deep_link_responses
    items = response["https://purl.imsglobal.org/spec/lti-dl/claim/content_items"]
    assert [item["custom"]["exercise"] for item in items] == ["chain-rule"]
    assert '"ok": true' in frame.content()  # posted in the LMS's frame, where Moodle wants it
    assert problems.errors == []


def test_where_the_lms_storage_frame_is_missing_the_login_opens_in_a_new_window(
    lms: FakePlatform, live_server: Any, lms_page: tuple[Any, Problems]
) -> None:
    page, problems = lms_page

    page.goto(_course_url(lms, live_server, storage=True, forwarder=False))
    frame = page.frame(name="tool")
    offer = frame.get_by_role("link", name="Open gradlab in a new window")
    offer.wait_for()  # the login page found no storage frame to put the state in
    with page.context.expect_page() as opened:
        offer.click()
    window = opened.value
    window.wait_for_url(f"{live_server.url}{EXERCISE_PAGE}")
    window.wait_for_selector(EDITOR)

    assert frame.url.startswith(f"{live_server.url}/lti/login/")  # the frame never moved on
    assert problems.errors == []
