"""Input that is not valid Unicode text (a lone surrogate, '\\ud800') or is nested beyond a
depth is refused at the boundary with a 400 naming the field (API bodies, code, package
files, manifests, solution code); text that already holds one (a row written before the
check) is shown with U+FFFD in its place, never a 500. A property test posts generated
hostile JSON to the submission and authoring API and renders hostile stored reports."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.template.loader import render_to_string
from django.test import RequestFactory
from gradlab_fixtures import MODULE_SLUG
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lanes import examples
from platform_helpers import E2E_SLUG

pytestmark = pytest.mark.django_db

SUBMISSIONS = "/api/v1/submissions/"
CUBE = f"/api/v1/authoring/modules/{MODULE_SLUG}/exercises/cube-gradient/"
LONE = "\ud800"
REPLACEMENT = "\ufffd"


@pytest.fixture(autouse=True)
def _no_worker_listens(settings: Any) -> None:
    settings.GRADLAB_QUEUE_CPU = "grading-unconsumed-hostile-input-test"


def _post_raw(client: Any, url: str, body: str | bytes, method: str = "post") -> Any:
    """`body` as sent: json.dumps writes a lone surrogate as the escape \\ud800."""
    return getattr(client, method)(url, data=body, content_type="application/json")


@pytest.fixture
def bob(api: Any, bob_instructor: Any) -> Any:
    return api(bob_instructor)


@pytest.fixture
def cube(bob: Any) -> dict[str, Any]:
    url = f"/api/v1/authoring/modules/{MODULE_SLUG}/exercises/"
    response = bob.post(url, {"slug": "cube-gradient"}, format="json")
    assert response.status_code == 201, response.content
    return dict(response.json())


# -- API bodies ------------------------------------------------------------------------------


def test_code_with_a_lone_surrogate_posted_to_the_api_is_a_400_naming_the_code(
    api: Any, alice_learner: Any
) -> None:
    body = json.dumps({"exercise": E2E_SLUG, "code": f"print('{LONE}')\n"})

    response = _post_raw(api(alice_learner), SUBMISSIONS, body)

    assert response.status_code == 400
    assert "lone surrogate" in response.json()["code"][0]


def test_a_lone_surrogate_in_a_key_is_a_400_naming_where(api: Any, alice_learner: Any) -> None:
    body = json.dumps({"exercise": E2E_SLUG, "code": "x = 1\n", f"k{LONE}": 1})

    response = _post_raw(api(alice_learner), SUBMISSIONS, body)

    assert response.status_code == 400
    assert any("lone surrogate" in m for v in response.json().values() for m in v)


@pytest.mark.parametrize("depth", [100_000, 40])
def test_a_json_body_nested_too_deeply_is_a_400_saying_so(
    api: Any, alice_learner: Any, depth: int
) -> None:
    body = '{"exercise": "x", "code": ' + "[" * depth + "]" * depth + "}"

    response = _post_raw(api(alice_learner), SUBMISSIONS, body)

    assert response.status_code == 400
    assert "Nested deeper than 32 levels" in json.dumps(response.json())


def test_a_body_within_the_depth_still_reaches_the_field_checks(
    api: Any, alice_learner: Any
) -> None:
    response = _post_raw(api(alice_learner), SUBMISSIONS, '{"exercise": "x", "code": [[1]]}')

    assert response.status_code == 400
    assert "code" in response.json()


def test_package_files_with_a_lone_surrogate_are_a_400_naming_the_file(bob: Any, cube: Any) -> None:
    files = {**cube["files"], "solution.py": f"# {LONE}\n" + cube["files"]["solution.py"]}

    response = _post_raw(bob, CUBE, json.dumps({"files": files}), method="put")

    assert response.status_code == 400
    assert "lone surrogate" in json.dumps(response.json())


# -- authoring: manifests and code the compiler cannot take ------------------------------------


@pytest.mark.parametrize(
    ("path", "text", "fragment"),
    [
        ("solution.py", "x = " + "-" * 100_000 + "1\n", "solution.py: nested too deeply"),
        ("solution.py", "x = 1\x00\n", "solution.py"),
        ("starter.py", "y = " + "not " * 100_000 + "x\n", "starter.py: nested too deeply"),
        ("exercise.toml", "a = " + "[" * 50_000 + "]" * 50_000 + "\n", "exercise.toml: invalid"),
    ],
    ids=["deep-unary-solution", "nul-solution", "deep-not-starter", "deep-manifest"],
)
def test_a_package_file_the_parser_cannot_take_is_a_problem_naming_the_file(
    bob: Any, cube: Any, path: str, text: str, fragment: str
) -> None:
    files = {**cube["files"], path: text}

    response = bob.put(CUBE, {"files": files}, format="json")

    assert response.status_code in (200, 400), response.content[:300]
    assert fragment in json.dumps(response.json())


def test_the_author_pages_take_a_manifest_nested_too_deeply_and_name_it(
    web: Any, bob_instructor: Any, cube: Any
) -> None:
    from django.urls import reverse

    bob = web(bob_instructor)
    editor = reverse("web:author_exercise", args=[MODULE_SLUG, "cube-gradient"])
    deep = "a = " + "[" * 50_000 + "]" * 50_000 + "\n"

    save_toml = reverse("web:author_save_toml", args=[MODULE_SLUG, "cube-gradient"])
    saved = bob.post(save_toml, {"toml": deep})
    page = bob.get(editor)

    assert saved.status_code < 500 and page.status_code == 200
    assert "exercise.toml: invalid TOML (nested too deeply)" in page.content.decode()


# -- form posts ------------------------------------------------------------------------------


def test_code_with_a_lone_surrogate_is_refused_by_the_service_naming_the_code() -> None:
    from common.errors import InvalidInput
    from submissions.services import code_validate

    with pytest.raises(InvalidInput) as refused:
        code_validate(f"print('{LONE}')\n")

    assert "lone surrogate" in str(refused.value.errors["code"])


def test_a_form_post_of_code_encoding_a_surrogate_is_never_a_500(
    web: Any, alice_learner: Any
) -> None:
    from django.urls import reverse

    from submissions.models import Submission

    url = reverse("web:exercise", args=[MODULE_SLUG, E2E_SLUG])
    body = b"code=print%28%27%ED%A0%80%27%29%0A"  # the UTF-8 bytes a surrogate would have

    response = web(alice_learner).post(
        url, data=body, content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code in (302, 400)
    assert all("\ud800" not in code for code in Submission.objects.values_list("code", flat=True))


# -- stored text that already holds a lone surrogate -------------------------------------------


def _hostile_report(text: str) -> dict[str, Any]:
    return {
        "status": "graded",
        "score": 1.0,
        "max_score": 2.0,
        "passed": False,
        "stdout": f"printed {text}",
        "message": f"message {text}",
        "checks": [
            {
                "name": f"check {text}",
                "passed": False,
                "score": 1.0,
                "max_score": 2.0,
                "message": f"x.grad is {text}",
                "hint": text,
                "data": {text: text},
            },
        ],
        "integrity_flags": [{"kind": "tamper", "detail": f"flag {text}"}],
    }


@pytest.fixture
def submission(alice_learner: Any) -> Any:
    from submissions.services import submission_create

    created, _ = submission_create(learner=alice_learner, exercise_slug=E2E_SLUG, code="x = 1")
    return created


def _rendered_page_and_api(submission: Any, report: Any) -> tuple[bytes, bytes]:
    """The instructor's feedback and the API's detail of `submission` as if its stored
    report were `report` (PostgreSQL refuses to store a lone surrogate now: this is the row
    of a database that took one before)."""
    from api.parsers import TextSafeJSONRenderer
    from api.serializers import SubmissionOutput
    from web.presenters import feedback_for

    submission.status = "graded"
    submission.review = "held"
    submission.report = report
    feedback = feedback_for(submission, show_review=True)
    page = render_to_string("web/_feedback.html", {"fb": feedback}).encode("utf-8")
    request = RequestFactory().get("/api/v1/submissions/")
    data = dict(SubmissionOutput(submission, context={"request": request}).data)
    data["report"] = report
    return page, TextSafeJSONRenderer().render(data)


def test_a_stored_report_with_lone_surrogates_renders_with_replacement_characters(
    submission: Any,
) -> None:
    page, body = _rendered_page_and_api(submission, _hostile_report(LONE))

    assert "flag \ufffd".encode() in page and "printed \ufffd".encode() in page
    assert "\ufffd" in json.loads(body)["report"]["stdout"]


# -- property: hostile JSON finds no 500 -------------------------------------------------------

HOSTILE_TEXT = st.text(
    alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=()),
    max_size=20,
)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | HOSTILE_TEXT
HOSTILE_JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(HOSTILE_TEXT, inner, max_size=4),
    max_leaves=12,
)
DEEP = st.integers(min_value=1, max_value=3000).map(lambda n: "[" * n + "]" * n)
EXAMPLES = settings(
    max_examples=examples(30),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _body(shape: Any, deep: str, where: str) -> str:
    """`shape` as the whole body or as one field's value, or a deep nesting in its place."""
    if where == "deep":
        return '{"exercise": "x", "code": ' + deep + "}"
    return json.dumps(shape if where == "whole" else {"exercise": E2E_SLUG, where: shape})


@EXAMPLES
@given(shape=HOSTILE_JSON, deep=DEEP, where=st.sampled_from(["whole", "code", "exercise", "deep"]))
def test_hostile_json_posted_to_the_submission_api_is_never_a_500(
    api: Any, alice_learner: Any, shape: Any, deep: str, where: str
) -> None:
    response = _post_raw(api(alice_learner), SUBMISSIONS, _body(shape, deep, where))

    assert response.status_code < 500, response.content[:300]


@EXAMPLES
@given(shape=HOSTILE_JSON, path=st.sampled_from(["solution.py", "exercise.toml", "statement.md"]))
def test_hostile_json_put_to_the_authoring_api_is_never_a_500(
    bob: Any, cube: Any, shape: Any, path: str
) -> None:
    bodies = [json.dumps(shape), json.dumps({"files": shape}), json.dumps({"files": {path: shape}})]
    for body in bodies:
        response = _post_raw(bob, CUBE, body, method="put")
        assert response.status_code < 500, response.content[:300]


@EXAMPLES
@given(text=HOSTILE_TEXT)
def test_hostile_stored_reports_always_render(submission: Any, text: str) -> None:
    page, body = _rendered_page_and_api(submission, _hostile_report(text))

    assert page and json.loads(body)
