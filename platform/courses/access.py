"""Who teaches what: the one access rule of pages and API alike.

A signed-in user reads the published, released exercises of the modules they are enrolled
in (courses.selectors.exercises_visible_to) and their own submissions. A module's
instructors (role "instructor" in its Enrollment; a module has any number, its
co-instructors) and staff users also teach it: they open its instructor pages, read every
submission made to its exercises, and edit and publish its exercises. A reviewer (role
"reviewer") reads its drafts, validates and previews them, and edits nothing. Whoever
teaches a module may create new ones. What a user may not see is NotFound (404) when its
existence is private (someone else's submission) and Forbidden (403) when the page is
known to exist (a learner on an instructor page).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from accounts.models import Enrollment
from accounts.selectors import AnyUser
from common.errors import Forbidden, NotFound
from courses.models import Module
from courses.selectors import module_get


def modules_taught_by(*, user: AnyUser) -> QuerySet[Module]:
    if not user.is_authenticated:
        return Module.objects.none()
    if getattr(user, "is_staff", False):
        return Module.objects.all()
    return Module.objects.filter(
        enrollments__user_id=user.pk, enrollments__role=Enrollment.Role.INSTRUCTOR
    ).distinct()


def modules_reviewed_by(*, user: AnyUser) -> QuerySet[Module]:
    """Modules whose drafts the user may read, validate and preview (teachers, reviewers)."""
    if not user.is_authenticated:
        return Module.objects.none()
    if getattr(user, "is_staff", False):
        return Module.objects.all()
    return Module.objects.filter(
        enrollments__user_id=user.pk,
        enrollments__role__in=[Enrollment.Role.INSTRUCTOR, Enrollment.Role.REVIEWER],
    ).distinct()


def module_get_reviewed(*, slug: str, user: AnyUser) -> Module:
    """The module `slug` if `user` teaches or reviews it (NotFound, Forbidden otherwise)."""
    module = module_get(slug=slug)
    if not modules_reviewed_by(user=user).filter(pk=module.pk).exists():
        raise Forbidden("Only the module's instructors and reviewers may open this page.")
    return module


def user_may_create_modules(*, user: AnyUser) -> bool:
    """Staff, and whoever teaches a module, may create modules (and then teach them)."""
    return modules_taught_by(user=user).exists()


def module_is_taught_by(*, module_id: int, user: AnyUser) -> bool:
    return modules_taught_by(user=user).filter(pk=module_id).exists()


def module_get_taught(*, slug: str, user: AnyUser) -> Module:
    """The module `slug` if `user` teaches it: NotFound if there is none, Forbidden if
    it is not theirs to teach."""
    module = module_get(slug=slug)
    if not module_is_taught_by(module_id=module.pk, user=user):
        raise Forbidden("Only the module's instructors may open this page.")
    return module


def module_member_get(*, module: Module, user_id: int) -> AbstractBaseUser:
    """A user enrolled in `module` (any role); NotFound otherwise."""
    member = get_user_model().objects.filter(pk=user_id, enrollments__module=module).first()
    if member is None:
        raise NotFound("No such learner in this module.")
    return member
