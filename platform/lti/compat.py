"""Closes the gaps of PyLTI1p3 2.0.0 that gradlab depends on, in one place (each has a test
in tests/lti/test_compat.py):

1. The nonce is checked but never consumed: the same id_token could be launched again.
   -> GradlabMessageLaunch.consume_nonce records it (unique in the database) after the
      signature is verified; a second use is refused.
2. No clock skew: `exp`/`iat`/`nbf` are checked to the second, and `aud`/`azp` not at all
   by PyJWT. -> the id_token is decoded with GRADLAB_LTI_CLOCK_SKEW_SECONDS of leeway,
   `exp`, `iat`, `iss`, `aud` required, the audience checked against the registration's
   client id, and `azp` when there are several audiences.
3. The `Link` header is lowercased before its next URL is taken (paging URLs are case
   sensitive). -> ServiceConnector takes `next` from requests' parsed links, untouched.
4. A key set is cached and an unknown `kid` fails even after the platform rotated its keys.
   -> one fresh fetch of the key set on an unknown kid (at most every
      GRADLAB_LTI_KEYSET_REFETCH_SECONDS per URL), then the check again.
5. Access tokens are cached for the connector's lifetime and never expire. -> tokens are
   kept with the platform's `expires_in` (less a margin), per registration and scopes, in
   the process, and forgotten on a 401.
6. Every request (key set, token, AGS, NRPS and its `next` pages) goes anywhere the
   id_token says, over http, following redirects, with no timeout on the key set. -> all go
   through integrations.egress: https, public addresses checked where the socket connects,
   no redirect; the services only on the registration's origins (`service_policy`).
"""

from __future__ import annotations

import hashlib
import threading
import time
import typing as t
import uuid
from datetime import timedelta

import jwt
import requests  # type: ignore[import-untyped,unused-ignore]
from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.utils import timezone
from lti_tool.utils import DjangoToolConfig
from pylti1p3.contrib.django import DjangoCacheDataStorage, DjangoMessageLaunch
from pylti1p3.deployment import Deployment
from pylti1p3.exception import LtiException, LtiServiceException
from pylti1p3.registration import Registration
from pylti1p3.service_connector import ServiceConnector as BaseServiceConnector

from integrations import egress
from lti import keys
from lti.deployments import deployment_accept
from lti.models import UsedNonce

TOKEN_MARGIN_S = 30.0
DEFAULT_TOKEN_LIFETIME_S = 3600.0
UNKNOWN_KEY = "Unable to find public key"


# -- tool configuration ----------------------------------------------------------------------


class ToolConfig(DjangoToolConfig):
    """django-lti's configuration, with our signing key and no deployment made up on the
    fly: a launch for a deployment nobody registered is refused."""

    def find_registration_by_issuer(self, iss: str, *args: t.Any, **kwargs: t.Any) -> t.Any:
        return self._with_signing_key(super().find_registration_by_issuer(iss, *args, **kwargs))

    def find_registration_by_params(
        self, iss: str, client_id: str, *args: t.Any, **kwargs: t.Any
    ) -> t.Any:
        found = super().find_registration_by_params(iss, client_id, *args, **kwargs)
        return self._with_signing_key(found)

    def _with_signing_key(self, registration: Registration | None) -> Registration | None:
        if registration is None or (self.registration and self.registration.has_key):
            return registration
        return with_signing_key(registration)

    def find_deployment(self, iss: str, deployment_id: str) -> Deployment | None:
        return self._deployment(registration__issuer=iss, deployment_id=deployment_id)

    def find_deployment_by_params(
        self, iss: str, deployment_id: str, client_id: str, *args: t.Any, **kwargs: t.Any
    ) -> Deployment | None:
        return self._deployment(
            registration__issuer=iss,
            registration__client_id=client_id,
            deployment_id=deployment_id,
        )

    def _deployment(self, **lookups: t.Any) -> Deployment | None:
        from lti_tool.models import LtiDeployment

        if self.registration_uuid is not None:
            lookups["registration__uuid"] = self.registration_uuid
        self.deployment = LtiDeployment.objects.filter(
            registration__is_active=True, is_active=True, **lookups
        ).first()
        if self.deployment is None:
            return None
        return Deployment().set_deployment_id(self.deployment.deployment_id)


def with_signing_key(registration: Registration) -> Registration:
    """django-lti signs with its newest key; we sign with the newest key published long
    enough (lti.keys), so that no platform sees a kid it has not fetched yet. A fresh
    install makes its first key here."""
    try:
        key = keys.signing_key()
    except keys.NoKey:
        key = keys.keys_ensure()
    registration.set_tool_private_key(key.private_key)
    registration.set_tool_public_key(key.public_key)
    return registration


def registration_of(lti_registration: t.Any) -> Registration:
    """PyLTI1p3's registration of a django-lti LtiRegistration, with our signing key."""
    registration = lti_registration.to_registration()
    return registration if lti_registration.has_key else with_signing_key(registration)


