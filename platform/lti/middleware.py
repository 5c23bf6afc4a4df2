"""Lets the LMSs named in GRADLAB_LTI_FRAME_ANCESTORS show gradlab's pages in their iframe
(LTI launches with document_target "iframe"): the Content-Security-Policy's
frame-ancestors names them and X-Frame-Options steps aside (CSP supersedes it). With the
setting empty (the default), this does nothing: pages stay unframeable."""

from __future__ import annotations

import re
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

CSP_HEADER = "Content-Security-Policy"
FRAME_ANCESTORS = re.compile(r"frame-ancestors[^;]*")


def frame_ancestors_directive(origins: list[str]) -> str:
    return "frame-ancestors 'self' " + " ".join(origins)


class LmsFramingMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        origins = list(settings.GRADLAB_LTI_FRAME_ANCESTORS)
        if not origins:
            return response
        directive = frame_ancestors_directive(origins)
        policy = response.get(CSP_HEADER)
        if policy is not None:
            if FRAME_ANCESTORS.search(policy):
                response[CSP_HEADER] = FRAME_ANCESTORS.sub(directive, policy)
            else:
                response[CSP_HEADER] = f"{policy}; {directive}"
        response.xframe_options_exempt = True  # type: ignore[attr-defined]
        return response
