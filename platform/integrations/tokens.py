"""Course API tokens: create (shown once), check, revoke. Only a SHA-256 of a token is
stored; a token has 256 random bits, so a fast hash is enough (no password stretching)."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db.models import Model, QuerySet
from django.utils import timezone

from common.errors import InvalidInput, NotFound
from courses.access import modules_taught_by
from courses.models import Module
from integrations.models import CourseToken

TOKEN_PREFIX = "glc_"  # "gradlab course": lets secret scanners and people recognise one
SHOWN_PREFIX_LENGTH = 12
LAST_USED_RESOLUTION = timedelta(minutes=1)
Row = TypeVar("Row", bound=Model)

EXERCISES_READ = "exercises:read"
SUBMISSIONS_READ = "submissions:read"
SUBMISSIONS_WRITE = "submissions:write"
WEBHOOKS_READ = "webhooks:read"
ROSTER_READ = "roster:read"
ROSTER_WRITE = "roster:write"
SCOPES = {
    EXERCISES_READ: "read the exercises of the course",
    SUBMISSIONS_READ: "read every submission and score of the course",
    SUBMISSIONS_WRITE: "submit code, as the token's creator, to the course's exercises",
    WEBHOOKS_READ: "read the course's webhook endpoints and deliveries",
    ROSTER_READ: "list the course's members (learners, instructors, reviewers)",
    ROSTER_WRITE: "add, change and remove the course's members, and create their users",
}


class InvalidToken(Exception):
    """Unknown, revoked or expired: the caller is not authenticated (HTTP 401)."""


@dataclass(frozen=True)
class CourseGrant:
    """What a request authenticated with a course token may do (request.auth)."""

    token_id: int
    module_id: int
    scopes: frozenset[str]

    def allows(self, scope: str) -> bool:
        return scope in self.scopes


@dataclass(frozen=True)
class IssuedToken:
    token: CourseToken
    secret: str  # the only time the whole token exists outside the caller's hands


def teaches(user: AbstractBaseUser | AnonymousUser, module_id: int) -> bool:
    return modules_taught_by(user=user).filter(pk=module_id).exists()


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def scopes_validate(scopes: object) -> list[str]:
    if not isinstance(scopes, list) or not scopes:
        raise InvalidInput({"scopes": f"Give a non-empty list of scopes among {sorted(SCOPES)}."})
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown:
        raise InvalidInput({"scopes": f"Unknown scopes {unknown}; known: {sorted(SCOPES)}."})
    return sorted(set(scopes))


def course_token_create(
    *,
    creator: User,
    module: Module,
    name: str,
    scopes: object,
    expires_at: datetime | None = None,
) -> IssuedToken:
    if not teaches(creator, module.pk):
        raise NotFound(f"You do not teach {module.slug!r}.")
    name = name.strip()
    if not name or len(name) > 100:
        raise InvalidInput({"name": "Name the token (1 to 100 characters)."})
    if expires_at is not None and expires_at <= timezone.now():
        raise InvalidInput({"expires_at": "The expiry must be in the future."})
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = CourseToken.objects.create(
        module=module,
        created_by=creator,
        name=name,
        token_hash=token_hash(secret),
        prefix=secret[:SHOWN_PREFIX_LENGTH],
        scopes=scopes_validate(scopes),
        expires_at=expires_at,
    )
    return IssuedToken(token=token, secret=secret)


def course_token_check(secret: str) -> CourseToken:
    """The live token with this secret, or InvalidToken. Notes when it was last used."""
    token = (
        CourseToken.objects.select_related("created_by", "module")
        .filter(token_hash=token_hash(secret))
        .first()
    )
    now = timezone.now()
    if token is None or token.revoked_at is not None:
        raise InvalidToken("Invalid or revoked token.")
    if token.expires_at is not None and token.expires_at <= now:
        raise InvalidToken("This token has expired.")
    if not token.created_by.is_active:
        raise InvalidToken("The token's creator is inactive.")
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        CourseToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


def within_grant(
    queryset: QuerySet[Row], auth: object, module_field: str = "module_id"
) -> QuerySet[Row]:
    """A course token sees only its own course, never the other modules its creator is
    enrolled in: `queryset` narrowed to the token's module (as is, for any other caller)."""
    if isinstance(auth, CourseGrant):
        return queryset.filter(**{module_field: auth.module_id})
    return queryset


def course_grant(token: CourseToken) -> CourseGrant:
    return CourseGrant(token_id=token.pk, module_id=token.module_id, scopes=frozenset(token.scopes))


def course_tokens_of(*, user: User, module: Module) -> QuerySet[CourseToken]:
    if not teaches(user, module.pk):
        raise NotFound(f"You do not teach {module.slug!r}.")
    return CourseToken.objects.filter(module=module)


def course_token_revoke(*, user: User, module: Module, token_id: int) -> CourseToken:
    """Any instructor of the course may revoke any of its tokens; revoking twice is fine."""
    token = course_tokens_of(user=user, module=module).filter(pk=token_id).first()
    if token is None:
        raise NotFound(f"No token {token_id} in {module.slug!r}.")
    if token.revoked_at is None:
        CourseToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        token.refresh_from_db()
    return token
