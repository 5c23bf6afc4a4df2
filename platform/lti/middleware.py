"""gradlab inside an LMS frame (LTI launches with document_target "iframe": Moodle's default
"Embed", Canvas assignments), with no setting to make:

- LmsFramingMiddleware: the Content-Security-Policy's frame-ancestors names the origins of
  every active registered platform (its issuer, login, token and key set URLs, and Canvas
  Cloud's institution domains) on the LTI endpoints (/lti/: the login, the launch, the
  continue and deep-linking pages); on every other page, the origins of the platform the
  session was launched from (kept in the session by the launch: its registration's and
  those the signed launch named) so that the learner can move through gradlab in the frame.
  A session that no LMS launched keeps frame-ancestors 'none'. GRADLAB_LTI_FRAME_ANCESTORS
  adds origins to every page (as before). The LTI pages keep their opener (COOP
  unsafe-none): a new window opened from the frame hands a deep-linking answer back to it.
- LmsCookiesMiddleware: a session launched from an LMS gets its session and CSRF cookies as
  SameSite=None; Secure (what a third-party frame needs) and Partitioned (CHIPS, unless
  GRADLAB_LTI_PARTITIONED_COOKIES is off) in a secure context, so that the LMS's frame
  keeps them, also where third-party cookies are blocked and partitioned ones are not
  (Chrome's coming default, Firefox). Where none is kept (Safari-like policies), the
  launch's continue page opens gradlab in a new window instead (lti.views.ContinueView)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from http.cookies import Morsel
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse

CSP_HEADER = "Content-Security-Policy"
FRAME_ANCESTORS = re.compile(r"frame-ancestors([^;]*)")
FRAME_ORIGINS_SESSION_KEY = "gradlab_lti_frame_origins"
LTI_PATH = "/lti/"
HOST = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$")
# Canvas Cloud signs as one of these issuers and frames the tool from the institution's own
# subdomain of instructure.com (school.instructure.com), which no registered URL names.
CANVAS_CLOUD_ISSUERS = {
    "https://canvas.instructure.com": "https://*.instructure.com",
    "https://canvas.beta.instructure.com": "https://*.instructure.com",
    "https://canvas.test.instructure.com": "https://*.instructure.com",
}
LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]"}


def origin_of(url: object) -> str | None:
    """scheme://host[:port] of an http(s) URL, rebuilt from its parsed parts (never its
    text), or None: what a Content-Security-Policy header may name."""
    if not isinstance(url, str):
        return None
    parts = urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("https", "http") or not HOST.match(host) or parts.username:
        return None
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def registration_origins(registration: object) -> list[str]:
    """The origins of a registration's URLs, and Canvas Cloud's institution domains."""
    urls = [getattr(registration, name, "") for name in ("issuer", "auth_url", "token_url")]
    urls.append(getattr(registration, "keyset_url", ""))
    found = [origin for origin in map(origin_of, urls) if origin]
    issuer = origin_of(getattr(registration, "issuer", ""))
    if issuer in CANVAS_CLOUD_ISSUERS:
        found.append(CANVAS_CLOUD_ISSUERS[issuer])
    return _unique(found)


def registered_origins() -> list[str]:
    """The frame origins of every active registered platform."""
    from lti_tool.models import LtiRegistration

    found: list[str] = []
    for registration in LtiRegistration.objects.filter(is_active=True):
        found += registration_origins(registration)
    return _unique(found)


def _unique(origins: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(origins))


def framing_origins(request: HttpRequest, response: HttpResponse) -> list[str]:
    origins = list(settings.GRADLAB_LTI_FRAME_ANCESTORS)
    if request.path.startswith(LTI_PATH):
        origins += registered_origins()
    session = getattr(request, "session", None)
    if session is not None:
        origins += list(session.get(FRAME_ORIGINS_SESSION_KEY, []))
    origins += list(getattr(response, "lti_frame_origins", []))
    return _unique(origin for origin in origins if origin)


def with_frame_ancestors(policy: str, origins: list[str]) -> str:
    """`policy` whose frame-ancestors also allows `origins`: 'none' becomes 'self' and them,
    a list of sources of a page's own is kept and extended."""
    found = FRAME_ANCESTORS.search(policy)
    if found is None:
        return f"{policy}; frame-ancestors 'self' " + " ".join(origins)
    sources = [s for s in found.group(1).split() if s != "'none'"] or ["'self'"]
    directive = "frame-ancestors " + " ".join(_unique([*sources, *origins]))
    return policy[: found.start()] + directive + policy[found.end() :]


class LmsFramingMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.path.startswith(LTI_PATH):
            # A new window opened from gradlab's page in the LMS's frame keeps that page as
            # its opener, to hand a deep-linking answer back to the frame: the default
            # Cross-Origin-Opener-Policy (same-origin) would cut it off.
            response.setdefault("Cross-Origin-Opener-Policy", "unsafe-none")
        origins = framing_origins(request, response)
        if not origins:
            return response
        policy = response.get(CSP_HEADER)
        if policy is not None:
            response[CSP_HEADER] = with_frame_ancestors(policy, origins)
        response.xframe_options_exempt = True  # type: ignore[attr-defined]
        return response


class PartitionedMorsel(Morsel[str]):
    """A cookie with the Partitioned attribute (CHIPS), which Python 3.11's Morsel lacks."""

    def OutputString(self, attrs: list[str] | None = None) -> str:
        return super().OutputString(attrs) + "; Partitioned"


def secure_context(request: HttpRequest) -> bool:
    """https, or a loopback host (which browsers let set Secure cookies over http)."""
    if request.is_secure():
        return True
    try:
        return request.get_host().rsplit(":", 1)[0] in LOCAL_HOSTS
    except DisallowedHost:
        return False


def _third_party(response: HttpResponse, name: str, *, partitioned: bool) -> None:
    cookie = response.cookies.get(name)
    if cookie is None or isinstance(cookie, PartitionedMorsel):
        return
    framed: Morsel[str] = PartitionedMorsel() if partitioned else Morsel()
    framed.set(cookie.key, cookie.value, cookie.coded_value)
    framed.update(dict(cookie.items()))  # empty attributes are left out of the header
    framed["samesite"] = "None"
    framed["secure"] = True
    response.cookies[name] = framed


class LmsCookiesMiddleware:
    """Sits above the session and CSRF middlewares: sees the cookies they set."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        session = getattr(request, "session", None)
        launched = session is not None and FRAME_ORIGINS_SESSION_KEY in session
        if launched and secure_context(request):
            partitioned = settings.GRADLAB_LTI_PARTITIONED_COOKIES
            _third_party(response, settings.SESSION_COOKIE_NAME, partitioned=partitioned)
            _third_party(response, settings.CSRF_COOKIE_NAME, partitioned=partitioned)
        return response
