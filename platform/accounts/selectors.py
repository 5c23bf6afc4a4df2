"""Reads for accounts: who plays which role where."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from accounts.models import Enrollment
from courses.models import Module


def modules_taught_by(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Module]:
    if not user.is_authenticated:
        return Module.objects.none()
    return Module.objects.filter(
        enrollments__user=user, enrollments__role=Enrollment.Role.INSTRUCTOR
    )


def is_instructor_of(*, user: AbstractBaseUser | AnonymousUser, module_id: int) -> bool:
    return modules_taught_by(user=user).filter(pk=module_id).exists()


def is_instructor(*, user: AbstractBaseUser | AnonymousUser) -> bool:
    return modules_taught_by(user=user).exists()
