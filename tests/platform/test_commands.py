"""`issue_token`, `demo_accounts` and `prepare`: what scripts and the README rely on."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

pytestmark = pytest.mark.django_db


def _run(*args: str) -> list[str]:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue().splitlines()


def test_issue_token_prints_a_working_token_as_the_last_line(api: Any, catalog: Any) -> None:
    from rest_framework.test import APIClient

    token = _run("issue_token", "erin", "--create")[-1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")

    assert len(token) == 40
    assert client.get("/api/v1/exercises/").status_code == 200


def test_issue_token_is_stable_for_the_same_user(catalog: Any) -> None:
    assert _run("issue_token", "erin", "--create")[-1] == _run("issue_token", "erin")[-1]


def test_issue_token_for_a_missing_user_without_create_fails_clearly(catalog: Any) -> None:
    with pytest.raises(CommandError, match="--create"):
        _run("issue_token", "nobody")


def test_issue_token_instructor_makes_an_instructor_of_every_module(catalog: Any) -> None:
    from courses.access import modules_taught_by
    from courses.models import Module

    _run("issue_token", "frank", "--create", "--instructor")

    taught = modules_taught_by(user=User.objects.get(username="frank"))
    assert set(taught) == set(Module.objects.all())


def test_demo_accounts_prints_an_instructor_and_a_learner_with_tokens(catalog: Any) -> None:
    from accounts.models import Enrollment

    lines = _run("demo_accounts")

    assert len(lines) == 2
    assert "username=demo-instructor" in lines[0] and "token=" in lines[0]
    assert "username=demo-learner" in lines[1]
    roles = Enrollment.objects.filter(user__username__startswith="demo-").values_list(
        "user__username", "role"
    )
    assert ("demo-instructor", "instructor") in roles and ("demo-learner", "learner") in roles
    password = lines[1].split("password=")[1].split()[0]
    assert User.objects.get(username="demo-learner").check_password(password)


def _prepare() -> tuple[list[str], str]:
    out, err = StringIO(), StringIO()
    call_command("prepare", stdout=out, stderr=err)
    return out.getvalue().splitlines(), err.getvalue()


@pytest.fixture
def static_root(settings: Any, tmp_path: Path) -> Path:
    settings.STATIC_ROOT = tmp_path / "staticfiles"
    return Path(settings.STATIC_ROOT)


@pytest.mark.heavy  # the whole of `prepare`
def test_prepare_loads_the_exercises_and_prints_only_the_demo_accounts_on_stdout(
    static_root: Path,
) -> None:
    from courses.models import Exercise

    accounts, _ = _prepare()

    assert [line.split()[1] for line in accounts] == [
        "username=demo-instructor",
        "username=demo-learner",
    ]
    assert Exercise.objects.filter(slug="chain-rule").exists()
    assert (static_root / "web").is_dir()


@pytest.mark.heavy  # collectstatic, twice
def test_prepare_collects_static_files_again_only_when_a_source_changed(
    static_root: Path, settings: Any, tmp_path: Path
) -> None:
    extra = tmp_path / "extra-static"
    extra.mkdir()
    (extra / "note.css").write_text("body {}\n", encoding="utf-8")
    settings.STATICFILES_DIRS = [extra]

    _, first = _prepare()
    _, second = _prepare()
    (extra / "added.css").write_text("p {}\n", encoding="utf-8")
    _, third = _prepare()

    assert "unchanged since the last collection" not in first
    assert "unchanged since the last collection" in second
    assert "unchanged since the last collection" not in third
    assert (static_root / "added.css").read_text(encoding="utf-8") == "p {}\n"
