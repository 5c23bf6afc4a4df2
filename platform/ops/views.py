"""Liveness (the process serves requests), readiness (it can do its work), and the
Prometheus metrics (ops.metrics) for a scraper that shows the token or an allowed address."""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from ops.health import readiness
from ops.metrics import exposition

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


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


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    token: str = settings.GRADLAB_METRICS_TOKEN
    allowed: list[str] = settings.GRADLAB_METRICS_ALLOWED_IPS
    if not token and not allowed:
        raise Http404  # not configured: there is nothing here
    if not (_token_shown(request, token) or _address_allowed(request, allowed)):
        return HttpResponse("Forbidden.\n", status=403, content_type="text/plain")
    return HttpResponse(exposition(), content_type=PROMETHEUS_TEXT)


def _token_shown(request: HttpRequest, token: str) -> bool:
    shown = request.headers.get("Authorization", "")
    return bool(token) and hmac.compare_digest(shown.encode(), f"Bearer {token}".encode())


def _address_allowed(request: HttpRequest, allowed: list[str]) -> bool:
    """REMOTE_ADDR only (never X-Forwarded-For, which a client writes) in one of the
    networks: behind a proxy, that is the proxy's address, so allow a token instead."""
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(network, strict=False) for network in allowed)