# -- the launch ------------------------------------------------------------------------------


class GradlabMessageLaunch(DjangoMessageLaunch):
    """PyLTI1p3's launch with gaps 1, 2 and 4 closed."""

    def validate(self) -> GradlabMessageLaunch:
        if self._restored:
            raise LtiException("Can't validate restored launch")
        self._validated = True
        try:
            self.validate_state()
            self.validate_jwt_format()
            self.validate_nonce()  # issued by our login, for this browser
            self.validate_registration()
            self.validate_jwt_signature()
            self.consume_nonce()  # only once the token is known to be genuine
            self.validate_deployment()
            self.validate_message()
            self.save_launch_data()
        except Exception:
            self._validated = False
            raise
        return self

    def validate_jwt_signature(self) -> GradlabMessageLaunch:
        public_key, algorithm = self.get_public_key()
        assert self._registration is not None
        client_id = self._registration.get_client_id()
        try:
            claims = jwt.decode(
                self._get_id_token(),
                public_key,
                algorithms=[algorithm],
                audience=client_id,
                issuer=self._registration.get_issuer(),
                leeway=settings.GRADLAB_LTI_CLOCK_SKEW_SECONDS,
                options={"require": ["exp", "iat", "iss", "aud", "nonce"]},
            )
        except jwt.InvalidTokenError as error:
            raise LtiException(f"Can't decode id_token: {error}") from error
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != client_id:
            raise LtiException("id_token has several audiences and azp is not this tool")
        return self

    def get_registration(self) -> Registration | None:
        """The platform's registration, once validate_registration found it (a restored
        launch finds it too)."""
        return self._registration

    def validate_deployment(self) -> GradlabMessageLaunch:
        """A deployment of a registered platform that is new to us is recorded now (its
        id_token's signature is checked by then): lti.deployments."""
        body = self._get_jwt_body()
        deployment_accept(
            issuer=str(body.get("iss", "")),
            client_id=self.get_client_id(),
            deployment_id=str(
                body.get("https://purl.imsglobal.org/spec/lti/claim/deployment_id", "")
            ),
        )
        super().validate_deployment()
        return self

    def consume_nonce(self) -> GradlabMessageLaunch:
        body = self._get_jwt_body()
        lifetime = timedelta(seconds=settings.GRADLAB_LTI_NONCE_LIFETIME_SECONDS)
        try:
            with transaction.atomic():
                UsedNonce.objects.create(
                    issuer=str(body.get("iss", "")),
                    nonce=str(body.get("nonce", ""))[:255],
                    expires_at=timezone.now() + lifetime,
                )
        except IntegrityError:
            raise LtiException("This launch was already used (replayed nonce)") from None
        return self

    def get_public_key(self) -> tuple[str, str]:
        try:
            return t.cast(tuple[str, str], super().get_public_key())
        except LtiException as error:
            if UNKNOWN_KEY not in str(error) or not self._refetch_key_set():
                raise
        return t.cast(tuple[str, str], super().get_public_key())

    def _refetch_key_set(self) -> bool:
        """Fetches the platform's key set again (it may have rotated its keys), at most
        once per interval and URL. Returns whether it did."""
        assert self._registration is not None
        url = self._registration.get_key_set_url()
        if not url:
            return False
        guard = "lti-keyset-refetch-" + hashlib.sha256(url.encode()).hexdigest()
        if not cache.add(guard, True, timeout=settings.GRADLAB_LTI_KEYSET_REFETCH_SECONDS):
            return False
        storage = self._public_key_cache_data_storage
        self._public_key_cache_data_storage = None  # bypass the cached copy
        try:
            fresh = self.fetch_public_key(url)
        finally:
            self._public_key_cache_data_storage = storage
        if storage is not None:
            cache_key = "key-set-url-" + hashlib.md5(url.encode("utf-8")).hexdigest()
            storage.set_value(cache_key, fresh, self._public_key_cache_lifetime)
        self._registration.set_key_set(fresh)
        return True


def launch_from_request(request: t.Any) -> GradlabMessageLaunch:
    """Validates the launch POSTed to `request`; raises LtiException when it is bad. The
    key set is fetched through the egress guard (its URL is the registration's own)."""
    storage = DjangoCacheDataStorage()
    guarded = egress.session(egress.policy(timeout=settings.GRADLAB_LTI_HTTP_TIMEOUT_SECONDS))
    launch = GradlabMessageLaunch(
        request, ToolConfig(), launch_data_storage=storage, requests_session=guarded
    )
    launch.set_public_key_caching(storage, cache_lifetime=settings.GRADLAB_LTI_KEYSET_CACHE_SECONDS)
    return launch.validate()


# -- services (AGS, NRPS) ----------------------------------------------------------------------


