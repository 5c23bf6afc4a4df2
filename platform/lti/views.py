"""The tool's endpoints: the key set, OIDC login initiation, the launch (with its platform
storage step), the continue page after it (straight on, or a new window) and deep linking."""

from __future__ import annotations

import logging
import secrets
from typing import Any
from urllib.parse import urlencode

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
from pylti1p3.exception import LtiException, OIDCException

from lti import bindings, deep_linking, keys, oidc
from lti.compat import GradlabMessageLaunch
from lti.launch import LaunchRefused, claims_problem, launch_resource, role_of, user_for
from lti.middleware import FRAME_ORIGINS_SESSION_KEY, origin_of, registration_origins

logger = logging.getLogger(__name__)
AUTH_BACKEND = "django.contrib.auth.backends.ModelBackend"
PRESENTATION_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/launch_presentation"


def jwks(request: HttpRequest) -> JsonResponse:
    """The tool's public keys, for platforms to check our client assertions."""
    response = JsonResponse(keys.jwks())
    response["Cache-Control"] = "public, max-age=300"
    return response


@method_decorator((csrf_exempt, xframe_options_exempt), name="dispatch")
class LoginView(View):
    """OIDC third-party login initiation (GET or POST, as each LMS sends it), returning to
    our one launch URL whatever the target link: the exercise travels in the id_token's
    claims. The state and nonce stay on the server (lti.oidc); no cookie, no check page."""

    def get(self, request: HttpRequest, registration_uuid: Any = None) -> HttpResponse:
        return self.start(request, request.GET, registration_uuid)

    def post(self, request: HttpRequest, registration_uuid: Any = None) -> HttpResponse:
        return self.start(request, request.POST, registration_uuid)

    def start(self, request: HttpRequest, params: Any, registration_uuid: Any) -> HttpResponse:
        oidc.login_throttle(str(request.META.get("REMOTE_ADDR", "")))
        if not params.get("target_link_uri"):
            return refused("Missing target_link_uri parameter.", 400)
        launch_url = request.build_absolute_uri(reverse("lti:launch"))
        try:
            auth = oidc.auth_request(request, params, launch_url, registration_uuid)
        except OIDCException as error:
            return refused(str(error), 400)
        if not auth.login.storage_target:
            return HttpResponseRedirect(auth.url)
        context = login_storage_context(request.path, params, auth)
        return render(request, "lti/login_storage.html", context)


LOGIN_PARAMS = ("iss", "login_hint", "target_link_uri", "lti_message_hint",
                "lti_deployment_id", "client_id")  # fmt: skip


def login_storage_context(path: str, params: Any, auth: oidc.AuthRequest) -> dict[str, Any]:
    """The login page that puts the state and nonce into the platform's storage, then goes
    to the authorization URL; if the platform's storage does not answer, it offers the same
    login in a new window (where our own first-party state needs no storage)."""
    plain = {name: params[name] for name in LOGIN_PARAMS if params.get(name)}
    return {
        "auth_url": auth.url,
        "platform_origin": auth.login.platform_origin,
        "target": auth.login.storage_target,
        "state": auth.login.state,
        "nonce": auth.login.nonce,
        **oidc.storage_keys(auth.login),
        "new_window_url": f"{path}?{urlencode(plain)}",
    }


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
        login = oidc.state_peek(str(request.POST.get("state", "")))
        if login is not None and login.storage_target:
            if "platform_state" not in request.POST:
                return storage_check(request, login)
            if not stored_in_platform(request, login):
                return refused("Your LMS's storage does not hold this sign-in: open it again.", 403)
        try:
            message_launch = oidc.launch_validated(request)
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
        exercise = landing.exercise
        next_url = reverse("web:exercise", args=[exercise.module.slug, exercise.slug])
        ticket = oidc.Ticket(landing.user.pk, next_url, launch_origins(lti_launch))
        return signed_in(request, landing.user, ticket)

    def deep_link(
        self, request: HttpRequest, message_launch: GradlabMessageLaunch, lti_launch: LtiLaunch
    ) -> HttpResponse:
        """An instructor adding content: sign them in and show the exercise picker."""
        if role_of(lti_launch) != "instructor":
            return refused("Only instructors add gradlab exercises to a course.", 403)
        try:
            return_url = deep_linking.return_url_of(message_launch)
        except deep_linking.DeepLinkError as error:
            return refused(str(error), 400)
        sync_data_from_launch(lti_launch)
        user = user_for(lti_launch.user)
        origins = launch_origins(lti_launch, return_url)
        ticket = oidc.Ticket(
            user.pk, reverse("lti:deep-link"), origins, message_launch.get_launch_id()
        )
        return signed_in(request, user, ticket)


def storage_check(request: HttpRequest, login: oidc.LoginState) -> HttpResponse:
    """The launch's first step where the login used the platform's storage: a page that
    reads the state and nonce back from it and posts the launch again with them."""
    context = {
        "id_token": request.POST.get("id_token", ""),
        "state": login.state,
        "target": login.storage_target,
        "platform_origin": login.platform_origin,
        **oidc.storage_keys(login),
    }
    return render(request, "lti/launch_storage.html", context)


