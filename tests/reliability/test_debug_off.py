"""With DEBUG off (production), error responses show no internals: a 404, a 500 from a
page or an API view that raises, and malformed API requests carry no traceback, no
settings, no file paths, no SQL. The same 500 with DEBUG on does show them: the checks
below are the ones that would catch a leak."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings as django_settings
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import include, path
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]

SUBMISSIONS = "/api/v1/submissions/"
JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
SECRET_DETAIL = "internal detail 7f3a: SELECT * FROM auth_user"
LEAKS = ("Traceback", 'File "', "/work/", str(django_settings.BASE_DIR), "site-packages",
         "SECRET_KEY", "DATABASES", "INSTALLED_APPS", "Using the URLconf", "SELECT ",
         SECRET_DETAIL, "RuntimeError", "raising_page", "psycopg")  # fmt: skip


def raising_page(request: HttpRequest) -> HttpResponse:
    raise RuntimeError(f"{SECRET_DETAIL} in {django_settings.BASE_DIR}")


class RaisingApiView(APIView):
    permission_classes = [AllowAny]

    def get(self, request: Request) -> Response:
        raise RuntimeError(f"{SECRET_DETAIL} in {django_settings.BASE_DIR}")


urlpatterns = [
    path("test-boom/", raising_page),
    path("api/v1/test-boom/", RaisingApiView.as_view()),
    path("", include("config.urls")),
]


def _assert_no_internals(body: bytes) -> None:
    text = body.decode("utf-8", errors="replace")
    found = [leak for leak in LEAKS if leak in text]
    assert not found, f"internals in the response: {found}\n{text[:2000]}"


@pytest.fixture
def quiet_client() -> Client:
    """A client that returns the 500 response instead of raising the view's exception."""
    return Client(raise_request_exception=False)


@pytest.mark.parametrize(
    "url", ["/no-such-page/", "/api/v1/no-such-endpoint/", "/api/v1/submissions/999999/",
            "/static/../settings.py"],
)  # fmt: skip
def test_a_404_shows_no_internals(quiet_client: Client, alice_learner: Any, url: str) -> None:
    quiet_client.force_login(alice_learner)
    response = quiet_client.get(url)
    assert response.status_code == 404
    _assert_no_internals(response.content)


@pytest.mark.parametrize("url", ["/test-boom/", "/api/v1/test-boom/"])
def test_a_500_shows_no_internals(quiet_client: Client, url: str) -> None:
    response = quiet_client.get(url)
    assert response.status_code == 500
    _assert_no_internals(response.content)


def test_the_same_500_with_debug_on_would_show_them(quiet_client: Client, settings: Any) -> None:
    settings.DEBUG = True
    response = quiet_client.get("/test-boom/")
    assert response.status_code == 500
    with pytest.raises(AssertionError, match="internals in the response"):
        _assert_no_internals(response.content)


@pytest.mark.parametrize(
    ("method", "url", "body", "content_type"),
    [
        ("post", SUBMISSIONS, '{"exercise": "chain-rule", "code": ', JSON),
        ("post", SUBMISSIONS, "exercise=chain-rule", FORM),
        ("post", SUBMISSIONS, '{"exercise": ["x"], "code": {"a": 1}}', JSON),
        ("post", SUBMISSIONS, '[1, 2, 3]', JSON),
        ("post", SUBMISSIONS, '{"exercise": "chain-rule", "code": "\\u0000"}', JSON),
        ("post", SUBMISSIONS, '{"exercise": "\\u0000", "code": "x = 1"}', JSON),
        ("get", "/api/v1/submissions/?page=abc", None, None),
        ("get", "/api/v1/courses/gradlab/submissions/?learner=%00", None, None),
        ("get", "/api/v1/submissions/?page_size=-1&exercise=%00", None, None),
        ("get", "/api/v1/submissions/abc/", None, None),
        ("delete", "/api/v1/submissions/", None, None),
        ("put", "/api/v1/exercises/chain-rule/", "{}", "application/json"),
    ],
)  # fmt: skip
def test_a_malformed_api_request_is_a_plain_client_error(
    api: Any, alice_learner: Any, worker_queue: str, method: str, url: str,
    body: str | None, content_type: str | None,
) -> None:  # fmt: skip
    client = api(alice_learner)
    kwargs = {"data": body, "content_type": content_type} if body is not None else {}

    response = getattr(client, method)(url, **kwargs)

    assert 400 <= response.status_code < 500, (response.status_code, response.content)
    _assert_no_internals(response.content)


def test_a_nul_in_a_pages_query_string_is_a_plain_400(quiet_client: Client) -> None:
    response = quiet_client.get("/?q=%00")
    assert response.status_code == 400
    assert response.content == b"The query string must not contain NUL characters."
