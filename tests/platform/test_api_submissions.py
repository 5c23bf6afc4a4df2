"""POST/GET /api/v1/submissions/: the contract, every bad input, idempotency, the database
rate limit and who may read what. Grading itself is in test_grading_worker.py."""

from __future__ import annotations

from typing import Any

import pytest
from gradlab_fixtures import OTHER_MODULE_SLUG
from platform_helpers import E2E_SLUG, package_file

URL = "/api/v1/submissions/"


def _post(client: Any, payload: Any, **headers: Any) -> Any:
    return client.post(URL, payload, format="json", **headers)


@pytest.fixture
def reference_code() -> str:
    return package_file(E2E_SLUG, "solution.py")


def test_post_submission_returns_201_queued_with_its_url(
    api: Any, alice_learner: Any, reference_code: str
) -> None:
    response = _post(api(alice_learner), {"exercise": E2E_SLUG, "code": reference_code})

    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"id", "status", "url"}
    assert body["status"] == "queued"
    assert body["url"] == f"http://testserver/api/v1/submissions/{body['id']}/"
    assert response["Location"] == body["url"]


def test_get_submission_shows_the_contract_fields_before_grading(
    api: Any, alice_learner: Any, reference_code: str
) -> None:
    client = api(alice_learner)
    created = _post(client, {"exercise": E2E_SLUG, "code": reference_code}).json()

    body = client.get(created["url"]).json()

    assert {"id", "exercise", "status", "score", "max_score", "passed", "checks",
            "created_at", "graded_at"} <= set(body)  # fmt: skip
    assert body["exercise"] == E2E_SLUG
    assert body["status"] == "queued"
    assert body["score"] is None and body["passed"] is None and body["graded_at"] is None
    assert body["checks"] == []


def test_submission_is_tied_to_the_current_version_of_the_exercise(
    alice_learner: Any, reference_code: str
) -> None:
    from courses.models import Exercise
    from submissions.services import submission_create

    submission, created = submission_create(
        learner=alice_learner, exercise_slug=E2E_SLUG, code=reference_code
    )

    assert created
    assert submission.version_id == Exercise.objects.get(slug=E2E_SLUG).current_version_id


@pytest.mark.parametrize(
    ("payload", "field", "fragment"),
    [
        ({"exercise": "no-such-exercise", "code": "x = 1"}, "exercise", "Unknown exercise"),
        ({"code": "x = 1"}, "exercise", "required"),
        ({"exercise": E2E_SLUG}, "code", "required"),
        ({"exercise": E2E_SLUG, "code": ""}, "code", "must not be empty"),
        ({"exercise": E2E_SLUG, "code": "  \n\t "}, "code", "must not be empty"),
        ({"exercise": E2E_SLUG, "code": "x = 1\x00"}, "code", "NUL"),
        ({"exercise": E2E_SLUG, "code": "#" * (64 * 1024 + 1)}, "code", "limit is 65536"),
        ({"exercise": E2E_SLUG, "code": "é" * (32 * 1024 + 1)}, "code", "limit is 65536"),
        ({"exercise": E2E_SLUG, "code": 42}, "code", "valid string"),
        ({"exercise": E2E_SLUG, "code": None}, "code", "null"),
        ({"exercise": ["chain-rule"], "code": "x = 1"}, "exercise", "valid string"),
        (["not", "an", "object"], "non_field_errors", "Expected a dictionary"),
    ],
)
def test_bad_submission_input_is_a_400_naming_the_field(
    api: Any, alice_learner: Any, payload: Any, field: str, fragment: str
) -> None:
    response = _post(api(alice_learner), payload)

    assert response.status_code == 400
    messages = response.json()[field]
    assert any(fragment in message for message in messages), messages


def test_code_of_exactly_64_kib_is_accepted(api: Any, alice_learner: Any) -> None:
    code = "x = 1\n" + "#" * (64 * 1024 - 6)

    assert _post(api(alice_learner), {"exercise": E2E_SLUG, "code": code}).status_code == 201


def test_malformed_json_is_a_400_not_a_500(api: Any, alice_learner: Any) -> None:
    response = api(alice_learner).post(
        URL, data='{"exercise": "chain-rule", "code": ', content_type="application/json"
    )

    assert response.status_code == 400
    assert "Malformed JSON" in response.json()["non_field_errors"][0]


