"""Writes for accounts: users and API tokens (course roles: courses.roster)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from rest_framework.authtoken.models import Token


def user_get_or_create(*, username: str, password: str | None = None) -> AbstractBaseUser:
    user, created = get_user_model().objects.get_or_create(username=username)
    if password is not None:
        user.set_password(password)
        user.save(update_fields=["password"])
    elif created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def token_issue(*, user: AbstractBaseUser) -> str:
    """The user's API token (created once, then the same one)."""
    token, _ = Token.objects.get_or_create(user=user)
    return token.key