def service_origins(registration: Registration) -> frozenset[str]:
    """The origins an LMS's services may be requested on: those of its registration's
    issuer, login, token and key set URLs, and GRADLAB_LTI_SERVICE_ORIGINS' for its issuer."""
    issuer = str(registration.get_issuer() or "")
    urls = [
        issuer,
        registration.get_auth_login_url(),
        registration.get_auth_token_url(),
        registration.get_key_set_url(),
    ]
    for entry in settings.GRADLAB_LTI_SERVICE_ORIGINS:
        for_issuer, _, origin = entry.rpartition("=")
        if for_issuer == issuer:
            urls.append(origin)
    return frozenset(filter(None, (egress.origin_of(str(url)) for url in urls if url)))


def service_policy(registration: Registration) -> egress.Policy:
    return egress.policy(
        origins=service_origins(registration), timeout=settings.GRADLAB_LTI_HTTP_TIMEOUT_SECONDS
    )


class ServiceConnector(BaseServiceConnector):
    """PyLTI1p3's connector with gaps 3, 5 and 6 closed: its requests go through the egress
    guard, on the registration's origins only."""

    _tokens: t.ClassVar[dict[str, tuple[str, float]]] = {}
    _tokens_lock = threading.Lock()

    def __init__(self, registration: Registration) -> None:
        super().__init__(registration, egress.session(service_policy(registration)))

    @property
    def session(self) -> egress.GuardedSession:
        return t.cast(egress.GuardedSession, self._requests_session)

    def _token_key(self, scopes: t.Sequence[str]) -> str:
        registration = self._registration
        parts = [
            str(registration.get_issuer()),
            str(registration.get_client_id()),
            str(registration.get_auth_token_url()),
            *sorted(scopes),
        ]
        return hashlib.sha256("|".join(parts).encode()).hexdigest()

    def get_access_token(self, scopes: t.Sequence[str]) -> str:
        key = self._token_key(scopes)
        with self._tokens_lock:
            cached = self._tokens.get(key)
        if cached is not None and cached[1] > time.monotonic():
            return cached[0]
        token, lifetime = self._fetch_token(scopes)
        with self._tokens_lock:
            self._tokens[key] = (token, time.monotonic() + max(0.0, lifetime - TOKEN_MARGIN_S))
        return token

    def forget_access_token(self, scopes: t.Sequence[str]) -> None:
        with self._tokens_lock:
            self._tokens.pop(self._token_key(scopes), None)

    def _fetch_token(self, scopes: t.Sequence[str]) -> tuple[str, float]:
        """A token for `scopes`, by a client assertion signed with our key."""
        registration = self._registration
        client_id = str(registration.get_client_id())
        token_url = str(registration.get_auth_token_url())
        now = int(time.time())
        claims: dict[str, t.Any] = {
            "iss": client_id,
            "sub": client_id,
            "aud": registration.get_auth_audience() or token_url,
            "iat": now - 5,
            "exp": now + 60,
            "jti": f"gradlab-{uuid.uuid4()}",
        }
        kid = registration.get_kid()
        private_key = registration.get_tool_private_key()
        assert private_key is not None, "the registration has no signing key"
        assertion = self.encode_jwt(claims, private_key, {"kid": kid} if kid else {})
        response = self._requests_session.post(
            token_url,
            data={
                "grant_type": "client_credentials",
                "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                "client_assertion": assertion,
                "scope": " ".join(scopes),
            },
            timeout=settings.GRADLAB_LTI_HTTP_TIMEOUT_SECONDS,
        )
        if not egress.answered(response):
            raise LtiServiceException(response)
        body = response.json()
        lifetime = float(body.get("expires_in") or DEFAULT_TOKEN_LIFETIME_S)
        return str(body["access_token"]), lifetime

    def make_service_request(
        self,
        scopes: t.Sequence[str],
        url: str,
        is_post: bool = False,
        data: str | None = None,
        content_type: str = "application/json",
        accept: str = "application/json",
        case_insensitive_headers: bool = False,
    ) -> t.Any:
        headers = {"Authorization": "Bearer " + self.get_access_token(scopes), "Accept": accept}
        timeout = settings.GRADLAB_LTI_HTTP_TIMEOUT_SECONDS
        if is_post:
            headers["Content-Type"] = content_type
            response = self._requests_session.post(
                url, data=data or None, headers=headers, timeout=timeout
            )
        else:
            response = self._requests_session.get(url, headers=headers, timeout=timeout)
        if response.status_code == 401:
            self.forget_access_token(scopes)
        if not egress.answered(response):  # a redirect too: never followed
            raise LtiServiceException(response)
        return {
            "headers": response.headers if case_insensitive_headers else dict(response.headers),
            "body": response.json() if response.content else None,
            "next_page_url": next_page_url(response),
        }


def next_page_url(response: requests.Response) -> str | None:
    """The `rel="next"` URL of a Link header, exactly as the platform wrote it."""
    return t.cast("str | None", response.links.get("next", {}).get("url"))
