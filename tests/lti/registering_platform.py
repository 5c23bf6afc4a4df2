"""LMSs that register tools by LTI Dynamic Registration, as real HTTP peers on 127.0.0.1,
written from their source:

- "moodle" (`mod/lti/openid-configuration.php`, `openid-registration.php`,
  `classes/local/ltiopenid/registration_helper.php`): the configuration is public; the
  registration needs the registration token as a bearer token, once; `registration_to_config`
  refuses a registration without response_types, initiate_login_uri, redirect_uris,
  client_name, jwks_uri, token_endpoint_auth_method or the tool configuration's domain and
  target_link_uri, or with response_types lacking id_token, redirect_uris not a list, an auth
  method other than private_key_jwt or an application_type other than web (400, the reason
  as the body); the answer (`config_to_registration`) carries the new tool's id as
  `deployment_id`.
- "canvas" (`Lti::IMS::Registration`, `Schemas::Lti::IMS::LtiToolConfiguration`): the
  configuration and the registration both need the registration token; the registration
  must have both grant types, id_token, private_key_jwt, `web`, http(s) redirect URIs,
  scopes Canvas knows, and a tool configuration with a bare domain, claims and messages of
  known types and placements (422 otherwise); the answer has the developer key's id as
  client_id and no deployment (Canvas makes it when the tool is installed).
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from gradlab_fixtures import serving

TOOL_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-tool-configuration"
PLATFORM_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-platform-configuration"
CANVAS_SCOPES = {  # TokenScopes::LTI_SCOPES (the ones a tool may ask for)
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
    "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
    "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly",
    "https://canvas.instructure.com/lti/public_jwk/scope/update",
    "https://canvas.instructure.com/lti/data_services/scope/create",
    "https://canvas.instructure.com/lti/account_lookup/scope/show",
}
CANVAS_PLACEMENTS = {
    "ContentArea",
    "RichTextEditor",
    "https://canvas.instructure.com/lti/assignment_selection",
    "https://canvas.instructure.com/lti/link_selection",
    "https://canvas.instructure.com/lti/course_navigation",
}
CANVAS_DOMAIN = re.compile(
    r"^(([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])\.)*"
    r"([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])(:[0-9]{1,5})?$"
)
MOODLE_REQUIRED = (
    "response_types",
    "initiate_login_uri",
    "redirect_uris",
    "client_name",
    "jwks_uri",
    "token_endpoint_auth_method",
)


@dataclass
class RegisteringPlatform:
    mode: str  # "moodle" or "canvas"
    base_url: str = ""
    registration_token: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    used_tokens: set[str] = field(default_factory=set)
    registrations: list[dict[str, Any]] = field(default_factory=list)
    configuration_requests: list[str] = field(default_factory=list)  # their Authorization
    next_tool_id: int = 41
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def configuration_url(self) -> str:
        if self.mode == "moodle":
            return f"{self.base_url}/mod/lti/openid-configuration.php"
        return f"{self.base_url}/api/lti/security/openid-configuration"

    def configuration(self) -> dict[str, Any]:
        if self.mode == "moodle":
            return {
                "issuer": self.base_url,
                "token_endpoint": f"{self.base_url}/mod/lti/token.php",
                "token_endpoint_auth_methods_supported": ["private_key_jwt"],
                "jwks_uri": f"{self.base_url}/mod/lti/certs.php",
                "authorization_endpoint": f"{self.base_url}/mod/lti/auth.php",
                "registration_endpoint": f"{self.base_url}/mod/lti/openid-registration.php",
                "scopes_supported": [
                    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
                    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
                    "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
                    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
                    "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly",
                    "openid",
                ],
                "response_types_supported": ["id_token"],
                PLATFORM_CONFIGURATION: {
                    "product_family_code": "moodle",
                    "version": "4.5",
                    "messages_supported": ["LtiResourceLinkRequest", "LtiDeepLinkingRequest"],
                    "placements": ["AddContentMenu"],
                },
            }
        return {
            "issuer": "https://canvas.instructure.com",  # every Canvas Cloud instance
            "authorization_endpoint": f"{self.base_url}/api/lti/authorize_redirect",
            "token_endpoint": f"{self.base_url}/login/oauth2/token",
            "jwks_uri": f"{self.base_url}/api/lti/security/jwks",
            "registration_endpoint": f"{self.base_url}/api/lti/registrations",
            "scopes_supported": [*sorted(CANVAS_SCOPES), "openid"],
            PLATFORM_CONFIGURATION: {
                "product_family_code": "canvas",
                "version": "OpenSource",
                "messages_supported": [
                    {"type": "LtiResourceLinkRequest"},
                    {"type": "LtiDeepLinkingRequest"},
                ],
            },
        }

    def register(self, authorization: str, body: Any) -> tuple[int, Any]:
        token = authorization.removeprefix("Bearer ").strip()
        if not authorization.startswith("Bearer ") or token != self.registration_token:
            return 401, "missing_registration_token"
        with self.lock:
            if token in self.used_tokens:
                return 401, "token_already_used"
            problem = self._moodle_problem(body) if self.mode == "moodle" else None
            problem = problem or (self._canvas_problem(body) if self.mode == "canvas" else None)
            if problem:
                return (400 if self.mode == "moodle" else 422), problem
            self.used_tokens.add(token)
            self.registrations.append(body)
            self.next_tool_id += 1
            return 200, self._answer(body, self.next_tool_id)

    def _answer(self, body: dict[str, Any], tool_id: int) -> dict[str, Any]:
        configuration = dict(body[TOOL_CONFIGURATION])
        if self.mode == "moodle":
            configuration["deployment_id"] = str(tool_id)
            client_id = secrets.token_urlsafe(10)
        else:
            client_id = f"1000000000{tool_id:04d}"
        return {**body, "client_id": client_id, TOOL_CONFIGURATION: configuration}

    @staticmethod
    def _moodle_problem(body: Any) -> str | None:
        if not isinstance(body, dict):
            return "invalid registration"
        for key in MOODLE_REQUIRED:
            if not body.get(key):
                return f"missing required attribute {key}"
        tool = body.get(TOOL_CONFIGURATION) or {}
        for key in ("domain", "target_link_uri"):
            if not tool.get(key):
                return f"missing required attribute {key}"
        if "id_token" not in body["response_types"]:
            return "invalid_response_types"
        if not isinstance(body["redirect_uris"], list):
            return "invalid_redirect_uris"
        if body["token_endpoint_auth_method"] != "private_key_jwt":
            return "invalid_token_endpoint_auth_method"
        if body.get("application_type") and body["application_type"] != "web":
            return "invalid_application_type"
        return None

    @staticmethod
    def _canvas_problem(body: Any) -> str | None:
        if not isinstance(body, dict):
            return "invalid registration"
        if {"client_credentials", "implicit"} - set(body.get("grant_types") or []):
            return "grant_types: Must include client_credentials, implicit"
        if "id_token" not in (body.get("response_types") or []):
            return "response_types: Must include id_token"
        if body.get("token_endpoint_auth_method") != "private_key_jwt":
            return "token_endpoint_auth_method: Must be 'private_key_jwt'"
        if body.get("application_type") != "web":
            return "application_type: Must be 'web'"
        uris = body.get("redirect_uris") or []
        if not uris or not all(urlsplit(uri).scheme in ("http", "https") for uri in uris):
            return "redirect_uris: Must only contain valid URIs"
        unknown = set(str(body.get("scope", "")).split()) - CANVAS_SCOPES
        if unknown:
            return f"scopes: Invalid scopes: {', '.join(sorted(unknown))}"
        tool = body.get(TOOL_CONFIGURATION)
        if not isinstance(tool, dict):
            return "lti_tool_configuration: can't be blank"
        if not CANVAS_DOMAIN.match(str(tool.get("domain", ""))):
            return "lti_tool_configuration: domain does not match the pattern"
        if not isinstance(tool.get("claims"), list) or not isinstance(tool.get("messages"), list):
            return "lti_tool_configuration: claims and messages are required"
        for message in tool["messages"]:
            if message.get("type") not in ("LtiResourceLinkRequest", "LtiDeepLinkingRequest"):
                return f"lti_tool_configuration: message type {message.get('type')!r}"
            unknown_placements = set(message.get("placements") or []) - CANVAS_PLACEMENTS
            if unknown_placements:
                return f"lti_tool_configuration: placements {sorted(unknown_placements)}"
        return None


@contextmanager
def registering_platform(mode: str) -> Iterator[RegisteringPlatform]:
    platform = RegisteringPlatform(mode=mode)

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: Any) -> None:
            data = (body if isinstance(body, str) else json.dumps(body)).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.split("?")[0] != urlsplit(platform.configuration_url).path:
                self._send(404, {"error": "not found"})
                return
            authorization = self.headers.get("authorization", "")
            platform.configuration_requests.append(authorization)
            wanted = f"Bearer {platform.registration_token}"
            if platform.mode == "canvas" and authorization != wanted:
                self._send(401, {"errors": [{"message": "Invalid registration token"}]})
                return
            self._send(200, platform.configuration())

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", "0")))
            endpoint = urlsplit(platform.configuration()["registration_endpoint"]).path
            if self.path.split("?")[0] != endpoint:
                self._send(404, {"error": "not found"})
                return
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            self._send(*platform.register(self.headers.get("authorization", ""), body))

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    platform.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    with serving(server):
        yield platform
