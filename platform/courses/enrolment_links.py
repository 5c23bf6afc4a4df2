"""Enrolment links: a module's instructors make a code that lets whoever has it join the
module, as a link (/join/<code>/) or typed on the home page.

A code is CODE_LENGTH characters drawn by `secrets` from CODE_ALPHABET (letters and digits
that are not read as one another: about 60 bits), typed in any case, with spaces or dashes.
A link grants the learner or the reviewer role, never instructor; it expires after at most
MAX_DAYS days, and may allow a number of uses. Joining goes through
courses.roster.module_member_join: someone already in the module keeps their role (an
instructor who opens the link is never made a learner) and uses nothing.

A lookup compares the code's sha256, not the code, so its timing says nothing of the
code; each lookup that matches no link is counted per user, and past MISS_LIMIT misses in
MISS_WINDOW_S seconds every lookup (a right code too) is RateLimited.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone
from django.utils.dateformat import format as date_format

from accounts.selectors import AnyUser
from common import ratelimit
from common.errors import DomainError, InvalidInput, NotFound
from courses import roster
from courses.models import EnrolmentCodeMiss, EnrolmentLink, Module

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no I, O, 0 or 1
CODE_LENGTH = 12
CODE_GROUP = 4  # shown as ABCD-EFGH-JKLM
DEFAULT_DAYS = 14
MAX_DAYS = 180
MAX_USES = 100_000
MISS_LIMIT = 10
MISS_WINDOW_S = 15 * 60
ROLES = tuple(EnrolmentLink.Role.values)
DATE_FORMAT = "M j, Y, H:i"  # shown with " UTC": the platform's time zone (TIME_ZONE)


class LinkClosed(DomainError):
    """The code is a module's, but it no longer lets anyone join (-> HTTP 410)."""


@dataclass(frozen=True)
class Joined:
    module: Module
    role: str  # the role the user has in the module now
    added: bool  # False: they were a member already (their role unchanged)


def code_normalise(text: str) -> str:
    """The code as stored: upper case, without the spaces and dashes it may be typed with."""
    return "".join(text.split()).replace("-", "").upper()


def code_is_well_formed(code: str) -> bool:
    return len(code) == CODE_LENGTH and all(char in CODE_ALPHABET for char in code)


def code_shown(code: str) -> str:
    """ABCDEFGHJKLM as ABCD-EFGH-JKLM, easier to read out and type."""
    return "-".join(code[i : i + CODE_GROUP] for i in range(0, len(code), CODE_GROUP))


def enrolment_link_create(
    *,
    module: Module,
    created_by: AnyUser,
    role: str = EnrolmentLink.Role.LEARNER,
    days: int = DEFAULT_DAYS,
    max_uses: int | None = None,
) -> EnrolmentLink:
    _check(role=role, days=days, max_uses=max_uses)
    code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
    return EnrolmentLink.objects.create(
        module=module,
        code=code,
        code_digest=_digest(code),
        role=role,
        expires_at=timezone.now() + timedelta(days=days),
        max_uses=max_uses,
        created_by_id=created_by.pk,
    )


def enrolment_link_revoke(*, module: Module, link_id: int) -> EnrolmentLink:
    """Revokes the module's link `link_id` (once: a second revoke keeps the first time)."""
    link = EnrolmentLink.objects.filter(module=module, pk=link_id).first()
    if link is None:
        raise NotFound("No such enrolment link in this module.")
    if link.revoked_at is None:
        link.revoked_at = timezone.now()
        link.save(update_fields=["revoked_at"])
    return link


def enrolment_links_open(*, module: Module) -> QuerySet[EnrolmentLink]:
    """The module's links that still let someone join, newest first."""
    return (
        EnrolmentLink.objects.filter(
            module=module, revoked_at__isnull=True, expires_at__gt=timezone.now()
        )
        .filter(Q(max_uses__isnull=True) | Q(use_count__lt=F("max_uses")))
        .order_by("-created_at", "-id")
    )


