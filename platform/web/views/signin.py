"""The page a throttled sign-in gets (django-axes calls it: AXES_LOCKOUT_CALLABLE)."""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

TOO_MANY = 429


def locked_out(request: HttpRequest, credentials: Any = None) -> HttpResponse:
    """429, saying why and for how long: the cool-off period, in whole minutes."""
    minutes = math.ceil(settings.AXES_COOLOFF_TIME.total_seconds() / 60)
    context = {"failure_limit": settings.AXES_FAILURE_LIMIT, "minutes": minutes}
    return render(request, "web/locked_out.html", context, status=TOO_MANY)
