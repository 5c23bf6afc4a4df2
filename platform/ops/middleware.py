"""Refuses a request whose query string holds a NUL character, before any view: PostgreSQL
text cannot hold one, so a lookup with it (`?exercise=%00`) would fail as a 500. Form and
JSON fields are refused by their own validators (Django's and DRF's CharField)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

NUL = "\x00"
MESSAGE = "The query string must not contain NUL characters."


class RefuseNulMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if _holds_nul(request):
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": MESSAGE}, status=400)
            return HttpResponse(MESSAGE, status=400, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


def _holds_nul(request: HttpRequest) -> bool:
    if NUL in request.path:
        return True
    return any(NUL in key or any(NUL in value for value in values)
               for key, values in request.GET.lists())  # fmt: skip
