"""The roster through the API (/api/v1/courses/{module}/members/ and roster.csv): listed,
added, changed and removed by the course's instructors or by a course token with the
`roster:read` / `roster:write` scopes; never by a learner, a reviewer, another course's
instructor or a token without the scope; the last instructor always stays."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from gradlab_fixtures import persona
from integration_helpers import COURSE, OTHER_COURSE, bearer
from rest_framework.test import APIClient

MEMBERS = f"/api/v1/courses/{COURSE}/members/"
ROSTER = f"/api/v1/courses/{COURSE}/roster.csv"


def _roles() -> dict[str, str]:
    from accounts.models import Enrollment

    found = Enrollment.objects.filter(module__slug=COURSE).values_list("user__username", "role")
    return dict(found)


def _csv(client: APIClient, text: str, query: str = "") -> Any:
    return client.post(ROSTER + query, data=text.encode(), content_type="text/csv")


def test_an_instructor_lists_the_members_page_by_page(
    bob_instructor: Any, alice_learner: Any, dave_learner: Any, user_client: Callable[..., Any]
) -> None:
    client = user_client(bob_instructor)

    first = client.get(MEMBERS, {"page_size": 2}).json()
    second = client.get(first["next"]).json()
    learners = client.get(MEMBERS, {"role": "learner"}).json()

    assert first["count"] == 3
    assert [m["username"] for m in first["results"] + second["results"]] == [
        "alice_learner",
        "bob_instructor",
        "dave_learner",
    ]
    assert first["results"][1]["role"] == "instructor" and first["results"][1]["enrolled_at"]
    assert [m["username"] for m in learners["results"]] == ["alice_learner", "dave_learner"]


def test_an_instructor_adds_an_existing_user_and_then_changes_their_role(
    bob_instructor: Any, user_client: Callable[..., Any]
) -> None:
    persona("frank")
    client = user_client(bob_instructor)

    added = client.post(MEMBERS, {"username": "frank", "role": "learner"}, format="json")
    changed = client.post(MEMBERS, {"username": "frank", "role": "reviewer"}, format="json")

    assert added.status_code == 201
    assert added.json()["username"] == "frank" and added.json()["role"] == "learner"
    assert changed.status_code == 200 and changed.json()["role"] == "reviewer"
    assert _roles()["frank"] == "reviewer"


def test_a_missing_user_is_refused_unless_create_is_given(
    bob_instructor: Any, user_client: Callable[..., Any]
) -> None:
    from django.contrib.auth.models import User

    client = user_client(bob_instructor)
    payload = {"username": "grace", "role": "learner", "email": "grace@example.org"}

    refused = client.post(MEMBERS, payload, format="json")
    created = client.post(MEMBERS, {**payload, "create": True}, format="json")

    assert refused.status_code == 400 and "grace" in refused.json()["username"][0]
    assert created.status_code == 201
    grace = User.objects.get(username="grace")
    assert grace.email == "grace@example.org"
    assert not grace.has_usable_password()
    assert _roles()["grace"] == "learner"


def test_a_bad_role_or_a_bad_username_to_create_is_a_400_naming_the_field(
    bob_instructor: Any, user_client: Callable[..., Any]
) -> None:
    client = user_client(bob_instructor)

    role = client.post(MEMBERS, {"username": "bob_instructor", "role": "owner"}, format="json")
    name = client.post(
        MEMBERS, {"username": "a b", "role": "learner", "create": True}, format="json"
    )

    assert role.status_code == 400 and "role" in role.json()
    assert name.status_code == 400 and "username" in name.json()


def test_an_instructor_removes_a_member_and_an_unknown_one_is_404(
    bob_instructor: Any, alice_learner: Any, user_client: Callable[..., Any]
) -> None:
    client = user_client(bob_instructor)

    removed = client.delete(f"{MEMBERS}alice_learner/")
    again = client.delete(f"{MEMBERS}alice_learner/")

    assert removed.status_code == 204
    assert "alice_learner" not in _roles()
    assert again.status_code == 404


def test_the_last_instructor_can_be_neither_removed_nor_demoted(
    bob_instructor: Any, user_client: Callable[..., Any]
) -> None:
    client = user_client(bob_instructor)

    removed = client.delete(f"{MEMBERS}bob_instructor/")
    demoted = client.post(MEMBERS, {"username": "bob_instructor", "role": "learner"}, format="json")

    assert removed.status_code == demoted.status_code == 409
    assert "without an instructor" in removed.json()["detail"]
    assert _roles()["bob_instructor"] == "instructor"


def test_one_of_two_instructors_may_remove_the_other(
    bob_instructor: Any, erin_co_instructor: Any, user_client: Callable[..., Any]
) -> None:
    client = user_client(bob_instructor)

    assert client.delete(f"{MEMBERS}erin_co_instructor/").status_code == 204
    assert client.delete(f"{MEMBERS}bob_instructor/").status_code == 409


def test_learners_reviewers_and_other_courses_instructors_cannot_touch_the_roster(
    bob_instructor: Any, alice_learner: Any, carol_other: Any, user_client: Callable[..., Any]
) -> None:
    from courses.models import Module
    from courses.roster import enrollment_set

    rita = persona("rita_reviewer")
    enrollment_set(user=rita, module=Module.objects.get(slug=COURSE), role="reviewer")

    for user in (alice_learner, rita, carol_other):
        client = user_client(user)
        assert client.get(MEMBERS).status_code == 404, user
        post = client.post(
            MEMBERS, {"username": user.username, "role": "instructor"}, format="json"
        )
        assert post.status_code == 404, user
        assert client.delete(f"{MEMBERS}bob_instructor/").status_code == 404, user
        assert _csv(client, "username\nalice_learner\n").status_code == 404, user
    assert _roles()["alice_learner"] == "learner" and _roles()["rita_reviewer"] == "reviewer"
    assert APIClient().get(MEMBERS).status_code == 401


def test_a_signed_in_instructor_uses_the_members_endpoint_with_the_session(
    bob_instructor: Any, alice_learner: Any
) -> None:
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(bob_instructor)

    assert client.get(MEMBERS).json()["count"] == 2


def test_a_roster_token_lists_adds_and_removes_members(
    alice_learner: Any, course_token: Callable[..., str]
) -> None:
    persona("frank")
    client = bearer(course_token(["roster:read", "roster:write"]))

    added = client.post(MEMBERS, {"username": "frank", "role": "instructor"}, format="json")
    listed = client.get(MEMBERS).json()
    removed = client.delete(f"{MEMBERS}alice_learner/")

    assert added.status_code == 201
    assert {m["username"] for m in listed["results"]} == {
        "alice_learner",
        "bob_instructor",
        "frank",
    }
    assert removed.status_code == 204
    assert _roles() == {"bob_instructor": "instructor", "frank": "instructor"}


def test_a_token_without_the_roster_scopes_is_403_naming_the_scope(
    alice_learner: Any, course_token: Callable[..., str]
) -> None:
    reader = bearer(course_token(["roster:read"]))
    other = bearer(course_token(["exercises:read", "submissions:write"]))

    assert reader.get(MEMBERS).status_code == 200
    write = reader.post(MEMBERS, {"username": "alice_learner", "role": "reviewer"}, format="json")
    assert write.status_code == 403 and "roster:write" in write.json()["detail"]
    assert reader.delete(f"{MEMBERS}alice_learner/").status_code == 403
    assert _csv(reader, "username\nalice_learner\n").status_code == 403
    read = other.get(MEMBERS)
    assert read.status_code == 403 and "roster:read" in read.json()["detail"]
    assert _roles()["alice_learner"] == "learner"


def test_a_roster_token_cannot_reach_another_course(
    carol_other: Any, course_token: Callable[..., str]
) -> None:
    client = bearer(course_token(["roster:read", "roster:write"]))

    assert client.get(f"/api/v1/courses/{OTHER_COURSE}/members/").status_code == 403
    assert (
        client.delete(f"/api/v1/courses/{OTHER_COURSE}/members/carol_other_course/").status_code
        == 403
    )


def test_a_csv_roster_is_applied_whole_and_reports_what_it_did(
    bob_instructor: Any, alice_learner: Any, user_client: Callable[..., Any]
) -> None:
    from django.contrib.auth.models import User

    persona("frank")
    text = (
        "\ufeffUsername,Email,Role\r\n"
        "alice_learner,,reviewer\r\n"
        "frank,,\r\n"
        "\r\n"
        "grace,grace@example.org,instructor\r\n"
        "bob_instructor,,instructor\r\n"
    )

    response = _csv(user_client(bob_instructor), text, "?create=1")

    assert response.status_code == 200, response.json()
    assert response.json() == {
        "added": 2,
        "changed": 1,
        "unchanged": 1,
        "created_users": ["grace"],
    }
    assert _roles() == {
        "alice_learner": "reviewer",
        "bob_instructor": "instructor",
        "frank": "learner",
        "grace": "instructor",
    }
    assert User.objects.get(username="grace").email == "grace@example.org"


def test_a_csv_roster_with_bad_rows_changes_nothing_and_names_every_line(
    bob_instructor: Any, alice_learner: Any, user_client: Callable[..., Any]
) -> None:
    text = (
        "username,role\n"
        "alice_learner,reviewer\n"  # fine on its own
        "nobody,learner\n"
        "alice_learner,owner\n"
        "frank\x00,learner\n"
        '"=HYPERLINK(1)",learner\n'
    )

    response = _csv(user_client(bob_instructor), text)

    assert response.status_code == 400
    problems = response.json()["csv"]
    assert [p.split(":")[0] for p in problems] == ["line 3", "line 4", "line 5", "line 6"]
    assert "owner" in problems[1] and "alice_learner" in problems[1] and "line 2" in problems[1]
    assert "U+0000" in problems[2]
    assert "no user 'nobody'" in problems[0]
    assert _roles()["alice_learner"] == "learner"


def test_a_csv_roster_that_is_not_utf8_or_has_no_username_column_is_refused(
    bob_instructor: Any, user_client: Callable[..., Any]
) -> None:
    client = user_client(bob_instructor)

    latin1 = client.post(
        ROSTER, data="username\nJos\xe9\n".encode("latin-1"), content_type="text/csv"
    )
    no_column = _csv(client, "name,role\nfrank,learner\n")
    empty = _csv(client, "")

    assert latin1.status_code == 400 and latin1.json()["csv"] == ["line 2: not UTF-8 text."]
    assert no_column.status_code == 400 and "username" in no_column.json()["csv"][0]
    assert empty.status_code == 400 and "empty" in empty.json()["csv"][0]


def test_a_roster_sent_as_json_is_told_to_send_text_csv(
    bob_instructor: Any, user_client: Callable[..., Any]
) -> None:
    response = user_client(bob_instructor).post(ROSTER, {"username": "x"}, format="json")

    assert response.status_code == 400
    assert response.json() == {"content_type": ["Send the CSV with Content-Type: text/csv."]}


def test_a_csv_roster_that_would_leave_no_instructor_is_refused(
    bob_instructor: Any, user_client: Callable[..., Any]
) -> None:
    response = _csv(user_client(bob_instructor), "username,role\nbob_instructor,learner\n")

    assert response.status_code == 400
    assert "without an instructor" in response.json()["csv"][0]
    assert _roles()["bob_instructor"] == "instructor"


def test_a_csv_roster_may_hand_the_course_to_a_new_instructor_in_one_file(
    bob_instructor: Any, user_client: Callable[..., Any]
) -> None:
    persona("frank")
    text = "username,role\nbob_instructor,learner\nfrank,instructor\n"

    response = _csv(user_client(bob_instructor), text)

    assert response.status_code == 200, response.json()
    assert _roles() == {"bob_instructor": "learner", "frank": "instructor"}


def test_the_openapi_schema_documents_the_members_endpoints_and_scopes(courses: Any) -> None:
    response = APIClient().get("/api/v1/schema/?format=json")

    schema = json.loads(response.content)
    members = schema["paths"]["/api/v1/courses/{module}/members/"]
    detail = schema["paths"]["/api/v1/courses/{module}/members/{username}/"]
    roster = schema["paths"]["/api/v1/courses/{module}/roster.csv"]
    assert set(members) >= {"get", "post"} and "delete" in detail
    body = members["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    member_input = schema["components"]["schemas"][body.rsplit("/", 1)[-1]]
    assert set(member_input["properties"]) == {"username", "role", "email", "create"}
    assert {"200", "201", "409"} <= set(members["post"]["responses"])
    assert "text/csv" in roster["post"]["requestBody"]["content"]
    scheme = schema["components"]["securitySchemes"]["courseToken"]["description"]
    assert "`roster:read`" in scheme and "`roster:write`" in scheme
