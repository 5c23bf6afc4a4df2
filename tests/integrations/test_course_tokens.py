"""Course API tokens: created by an instructor (shown once, stored as a hash), scoped to one
course and to scopes, revocable; `Authorization: Bearer ...` beside the per-user `Token`.
A wrong token is 401; a wrong course or a missing scope is 403."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from integration_helpers import (
    COURSE,
    COURSE_EXERCISE,
    OTHER_COURSE,
    OTHER_EXERCISE,
    bearer,
    solution,
)

TOKENS = f"/api/v1/courses/{COURSE}/tokens/"
EXERCISE = f"/api/v1/exercises/{COURSE_EXERCISE}/"
SUBMISSIONS = "/api/v1/submissions/"
ALL_SCOPES = ["exercises:read", "submissions:read", "submissions:write"]


def test_a_new_token_is_shown_once_and_stored_only_as_its_hash(
    bob_instructor: Any, user_client: Callable[[Any], Any]
) -> None:
    from integrations.models import CourseToken

    client = user_client(bob_instructor)
    created = client.post(TOKENS, {"name": "ci", "scopes": ["exercises:read"]}, format="json")

    secret = created.json()["token"]
    stored = CourseToken.objects.get()
    assert created.status_code == 201
    assert created["Cache-Control"] == "no-store"
    assert secret.startswith("glc_") and len(secret) > 40
    assert stored.token_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in {str(v) for v in CourseToken.objects.values().get().values()}
    listed = client.get(TOKENS).json()
    assert [t["name"] for t in listed] == ["ci"]
    assert "token" not in listed[0] and secret.startswith(listed[0]["prefix"])


def test_a_bearer_token_reads_an_exercise_of_its_course(course_token: Callable[..., str]) -> None:
    response = bearer(course_token(["exercises:read"])).get(EXERCISE)

    assert response.status_code == 200
    assert response.json()["slug"] == COURSE_EXERCISE


def test_the_per_user_token_keeps_working_beside_course_tokens(
    alice_learner: Any, user_client: Callable[[Any], Any], course_token: Callable[..., str]
) -> None:
    course_token(ALL_SCOPES)

    assert user_client(alice_learner).get(EXERCISE).status_code == 200


def test_an_unknown_or_malformed_bearer_token_is_401(courses: Any) -> None:
    for header in ("Bearer glc_not-a-token", "Bearer", "Bearer a b", "Bearer caf\u00e9"):
        client = bearer("")
        client.credentials(HTTP_AUTHORIZATION=header)

        assert client.get(EXERCISE).status_code == 401, header


def test_a_revoked_token_is_401(
    bob_instructor: Any, user_client: Callable[[Any], Any], course_token: Callable[..., str]
) -> None:
    from integrations.models import CourseToken

    secret = course_token(["exercises:read"])
    token_id = CourseToken.objects.get().pk

    revoked = user_client(bob_instructor).delete(f"{TOKENS}{token_id}/")

    assert revoked.status_code == 204
    response = bearer(secret).get(EXERCISE)
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]


def test_an_expired_token_is_401(course_token: Callable[..., str]) -> None:
    from django.utils import timezone

    from integrations.models import CourseToken

    secret = course_token(["exercises:read"])
    CourseToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    assert bearer(secret).get(EXERCISE).status_code == 401


def test_a_token_of_one_course_is_403_on_another_courses_exercise(
    course_token: Callable[..., str],
) -> None:
    response = bearer(course_token(["exercises:read"])).get(f"/api/v1/exercises/{OTHER_EXERCISE}/")

    assert response.status_code == 403
    assert "another course" in response.json()["detail"]


def test_an_exercises_read_token_lists_only_its_own_courses_exercises(
    course_token: Callable[..., str], bob_instructor: Any, courses: Any
) -> None:
    """Its creator is enrolled in the other course too: the token still sees one course."""
    from accounts.models import Enrollment

    Enrollment.objects.create(user=bob_instructor, module=courses[OTHER_COURSE], role="learner")
    secret = course_token(["exercises:read"])

    listed = bearer(secret).get("/api/v1/exercises/").json()

    slugs = {e["slug"] for e in (listed["results"] if isinstance(listed, dict) else listed)}
    assert COURSE_EXERCISE in slugs
    assert OTHER_EXERCISE not in slugs
    assert {e.slug for e in courses[COURSE].exercises.all()} >= slugs


def test_a_token_without_the_scope_is_403(course_token: Callable[..., str]) -> None:
    client = bearer(course_token(["exercises:read"]))

    response = client.post(
        SUBMISSIONS, {"exercise": COURSE_EXERCISE, "code": "x = 1"}, format="json"
    )

    assert response.status_code == 403
    assert "submissions:write" in response.json()["detail"]


def test_a_write_token_submits_to_its_course_as_its_creator(
    bob_instructor: Any, course_token: Callable[..., str]
) -> None:
    from submissions.models import Submission

    client = bearer(course_token(["submissions:write", "submissions:read"]))
    payload = {"exercise": COURSE_EXERCISE, "code": solution(COURSE_EXERCISE)}

    created = client.post(SUBMISSIONS, payload, format="json")
    elsewhere = client.post(
        SUBMISSIONS, {"exercise": OTHER_EXERCISE, "code": "x = 1"}, format="json"
    )

    assert created.status_code == 201
    assert Submission.objects.get().learner == bob_instructor
    assert client.get(created.json()["url"]).status_code == 200
    assert elsewhere.status_code == 403


def test_a_read_token_lists_every_submission_of_its_course_and_nothing_else(
    alice_learner: Any,
    carol_other: Any,
    user_client: Callable[[Any], Any],
    course_token: Callable[..., str],
) -> None:
    mine = user_client(alice_learner).post(
        SUBMISSIONS, {"exercise": COURSE_EXERCISE, "code": "x = 1"}, format="json"
    )
    client = bearer(course_token(["submissions:read"]))

    listed = client.get(f"/api/v1/courses/{COURSE}/submissions/").json()
    other = client.get(f"/api/v1/courses/{OTHER_COURSE}/submissions/")

    assert [s["id"] for s in listed["results"]] == [mine.json()["id"]]
    assert listed["results"][0]["learner"] == "alice_learner"
    assert other.status_code == 403


def test_a_course_token_cannot_create_tokens_or_use_endpoints_that_do_not_accept_it(
    course_token: Callable[..., str],
) -> None:
    client = bearer(course_token(ALL_SCOPES))

    minted = client.post(TOKENS, {"name": "x", "scopes": ["exercises:read"]}, format="json")
    own_list = client.get(SUBMISSIONS)

    assert minted.status_code == 403
    assert own_list.status_code == 403


def test_a_learner_or_another_courses_instructor_cannot_create_tokens(
    alice_learner: Any, carol_other: Any, user_client: Callable[[Any], Any]
) -> None:
    payload = {"name": "x", "scopes": ["exercises:read"]}

    for user in (alice_learner, carol_other):
        response = user_client(user).post(TOKENS, payload, format="json")

        assert response.status_code == 404, user


def test_unknown_scopes_are_a_400_naming_the_field(
    bob_instructor: Any, user_client: Callable[[Any], Any]
) -> None:
    response = user_client(bob_instructor).post(
        TOKENS, {"name": "x", "scopes": ["admin:everything"]}, format="json"
    )

    assert response.status_code == 400
    assert "scopes" in response.json()


def test_a_token_stops_working_when_its_creator_stops_teaching_the_course(
    bob_instructor: Any, course_token: Callable[..., str]
) -> None:
    from accounts.models import Enrollment

    secret = course_token(["exercises:read"])
    Enrollment.objects.filter(user=bob_instructor).update(role="learner")

    assert bearer(secret).get(EXERCISE).status_code == 403


def test_the_openapi_schema_documents_the_bearer_scheme(courses: Any) -> None:
    import json

    from rest_framework.test import APIClient

    response = APIClient().get("/api/v1/schema/?format=json")

    schema = json.loads(response.content)
    scheme = schema["components"]["securitySchemes"]["courseToken"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer"
    assert "submissions:write" in scheme["description"]
    exercise_get = schema["paths"]["/api/v1/exercises/{slug}/"]["get"]
    assert {"courseToken": []} in exercise_get["security"]


def test_the_command_line_creates_a_working_token_and_revokes_it(
    bob_instructor: Any, courses: Any
) -> None:
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("course_token", COURSE, "bob_instructor", "--scope", "exercises:read",
                 stdout=out)  # fmt: skip
    first_line, secret = out.getvalue().strip().splitlines()
    token_id = int(first_line.split()[2].rstrip(","))

    works = bearer(secret).get(EXERCISE).status_code
    call_command("course_token", COURSE, "bob_instructor", "--revoke", str(token_id),
                 stdout=StringIO())  # fmt: skip

    assert works == 200
    assert bearer(secret).get(EXERCISE).status_code == 401


def test_the_command_line_refuses_someone_who_does_not_teach_the_course(
    alice_learner: Any,
) -> None:
    import pytest
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="do not teach"):
        call_command("course_token", COURSE, "alice_learner", "--scope", "exercises:read")
