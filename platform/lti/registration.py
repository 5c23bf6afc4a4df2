"""LTI Dynamic Registration (IMS LTI Dynamic Registration 1.0): an LMS administrator pastes
one URL and the platform and gradlab register each other.

The operator makes the URL (`manage.py lti_register --dynamic`): `/lti/register/<token>/`,
the token signed, expiring, and good for one registration, so that the URL in an LMS's
logs registers nothing more. The platform opens it with `openid_configuration` (where its
configuration lies) and `registration_token` (which it wants back as a bearer token). We
read the configuration, post our client registration to its `registration_endpoint`, and
keep the platform (issuer, client id, its endpoints) and, where the platform says it (Moodle
does, Canvas leaves it to the first launch), its deployment.

The two documents follow the specification and what Moodle's `mod/lti`
(`openid-configuration.php`, `registration_helper.php`) and Canvas's
(`Lti::IMS::Registration`) require of a tool's registration.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import requests  # type: ignore[import-untyped,unused-ignore]
from django.conf import settings
from django.core import signing
from django.core.cache import cache
from django.db import transaction
from lti_tool.models import LtiDeployment, LtiRegistration

from integrations import egress
from lti.keys import keys_ensure
from lti.lineitems import LINEITEM_READ_SCOPE, LINEITEM_SCOPE
from lti.passback import SCORE_SCOPE
from lti.roster import NRPS_SCOPE

logger = logging.getLogger(__name__)

SALT = "gradlab.lti.dynamic-registration"
PLATFORM_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-platform-configuration"
TOOL_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-tool-configuration"
SCOPES = (SCORE_SCOPE, LINEITEM_READ_SCOPE, LINEITEM_SCOPE, NRPS_SCOPE)
CLAIMS = ("iss", "sub", "name", "given_name", "family_name", "email")
CANVAS_PLACEMENTS = (
    "https://canvas.instructure.com/lti/assignment_selection",
    "ContentArea",  # Canvas's link_selection (modules)
)
DOCUMENT_BYTES = 256 * 1024  # a platform's configuration or registration answer


class RegistrationFailed(Exception):
    """Why the registration did not happen, in words for the LMS administrator."""


# -- the operator's URL -------------------------------------------------------------------


def registration_token_issue() -> str:
    """A token for one registration URL: signed, with an id used once."""
    return signing.dumps({"id": uuid.uuid4().hex}, salt=SALT, compress=True)


def registration_token_check(token: str) -> str:
    """The token's id, if it is ours, not expired and not used yet."""
    max_age = timedelta(hours=settings.GRADLAB_LTI_REGISTRATION_URL_HOURS)
    try:
        payload = signing.loads(token, salt=SALT, max_age=max_age)
    except signing.SignatureExpired as expired:
        raise RegistrationFailed(
            "This registration URL has expired: ask the gradlab operator for a new one."
        ) from expired
    except signing.BadSignature as bad:
        raise RegistrationFailed("This is not a gradlab registration URL.") from bad
    if cache.get(_used_key(payload["id"])):
        raise RegistrationFailed(
            "This registration URL was already used: ask the gradlab operator for a new one."
        )
    return str(payload["id"])


def _used_key(token_id: str) -> str:
    return f"lti-registration-used:{token_id}"


# -- the platform's configuration ---------------------------------------------------------