def stored_in_platform(request: HttpRequest, login: oidc.LoginState) -> bool:
    state = str(request.POST.get("platform_state", ""))
    nonce = str(request.POST.get("platform_nonce", ""))
    return secrets.compare_digest(state, login.state) and secrets.compare_digest(nonce, login.nonce)


def launch_origins(lti_launch: LtiLaunch, *urls: str) -> list[str]:
    """The origins that may frame this launch's session: its registration's, and those the
    signed launch names (the LMS's return URL, the deep-link return URL)."""
    presentation = lti_launch.get_claim(PRESENTATION_CLAIM) or {}
    named = [presentation.get("return_url"), *urls] if isinstance(presentation, dict) else urls
    found = registration_origins(lti_launch.registration)
    return list(dict.fromkeys(found + [o for o in map(origin_of, named) if o]))


def signed_in(request: HttpRequest, user: User, ticket: oidc.Ticket) -> HttpResponse:
    """Signs `user` in (the session cookie, where the LMS's frame keeps it) and goes on to
    the continue page, which either finds that session or offers a new window."""
    sign_in(request, user, ticket)
    token = oidc.ticket_issue(ticket)
    return HttpResponseRedirect(reverse("lti:continue", args=[token]))


def sign_in(request: HttpRequest, user: User, ticket: oidc.Ticket) -> None:
    login(request, user, backend=AUTH_BACKEND)
    request.session[FRAME_ORIGINS_SESSION_KEY] = ticket.frame_origins
    if ticket.deep_link_launch_id:
        request.session[deep_linking.SESSION_KEY] = ticket.deep_link_launch_id


@method_decorator(xframe_options_exempt, name="dispatch")
class ContinueView(View):
    """After a launch: in a frame that kept the session cookie, straight on; in one that
    kept none (third-party cookies blocked, no partitioned cookies: Safari-like), a page
    offering gradlab in a new window, where the one-time link signs the user in."""

    def get(self, request: HttpRequest, token: str) -> HttpResponse:
        ticket = oidc.ticket_peek(token)
        if ticket is None:
            return refused("This link has expired or was used: open the activity again.", 410)
        if request.user.is_authenticated and request.user.pk == ticket.user_id:
            oidc.ticket_take(token)
            return HttpResponseRedirect(ticket.next_url)
        if request.GET.get("window") == "new":
            return self.new_window(request, token)
        response = render(request, "lti/continue.html", {"new_window_url": "?window=new"})
        response.lti_frame_origins = ticket.frame_origins  # type: ignore[attr-defined]
        return response

    def new_window(self, request: HttpRequest, token: str) -> HttpResponse:
        ticket = oidc.ticket_take(token)
        if ticket is None:
            return refused("This link has expired or was used: open the activity again.", 410)
        sign_in(request, User.objects.get(pk=ticket.user_id), ticket)
        return HttpResponseRedirect(ticket.next_url)


@method_decorator((login_required, xframe_options_exempt), name="dispatch")
class DeepLinkView(View):
    """The exercise picker (GET) and the instructor's pick, answered with a signed
    LtiDeepLinkingResponse that their browser posts back to the LMS (POST)."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        launch_id = request.session.get(deep_linking.SESSION_KEY)
        if not launch_id:
            return refused("No content selection in progress: start it in your LMS.", 400)
        assert isinstance(request.user, User)  # login_required
        try:
            launch = deep_linking.restore(request, launch_id)
        except deep_linking.DeepLinkError as error:
            return refused(str(error), 400)
        context = {
            "exercises": deep_linking.choices(LtiLaunch(launch), request.user),
            "unbound": bindings.UNBOUND,
            "several": deep_linking.accepts_several(launch),
        }
        return render(request, "lti/deep_link_pick.html", context)

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
        kept = deep_linking.answer_keep(return_url, token)
        frame_url = reverse("lti:dl-answer", args=[kept])
        return deep_link_return(request, return_url, token, frame_url)


def deep_link_return(request: HttpRequest, return_url: str, jwt: str, frame_url: str) -> Any:
    """The page whose one form posts the answer to the LMS; its script submits it, or, in a
    new window opened from the LMS's frame, sends that frame to `frame_url` to post it there
    (Moodle's content dialog takes the answer in its frame only) and closes."""
    context = {"return_url": return_url, "jwt": jwt, "frame_url": frame_url}
    response = render(request, "lti/deep_link_return.html", context)
    # The one form of this page posts to the LMS: say so, nothing else is allowed.
    lms = deep_linking.origin_of(return_url)
    response["Content-Security-Policy"] = (
        f"default-src 'none'; script-src 'self'; form-action {lms}; "
        f"frame-ancestors 'self' {lms}; base-uri 'none'"
    )
    return response


@method_decorator(xframe_options_exempt, name="dispatch")
class DeepLinkAnswerView(View):
    """In the LMS's frame, the answer made in the new window, posted from here, once."""

    def get(self, request: HttpRequest, token: str) -> HttpResponse:
        kept = deep_linking.answer_take(token)
        if kept is None:
            return refused("This selection has expired or was sent: start it again.", 410)
        return deep_link_return(request, kept["return_url"], kept["jwt"], "")
