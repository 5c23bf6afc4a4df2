"""The second peer: an LTI 1.3 platform built on `lti1p3platform` (written independently
of PyLTI1p3 and of our fake platform), served over real HTTP on 127.0.0.1. Its library
signs the id_token and access tokens, checks the tool's client assertion against the tool's
key set and validates the bearer token on the scores endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from gradlab_fixtures import serving
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request

ISSUER = "https://second-lms.example.test"
CLIENT_ID = "gradlab-on-second-lms"
DEPLOYMENT_ID = "second-deployment"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"


def _key_pair() -> tuple[str, str]:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()  # fmt: skip
    public_pem = (
        private.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private_pem, public_pem


class PlatformConfig(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs: Any) -> None:
        self._registration = kwargs["registration"]

    def get_registration_by_params(self, **kwargs: Any) -> Registration:
        assert self._registration is not None
        return self._registration


class PlainRequest(Request):
    def build_metadata(self, request: Any) -> Any:
        return request  # already a TRequest dict


class Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs: Any) -> None:
        self._lti_message_hint = json.dumps(kwargs)

    def get_redirect(self, url: str) -> str:
        return url


class Launch(LTIAdvantageMessageLaunchAbstract):
    def render_launch_form(self, launch_data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return launch_data  # the form's fields: id_token, state, launch_url


@dataclass
class SecondPlatform:
    base_url: str = ""
    registration: Registration = field(default_factory=Registration)
    scores: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def config(self) -> PlatformConfig:
        return PlatformConfig(registration=self.registration)

    def login_url(self, user_id: str, exercise: str) -> str:
        """Where the platform sends the browser first: the tool's login initiation."""
        login = Login(None, self.config())
        login.set_lti_message_hint(exercise=exercise, user_id=user_id)
        return str(login.prepare_preflight_url(user_id))

    def authorize(self, query: dict[str, str]) -> dict[str, Any]:
        hint = json.loads(query.get("lti_message_hint", "{}"))
        launch = Launch(PlainRequest({"get_data": query, "form_data": {}}), self.config())
        launch.set_user_data(hint["user_id"], [LEARNER], full_name="Grace Hopper",
                             email_address="grace@example.test")  # fmt: skip
        launch.set_resource_link_claim("second-link-1", title="Autograd on LMS 2")
        launch.set_launch_context_claim("second-course", context_title="DL on LMS 2")
        launch.set_custom_parameters_claim({"exercise": hint["exercise"]})
        launch.set_ags(
            lineitems_url=f"{self.base_url}/lineitems",
            lineitem_url=f"{self.base_url}/lineitems/9/lineitem?course=2",
        )
        return dict(launch.lti_launch())

    def token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        try:
            return 200, dict(self.config().get_access_token(form))
        except Exception as error:  # the library's refusals: no assertion, bad signature...
            self.refused.append(f"{type(error).__name__}: {error}")
            return 401, {"error": "invalid_client"}

    def score(self, headers: dict[str, str], raw: bytes, path: str) -> int:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        try:
            valid = scheme == "Bearer" and self.config().validate_token(token, [SCORE_SCOPE])
        except Exception as error:
            self.refused.append(f"{type(error).__name__}: {error}")
            valid = False
        if not valid:
            return 401
        if headers.get("content-type") != SCORE_TYPE:
            return 415
        self.scores.append({"path": path, **json.loads(raw)})
        return 200


@contextmanager
def running_second_platform(tool_base: str, tool_jwks: dict[str, Any]) -> Iterator[SecondPlatform]:
    platform = SecondPlatform()

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if parts.path == "/jwks":
                self._send(200, platform.config().get_jwks())
            elif parts.path == "/auth":
                self._send(200, platform.authorize(query))
            else:
                self._send(404, {})

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", "0")))
            headers = {k.lower(): v for k, v in self.headers.items()}
            if self.path == "/token":
                status, body = platform.token({k: v[0] for k, v in parse_qs(raw.decode()).items()})
                self._send(status, body)
            elif urlsplit(self.path).path.endswith("/scores"):
                self._send(platform.score(headers, raw, self.path), {})
            else:
                self._send(404, {})

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    platform.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    private_pem, public_pem = _key_pair()
    (
        platform.registration.set_iss(ISSUER)
        .set_client_id(CLIENT_ID)
        .set_deployment_id(DEPLOYMENT_ID)
        .set_oidc_login_url(f"{tool_base}/lti/login/")
        .set_launch_url(f"{tool_base}/lti/launch/")
        .set_platform_private_key(private_pem)
        .set_platform_public_key(public_pem)
        .set_tool_key_set(tool_jwks)  # type: ignore[arg-type]
    )
    with serving(server):
        yield platform
