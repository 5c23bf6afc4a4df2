"""The page an LMS opens for Dynamic Registration (lti.registration): it registers, says so,
and tells the platform's dialog to close (`org.imsglobal.lti.close`)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.clickjacking import xframe_options_exempt

from integrations import egress
from lti import registration


@method_decorator(xframe_options_exempt, name="dispatch")
class RegisterView(View):
    def get(self, request: HttpRequest, token: str, *args: Any, **kwargs: Any) -> HttpResponse:
        configuration = request.GET.get("openid_configuration", "")
        if not configuration:
            return _page(request, None, "Open this URL from your LMS's tool registration.", 400)
        urls = registration.ToolUrls(base=request.build_absolute_uri("/").rstrip("/"))
        try:
            done = registration.register(
                token=token,
                openid_configuration=configuration,
                registration_token=request.GET.get("registration_token", ""),
                urls=urls,
            )
        except registration.RegistrationFailed as failure:
            return _page(request, configuration, str(failure), 400)
        return _page(request, configuration, None, 200, done)


def _page(
    request: HttpRequest,
    configuration: str | None,
    problem: str | None,
    status: int,
    done: registration.Registered | None = None,
) -> HttpResponse:
    context = {"problem": problem, "done": done}
    response = render(request, "lti/registered.html", context, status=status)
    # Shown in the LMS's registration dialog: a frame of that LMS only.
    origin = egress.origin_of(configuration or "")
    response["Content-Security-Policy"] = (
        "default-src 'none'; script-src 'self'; style-src 'self'; base-uri 'none'; "
        f"form-action 'none'; frame-ancestors 'self'{' ' + origin if origin else ''}"
    )
    return response


def canvas_configuration(request: HttpRequest) -> JsonResponse:
    """Canvas's LTI 1.3 JSON configuration (Developer Keys, "Enter URL"), in the shape of
    Canvas's `Schemas::Lti::ToolConfiguration`: the manual fallback to Dynamic Registration."""
    urls = registration.ToolUrls(base=request.build_absolute_uri("/").rstrip("/"))
    return JsonResponse(registration.canvas_json_configuration(urls))
