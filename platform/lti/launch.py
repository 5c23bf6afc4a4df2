"""What a validated resource-link launch does in gradlab: the user (found by the platform's
`sub`, else created), their enrolment in the exercise's course module with the role mapped
from the LTI roles, the link between the LMS resource link (and its line item) and the
exercise, and where the learner's scores go. A launch opens only a published, released
exercise of a module bound to the launch's LMS course (lti.bindings)."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from lti_tool.lti_core.constants import ContextRole
from lti_tool.lti_core.utils import normalize_role
from lti_tool.models import LtiLaunch

from accounts.models import Enrollment
from common.jobs import task_send
from courses.models import Exercise
from courses.selectors import exercise_list
from lti.bindings import UNBOUND, modules_of_launch
from lti.claims_email import email_or_blank
from lti.lineitems import lineitem_enqueue, lineitem_stale
from lti.models import ExerciseLink, GradeTarget

logger = logging.getLogger(__name__)
CUSTOM_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/custom"
TARGET_LINK_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/target_link_uri"
LIS = "http://purl.imsglobal.org/vocab/lis/v2"
# An institution's or the LMS's administrators (a Canvas account admin, a Moodle site admin)
# often have no membership in the course: they teach and deep link too, in the modules
# bound to that course only.
ADMINISTRATOR_ROLES = {
    f"{LIS}/institution/person#Administrator",
    f"{LIS}/system/person#Administrator",
    f"{LIS}/system/person#SysAdmin",
}
TEACHING_ROLES = {
    ContextRole.INSTRUCTOR,
    ContextRole.ADMINISTRATOR,
    ContextRole.CONTENT_DEVELOPER,
    *ADMINISTRATOR_ROLES,
}


class LaunchRefused(Exception):
    """A valid launch we cannot serve (no such exercise, no resource link): said plainly."""


@dataclass(frozen=True)
class Landing:
    user: User
    exercise: Exercise
    role: str


CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
OBJECT_CLAIMS = ("context", "custom", "resource_link", "launch_presentation", "tool_platform")


# The claims django-lti stores as they come (LtiUser, LtiContext, LtiResourceLink,
# LtiPlatformInstance, LtiDeployment), with its columns' lengths: a longer value is the
# LMS's error, said before a database refuses it (PostgreSQL's DataError, a 500).
STORED_CLAIMS: tuple[tuple[str, str | None, int], ...] = (
    ("sub", None, 255),
    ("email", None, 254),
    ("name", None, 500),
    ("given_name", None, 500),
    ("family_name", None, 500),
    (f"{CLAIM}deployment_id", None, 255),
    (f"{CLAIM}context", "id", 255),
    (f"{CLAIM}context", "label", 255),
    (f"{CLAIM}context", "title", 500),
    (f"{CLAIM}resource_link", "id", 255),
    (f"{CLAIM}resource_link", "title", 500),
    (f"{CLAIM}tool_platform", "guid", 255),
    (f"{CLAIM}tool_platform", "name", 500),
    (f"{CLAIM}tool_platform", "product_family_code", 500),
    (f"{CLAIM}tool_platform", "version", 500),
)


def stored_claim_problem(lti_launch: LtiLaunch) -> str | None:
    """A stored claim that is not a string, or longer than its column, named."""
    for claim, member, limit in STORED_CLAIMS:
        value = lti_launch.get_claim(claim)
        if member is not None:
            value = value.get(member) if isinstance(value, dict) else None
        named = claim if member is None else f"{claim} claim's {member}"
        if value is not None and not isinstance(value, str):
            return f"The {named} must be a string."
        if isinstance(value, str) and len(value) > limit:
            return f"The {named} is longer than {limit} characters."
    return None


def claims_problem(lti_launch: LtiLaunch) -> str | None:
    """What is wrong with the shape of a signed id_token's claims (roles not a list of
    strings, context or custom not an object...), naming the claim; None when well-formed.
    Checked before anything reads them: a wrong type is the LMS's error, not a crash."""
    roles = lti_launch.get_claim(f"{CLAIM}roles")
    if roles is not None and not (
        isinstance(roles, list) and all(isinstance(role, str) for role in roles)
    ):
        return f"The {CLAIM}roles claim must be a list of strings."
    for name in OBJECT_CLAIMS:
        value = lti_launch.get_claim(f"{CLAIM}{name}")
        if value is not None and not isinstance(value, dict):
            return f"The {CLAIM}{name} claim must be a JSON object."
    context = lti_launch.get_claim(f"{CLAIM}context") or {}
    if "id" in context and not isinstance(context["id"], str):
        return f"The {CLAIM}context claim's id must be a string."
    if not isinstance(lti_launch.get_claim("sub"), str | None):
        return "The sub claim must be a string."
    return stored_claim_problem(lti_launch)


