"""The tool's three endpoints: OIDC login initiation, the launch, the key set."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from lti_tool.models import LtiLaunch
from lti_tool.utils import sync_data_from_launch
from lti_tool.views import OIDCLoginInitView
from pylti1p3.exception import LtiException

from lti import bindings, deep_linking, keys
from lti.compat import GradlabMessageLaunch, launch_from_request
from lti.launch import LaunchRefused, claims_problem, launch_resource, role_of, user_for

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


# What the learner reads for the OIDC error codes a platform answers with (OpenID Connect
# Core 3.1.2.6, which the LTI 1.3 launch follows), before the platform's own description.
OIDC_ERRORS = {
    "login_required": "Sign in to your LMS first, then open the activity again.",
    "interaction_required": "Your LMS needs you to do something first: open it and try again.",
    "consent_required": "Your LMS needs your consent first: open it and try again.",
    "account_selection_required": "Choose your account in your LMS, then try again.",
    "invalid_request": "Your LMS refused the launch request.",
    "invalid_request_object": "Your LMS refused the launch request.",
    "unauthorized_client": "Your LMS does not allow gradlab here: ask its administrator.",
    "access_denied": "Your LMS denied access to gradlab.",
    "unsupported_response_type": "Your LMS refused the launch request.",
    "server_error": "Your LMS had an error: try again in a moment.",
    "temporarily_unavailable": "Your LMS is busy: try again in a moment.",
}
DESCRIPTION_CHARS = 500


def platform_error(form: Any) -> HttpResponse:
    """The platform answered the login with an OIDC error instead of an id_token: say what
    it said (its error code in words, and its own description), not "missing id_token"."""
    code = str(form.get("error", ""))[:100]
    description = " ".join(str(form.get("error_description", "")).split())[:DESCRIPTION_CHARS]
    logger.warning("LTI login answered with error %r: %s", code, description)
    said = OIDC_ERRORS.get(code, "Your LMS refused the launch.")
    detail = f" It said: {description}" if description else ""
    return refused(f"{said} ({code}).{detail}", 400)


def _escape(text: str) -> str:
    from django.utils.html import escape

    return escape(text)


@method_decorator((csrf_exempt, xframe_options_exempt), name="dispatch")
class LaunchView(View):
    """The id_token arrives here, POSTed by the learner's browser from the platform."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if "id_token" not in request.POST and "error" in request.POST:
            return platform_error(request.POST)
        try:
            message_launch = launch_from_request(request)
        except LtiException as error:
            logger.warning("LTI launch refused: %s", error)
            return refused(str(error), 403)
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            # PyLTI1p3 trusts the shape of what it decodes (a JSON list for claims...).
            logger.warning("LTI launch refused, malformed: %r", error)
            return refused("The id_token is malformed.", 403)
        lti_launch = LtiLaunch(message_launch)
        if (problem := claims_problem(lti_launch)) is not None:
            return refused(problem, 400)
        if lti_launch.is_deep_link_launch:
            return self.deep_link(request, message_launch, lti_launch)
        if not lti_launch.is_resource_launch:
            return refused("gradlab takes resource link and deep linking launches only.", 400)
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

    def deep_link(
        self, request: HttpRequest, message_launch: GradlabMessageLaunch, lti_launch: LtiLaunch
    ) -> HttpResponse:
        """An instructor adding content: sign them in and show the exercise picker."""
        if role_of(lti_launch) != "instructor":
            return refused("Only instructors add gradlab exercises to a course.", 403)
        try:
            lms = deep_linking.origin_of(deep_linking.return_url_of(message_launch))
        except deep_linking.DeepLinkError as error:
            return refused(str(error), 400)
        sync_data_from_launch(lti_launch)
        user = user_for(lti_launch.user)
        login(request, user, backend=AUTH_BACKEND)
        request.session[deep_linking.SESSION_KEY] = message_launch.get_launch_id()
        context = {
            "exercises": deep_linking.choices(lti_launch, user),
            "unbound": bindings.UNBOUND,
        }
        response = render(request, "lti/deep_link_pick.html", context)
        # Shown in the LMS's content dialog (a frame of the LMS, and only of it).
        response["Content-Security-Policy"] = (
            f"default-src 'self'; form-action 'self'; frame-ancestors 'self' {lms}; "
            "base-uri 'none'; object-src 'none'"
        )
        return response


@method_decorator((login_required, xframe_options_exempt), name="dispatch")
class DeepLinkView(View):
    """The instructor's pick, answered with a signed LtiDeepLinkingResponse that their
    browser posts back to the LMS."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        launch_id = request.session.get(deep_linking.SESSION_KEY)
        if not launch_id:
            return refused("No content selection in progress: start it in your LMS.", 400)
        assert isinstance(request.user, User)  # login_required
        try:
            launch = deep_linking.restore(request, launch_id)
            launch_url = request.build_absolute_uri(reverse("lti:launch"))
            return_url = deep_linking.return_url_of(launch)
            token = deep_linking.response_jwt(
                launch, request.user, request.POST.getlist("exercise"), launch_url
            )
        except deep_linking.DeepLinkError as error:
            return refused(str(error), 400)
        del request.session[deep_linking.SESSION_KEY]
        response = render(
            request, "lti/deep_link_return.html", {"return_url": return_url, "jwt": token}
        )
        # The one form of this page posts to the LMS: say so, nothing else is allowed.
        response["Content-Security-Policy"] = (
            f"default-src 'none'; form-action {deep_linking.origin_of(return_url)}; "
            f"frame-ancestors 'self' {deep_linking.origin_of(return_url)}; base-uri 'none'"
        )
        return response
