"""Names and Role Provisioning: the course roster, read page by page from the fake
platform, enrols its members in the course module before they launch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fake_platform import INSTRUCTOR, LEARNER, FakePlatform


def _member(n: int, role: str = LEARNER, status: str = "Active") -> dict[str, Any]:
    return {"user_id": f"member-{n}", "status": status, "roles": [role],
            "given_name": f"Given{n}", "family_name": f"Family{n}",
            "email": f"m{n}@example.test"}  # fmt: skip


def test_the_roster_is_read_across_pages_and_enrols_every_active_member(
    launch: Callable[..., Any], platform: FakePlatform, django_capture_on_commit_callbacks: Any
) -> None:
    from django.contrib.auth.models import User

    from accounts.models import Enrollment
    from lti.models import ExerciseLink
    from lti.roster import roster_sync

    platform.roster = [_member(1), _member(2), _member(3, INSTRUCTOR), _member(4),
                       _member(5, status="Inactive")]  # fmt: skip
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        launch(sub="teacher-1", roles=[INSTRUCTOR])
    context_id = ExerciseLink.objects.get().resource_link.context_id

    result = roster_sync(context_id=context_id)

    assert len(callbacks) >= 1  # the instructor's launch queued this sync
    assert (result.members, result.pages, result.enrolled) == (5, 3, 4)
    roles = dict(
        Enrollment.objects.filter(user__lti_users__sub__startswith="member-").values_list(
            "user__lti_users__sub", "role"
        )
    )
    assert roles == {"member-1": "learner", "member-2": "learner", "member-3": "instructor",
                     "member-4": "learner"}  # fmt: skip
    assert User.objects.get(lti_users__sub="member-2").first_name == "Given2"


def test_a_member_who_launches_later_is_the_same_user(
    launch: Callable[..., Any], platform: FakePlatform
) -> None:
    from django.contrib.auth.models import User

    from lti.models import ExerciseLink
    from lti.roster import roster_sync

    platform.roster = [_member(1)]
    launch(sub="teacher-1", roles=[INSTRUCTOR])
    roster_sync(context_id=ExerciseLink.objects.get().resource_link.context_id)

    launch(sub="member-1")

    assert User.objects.filter(lti_users__sub="member-1").count() == 1
