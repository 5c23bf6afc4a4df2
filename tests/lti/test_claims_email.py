"""An LMS's e-mail address (the id_token's `email` claim, an NRPS member's) is stored only
when it is a plain, valid address: one with CR, LF, TAB or a formula's first character, or
no address at all, is dropped, and the user is still created."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fake_platform import INSTRUCTOR, LEARNER, FakePlatform

BAD = [
    "not-an-address",
    '\t=HYPERLINK("https://evil.test","x")@example.test',
    "=1+1@example.test",
    "+cmd@example.test",
    "ada@example.test\r\nBcc: everyone@example.test",
    "ada\t@example.test",
]


@pytest.mark.parametrize("email", BAD)
def test_a_launch_with_a_bad_email_creates_the_user_without_it(
    email: str, launch: Callable[..., Any]
) -> None:
    from django.contrib.auth.models import User

    assert launch(email=email).response.status_code == 302

    user = User.objects.get(lti_users__sub="learner-1")
    assert user.email == ""
    assert user.first_name == "Ada"


def test_a_launch_with_a_valid_email_keeps_it(launch: Callable[..., Any]) -> None:
    from django.contrib.auth.models import User

    launch(email="ada.lovelace+dl@example.test")

    assert User.objects.get(lti_users__sub="learner-1").email == "ada.lovelace+dl@example.test"


def test_a_roster_member_with_a_bad_email_is_enrolled_without_it(
    launch: Callable[..., Any], platform: FakePlatform
) -> None:
    from django.contrib.auth.models import User
    from lti_tool.models import LtiUser

    from lti.models import ExerciseLink
    from lti.roster import roster_sync

    platform.roster = [
        {"user_id": "member-1", "status": "Active", "roles": [LEARNER],
         "given_name": "Grace", "email": BAD[1]},
        {"user_id": "member-2", "status": "Active", "roles": [LEARNER],
         "given_name": "Alan", "email": "alan@example.test"},
    ]  # fmt: skip
    launch(sub="teacher-1", roles=[INSTRUCTOR])

    result = roster_sync(context_id=ExerciseLink.objects.get().resource_link.context_id)

    assert result.enrolled == 2
    assert User.objects.get(lti_users__sub="member-1").email == ""
    assert LtiUser.objects.get(sub="member-1").email == ""
    assert User.objects.get(lti_users__sub="member-2").email == "alan@example.test"
