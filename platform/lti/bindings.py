"""Which gradlab modules an LMS course (a context of one deployment) may open: only those
bound to it (lti.models.ContextBinding). Launches, roster syncs and deep linking ask here;
a context bound to nothing opens, enrols and offers nothing."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import User
from django.db.models import QuerySet
from lti_tool.models import LtiContext, LtiDeployment, LtiLaunch

from accounts.models import Enrollment
from courses.models import Module
from lti.models import ContextBinding

UNBOUND = (
    "This course is not linked to a gradlab module. Ask your instructor: an instructor of "
    "the module in gradlab links it by adding its exercises to this course (the LMS's "
    "add-content / deep linking dialog), or the gradlab operator with "
    "`manage.py lti_bind`."
)


def context_id_of(lti_launch: LtiLaunch) -> str:
    """The platform's id of the course the launch comes from ('' when it names none)."""
    claim = lti_launch.context_claim
    found = claim.get("id") if isinstance(claim, dict) else None
    return found if isinstance(found, str) else ""


def bound_modules(*, deployment: LtiDeployment, context_id: str) -> QuerySet[Module]:
    if not context_id:
        return Module.objects.none()
    return Module.objects.filter(
        lti_bindings__deployment=deployment, lti_bindings__context_id=context_id
    ).distinct()


def modules_of_launch(lti_launch: LtiLaunch) -> QuerySet[Module]:
    return bound_modules(deployment=lti_launch.deployment, context_id=context_id_of(lti_launch))


def modules_taught_in_gradlab(user: User) -> QuerySet[Module]:
    """Modules `user` is already an instructor of in gradlab (not through this launch)."""
    return Module.objects.filter(
        enrollments__user=user, enrollments__role=Enrollment.Role.INSTRUCTOR
    ).distinct()


def binding_create(
    *,
    deployment: LtiDeployment,
    context_id: str,
    module: Module,
    origin: str,
    by: User | None = None,
) -> ContextBinding:
    binding, _ = ContextBinding.objects.get_or_create(
        deployment=deployment,
        context_id=context_id,
        module=module,
        defaults={"origin": origin, "created_by": by},
    )
    return binding


LINKED_HOW: dict[str, str] = {
    ContextBinding.Origin.OPERATOR: "by the operator",
    ContextBinding.Origin.DEEP_LINK: "by deep linking from the course",
    ContextBinding.Origin.MIGRATION: "from launches before bindings existed",
}


@dataclass(frozen=True)
class LmsLink:
    """One LMS course bound to a module, as its instructors see it on Teach."""

    platform: str  # the registration's name
    issuer: str
    deployment_id: str
    deployment_seen_at: datetime  # registered by hand, or recorded at its first launch
    context_id: str
    course_title: str  # the LMS's title of the course, once it launched
    linked_how: str  # how it was bound, in words
    bound_at: datetime


def module_lms_links(*, module_id: int) -> list[LmsLink]:
    """The LMS courses (deployment and context) bound to the module, newest first."""
    bindings = (
        ContextBinding.objects.filter(module_id=module_id)
        .select_related("deployment__registration")
        .order_by("-created_at", "-id")
    )
    titles = {
        (context.deployment_id, context.id_on_platform): context.title or context.label
        for context in LtiContext.objects.filter(deployment__gradlab_bindings__module_id=module_id)
    }
    return [
        LmsLink(
            platform=binding.deployment.registration.name,
            issuer=binding.deployment.registration.issuer,
            deployment_id=binding.deployment.deployment_id,
            deployment_seen_at=binding.deployment.datetime_created,
            context_id=binding.context_id,
            course_title=titles.get((binding.deployment_id, binding.context_id), ""),
            linked_how=LINKED_HOW.get(binding.origin, binding.origin),
            bound_at=binding.created_at,
        )
        for binding in bindings
    ]
