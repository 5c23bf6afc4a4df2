"""Reads for accounts. Who may read or teach a module is the catalog's rule (courses.access)."""

from __future__ import annotations

from typing import TypeAlias

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

AnyUser: TypeAlias = AbstractBaseUser | AnonymousUser
