"""Writes for accounts: users, course roles, API tokens."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from rest_framework.authtoken.models import Token

from accounts.models import Enrollment
from courses.models import Module


def user_get_or_create(*, username: str, password: str | None = None) -> AbstractBaseUser:
    user, created = get_user_model().objects.get_or_create(username=username)
    if password is not None:
        user.set_password(password)
        user.save(update_fields=["password"])
    elif created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def enrollment_set(*, user: AbstractBaseUser, module: Module, role: str) -> Enrollment:
    enrollment, _ = Enrollment.objects.update_or_create(
        user=user, module=module, defaults={"role": role}
    )
    return enrollment


def enrollment_set_all_modules(*, user: AbstractBaseUser, role: str) -> list[Enrollment]:
    with transaction.atomic():
        return [enrollment_set(user=user, module=m, role=role) for m in Module.objects.all()]


def token_issue(*, user: AbstractBaseUser) -> str:
    """The user's API token (created once, then the same one)."""
    token, _ = Token.objects.get_or_create(user=user)
    return token.key
