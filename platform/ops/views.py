"""Liveness (the process serves requests) and readiness (it can do its work)."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from ops.health import readiness


@never_cache
@require_GET
def live(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"ok": True})


@never_cache
@require_GET
def ready(request: HttpRequest) -> JsonResponse:
    probes = readiness()
    ok = all(probe.ok for probe in probes)
    body = {"ok": ok, **{probe.name: probe.as_json() for probe in probes}}
    return JsonResponse(body, status=200 if ok else 503)
