"""Content-Security-Policy on every response (a small middleware of ours, no dependency).

The pages load scripts and styles from our own origin only: no inline script, no inline
style attribute, no CDN. Data reaches scripts through data- attributes and json_script.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from common.errors import Conflict, Forbidden, InvalidInput, NotFound, RateLimited

CSP_HEADER = "Content-Security-Policy"
PLAIN_TEXT = "text/plain; charset=utf-8"
DEFAULT_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
# drf-spectacular's interactive docs page is a third-party page with its own inline script.
DEFAULT_EXEMPT_PREFIXES = ("/api/v1/docs/",)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.policy: str = getattr(settings, "GRADLAB_CSP", DEFAULT_POLICY)
        self.exempt: tuple[str, ...] = tuple(
            getattr(settings, "GRADLAB_CSP_EXEMPT_PREFIXES", DEFAULT_EXEMPT_PREFIXES)
        )

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if CSP_HEADER not in response and not request.path.startswith(self.exempt):
            response[CSP_HEADER] = self.policy
        return response


class DomainErrorPagesMiddleware:
    """Pages use the same selectors and services as the API: their NotFound and Forbidden
    become Django's 404 and 403 pages here, a bad form value a 400 and a decision already
    taken a 409, each saying why (the API maps them in api.exceptions)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        # Rendered here rather than raised as Http404 / PermissionDenied: with DEBUG on
        # (make run) Django would answer with its technical page, URL patterns included.
        if isinstance(exception, NotFound):
            return error_page(request, 404, "Page not found", exception.message)
        if isinstance(exception, Forbidden):
            return error_page(request, 403, "Not allowed", exception.message)
        if isinstance(exception, RateLimited):
            response = error_page(request, 429, "Too many requests", exception.message)
            response["Retry-After"] = str(exception.retry_after)
            return response
        if isinstance(exception, InvalidInput | Conflict):
            status = 400 if isinstance(exception, InvalidInput) else 409
            return HttpResponse(exception.message, status=status, content_type=PLAIN_TEXT)
        return None


def error_page(request: HttpRequest, status: int, title: str, message: str) -> HttpResponse:
    """A styled page saying what went wrong (web/error.html), never debug output."""
    return render(request, "web/error.html", {"title": title, "message": message}, status=status)