@dataclass(frozen=True)
class PlatformConfiguration:
    """What we need of a platform's openid-configuration."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    registration_endpoint: str
    product: str  # product_family_code: "moodle", "canvas", ...
    messages: tuple[str, ...]  # the message types the platform supports
    scopes: tuple[str, ...]  # scopes_supported (empty: not said)

    @classmethod
    def parse(cls, document: Any) -> PlatformConfiguration:
        if not isinstance(document, dict):
            raise RegistrationFailed("The platform's configuration is not a JSON object.")
        lti = document.get(PLATFORM_CONFIGURATION)
        lti = lti if isinstance(lti, dict) else {}
        return cls(
            issuer=_url_field(document, "issuer"),
            authorization_endpoint=_url_field(document, "authorization_endpoint"),
            token_endpoint=_url_field(document, "token_endpoint"),
            jwks_uri=_url_field(document, "jwks_uri"),
            registration_endpoint=_url_field(document, "registration_endpoint"),
            product=str(lti.get("product_family_code") or "").lower(),
            messages=_strings(lti.get("messages_supported")),
            scopes=_strings(document.get("scopes_supported")),
        )


def _url_field(document: dict[str, Any], name: str) -> str:
    value = document.get(name)
    if not isinstance(value, str) or not value:
        raise RegistrationFailed(f"The platform's configuration has no {name}.")
    try:
        egress.url_check(value, _rules())
    except egress.Refused:
        raise RegistrationFailed(
            f"The platform's {name} is not an https URL: {value[:200]}"
        ) from None
    return value


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(item for item in value if isinstance(item, str)) if isinstance(value, list) else ()


def _rules() -> egress.Policy:
    """The egress guard's rules for a platform we do not know yet: https (plain http only
    where the LTI settings allow it for test platforms), public addresses only (but the
    operator's GRADLAB_EGRESS_INSECURE_HOSTS), no redirect."""
    return egress.policy(
        allow_http=settings.GRADLAB_LTI_ALLOW_HTTP,
        timeout=settings.GRADLAB_LTI_HTTP_TIMEOUT_SECONDS,
    )


# -- our registration ----------------------------------------------------------------------


@dataclass(frozen=True)
class ToolUrls:
    """Where the platform reaches gradlab, from the URL it opened (our public origin)."""

    base: str

    @property
    def login(self) -> str:
        return f"{self.base}/lti/login/"

    @property
    def launch(self) -> str:
        return f"{self.base}/lti/launch/"

    @property
    def jwks(self) -> str:
        return f"{self.base}/lti/jwks.json"


def tool_registration(urls: ToolUrls, platform: PlatformConfiguration) -> dict[str, Any]:
    """Our client registration (the specification's, with what Moodle and Canvas check:
    id_token, private_key_jwt, `web`, both grant types, a domain, claims and messages)."""
    scopes = [scope for scope in SCOPES if not platform.scopes or scope in platform.scopes]
    return {
        "application_type": "web",
        "response_types": ["id_token"],
        "grant_types": ["implicit", "client_credentials"],
        "initiate_login_uri": urls.login,
        "redirect_uris": [urls.launch],
        "client_name": "gradlab",
        "jwks_uri": urls.jwks,
        "token_endpoint_auth_method": "private_key_jwt",
        "scope": " ".join(scopes),
        TOOL_CONFIGURATION: {
            "domain": urlsplit(urls.base).netloc,
            "target_link_uri": urls.launch,
            "description": "Autograded PyTorch autograd and backpropagation exercises",
            "claims": list(CLAIMS),
            "messages": _messages(urls, platform),
        },
    }


def _messages(urls: ToolUrls, platform: PlatformConfiguration) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"type": "LtiResourceLinkRequest", "target_link_uri": urls.launch, "label": "gradlab"}
    ]
    if not platform.messages or "LtiDeepLinkingRequest" in platform.messages:
        picking: dict[str, Any] = {
            "type": "LtiDeepLinkingRequest",
            "target_link_uri": urls.launch,
            "label": "gradlab exercises",
        }
        if platform.product == "canvas":
            picking["placements"] = list(CANVAS_PLACEMENTS)
        messages.append(picking)
    return messages


def canvas_json_configuration(urls: ToolUrls) -> dict[str, Any]:
    """The same registration as Canvas's JSON configuration (for "Enter URL")."""
    placements = [
        {
            "placement": placement,
            "message_type": "LtiDeepLinkingRequest",
            "target_link_uri": urls.launch,
            "text": "gradlab exercises",
        }
        for placement in ("assignment_selection", "link_selection")
    ]
    return {
        "title": "gradlab",
        "description": "Autograded PyTorch autograd and backpropagation exercises",
        "oidc_initiation_url": urls.login,
        "target_link_uri": urls.launch,
        "public_jwk_url": urls.jwks,
        "scopes": list(SCOPES),
        "extensions": [
            {
                "platform": "canvas.instructure.com",
                "domain": urlsplit(urls.base).netloc,
                "privacy_level": "public",
                "settings": {"text": "gradlab", "placements": placements},
            }
        ],
        "custom_fields": {},
    }