def enrolment_link_find(*, code: str, user: AnyUser) -> EnrolmentLink:
    """The link of `code` (in any case, with spaces or dashes), open or closed: RateLimited
    past the user's misses, NotFound (counted as a miss) when no link has the code."""
    _throttle(user)
    link = (
        EnrolmentLink.objects.select_related("module")
        .filter(code_digest=_digest(code_normalise(code)))
        .first()
    )
    if link is None:
        _miss(user)
        raise NotFound(
            "No module has this enrolment code. Check it with whoever gave it to you: "
            f"a code has {CODE_LENGTH} letters and digits, like ABCD-EFGH-JKLM."
        )
    return link


def enrolment_link_check(link: EnrolmentLink, *, now: datetime | None = None) -> None:
    """LinkClosed, saying why, unless the link still lets someone join."""
    now = now or timezone.now()
    ask = "Ask the module's instructor for a new one."
    if link.revoked_at is not None:
        raise LinkClosed(f"This enrolment link was revoked by the module's instructors. {ask}")
    if link.expires_at <= now:
        expired = date_format(timezone.localtime(link.expires_at), DATE_FORMAT)
        raise LinkClosed(f"This enrolment link expired on {expired} UTC. {ask}")
    if link.max_uses is not None and link.use_count >= link.max_uses:
        times = "once" if link.max_uses == 1 else f"{link.max_uses} times"
        raise LinkClosed(f"This enrolment link has been used the {times} it allowed. {ask}")


def enrolment_link_role_of(*, link: EnrolmentLink, user: AnyUser) -> str:
    """The user's role in the link's module ("" when not a member)."""
    enrollment = roster.module_members(module=link.module).filter(user_id=_user_id(user)).first()
    return enrollment.role if enrollment is not None else ""


def enrolment_link_join(*, code: str, user: AnyUser) -> Joined:
    """Adds the user to the module of `code` with the link's role, counting one use; a
    member already keeps their role and uses nothing. NotFound, RateLimited, LinkClosed."""
    found = enrolment_link_find(code=code, user=user)
    with transaction.atomic():
        link = EnrolmentLink.objects.select_for_update().select_related("module").get(pk=found.pk)
        role = enrolment_link_role_of(link=link, user=user)
        if role:
            return Joined(module=link.module, role=role, added=False)
        enrolment_link_check(link)
        membership = roster.module_member_join(module=link.module, user=user, role=link.role)
        if membership.added:
            EnrolmentLink.objects.filter(pk=link.pk).update(use_count=F("use_count") + 1)
    return Joined(module=link.module, role=membership.enrollment.role, added=membership.added)


def _check(*, role: str, days: int, max_uses: int | None) -> None:
    errors: dict[str, str] = {}
    if role not in ROLES:
        errors["role"] = "An enrolment link makes learners or reviewers, never instructors."
    if not 1 <= days <= MAX_DAYS:
        errors["days"] = f"A link expires after 1 to {MAX_DAYS} days."
    if max_uses is not None and not 1 <= max_uses <= MAX_USES:
        errors["max_uses"] = f"At most 1 to {MAX_USES} uses, or empty for no limit."
    if errors:
        raise InvalidInput(errors)


def _digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def _user_id(user: AnyUser) -> int:
    assert isinstance(user.pk, int)  # signed in: the views require it
    return user.pk


def _misses(user: AnyUser) -> QuerySet[EnrolmentCodeMiss]:
    return EnrolmentCodeMiss.objects.filter(user_id=_user_id(user))


def _throttle(user: AnyUser) -> None:
    ratelimit.window_check(
        _misses(user),
        limit=MISS_LIMIT,
        window_s=MISS_WINDOW_S,
        what="enrolment codes that match no module",
    )


def _miss(user: AnyUser) -> None:
    """Counts a miss, and forgets the user's misses too old to count (keeps the table small)."""
    now = timezone.now()
    _misses(user).filter(created_at__lte=now - timedelta(seconds=MISS_WINDOW_S)).delete()
    EnrolmentCodeMiss.objects.create(user_id=_user_id(user))
