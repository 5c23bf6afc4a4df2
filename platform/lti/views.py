"""The tool's three endpoints: OIDC login initiation, the launch, the key set."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth import login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from lti_tool.models import LtiLaunch
from lti_tool.utils import sync_data_from_launch
from lti_tool.views import OIDCLoginInitView
from pylti1p3.exception import LtiException

from lti import keys
from lti.compat import launch_from_request
from lti.launch import LaunchRefused, launch_resource

logger = logging.getLogger(__name__)
AUTH_BACKEND = "django.contrib.auth.backends.ModelBackend"


def jwks(request: HttpRequest) -> JsonResponse:
    """The tool's public keys, for platforms to check our client assertions."""
    response = JsonResponse(keys.jwks())
    response["Cache-Control"] = "public, max-age=300"
    return response


class LoginView(OIDCLoginInitView):
    """OIDC third-party login initiation (django-lti's), returning to our one launch URL
    whatever the target link: the exercise travels in the id_token's claims."""

    def get_redirect_url(self, target_link_uri: str) -> str:
        return self.request.build_absolute_uri(reverse("lti:launch"))


def refused(message: str, status: int) -> HttpResponse:
    """A plain page: a learner never sees a stack trace, and the LMS shows it in its frame."""
    body = f"<!doctype html><title>gradlab</title><p>LTI launch refused: {_escape(message)}</p>"
    return HttpResponse(body, status=status, content_type="text/html; charset=utf-8")


def _escape(text: str) -> str:
    from django.utils.html import escape

    return escape(text)


@method_decorator((csrf_exempt, xframe_options_exempt), name="dispatch")
class LaunchView(View):
    """The id_token arrives here, POSTed by the learner's browser from the platform."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            message_launch = launch_from_request(request)
        except LtiException as error:
            logger.warning("LTI launch refused: %s", error)
            return refused(str(error), 403)
        lti_launch = LtiLaunch(message_launch)
        if not lti_launch.is_resource_launch:
            return refused("gradlab takes resource link launches only.", 400)
        sync_data_from_launch(lti_launch)
        try:
            landing = launch_resource(lti_launch)
        except LaunchRefused as error:
            return refused(str(error), 404)
        login(request, landing.user, backend=AUTH_BACKEND)
        exercise = landing.exercise
        return HttpResponseRedirect(
            reverse("web:exercise", args=[exercise.module.slug, exercise.slug])
        )