# -- the exchange ------------------------------------------------------------------------


@dataclass(frozen=True)
class Registered:
    registration: LtiRegistration
    deployment_id: str  # "" when the platform left it to the first launch
    product: str


def register(
    *, token: str, openid_configuration: str, registration_token: str, urls: ToolUrls
) -> Registered:
    """The whole exchange: check our token, read the platform's configuration, register,
    and keep the platform. Each failure is a RegistrationFailed in words."""
    token_id = registration_token_check(token)
    _url_field({"openid_configuration": openid_configuration}, "openid_configuration")
    with egress.session(_rules()) as client:
        platform = PlatformConfiguration.parse(
            _exchange(client, "GET", openid_configuration, registration_token, None)
        )
        answer = _exchange(
            client,
            "POST",
            platform.registration_endpoint,
            registration_token,
            tool_registration(urls, platform),
        )
    if not cache.add(_used_key(token_id), True, timeout=_token_lifetime()):
        raise RegistrationFailed("This registration URL was already used.")
    return _keep(platform, answer)


def _token_lifetime() -> int:
    return int(settings.GRADLAB_LTI_REGISTRATION_URL_HOURS * 3600) + 60


def _exchange(
    client: requests.Session, method: str, url: str, bearer: str, body: dict[str, Any] | None
) -> Any:
    """One request to the platform through the egress guard (which follows no redirect),
    its JSON answer, bounded."""
    headers = {"Accept": "application/json"}
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    try:
        response = client.request(
            method,
            url,
            json=body,
            headers=headers,
            timeout=settings.GRADLAB_LTI_HTTP_TIMEOUT_SECONDS,
            stream=True,
        )
        raw = response.raw.read(DOCUMENT_BYTES + 1, decode_content=True)
    except requests.RequestException as failure:
        logger.warning("dynamic registration: %s %s failed: %s", method, url, failure)
        raise RegistrationFailed(f"gradlab could not reach the platform at {url[:200]}.") from None
    if len(raw) > DOCUMENT_BYTES:
        raise RegistrationFailed(f"The platform's answer from {url[:200]} is too large.")
    if response.status_code >= 300:
        said = raw[:300].decode("utf-8", "replace")
        raise RegistrationFailed(
            f"The platform answered {response.status_code} to gradlab's {method} of "
            f"{url[:200]}: {said}"
        )
    try:
        return json.loads(raw)
    except ValueError:
        raise RegistrationFailed(f"The platform's answer from {url[:200]} is not JSON.") from None


def _keep(platform: PlatformConfiguration, answer: Any) -> Registered:
    if not isinstance(answer, dict) or not isinstance(answer.get("client_id"), str):
        raise RegistrationFailed("The platform's registration answer has no client_id.")
    configuration = answer.get(TOOL_CONFIGURATION)
    configuration = configuration if isinstance(configuration, dict) else {}
    deployment_id = configuration.get("deployment_id")
    deployment_id = str(deployment_id) if isinstance(deployment_id, str | int) else ""
    keys_ensure()
    with transaction.atomic():
        registration, _ = LtiRegistration.objects.update_or_create(
            issuer=platform.issuer,
            client_id=answer["client_id"],
            defaults={
                "name": f"{platform.product or 'LMS'} {urlsplit(platform.issuer).netloc}"[:255],
                "auth_url": platform.authorization_endpoint,
                "token_url": platform.token_endpoint,
                "keyset_url": platform.jwks_uri,
                "is_active": True,
            },
        )
        if deployment_id:
            LtiDeployment.objects.update_or_create(
                registration=registration,
                deployment_id=deployment_id,
                defaults={"is_active": True},
            )
    logger.info(
        "dynamic registration: %s registered as client %s (deployment %s)",
        platform.issuer,
        registration.client_id,
        deployment_id or "at first launch",
    )
    return Registered(registration, deployment_id, platform.product)
