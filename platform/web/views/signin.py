"""Signing in: where it lands, and the page a throttled sign-in gets (django-axes calls
it: AXES_LOCKOUT_CALLABLE)."""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render, resolve_url

from accounts.models import Enrollment
from courses.access import modules_taught_by

TOO_MANY = 429


def locked_out(request: HttpRequest, credentials: Any = None) -> HttpResponse:
    """429, saying why and for how long: the cool-off period, in whole minutes."""
    minutes = math.ceil(settings.AXES_COOLOFF_TIME.total_seconds() / 60)
    context = {"failure_limit": settings.AXES_FAILURE_LIMIT, "minutes": minutes}
    return render(request, "web/locked_out.html", context, status=TOO_MANY)


class SignInView(LoginView):
    """Django's sign-in; without a `next`, an instructor who learns nowhere lands on the
    Teach page of the module they teach (of several: the list of modules)."""

    template_name = "web/login.html"
    redirect_authenticated_user = True

    def get_default_redirect_url(self) -> str:
        return landing_url(self.request.user)


def landing_url(user: Any) -> str:
    taught = list(modules_taught_by(user=user)[:2])
    learns = Enrollment.objects.filter(user_id=user.pk, role=Enrollment.Role.LEARNER).exists()
    if len(taught) == 1 and not learns:
        return resolve_url("web:teach_module", taught[0].slug)
    return resolve_url("web:home")
