"""The OIDC login and the launch's state, kept on the server so that no cookie is needed
inside an LMS frame (browsers that block third-party cookies, Safari's default):

- a login start (anonymous) is throttled per client address and writes one record to the
  cache, keyed by a digest of a fresh random `state`, holding the nonce and the registration
  it is for, for GRADLAB_LTI_STATE_SECONDS (minutes, never a day);
- the launch finds the record by the state the platform posts back, checks the id_token's
  nonce and issuer against it, and deletes it once the token is known to be genuine: a state
  opens one launch, once;
- where the platform offers LTI platform storage (`lti_storage_target` in the login
  request, the IMS "LTI Client Side postMessages" and "Platform Storage" specifications),
  the login page also puts the state and nonce into the platform's storage and the launch
  page reads them back before the launch is accepted (templates lti/login_storage.html and
  lti/launch_storage.html, static lti/platform_storage.js).

PyLTI1p3's own login (a state cookie, a cookie-check page with inline script that the
Content-Security-Policy blocks, a `session-id` cookie on https) is not used."""

from __future__ import annotations

import hashlib
import math
import secrets
import typing as t
from dataclasses import asdict, dataclass
from urllib.parse import urlencode

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest
from pylti1p3.contrib.django import DjangoCacheDataStorage, DjangoOIDCLogin
from pylti1p3.exception import LtiException

from common.errors import RateLimited
from integrations import egress
from lti.compat import GradlabMessageLaunch, ToolConfig
from lti.middleware import origin_of

STATE_PREFIX = "lti-state:"
THROTTLE_PREFIX = "lti-login-start:"
# The keys a login's state and nonce have in the platform's storage (platform_storage.js).
STORAGE_STATE_KEY = "gradlab_state_{state}"
STORAGE_NONCE_KEY = "gradlab_nonce_{state}"


@dataclass(frozen=True)
class LoginState:
    """What a login start leaves for its launch."""

    state: str
    nonce: str
    issuer: str
    client_id: str
    storage_target: str  # the platform's lti_storage_target ("" when it offered none)
    platform_origin: str  # its authorization URL's: where storage messages go


@dataclass(frozen=True)
class AuthRequest:
    """Where the browser goes next: the platform's authorization endpoint, with our state."""

    url: str
    login: LoginState


# -- the login start -----------------------------------------------------------------------


def login_throttle(address: str) -> None:
    """At most GRADLAB_LTI_LOGIN_LIMIT login starts per client address (REMOTE_ADDR, never a
    header a client writes) in GRADLAB_LTI_LOGIN_WINDOW_SECONDS, counted in the shared
    cache; RateLimited beyond that."""
    window = settings.GRADLAB_LTI_LOGIN_WINDOW_SECONDS
    key = THROTTLE_PREFIX + hashlib.sha256(address.encode()).hexdigest()
    cache.add(key, 0, timeout=window)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=window)
        count = 1
    if count > settings.GRADLAB_LTI_LOGIN_LIMIT:
        raise RateLimited(
            "Too many LTI sign-ins from your address: try again in a minute.",
            retry_after=max(1, math.ceil(window)),
        )


def auth_request(
    request: HttpRequest, params: t.Mapping[str, str], launch_url: str, registration_uuid: t.Any
) -> AuthRequest:
    """Validates a third-party initiated login (issuer, login hint, registration: OIDCException
    otherwise), keeps a fresh state and nonce on the server and builds the authorization
    request of OIDC Core 3.1.2.1 / LTI 1.3 5.1.1.2."""
    registration = DjangoOIDCLogin(request, ToolConfig(registration_uuid)).validate_oidc_login()
    login = LoginState(
        state=secrets.token_urlsafe(32),
        nonce=secrets.token_urlsafe(32),
        issuer=str(registration.get_issuer()),
        client_id=str(registration.get_client_id()),
        storage_target=str(params.get("lti_storage_target", ""))[:100],
        platform_origin=origin_of(registration.get_auth_login_url()) or "",
    )
    cache.set(_state_key(login.state), asdict(login), timeout=settings.GRADLAB_LTI_STATE_SECONDS)
    query = {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": login.client_id,
        "redirect_uri": launch_url,
        "state": login.state,
        "nonce": login.nonce,
        "login_hint": str(params.get("login_hint", "")),
    }
    if params.get("lti_message_hint"):
        query["lti_message_hint"] = str(params["lti_message_hint"])
    return AuthRequest(url=f"{registration.get_auth_login_url()}?{urlencode(query)}", login=login)


