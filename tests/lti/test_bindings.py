"""An LMS course opens only the gradlab modules bound to it. One platform, two courses:
course A (COURSE_ID, bound to the catalog module, "module A") and course B (bound to the
other module, "module B", which holds chain-rule); a teacher of each. Whatever a teacher of
course B puts in a link (the custom claim, `?exercise=`), syncs or deep-links, they and
their learners get nothing of module A and no role in it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from fake_platform import DEPLOYMENT_ID, INSTRUCTOR, LEARNER, FakePlatform
from gradlab_fixtures import MODULE_SLUG, OTHER_MODULE_SLUG

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
COURSE_B = "course-b"
UNBOUND_COURSE = "course-nobody-bound"


def _from(course: str) -> dict[str, Any]:
    """Claims of a launch from `course` (its own resource link)."""
    return {
        LTI + "context": {"id": course, "title": f"Course {course}", "label": course},
        LTI + "resource_link": {"id": f"link-of-{course}", "title": f"Link of {course}"},
    }


@pytest.fixture
def course_b(registration: Any) -> Any:
    """Module B holds chain-rule; course B of the same deployment is bound to it."""
    from lti_tool.models import LtiDeployment

    from courses.models import Exercise, Module
    from lti.models import ContextBinding

    module_b = Module.objects.get(slug=OTHER_MODULE_SLUG)
    Exercise.objects.filter(slug="chain-rule").update(module=module_b)
    ContextBinding.objects.create(
        deployment=LtiDeployment.objects.get(registration=registration,
                                             deployment_id=DEPLOYMENT_ID),
        context_id=COURSE_B, module=module_b, origin="operator",
    )  # fmt: skip
    return module_b


def _roles_of(sub: str) -> dict[str, str]:
    from accounts.models import Enrollment

    found = Enrollment.objects.filter(user__lti_users__sub=sub)
    return dict(found.values_list("module__slug", "role"))


def test_a_teacher_of_course_b_naming_module_as_exercise_in_the_custom_claim_gets_nothing(
    launch: Callable[..., Any], course_b: Any
) -> None:
    from lti.models import ExerciseLink

    flow = launch(sub="teacher-b", roles=[INSTRUCTOR], exercise="first-gradient", **_from(COURSE_B))

    assert flow.response.status_code == 404
    assert b"no gradlab exercise" in flow.response.content
    assert _roles_of("teacher-b") == {}
    assert not ExerciseLink.objects.exists()
    assert "_auth_user_id" not in flow.response.client.session


def test_a_teacher_of_course_b_naming_module_as_exercise_in_the_target_link_gets_nothing(
    launch: Callable[..., Any], course_b: Any
) -> None:
    claims = {
        **_from(COURSE_B),
        LTI + "custom": None,
        LTI + "target_link_uri": "https://gradlab.example.org/lti/launch/?exercise=first-gradient",
    }

    flow = launch(sub="teacher-b", roles=[INSTRUCTOR], **claims)

    assert flow.response.status_code == 404
    assert _roles_of("teacher-b") == {}


def test_lms_roles_give_a_role_only_in_the_module_bound_to_that_course(
    launch: Callable[..., Any], course_b: Any
) -> None:
    own = launch(sub="teacher-b", roles=[INSTRUCTOR], exercise="chain-rule", **_from(COURSE_B))
    other = launch(
        sub="teacher-b", roles=[INSTRUCTOR], exercise="first-gradient", **_from(COURSE_B)
    )
    teacher_a = launch(sub="teacher-a", roles=[INSTRUCTOR], exercise="first-gradient")

    assert own.response.status_code == 302
    assert own.response["Location"] == f"/modules/{OTHER_MODULE_SLUG}/chain-rule/"
    assert other.response.status_code == 404
    assert _roles_of("teacher-b") == {OTHER_MODULE_SLUG: "instructor"}
    assert teacher_a.response.status_code == 302
    assert _roles_of("teacher-a") == {MODULE_SLUG: "instructor"}


def test_a_learner_of_course_b_is_not_enrolled_in_module_a_by_a_link_to_its_exercise(
    launch: Callable[..., Any], course_b: Any
) -> None:
    flow = launch(sub="learner-b", roles=[LEARNER], exercise="first-gradient", **_from(COURSE_B))

    assert flow.response.status_code == 404
    assert _roles_of("learner-b") == {}


def test_a_course_bound_to_no_module_is_told_so_and_gets_nothing(
    launch: Callable[..., Any], registration: Any
) -> None:
    flow = launch(sub="teacher-x", roles=[INSTRUCTOR], **_from(UNBOUND_COURSE))

    assert flow.response.status_code == 404
    assert b"not linked to a gradlab module" in flow.response.content
    assert b"lti_bind" in flow.response.content
    assert _roles_of("teacher-x") == {}


@pytest.mark.parametrize(
    "change",
    [
        {"is_published": False},
        {"release_at": "future"},
    ],
    ids=["unpublished", "unreleased"],
)
def test_an_unpublished_or_unreleased_exercise_is_not_launchable(
    launch: Callable[..., Any], registration: Any, change: dict[str, Any]
) -> None:
    from django.utils import timezone

    from courses.models import Exercise

    if change.get("release_at") == "future":
        change = {"release_at": timezone.now() + timedelta(days=3)}
    Exercise.objects.filter(slug="first-gradient").update(**change)

    flow = launch(sub="learner-1", exercise="first-gradient")

    assert flow.response.status_code == 404
    assert b"no gradlab exercise" in flow.response.content
    assert _roles_of("learner-1") == {}


def test_another_modules_draft_and_an_unknown_slug_are_refused_alike(
    launch: Callable[..., Any], course_b: Any
) -> None:
    from courses.models import Exercise

    Exercise.objects.filter(slug="chain-rule").update(is_published=False)

    draft = launch(sub="learner-1", exercise="chain-rule").response
    unknown = launch(sub="learner-1", exercise="no-such-slug").response

    assert draft.status_code == unknown.status_code == 404
    assert draft.content.replace(b"chain-rule", b"X") == unknown.content.replace(
        b"no-such-slug", b"X"
    )


def _member(sub: str, role: str = LEARNER) -> dict[str, Any]:
    return {"user_id": sub, "status": "Active", "roles": [role], "given_name": sub,
            "family_name": "M", "email": f"{sub}@example.test"}  # fmt: skip


def _context_pk(course: str) -> int:
    from lti_tool.models import LtiContext

    return int(LtiContext.objects.get(id_on_platform=course).pk)


def test_the_roster_of_course_b_enrols_only_in_module_b_even_after_a_link_to_module_a(
    launch: Callable[..., Any], platform: FakePlatform, course_b: Any
) -> None:
    from lti.roster import roster_sync

    platform.roster = [_member("member-1"), _member("member-2", INSTRUCTOR)]
    sneaked = {**_from(COURSE_B), LTI + "resource_link": {"id": "sneaked", "title": "A"}}
    launch(sub="teacher-b", roles=[INSTRUCTOR], exercise="first-gradient", **sneaked)
    launch(sub="teacher-b", roles=[INSTRUCTOR], exercise="chain-rule", **_from(COURSE_B))

    result = roster_sync(context_id=_context_pk(COURSE_B))

    assert result.members == 2
    assert _roles_of("member-1") == {OTHER_MODULE_SLUG: "learner"}
    assert _roles_of("member-2") == {OTHER_MODULE_SLUG: "instructor"}


def test_the_roster_of_a_course_bound_to_no_module_is_not_even_read(
    launch: Callable[..., Any], platform: FakePlatform, registration: Any
) -> None:
    from lti.roster import roster_sync

    platform.roster = [_member("member-1")]
    launch(sub="teacher-x", roles=[INSTRUCTOR], **_from(UNBOUND_COURSE))

    result = roster_sync(context_id=_context_pk(UNBOUND_COURSE))

    assert (result.members, result.pages, result.enrolled) == (0, 0, 0)
    assert _roles_of("member-1") == {}


def _deep_link(launch: Callable[..., Any], platform: FakePlatform, sub: str, course: str) -> Any:
    from django.test import Client

    browser = Client()
    claims = {**platform.deep_link_claims(), LTI + "context": _from(course)[LTI + "context"]}
    flow = launch(client=browser, roles=[INSTRUCTOR], sub=sub, **claims)
    return browser, flow.response


def test_deep_linking_from_course_b_offers_and_signs_only_module_bs_exercises(
    launch: Callable[..., Any], platform: FakePlatform, course_b: Any
) -> None:
    from lti.models import ContextBinding

    browser, picker = _deep_link(launch, platform, "teacher-b", COURSE_B)
    sneaked = browser.post("/lti/deep-link/", {"exercise": ["first-gradient"]})

    assert picker.status_code == 200
    assert 'value="chain-rule"' in picker.content.decode()
    assert 'value="first-gradient"' not in picker.content.decode()
    assert sneaked.status_code == 400
    assert not ContextBinding.objects.filter(context_id=COURSE_B, module__slug=MODULE_SLUG)
    assert platform.deep_link_responses == []


def test_deep_linking_from_a_course_bound_to_nothing_offers_nothing_and_says_how_to_bind(
    launch: Callable[..., Any], platform: FakePlatform, registration: Any
) -> None:
    browser, picker = _deep_link(launch, platform, "teacher-x", UNBOUND_COURSE)
    answer = browser.post("/lti/deep-link/", {"exercise": ["first-gradient"]})

    assert picker.status_code == 200
    assert 'name="exercise"' not in picker.content.decode()
    assert "not linked to a gradlab module" in picker.content.decode()
    assert answer.status_code == 400


def test_a_gradlab_instructor_of_a_module_binds_a_new_course_to_it_by_deep_linking(
    launch: Callable[..., Any], platform: FakePlatform, registration: Any, bob_instructor: Any
) -> None:
    from lti_tool.models import LtiUser

    from lti.models import ContextBinding

    LtiUser.objects.create(registration=registration, sub="bob-on-lms", auth_user=bob_instructor)
    before = launch(sub="learner-n", exercise="first-gradient", **_from(UNBOUND_COURSE))

    browser, picker = _deep_link(launch, platform, "bob-on-lms", UNBOUND_COURSE)
    answer = browser.post("/lti/deep-link/", {"exercise": ["first-gradient"]})
    after = launch(sub="learner-n", exercise="first-gradient", **_from(UNBOUND_COURSE))

    assert before.response.status_code == 404
    assert 'value="first-gradient"' in picker.content.decode()
    assert answer.status_code == 200
    binding = ContextBinding.objects.get(context_id=UNBOUND_COURSE)
    assert (binding.module.slug, binding.origin, binding.created_by) == (
        MODULE_SLUG, "deep-link", bob_instructor,
    )  # fmt: skip
    assert after.response.status_code == 302
    assert _roles_of("learner-n") == {MODULE_SLUG: "learner"}


def test_the_operator_binds_and_unbinds_a_course_with_lti_bind(
    launch: Callable[..., Any], registration: Any, course_b: Any
) -> None:
    from django.core.management import call_command

    bind = {"registration": str(registration.uuid), "context": UNBOUND_COURSE,
            "module": OTHER_MODULE_SLUG}  # fmt: skip

    call_command("lti_bind", **bind)
    bound = launch(sub="learner-n", exercise="chain-rule", **_from(UNBOUND_COURSE))
    call_command("lti_bind", unbind=True, **bind)
    unbound = launch(sub="learner-m", exercise="chain-rule", **_from(UNBOUND_COURSE))

    assert bound.response.status_code == 302
    assert _roles_of("learner-n") == {OTHER_MODULE_SLUG: "learner"}
    assert unbound.response.status_code == 404
    assert b"not linked to a gradlab module" in unbound.response.content


def test_lti_bind_refuses_an_unknown_registration_or_module(registration: Any) -> None:
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="not a registration uuid"):
        call_command("lti_bind", registration="nope", context="c", module=MODULE_SLUG)
    with pytest.raises(CommandError, match="no module"):
        call_command("lti_bind", registration=str(registration.uuid), context="c", module="x")


def test_the_migration_binds_each_course_to_the_modules_it_already_launched_into(
    launch: Callable[..., Any], registration: Any
) -> None:
    import importlib

    from django.apps import apps

    from lti.models import ContextBinding

    assert launch(sub="learner-1").response.status_code == 302
    ContextBinding.objects.all().delete()  # as before the migration: links, no bindings
    migration = importlib.import_module("lti.migrations.0004_bind_launched_contexts")

    migration.bind_launched_contexts(apps, None)

    [binding] = ContextBinding.objects.all()
    assert (binding.context_id, binding.module.slug, binding.origin) == (
        "course-7", MODULE_SLUG, "migration",
    )  # fmt: skip
    assert launch(sub="learner-2").response.status_code == 302