def test_wrong_content_type_is_a_400_naming_the_content_type(api: Any, alice_learner: Any) -> None:
    response = api(alice_learner).post(
        URL, data="exercise=chain-rule&code=x", content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 400
    assert "application/json" in response.json()["content_type"][0]


def test_plain_text_body_is_a_400(api: Any, alice_learner: Any) -> None:
    response = api(alice_learner).post(URL, data="x = 1", content_type="text/plain")

    assert response.status_code == 400
    assert "content_type" in response.json()


def test_same_idempotency_key_returns_the_same_submission(
    api: Any, alice_learner: Any, reference_code: str
) -> None:
    from submissions.models import Submission

    client = api(alice_learner)
    payload = {"exercise": E2E_SLUG, "code": reference_code}
    first = _post(client, payload, HTTP_IDEMPOTENCY_KEY="retry-1")
    second = _post(client, payload, HTTP_IDEMPOTENCY_KEY="retry-1")

    assert first.status_code == second.status_code == 201
    assert first.json()["id"] == second.json()["id"]
    assert second["Idempotent-Replayed"] == "true"
    assert Submission.objects.filter(learner=alice_learner).count() == 1


def test_different_idempotency_keys_make_different_submissions(
    api: Any, alice_learner: Any, reference_code: str
) -> None:
    client = api(alice_learner)
    payload = {"exercise": E2E_SLUG, "code": reference_code}

    first = _post(client, payload, HTTP_IDEMPOTENCY_KEY="a").json()
    second = _post(client, payload, HTTP_IDEMPOTENCY_KEY="b").json()

    assert first["id"] != second["id"]


def test_idempotency_keys_are_per_learner(
    api: Any, alice_learner: Any, dave_learner: Any, reference_code: str
) -> None:
    payload = {"exercise": E2E_SLUG, "code": reference_code}

    alices = _post(api(alice_learner), payload, HTTP_IDEMPOTENCY_KEY="same").json()
    daves = _post(api(dave_learner), payload, HTTP_IDEMPOTENCY_KEY="same").json()

    assert alices["id"] != daves["id"]


def test_reusing_an_idempotency_key_for_other_code_is_a_422(
    api: Any, alice_learner: Any, reference_code: str
) -> None:
    client = api(alice_learner)
    _post(client, {"exercise": E2E_SLUG, "code": reference_code}, HTTP_IDEMPOTENCY_KEY="k")

    response = _post(client, {"exercise": E2E_SLUG, "code": "x = 2"}, HTTP_IDEMPOTENCY_KEY="k")

    assert response.status_code == 422
    assert "Idempotency-Key" in response.json()["detail"]


def test_an_overlong_idempotency_key_is_a_400(api: Any, alice_learner: Any) -> None:
    response = _post(
        api(alice_learner), {"exercise": E2E_SLUG, "code": "x = 1"},
        HTTP_IDEMPOTENCY_KEY="k" * 256,
    )  # fmt: skip

    assert response.status_code == 400
    assert "idempotency_key" in response.json()


def test_too_many_submissions_in_a_minute_is_a_429_with_retry_after(
    api: Any, alice_learner: Any, settings: Any
) -> None:
    settings.GRADLAB_RATE_LIMIT_COUNT = 3
    client = api(alice_learner)
    statuses = [
        _post(client, {"exercise": E2E_SLUG, "code": f"x = {i}"}).status_code for i in range(3)
    ]

    limited = _post(client, {"exercise": E2E_SLUG, "code": "x = 4"})

    assert statuses == [201, 201, 201]
    assert limited.status_code == 429
    assert 1 <= int(limited["Retry-After"]) <= 60
    assert "Too many submissions" in limited.json()["detail"]


def test_rate_limit_is_counted_in_the_database_not_in_process_memory(
    api: Any, alice_learner: Any, settings: Any
) -> None:
    from django.utils import timezone

    from courses.models import Exercise
    from submissions.models import Submission

    settings.GRADLAB_RATE_LIMIT_COUNT = 2
    exercise = Exercise.objects.get(slug=E2E_SLUG)
    for i in range(2):  # written by "another web process": straight into the database
        Submission.objects.create(
            learner=alice_learner, exercise=exercise, version=exercise.current_version,
            code=f"x = {i}", lease_expires_at=timezone.now(),
        )  # fmt: skip

    response = _post(api(alice_learner), {"exercise": E2E_SLUG, "code": "x = 3"})

    assert response.status_code == 429


def test_rate_limit_of_one_learner_does_not_limit_another(
    api: Any, alice_learner: Any, dave_learner: Any, settings: Any
) -> None:
    settings.GRADLAB_RATE_LIMIT_COUNT = 1
    _post(api(alice_learner), {"exercise": E2E_SLUG, "code": "x = 1"})

    assert _post(api(dave_learner), {"exercise": E2E_SLUG, "code": "x = 1"}).status_code == 201


def test_an_idempotent_retry_is_not_rate_limited(
    api: Any, alice_learner: Any, settings: Any
) -> None:
    settings.GRADLAB_RATE_LIMIT_COUNT = 1
    client = api(alice_learner)
    payload = {"exercise": E2E_SLUG, "code": "x = 1"}
    first = _post(client, payload, HTTP_IDEMPOTENCY_KEY="once")

    retry = _post(client, payload, HTTP_IDEMPOTENCY_KEY="once")

    assert retry.status_code == 201
    assert retry.json()["id"] == first.json()["id"]


def test_learner_cannot_read_another_learners_submission(
    api: Any, alice_learner: Any, dave_learner: Any
) -> None:
    created = _post(api(alice_learner), {"exercise": E2E_SLUG, "code": "x = 1"}).json()

    response = api(dave_learner).get(created["url"])

    assert response.status_code == 404


def test_instructor_reads_a_submission_of_their_course(
    api: Any, alice_learner: Any, bob_instructor: Any
) -> None:
    created = _post(api(alice_learner), {"exercise": E2E_SLUG, "code": "x = 1"}).json()

    response = api(bob_instructor).get(created["url"])

    assert response.status_code == 200
    assert response.json()["learner"] == "alice_learner"


def test_instructor_of_another_course_cannot_read_the_submission(
    api: Any, alice_learner: Any, carol_other_course: Any
) -> None:
    created = _post(api(alice_learner), {"exercise": E2E_SLUG, "code": "x = 1"}).json()

    assert api(carol_other_course).get(created["url"]).status_code == 404


def test_anonymous_caller_cannot_submit(api: Any, catalog: Any) -> None:
    assert _post(api(None), {"exercise": E2E_SLUG, "code": "x = 1"}).status_code == 401


def test_list_gives_only_the_callers_own_submissions_newest_first_paginated(
    api: Any, alice_learner: Any, dave_learner: Any, settings: Any
) -> None:
    settings.GRADLAB_RATE_LIMIT_COUNT = 100
    alice = api(alice_learner)
    ids = [_post(alice, {"exercise": E2E_SLUG, "code": f"x = {i}"}).json()["id"] for i in range(25)]
    _post(api(dave_learner), {"exercise": E2E_SLUG, "code": "y = 1"})

    first = alice.get(URL).json()
    second = alice.get(first["next"]).json()

    assert first["count"] == 25
    assert [item["id"] for item in first["results"]] == ids[::-1][:20]
    assert [item["id"] for item in second["results"]] == ids[::-1][20:]
    assert second["next"] is None


def test_list_filters_by_exercise_slug(api: Any, alice_learner: Any) -> None:
    client = api(alice_learner)
    _post(client, {"exercise": "first-gradient", "code": "x = 1"})
    target = _post(client, {"exercise": E2E_SLUG, "code": "x = 2"}).json()

    body = client.get(URL, {"exercise": E2E_SLUG}).json()

    if E2E_SLUG != "first-gradient":
        assert [item["id"] for item in body["results"]] == [target["id"]]
    assert all(item["exercise"] == E2E_SLUG for item in body["results"])


def test_list_with_an_unknown_exercise_filter_is_a_400(api: Any, alice_learner: Any) -> None:
    response = api(alice_learner).get(URL, {"exercise": "nope"})

    assert response.status_code == 400
    assert "Unknown exercise" in response.json()["exercise"][0]


def test_unknown_submission_id_is_a_404(api: Any, alice_learner: Any) -> None:
    assert api(alice_learner).get(f"{URL}987654/").status_code == 404


def test_a_body_of_several_megabytes_is_a_400_not_a_500(api: Any, alice_learner: Any) -> None:
    response = _post(api(alice_learner), {"exercise": E2E_SLUG, "code": "#" * 3_000_000})

    assert response.status_code == 400
    assert "code" in response.json() or "non_field_errors" in response.json()


def test_a_body_that_is_not_utf8_is_a_400(api: Any, alice_learner: Any) -> None:
    response = api(alice_learner).post(
        URL, data=b'{"exercise": "\xff\xfe", "code": "x"}', content_type="application/json"
    )

    assert response.status_code == 400


def test_filtering_by_another_modules_draft_answers_as_an_unknown_slug_does(
    api: Any, alice_learner: Any
) -> None:
    from courses.models import Exercise, Module

    other = Module.objects.get(slug=OTHER_MODULE_SLUG)
    Exercise.objects.filter(slug="chain-rule").update(module=other, is_published=False)
    client = api(alice_learner)

    draft = client.get(URL, {"exercise": "chain-rule"})
    unknown = client.get(URL, {"exercise": "no-such-exercise"})

    assert draft.status_code == unknown.status_code == 400
    assert draft.json()["exercise"][0] == "Unknown exercise 'chain-rule'."
    assert unknown.json()["exercise"][0] == "Unknown exercise 'no-such-exercise'."
