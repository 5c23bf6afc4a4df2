"""Names and Role Provisioning Services: a course's roster, read page by page from the
platform (the `Link: rel="next"` URLs followed exactly as given, through the egress guard:
on the registration's origins only, lti.compat.service_policy), becomes gradlab users and
enrolments in the modules bound to the course (lti.bindings), before anyone launched."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from lti_tool.lti_core.utils import normalize_role
from lti_tool.models import LtiContext, LtiRegistration, LtiUser

from accounts.models import Enrollment
from lti.bindings import bound_modules
from lti.claims_email import email_or_blank
from lti.compat import ServiceConnector, registration_of
from lti.launch import TEACHING_ROLES, user_for

NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
NRPS_ACCEPT = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
MAX_PAGES = 1000
NAME_FIELDS = ("given_name", "family_name", "name")


@dataclass(frozen=True)
class RosterSync:
    members: int
    enrolled: int
    pages: int


def roster_sync(*, context_id: int) -> RosterSync:
    context = LtiContext.objects.select_related("deployment__registration").get(pk=context_id)
    if not context.memberships_url:
        return RosterSync(members=0, enrolled=0, pages=0)
    bound = bound_modules(deployment=context.deployment, context_id=context.id_on_platform)
    module_ids = set(bound.values_list("pk", flat=True))
    if not module_ids:  # a course bound to no module: its roster is none of gradlab's
        return RosterSync(members=0, enrolled=0, pages=0)
    registration = context.deployment.registration
    members, pages = _members(registration, context.memberships_url)
    enrolled = 0
    with transaction.atomic():
        for member in members:
            if member.get("status", "Active") != "Active" or not member.get("user_id"):
                continue
            enrolled += _enrol(registration, member, module_ids)
    return RosterSync(members=len(members), enrolled=enrolled, pages=pages)


def _members(registration: LtiRegistration, url: str) -> tuple[list[dict[str, Any]], int]:
    connector = ServiceConnector(registration_of(registration))
    members: list[dict[str, Any]] = []
    pages = 0
    next_url: str | None = url
    while next_url and pages < MAX_PAGES:
        page = connector.make_service_request([NRPS_SCOPE], next_url, accept=NRPS_ACCEPT)
        body = page["body"] if isinstance(page["body"], dict) else {}
        members += [m for m in body.get("members", []) if isinstance(m, dict)]
        next_url = page["next_page_url"]
        pages += 1
    return members, pages


def _enrol(registration: LtiRegistration, member: dict[str, Any], module_ids: set[int]) -> int:
    names = {k: str(member[k])[:500] for k in NAME_FIELDS if member.get(k)}
    email = email_or_blank(member.get("email"))
    lti_user, _ = LtiUser.objects.update_or_create(
        registration=registration,
        sub=str(member["user_id"]),
        defaults={**names, **({"email": email} if email else {})},
    )
    user = user_for(lti_user)
    roles = {normalize_role(role) for role in member.get("roles", [])}
    teaching = bool(roles & TEACHING_ROLES)
    role = Enrollment.Role.INSTRUCTOR if teaching else Enrollment.Role.LEARNER
    created = 0
    for module_id in module_ids:
        enrollment, made = Enrollment.objects.get_or_create(
            user=user, module_id=module_id, defaults={"role": role}
        )
        if not made and teaching and enrollment.role != role:
            enrollment.role = role
            enrollment.save(update_fields=["role"])
        created += int(made)
    return created