def exercise_slug_of(lti_launch: LtiLaunch) -> str | None:
    """The exercise a link opens: the custom parameter `exercise` (set per link, or by
    Deep Linking), else `?exercise=` of the target link URI."""
    custom = lti_launch.get_claim(CUSTOM_CLAIM) or {}
    if isinstance(custom, dict) and isinstance(custom.get("exercise"), str):
        return str(custom["exercise"])
    target = lti_launch.get_claim(TARGET_LINK_CLAIM) or ""
    found = parse_qs(urlsplit(str(target)).query).get("exercise")
    return found[0] if found else None


def role_of(lti_launch: LtiLaunch) -> str:
    roles = {normalize_role(role) for role in (lti_launch.roles_claim or [])}
    if roles & TEACHING_ROLES:
        return Enrollment.Role.INSTRUCTOR
    return Enrollment.Role.LEARNER


def launch_resource(lti_launch: LtiLaunch) -> Landing:
    """Called after django-lti synced its own rows (user, context, resource link)."""
    exercise = launchable_exercise(lti_launch)
    role = role_of(lti_launch)
    with transaction.atomic():
        user = _user(lti_launch)
        _enrol(user, exercise, role)
        link = _link(lti_launch, exercise)
        if role == Enrollment.Role.LEARNER and link.lineitem_url:
            GradeTarget.objects.update_or_create(
                user=user, link=link, defaults={"sub": str(lti_launch.get_claim("sub"))}
            )
        if lineitem_stale(link):  # the due date, from the line item's endDateTime
            link_id = link.pk
            transaction.on_commit(lambda: lineitem_enqueue(link_id=link_id))
        if role == Enrollment.Role.INSTRUCTOR:  # an instructor's launch refreshes the roster
            context_id = link.resource_link.context_id
            transaction.on_commit(lambda: roster_enqueue(context_id=context_id))
    return Landing(user=user, exercise=exercise, role=role)


def launchable_exercise(lti_launch: LtiLaunch) -> Exercise:
    """The exercise the link names, if it is published, released and of a module bound to
    the launch's course. An unknown slug, another module's and a draft's are refused alike."""
    modules = modules_of_launch(lti_launch)
    if not modules.exists():
        raise LaunchRefused(UNBOUND)
    slug = exercise_slug_of(lti_launch)
    exercise = exercise_list().filter(slug=slug or "", module__in=modules).first()
    if exercise is None:
        raise LaunchRefused(f"This link opens no gradlab exercise ({slug or 'none given'}).")
    return exercise


def _user(lti_launch: LtiLaunch) -> User:
    return user_for(lti_launch.user)


def user_for(lti_user: Any) -> User:
    """The gradlab user of a platform's user (created on first sight, unusable password:
    they come in through the LMS)."""
    if lti_user.auth_user_id is not None:
        return User.objects.get(pk=lti_user.auth_user_id)
    digest = hashlib.sha256(f"{lti_user.registration_id}:{lti_user.sub}".encode()).hexdigest()
    user, created = User.objects.get_or_create(
        username=f"lti-{digest[:20]}",
        defaults={
            "first_name": lti_user.given_name[:150],
            "last_name": lti_user.family_name[:150],
            "email": email_or_blank(lti_user.email),
        },
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    lti_user.auth_user = user
    lti_user.save(update_fields=["auth_user"])
    return user


def _enrol(user: User, exercise: Exercise, role: str) -> None:
    """Enrols in the exercise's module; a launch never demotes an instructor."""
    enrollment, created = Enrollment.objects.get_or_create(
        user=user, module_id=exercise.module_id, defaults={"role": role}
    )
    if not created and role == Enrollment.Role.INSTRUCTOR and enrollment.role != role:
        enrollment.role = role
        enrollment.save(update_fields=["role"])


def _link(lti_launch: LtiLaunch, exercise: Exercise) -> ExerciseLink:
    endpoint: dict[str, Any] = lti_launch.ags_claim or {}
    lineitem = endpoint.get("lineitem", "") if isinstance(endpoint, dict) else ""
    link, _ = ExerciseLink.objects.update_or_create(
        resource_link=lti_launch.resource_link,
        defaults={"exercise": exercise, "lineitem_url": str(lineitem or "")},
    )
    return link


def roster_enqueue(*, context_id: int) -> None:
    try:
        task_send("gradlab.lti_sync_roster", args=[context_id], queue=settings.GRADLAB_QUEUE_CPU)
    except Exception:
        logger.exception("could not enqueue the roster sync of LTI context %s", context_id)
