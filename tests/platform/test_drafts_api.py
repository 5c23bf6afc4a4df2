"""The caller's draft of an exercise through the API (GET/PUT/DELETE
/api/v1/exercises/{slug}/draft/, DRF's test client, on PostgreSQL and on SQLite): the same
draft the exercise page autosaves and opens with, the same rules for its code, a 400 naming
the field for bad input, and no draft for a course token (which acts for no learner)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from gradlab_fixtures import MODULE_SLUG
from rest_framework.test import APIClient

from courses.models import Module
from integrations.tokens import SCOPES, course_token_create
from submissions.models import Draft

pytestmark = pytest.mark.django_db

SLUG = "chain-rule"
URL = f"/api/v1/exercises/{SLUG}/draft/"
UNSENT = "import torch\nx = torch.tensor(2.0, requires_grad=True)  # half done\n"
Api = Callable[[Any], APIClient]


def _put(client: APIClient, body: object, url: str = URL) -> Any:
    return client.put(url, json.dumps(body), content_type="application/json")


def test_a_draft_put_is_read_back_and_opens_in_the_exercise_page(
    alice_learner: Any, api: Api
) -> None:
    client = api(alice_learner)

    saved = _put(client, {"code": UNSENT})
    read = client.get(URL)
    page = Client()
    page.force_login(alice_learner)
    html = page.get(reverse("web:exercise", args=[MODULE_SLUG, SLUG])).content.decode()

    assert saved.status_code == 200 and read.status_code == 200
    assert read.json()["code"] == UNSENT and read.json()["exercise"] == SLUG
    assert read.json()["updated_at"] == saved.json()["updated_at"]
    assert read.json()["url"].endswith(URL)
    assert "Restored your unsent code" in html and "half done" in html


def test_the_draft_the_page_autosaved_is_the_one_the_api_reads(
    alice_learner: Any, api: Api
) -> None:
    page = Client()
    page.force_login(alice_learner)
    page.post(reverse("web:exercise_draft", args=[MODULE_SLUG, SLUG]), {"code": UNSENT})

    assert api(alice_learner).get(URL).json()["code"] == UNSENT


def test_a_second_put_replaces_the_draft_in_place(alice_learner: Any, api: Api) -> None:
    client = api(alice_learner)

    _put(client, {"code": "first\n"})
    _put(client, {"code": "   \r\nsecond\r\n"})

    assert Draft.objects.filter(learner=alice_learner).count() == 1
    assert client.get(URL).json()["code"] == "   \nsecond\n"  # kept as typed, in LF


def test_an_empty_draft_is_kept(alice_learner: Any, api: Api) -> None:
    client = api(alice_learner)

    assert _put(client, {"code": ""}).status_code == 200
    assert client.get(URL).json()["code"] == ""


def test_no_draft_yet_is_a_404_that_says_so(alice_learner: Any, api: Api) -> None:
    response = api(alice_learner).get(URL)

    assert response.status_code == 404 and "no draft" in response.json()["detail"]


def test_delete_drops_the_draft_and_is_idempotent(alice_learner: Any, api: Api) -> None:
    client = api(alice_learner)
    _put(client, {"code": UNSENT})

    first, again = client.delete(URL), client.delete(URL)

    assert first.status_code == 204 and again.status_code == 204
    assert not Draft.objects.exists() and client.get(URL).status_code == 404


def test_each_learner_has_their_own_draft(alice_learner: Any, dave_learner: Any, api: Api) -> None:
    _put(api(alice_learner), {"code": UNSENT})

    assert api(dave_learner).get(URL).status_code == 404
    assert api(dave_learner).delete(URL).status_code == 204
    assert Draft.objects.get().learner == alice_learner


@pytest.mark.parametrize(
    ("body", "field", "problem"),
    [
        ({"code": 42}, "code", "string"),
        ({"code": None}, "code", "null"),
        ({"code": ["x"]}, "code", "string"),
        ({}, "code", "required"),
        ([UNSENT], "non_field_errors", "dictionary"),
        ({"code": "x = 1\x00\n"}, "code", "NUL"),
        ({"code": "#" * (64 * 1024 + 1)}, "code", "the limit is"),
    ],
    ids=["number", "null", "list", "missing", "not-an-object", "nul-byte", "too-big"],
)
def test_bad_input_is_a_400_naming_the_field(
    alice_learner: Any, api: Api, body: object, field: str, problem: str
) -> None:
    response = _put(api(alice_learner), body)

    assert response.status_code == 400
    assert problem in " ".join(response.json()[field])
    assert not Draft.objects.exists()


def test_a_lone_surrogate_is_a_400_naming_the_field(alice_learner: Any, api: Api) -> None:
    raw = '{"code": "x = \\ud800\\n"}'  # valid JSON, but no UTF-8 text holds it

    response = api(alice_learner).put(URL, raw, content_type="application/json")

    assert response.status_code == 400 and "surrogate" in response.json()["code"][0]
    assert not Draft.objects.exists()


def test_a_body_that_is_not_json_is_a_400(alice_learner: Any, api: Api) -> None:
    client = api(alice_learner)

    form = client.put(URL, "code=x", content_type="application/x-www-form-urlencoded")
    broken = client.put(URL, '{"code": ', content_type="application/json")

    assert form.status_code == 400 and "content_type" in form.json()
    assert broken.status_code == 400 and "non_field_errors" in broken.json()


def test_an_exercise_the_caller_may_not_see_is_a_404(carol_other_course: Any, api: Api) -> None:
    client = api(carol_other_course)

    assert client.get(URL).status_code == 404
    assert _put(client, {"code": UNSENT}).status_code == 404
    assert client.delete(URL).status_code == 404
    assert _put(client, {"code": UNSENT}, "/api/v1/exercises/no-such/draft/").status_code == 404
    assert not Draft.objects.exists()


def test_an_anonymous_caller_is_a_401(catalog: Any, api: Api) -> None:
    assert api(None).get(URL).status_code == 401
    assert _put(api(None), {"code": UNSENT}).status_code == 401


def test_a_course_token_has_no_draft_and_is_told_why(bob_instructor: Any) -> None:
    issued = course_token_create(
        creator=bob_instructor,
        module=Module.objects.get(slug=MODULE_SLUG),
        name="ci",
        scopes=sorted(SCOPES),
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")

    read, written = client.get(URL), _put(client, {"code": UNSENT})

    assert read.status_code == 403 and written.status_code == 403
    assert "course token cannot" in written.json()["detail"]
    assert not Draft.objects.exists()


def test_the_schema_documents_the_draft_endpoint(api: Api, alice_learner: Any) -> None:
    schema = api(alice_learner).get("/api/v1/schema/", {"format": "json"}).json()

    operations = schema["paths"]["/api/v1/exercises/{slug}/draft/"]
    assert {"get", "put", "delete"} <= set(operations)
    assert "LearnerDraftInput" in json.dumps(operations["put"]["requestBody"])