# -- the launch ----------------------------------------------------------------------------


def state_peek(state: str) -> LoginState | None:
    """The login a state was issued by, while it has not expired nor been used."""
    found = cache.get(_state_key(state)) if state else None
    return LoginState(**found) if isinstance(found, dict) else None


def state_consume(state: str) -> bool:
    """Deletes the state's record; True for the one caller that deleted it."""
    return bool(cache.delete(_state_key(state)))


def _state_key(state: str) -> str:
    return STATE_PREFIX + hashlib.sha256(state.encode()).hexdigest()


class CookielessCacheStorage(DjangoCacheDataStorage):  # type: ignore[misc]
    """PyLTI1p3's cache storage without its `session-id` cookie (which it requires on https
    and which a frame without third-party cookies never sends): launch data are found by
    their launch id alone, a random value kept in the user's session."""

    def get_session_cookie_name(self) -> str | None:
        return None


class ServerStateLaunch(GradlabMessageLaunch):
    """The launch checked against the server-side state instead of a state cookie."""

    _login: LoginState | None = None

    def validate_state(self) -> ServerStateLaunch:
        state = str(self._get_request_param("state") or "")
        self._login = state_peek(state)
        if self._login is None:
            raise LtiException("This sign-in has expired or was already used: open it again")
        return self

    def validate_nonce(self) -> ServerStateLaunch:
        body = self._get_jwt_body()
        assert self._login is not None
        if not secrets.compare_digest(str(body.get("nonce", "")), self._login.nonce):
            raise LtiException("Invalid nonce: the id_token is not for this sign-in")
        aud: t.Any = body.get("aud")
        audiences = list(aud) if isinstance(aud, list) else [aud]
        if body.get("iss") != self._login.issuer or self._login.client_id not in audiences:
            raise LtiException("The id_token's issuer did not start this sign-in")
        return self

    def consume_nonce(self) -> ServerStateLaunch:
        super().consume_nonce()
        assert self._login is not None
        if not state_consume(self._login.state):
            raise LtiException("This sign-in was already used")
        return self

    def save_launch_data(self) -> ServerStateLaunch:
        """The launch's claims, for deep linking's second step (no state marker: the state
        is gone)."""
        self._session_service.save_launch_data(self._launch_id, self._jwt["body"])
        return self


def launch_validated(request: HttpRequest) -> GradlabMessageLaunch:
    """Validates the launch POSTed to `request` (LtiException when it is bad), as
    lti.compat.launch_from_request does (the key set through the egress guard), with the
    state and nonce checked against the server's record."""
    storage = CookielessCacheStorage()
    guarded = egress.session(egress.policy(timeout=settings.GRADLAB_LTI_HTTP_TIMEOUT_SECONDS))
    launch = ServerStateLaunch(
        request, ToolConfig(), launch_data_storage=storage, requests_session=guarded
    )
    launch.set_launch_data_lifetime(settings.GRADLAB_LTI_LAUNCH_DATA_SECONDS)
    launch.set_public_key_caching(storage, cache_lifetime=settings.GRADLAB_LTI_KEYSET_CACHE_SECONDS)
    return launch.validate()


def storage_keys(login: LoginState) -> dict[str, str]:
    return {
        "state_key": STORAGE_STATE_KEY.format(state=login.state),
        "nonce_key": STORAGE_NONCE_KEY.format(state=login.state),
    }


# -- after the launch: a one-time link for a new window ------------------------------------

TICKET_PREFIX = "lti-continue:"


@dataclass(frozen=True)
class Ticket:
    """A verified launch's way into gradlab, for a browser that kept no cookie in the LMS's
    frame: opened in a new window, it signs the user in there, once, within minutes."""

    user_id: int
    next_url: str
    frame_origins: list[str]
    deep_link_launch_id: str = ""


def ticket_issue(ticket: Ticket) -> str:
    token = secrets.token_urlsafe(32)
    cache.set(_ticket_key(token), asdict(ticket), timeout=settings.GRADLAB_LTI_TICKET_SECONDS)
    return token


def ticket_peek(token: str) -> Ticket | None:
    found = cache.get(_ticket_key(token))
    return Ticket(**found) if isinstance(found, dict) else None


def ticket_take(token: str) -> Ticket | None:
    """The ticket, for the one caller that deletes it."""
    found = ticket_peek(token)
    return found if found is not None and cache.delete(_ticket_key(token)) else None


def _ticket_key(token: str) -> str:
    return TICKET_PREFIX + hashlib.sha256(token.encode()).hexdigest()
