"""Enrolment outside the browser's one-at-a-time form: `issue_token --learner-of` /
`--instructor-of` (and its warning when the user is enrolled nowhere), a script that
enrols a user and then submits, and the CSV roster on the module's authoring page."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from gradlab_fixtures import MODULE_SLUG, OTHER_MODULE_SLUG, persona
from platform_helpers import E2E_SLUG, package_file

pytestmark = pytest.mark.django_db

AUTHOR = f"/teach/{MODULE_SLUG}/author/"
ROSTER = f"/teach/{MODULE_SLUG}/author/members/roster/"


def _issue(*args: str) -> tuple[list[str], str]:
    out, err = StringIO(), StringIO()
    call_command("issue_token", *args, stdout=out, stderr=err)
    return out.getvalue().splitlines(), err.getvalue()


def _roles(username: str) -> dict[str, str]:
    from accounts.models import Enrollment

    found = Enrollment.objects.filter(user__username=username)
    return dict(found.values_list("module__slug", "role"))


def test_issue_token_enrols_the_user_as_learner_and_instructor_of_the_modules_given(
    catalog: Any,
) -> None:
    _, said = _issue(
        "erin", "--create", "--learner-of", MODULE_SLUG, "--instructor-of", OTHER_MODULE_SLUG
    )

    assert _roles("erin") == {MODULE_SLUG: "learner", OTHER_MODULE_SLUG: "instructor"}
    assert f"erin is a learner of {MODULE_SLUG}" in said
    assert "enrolled in no module" not in said


def test_issue_token_learner_of_is_repeatable(catalog: Any) -> None:
    _issue("erin", "--create", "--learner-of", MODULE_SLUG, "--learner-of", OTHER_MODULE_SLUG)

    assert _roles("erin") == {MODULE_SLUG: "learner", OTHER_MODULE_SLUG: "learner"}


def test_issue_token_warns_on_stderr_when_the_user_is_enrolled_nowhere(catalog: Any) -> None:
    printed, said = _issue("erin", "--create")

    assert "erin is enrolled in no module" in said and "--learner-of" in said
    assert len(printed) == 1 and len(printed[0]) == 40  # stdout is the token alone


def test_issue_token_with_an_unknown_module_fails_and_creates_no_one(catalog: Any) -> None:
    from django.contrib.auth.models import User

    with pytest.raises(CommandError, match="no module 'nope'"):
        _issue("erin", "--create", "--learner-of", MODULE_SLUG, "--learner-of", "nope")

    assert not User.objects.filter(username="erin").exists()


def test_issue_token_refuses_to_demote_the_last_instructor(bob_instructor: Any) -> None:
    with pytest.raises(CommandError, match="without an instructor"):
        _issue("bob_instructor", "--learner-of", MODULE_SLUG)

    assert _roles("bob_instructor") == {MODULE_SLUG: "instructor"}


def test_a_script_enrols_a_new_user_who_then_lists_the_exercises_and_submits(
    catalog: Any,
) -> None:
    from rest_framework.test import APIClient

    printed, _ = _issue("script-user", "--create", "--learner-of", MODULE_SLUG)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {printed[-1]}")

    listed = client.get("/api/v1/exercises/")
    submitted = client.post(
        "/api/v1/submissions/",
        {"exercise": E2E_SLUG, "code": package_file(E2E_SLUG, "solution.py")},
        format="json",
    )

    assert listed.status_code == 200
    assert E2E_SLUG in {e["slug"] for e in listed.json()}
    assert submitted.status_code == 201, submitted.json()


def test_a_user_enrolled_nowhere_gets_unknown_exercise(catalog: Any) -> None:
    from rest_framework.test import APIClient

    printed, _ = _issue("loner", "--create")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {printed[-1]}")

    refused = client.post(
        "/api/v1/submissions/", {"exercise": E2E_SLUG, "code": "x = 1"}, format="json"
    )

    assert refused.status_code == 400 and "exercise" in refused.json()


def _upload(client: Any, text: str | bytes, *, create: bool = False) -> Any:
    data = text.encode() if isinstance(text, str) else text
    form: dict[str, Any] = {"roster": SimpleUploadedFile("r.csv", data)}
    if create:
        form["create"] = "1"
    return client.post(ROSTER, form, follow=True)


def _messages(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_the_members_page_lists_the_members_and_their_roles(
    web: Any, bob_instructor: Any, alice_learner: Any
) -> None:
    page = web(bob_instructor).get(AUTHOR).content.decode()

    assert "<td>alice_learner</td><td>learner</td>" in page
    assert "<td>bob_instructor</td><td>instructor</td>" in page
    assert 'name="roster"' in page and 'value="roster-csv"' in page


def test_an_instructor_uploads_a_csv_roster_and_every_row_is_applied(
    web: Any, bob_instructor: Any, alice_learner: Any
) -> None:
    persona("frank")

    response = _upload(
        web(bob_instructor),
        "username,email,role\nfrank,,\nalice_learner,,reviewer\nnew_one,n@example.org,learner\n",
        create=True,
    )

    assert _messages(response) == [
        "Roster applied: 2 added, 1 changed, 0 unchanged; created users: new_one."
    ]
    assert _roles("frank") == {MODULE_SLUG: "learner"}
    assert _roles("alice_learner") == {MODULE_SLUG: "reviewer"}
    assert _roles("new_one") == {MODULE_SLUG: "learner"}


def test_a_csv_roster_with_errors_applies_nothing_and_shows_each_line(
    web: Any, bob_instructor: Any, alice_learner: Any
) -> None:
    persona("frank")

    response = _upload(
        web(bob_instructor),
        "username,role\nfrank,instructor\nghost,learner\nalice_learner,admin\nbad\x07name,learner\n",
    )

    shown = _messages(response)
    assert [m.split(":")[0] for m in shown] == ["line 3", "line 4", "line 5"]
    assert "no user 'ghost'" in shown[0] and "admin" in shown[1] and "U+0007" in shown[2]
    assert _roles("frank") == {}
    assert _roles("alice_learner") == {MODULE_SLUG: "learner"}


def test_a_csv_roster_that_is_not_utf8_is_refused_on_the_page(
    web: Any, bob_instructor: Any
) -> None:
    response = _upload(web(bob_instructor), "username\nJos\xe9\n".encode("latin-1"))

    assert _messages(response) == ["line 2: not UTF-8 text."]


def test_a_reviewer_cannot_upload_a_csv_roster(web: Any, bob_instructor: Any) -> None:
    from courses.models import Module
    from courses.roster import enrollment_set

    rita = persona("rita_reviewer")
    enrollment_set(user=rita, module=Module.objects.get(slug=MODULE_SLUG), role="reviewer")

    response = web(rita).post(
        ROSTER,
        {
            "roster": SimpleUploadedFile("r.csv", b"username\nrita_reviewer\n"),
        },
    )

    assert response.status_code == 403
    assert _roles("rita_reviewer") == {MODULE_SLUG: "reviewer"}
