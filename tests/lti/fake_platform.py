"""An LTI 1.3 platform for tests, as a real HTTP peer on 127.0.0.1 (a thread of the test
process): its own RSA keys and JWKS, an OIDC authorization endpoint that answers the tool's
login redirect with a signed id_token, an OAuth2 token endpoint that checks the tool's
client assertion against the tool's JWKS, a line item `/scores` endpoint that requires the
bearer token and the AGS content type, a line items container that creates line items
(with the `lineitem` scope), and a paginated roster whose `Link` header has mixed-case URLs.
Written from the LTI 1.3 / AGS / NRPS texts, not from PyLTI1p3. For a browser
(tests/browser) it also serves the LMS's course page framing the tool (`/course`), Canvas's
platform-storage frame (`/forwarder`) and, to a browser's `/auth`, the form_post page.

`mode` makes the scores endpoint follow an LMS's own rules, written from its source:
- "moodle" (`mod/lti/service/gradebookservices/classes/local/resources/scores.php`,
  `.../local/service/gradebookservices.php`, `mod/lti/classes/local/ltiservice/response.php`):
  400 to a score without userId, timestamp, gradingProgress or activityProgress or with a
  timestamp that is not ISO 8601 (Moodle's own pattern); the grade keeps `strtotime` of the
  timestamp (whole seconds) and a score whose timestamp is not a later second is refused
  409, the message in the HTTP reason phrase and the body `[]`.
- "canvas" (`app/controllers/lti/ims/scores_controller.rb` and its concerns): 422 "User not
  found in course or is not a student"; 400 to a timestamp before the result's; 400 to a
  `submitted_at` more than a minute ahead; every post is a new attempt unless the
  `https://canvas.instructure.com/lti/submission` extension says `new_submission: false`,
  and past `allowed_attempts` a new one is refused 422; each comment becomes a submission
  comment. Errors are `{"errors": {"type", "message"}}`."""

from __future__ import annotations

import functools
import itertools
import json
import re
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from gradlab_fixtures import serving
from jwcrypto.jwk import JWK

SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
CANVAS_SUBMISSION = "https://canvas.instructure.com/lti/submission"
# gradebookservices::validate_iso8601_date, as Moodle writes it.
MOODLE_ISO8601 = re.compile(
    r"^([\+-]?\d{4}(?!\d{2}\b))((-?)((0[1-9]|1[0-2])"
    r"(\3([12]\d|0[1-9]|3[01]))?|W([0-4]\d|5[0-2])(-?[1-7])?|(00[1-9]|0[1-9]\d|[12]\d{2}|3([0-5]\d|6[1-6])))"
    r"([T\s]((([01]\d|2[0-3])((:?)[0-5]\d)?|24\:?00)([\.,]\d+(?!:))?)?(\17[0-5]\d([\.,]\d+)?)"
    r"?([zZ]|([\+-])([01]\d|2[0-3]):?([0-5]\d)?)?)?)?$"
)
ISSUER = "https://lms.example.test"
CLIENT_ID = "gradlab-tool-1"
DEPLOYMENT_ID = "deployment-1"
COURSE_ID = "course-7"  # the context id of the platform's course (bound by conftest)
LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"


@dataclass
class SigningKey:
    kid: str
    private_pem: str
    public_jwk: dict[str, Any]
    private_key: rsa.RSAPrivateKey  # the PEM loaded once: loading checks the key (~20 ms)


KEY_POOL_SIZE = 6  # distinct key pairs: consecutive new_key() calls never repeat one


@functools.cache
def _key_material(index: int) -> tuple[rsa.RSAPrivateKey, str, dict[str, Any]]:
    """Pool entry `index`: an RSA key, its PEM and its public JWK (no kid), generated once
    per test process (2048-bit generation and the JWK export cost ~0.1 s a key)."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()  # fmt: skip
    return private, pem, json.loads(JWK.from_pem(pem.encode()).export_public())


_drawn = itertools.count()


def new_key(kid: str | None = None) -> SigningKey:
    """A signing key with a kid of its own, from a pool of KEY_POOL_SIZE key pairs: a
    platform, its rotated key and an impostor's key in one test are different keys."""
    private, pem, public = _key_material(next(_drawn) % KEY_POOL_SIZE)
    kid = kid or f"platform-{secrets.token_hex(4)}"
    jwk = {**public, "kid": kid, "alg": "RS256", "use": "sig"}
    return SigningKey(kid=kid, private_pem=pem, public_jwk=jwk, private_key=private)


@dataclass
class ScoreReceived:
    path: str  # with its query string
    content_type: str
    body: dict[str, Any]


@dataclass
class FakePlatform:
    base_url: str = ""
    keys: list[SigningKey] = field(default_factory=lambda: [new_key()])
    signing: int = 0  # index into keys
    tool_jwks: dict[str, Any] = field(default_factory=dict)  # handed over by the test
    token_lifetime: int = 3600
    tokens: dict[str, float] = field(default_factory=dict)
    token_requests: list[dict[str, Any]] = field(default_factory=list)
    score_script: list[int] = field(default_factory=list)  # statuses to answer, then 200
    scores: list[ScoreReceived] = field(default_factory=list)
    score_attempts: list[int] = field(default_factory=list)
    score_stamps: list[str] = field(default_factory=list)  # each judged score's timestamp
    jwks_fetches: int = 0
    roster: list[dict[str, Any]] = field(default_factory=list)
    deep_link_responses: list[dict[str, Any]] = field(default_factory=list)
    lineitem_end: str | None = None  # the line item's endDateTime, if any
    lineitems_created: list[dict[str, Any]] = field(default_factory=list)
    token_scopes: dict[str, set[str]] = field(default_factory=dict)
    mode: str = "plain"  # "plain", "moodle" or "canvas": whose scores rules apply
    refusals: list[tuple[int, str]] = field(default_factory=list)  # (status, message)
    # moodle: (line item path, userId) -> the grade's timemodified (whole seconds)
    moodle_grades: dict[tuple[str, str], int] = field(default_factory=dict)
    # canvas: per (line item path, userId): the result's updated_at, the attempts
    canvas_results: dict[tuple[str, str], datetime] = field(default_factory=dict)
    canvas_attempts: dict[tuple[str, str], int] = field(default_factory=dict)
    canvas_submitted_at: dict[tuple[str, str], str] = field(default_factory=dict)
    canvas_allowed_attempts: int | None = None  # the assignment's "allowed attempts"
    canvas_comments: list[str] = field(default_factory=list)
    # The grade was edited in the LMS just as a learner's first score arrived, on a clock
    # this many seconds ahead of the tool's: the first score for a (line item, user) meets a
    # stored time ahead of its own, whatever the moment it is sent (no race with the host's
    # speed). None: nothing edited.
    edited_ahead_s: float | None = None
    not_students: set[str] = field(default_factory=set)  # userIds the LMS cannot grade
    lock: threading.Lock = field(default_factory=threading.Lock)

    # -- URLs the tool is registered with ------------------------------------------------
    @property
    def auth_url(self) -> str:
        return f"{self.base_url}/auth"

    @property
    def token_url(self) -> str:
        return f"{self.base_url}/token"

    @property
    def keyset_url(self) -> str:
        return f"{self.base_url}/jwks"

    def lineitem_url(self, n: int = 1) -> str:
        return f"{self.base_url}/courses/7/lineitems/{n}/lineitem?type_id=42"

    # -- id tokens -----------------------------------------------------------------------
    def claims(self, *, nonce: str, sub: str = "learner-1", roles: list[str] | None = None,
               exercise: str = "first-gradient", **overrides: Any) -> dict[str, Any]:  # fmt: skip
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "aud": CLIENT_ID,
            "sub": sub,
            "exp": now + 300,
            "iat": now,
            "nonce": nonce,
            "given_name": "Ada",
            "family_name": "Lovelace",
            "email": f"{sub}@example.test",
            LTI + "message_type": "LtiResourceLinkRequest",
            LTI + "version": "1.3.0",
            LTI + "deployment_id": DEPLOYMENT_ID,
            LTI + "target_link_uri": "https://gradlab.example.org/lti/launch/",
            LTI + "resource_link": {"id": "resource-link-1", "title": "Autograd 1"},
            LTI + "roles": roles if roles is not None else [LEARNER],
            LTI + "context": {"id": COURSE_ID, "title": "Deep learning", "label": "DL"},
            LTI + "custom": {"exercise": exercise},
            AGS: {
                "scope": ["https://purl.imsglobal.org/spec/lti-ags/scope/score"],
                "lineitem": self.lineitem_url(1),
            },
            NRPS: {
                "context_memberships_url": f"{self.base_url}/courses/7/memberships",
                "service_versions": ["2.0"],
            },
        }
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def deep_link_claims(self) -> dict[str, Any]:
        """Claims that make a launch a Deep Linking request from the LMS's content dialog."""
        return {
            LTI + "message_type": "LtiDeepLinkingRequest",
            LTI + "resource_link": None,
            LTI + "custom": None,
            "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings": {
                "deep_link_return_url": f"{self.base_url}/deep_link_return",
                "accept_types": ["ltiResourceLink"],
                "accept_presentation_document_targets": ["iframe", "window"],
                "accept_multiple": True,
                "data": "opaque-platform-data",
            },
        }

    def _deep_link_return(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """Checks the tool's LtiDeepLinkingResponse against the tool's JWKS."""
        token = form.get("JWT", "")
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            [jwk] = [k for k in self.tool_jwks.get("keys", []) if k.get("kid") == kid]
            claims = jwt.decode(token, jwt.PyJWK(jwk).key, algorithms=["RS256"], audience=ISSUER)
        except (jwt.InvalidTokenError, ValueError) as error:
            return 400, {"error": str(error)}
        if claims.get("iss") != CLIENT_ID:
            return 400, {"error": "wrong iss"}
        self.deep_link_responses.append(claims)
        return 200, {"ok": True}

    def sign(self, claims: dict[str, Any], *, key: SigningKey | None = None,
             kid: str | None = None) -> str:  # fmt: skip
        key = key or self.keys[self.signing]
        return jwt.encode(claims, key.private_key, algorithm="RS256",
                          headers={"kid": kid or key.kid})  # fmt: skip

    def rotate(self) -> SigningKey:
        """A new key, published and signing from now on (the old one stays published)."""
        key = new_key()
        self.keys.append(key)
        self.signing = len(self.keys) - 1
        return key

    # -- the token endpoint -------------------------------------------------------------
    def _token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        assertion = form.get("client_assertion", "")
        try:
            kid = jwt.get_unverified_header(assertion).get("kid")
            [jwk] = [k for k in self.tool_jwks.get("keys", []) if k.get("kid") == kid]
            public = jwt.PyJWK(jwk).key
            claims = jwt.decode(assertion, public, algorithms=["RS256"], audience=self.token_url)
        except (jwt.InvalidTokenError, ValueError) as error:
            return 401, {"error": "invalid_client", "error_description": str(error)}
        if claims.get("iss") != CLIENT_ID or claims.get("sub") != CLIENT_ID:
            return 401, {"error": "invalid_client"}
        token = secrets.token_urlsafe(16)
        with self.lock:
            self.tokens[token] = time.monotonic() + self.token_lifetime
            self.token_scopes[token] = set(form.get("scope", "").split())
            self.token_requests.append({"claims": claims, "kid": kid, "scope": form.get("scope")})
        return 200, {"access_token": token, "token_type": "Bearer",
                     "expires_in": self.token_lifetime, "scope": form.get("scope", "")}  # fmt: skip

    def token_valid(self, authorization: str) -> bool:
        scheme, _, token = authorization.partition(" ")
        with self.lock:
            expiry = self.tokens.get(token)
        return scheme == "Bearer" and expiry is not None and expiry > time.monotonic()

    def token_grants(self, authorization: str, scope: str) -> bool:
        _, _, token = authorization.partition(" ")
        with self.lock:
            return scope in self.token_scopes.get(token, set())

    # -- line items ---------------------------------------------------------------------
    def _create_lineitem(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """POST to the line items container: scoreMaximum and label required (both LMSs)."""
        if not isinstance(body.get("scoreMaximum"), int | float) or not body.get("label"):
            return 400, {"errors": {"type": "bad_request", "message": "scoreMaximum, label"}}
        with self.lock:
            number = 100 + len(self.lineitems_created)
            item = {**body, "id": self.lineitem_url(number)}
            self.lineitems_created.append(item)
        return 201, item

    # -- scores under an LMS's rules ------------------------------------------------------
    def moodle_score(self, path: str, score: dict[str, Any]) -> tuple[int, str]:
        """scores.php's get_json_for_post_request and save_grade_item: (status, reason)."""
        stamp = score.get("timestamp")
        required = ("userId", "timestamp", "gradingProgress", "activityProgress")
        if (
            any(key not in score for key in required)
            or not isinstance(stamp, str)
            or not MOODLE_ISO8601.match(stamp)
            or str(score["userId"]) in self.not_students
        ):
            return 400, "Incorrect score received"
        key = (_lineitem_of(path), str(score["userId"]))
        sent = datetime.fromisoformat(stamp).timestamp()
        seconds = int(sent)  # strtotime: whole seconds
        with self.lock:
            if self.edited_ahead_s is not None and key not in self.moodle_grades:
                self.moodle_grades[key] = int(sent + self.edited_ahead_s)
            known = self.moodle_grades.get(key)
            if known is not None and known >= seconds:
                item = key[0].split("/")[-2]  # the grade item's id
                return 409, (
                    f"Refusing score with an earlier timestamp for item {item} and user {key[1]}"
                )
            if score.get("scoreGiven") is not None:
                self.moodle_grades[key] = seconds
        return 200, "OK"

    def canvas_score(self, path: str, score: dict[str, Any]) -> tuple[int, str]:
        """ScoresController's before_actions and create: (status, errors.message)."""
        user = str(score.get("userId", ""))
        if user in self.not_students:
            return 422, "User not found in course or is not a student"
        try:
            stamp = datetime.fromisoformat(str(score.get("timestamp")))
        except ValueError:
            return 400, f"Provided timestamp of {score.get('timestamp')} not a valid timestamp"
        key = (_lineitem_of(path), user)
        extension = score.get(CANVAS_SUBMISSION) or {}
        submitted_at = extension.get("submitted_at")
        future_buffer = datetime.now(UTC) + timedelta(minutes=1)
        if submitted_at and datetime.fromisoformat(submitted_at) > future_buffer:
            return 400, f"Provided submitted_at timestamp of {submitted_at} in the future"
        flag = extension.get("new_submission")
        new_submission = (flag is None or bool(flag)) and extension.get("submission_type") != "none"
        with self.lock:
            if self.edited_ahead_s is not None and key not in self.canvas_results:
                self.canvas_results[key] = stamp + timedelta(seconds=self.edited_ahead_s)
            updated_at = self.canvas_results.get(key)
            if updated_at is not None and updated_at > stamp:
                return 400, (
                    f"Provided timestamp of {score['timestamp']} before last updated "
                    f"timestamp of {updated_at.isoformat(timespec='milliseconds')}"
                )
            attempts = self.canvas_attempts.get(key, 0)
            allowed = self.canvas_allowed_attempts
            if new_submission and allowed is not None and attempts >= allowed:
                return 422, (
                    "The maximum number of allowed attempts has been reached for this submission"
                )
            if new_submission:
                self.canvas_attempts[key] = attempts + 1
                self.canvas_submitted_at[key] = submitted_at or datetime.now(UTC).isoformat()
            if score.get("comment"):
                self.canvas_comments.append(str(score["comment"]))
            self.canvas_results[key] = stamp
        return 200, "OK"

    def revoke_tokens(self) -> None:
        with self.lock:
            self.tokens.clear()

    # -- the roster ---------------------------------------------------------------------
    def _roster_page(self, query: dict[str, list[str]]) -> tuple[dict[str, Any], str]:
        page = int(query.get("Page", ["1"])[0])
        size = 2
        members = self.roster[(page - 1) * size : page * size]
        link = ""
        if page * size < len(self.roster):
            nxt = f"{self.base_url}/courses/7/memberships?Page={page + 1}&Cursor=AbC{page + 1}"
            link = f'<{nxt}>; rel="next"'
        return {"id": f"{self.base_url}/courses/7/memberships", "members": members}, link


# -- pages for a browser (tests/browser): the LMS's course page, with the tool in a frame ----

# The platform-storage responder, as Canvas's (ui/shared/lti/jquery/messages.ts,
# subjects/lti.put_data.ts and lti.get_data.ts, response_messages.ts, platform_storage.ts):
# a sibling frame named by `lti_storage_target` answers the tool's `lti.put_data` and
# `lti.get_data` to the message's source at its origin with `<subject>.response`, the
# message_id, key and value, keeping values in localStorage under
# `lti|platform_storage|<tool origin>|<key>`; a missing key or message_id is a bad_request.
FORWARDER_PAGE = """<!doctype html><title>post_message_forwarding</title><script>
window.addEventListener("message", function (event) {
  var message = typeof event.data === "string" ? JSON.parse(event.data) : event.data;
  if (!message || (message.subject !== "lti.put_data" && message.subject !== "lti.get_data")) {
    return;
  }
  function send(contents) {
    var answer = {subject: message.subject + ".response"};
    if (message.message_id) { answer.message_id = message.message_id; }
    event.source.postMessage(Object.assign(answer, contents), event.origin);
  }
  if (!message.key) { return send({error: {code: "bad_request",
                                   message: "Missing required 'key' field"}}); }
  if (!message.message_id) { return send({error: {code: "bad_request",
                                          message: "Missing required 'message_id' field"}}); }
  var stored = "lti|platform_storage|" + event.origin + "|" + message.key;
  if (message.subject === "lti.put_data") {
    if (message.value) { window.localStorage.setItem(stored, message.value); }
    else { window.localStorage.removeItem(stored); }
    return send(message.value ? {key: message.key, value: message.value} : {key: message.key});
  }
  send({key: message.key, value: window.localStorage.getItem(stored)});
});
</script>"""


def course_page(query: dict[str, list[str]]) -> str:
    """The LMS's page: the tool's frame (named "tool"), the storage frame when `storage=1`
    (and not `forwarder=0`; `forwarder_delay_ms=N`: its page is answered N ms late), and the
    login initiation form POSTed into the tool's frame, as Canvas and Moodle do."""
    fields = {
        "iss": ISSUER, "client_id": CLIENT_ID, "login_hint": query.get("sub", ["learner-1"])[0],
        "target_link_uri": query["login"][0], "lti_message_hint": query.get("hint", ["{}"])[0],
        "lti_deployment_id": DEPLOYMENT_ID,
    }  # fmt: skip
    storage = query.get("storage", ["0"])[0] == "1"
    if storage:
        fields["lti_storage_target"] = "post_message_forwarding"
    # forwarder=0: the login names a storage frame that the page lacks
    storage = storage and query.get("forwarder", ["1"])[0] == "1"
    inputs = "".join(
        f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in fields.items()
    )
    delay = query.get("forwarder_delay_ms", ["0"])[0]
    forwarder = (
        f'<iframe name="post_message_forwarding" src="/forwarder?delay_ms={escape(delay)}"'
        " hidden></iframe>"
    )
    return (
        "<!doctype html><title>Course 7</title><h1>Deep learning</h1>"
        + (forwarder if storage else "")
        + '<iframe name="tool" id="tool" width="1200" height="800"></iframe>'
        + f'<form id="login" method="post" target="tool" action="{escape(query["login"][0])}">'
        + inputs
        + "</form><script>document.getElementById('login').submit();</script>"
    )


def auto_post_page(action: str, answer: dict[str, Any]) -> str:
    """The authorization endpoint's answer to a browser: a form_post to the tool."""
    return (
        f'<!doctype html><form id="f" method="post" action="{escape(action)}">'
        f'<input type="hidden" name="id_token" value="{escape(answer["id_token"])}">'
        f'<input type="hidden" name="state" value="{escape(answer["state"])}">'
        "</form><script>document.getElementById('f').submit();</script>"
    )


def _lineitem_of(scores_path: str) -> str:
    """The line item's path of a `.../lineitem/scores?...` request path."""
    return urlsplit(scores_path).path.removesuffix("/scores")


@contextmanager
def running_platform() -> Iterator[FakePlatform]:
    platform = FakePlatform()

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None,
                  reason: str | None = None) -> None:  # fmt: skip
            data = json.dumps(body).encode()
            self.send_response(status, reason)
            self.send_header("content-type", "application/json")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _html(self, page: str) -> None:
            data = page.encode()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            if parts.path == "/course":
                self._html(course_page(query))
            elif parts.path == "/forwarder":
                time.sleep(int(query.get("delay_ms", ["0"])[0]) / 1000)
                self._html(FORWARDER_PAGE)
            elif parts.path == "/auth" and "text/html" in self.headers.get("accept", ""):
                self._html(auto_post_page(query["redirect_uri"][0], self._authorize(query)))
            elif parts.path == "/jwks":
                platform.jwks_fetches += 1
                self._send(200, {"keys": [k.public_jwk for k in platform.keys]})
            elif parts.path == "/auth":
                self._send(200, self._authorize(query))
            elif parts.path.startswith("/courses/7/lineitems/") and parts.path.endswith(
                "/lineitem"
            ):
                if not platform.token_valid(self.headers.get("authorization", "")):
                    self._send(401, {"error": "invalid token"})
                    return
                item = {"id": f"{platform.base_url}{self.path}", "scoreMaximum": 10,
                        "label": "Autograd 1", "resourceLinkId": "resource-link-1"}  # fmt: skip
                if platform.lineitem_end:
                    item["endDateTime"] = platform.lineitem_end
                self._send(200, item)
            elif parts.path == "/courses/7/memberships":
                if not platform.token_valid(self.headers.get("authorization", "")):
                    self._send(401, {"error": "invalid token"})
                    return
                body, link = platform._roster_page(query)
                self._send(200, body, {"Link": link} if link else {})
            else:
                self._send(404, {"error": "not found"})

        def _authorize(self, query: dict[str, list[str]]) -> dict[str, Any]:
            """The OIDC authorization response: the id_token for the nonce the tool sent,
            and its state, which the browser then POSTs to the tool's redirect_uri."""
            nonce = query["nonce"][0]
            hint = query.get("lti_message_hint", ["{}"])[0] or "{}"
            claims = platform.claims(nonce=nonce, **json.loads(hint))  # test-chosen claims
            return {
                "id_token": platform.sign(claims),
                "state": query["state"][0],
                "redirect_uri": query["redirect_uri"][0],
                "claims": claims,
            }

        def do_POST(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length)
            if parts.path == "/token":
                form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
                status, body = platform._token(form)
                self._send(status, body)
            elif parts.path == "/deep_link_return":
                form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
                status, body = platform._deep_link_return(form)
                self._send(status, body)
            elif parts.path.endswith("/lineitem/scores"):
                self._score(raw)
            elif parts.path == "/courses/7/lineitems":
                self._lineitems(raw)
            else:
                self._send(404, {"error": "not found"})

        def _score(self, raw: bytes) -> None:
            content_type = self.headers.get("content-type", "")
            if not platform.token_valid(self.headers.get("authorization", "")):
                platform.score_attempts.append(401)
                self._send(401, {"error": "invalid token"})
                return
            if content_type != SCORE_TYPE:
                platform.score_attempts.append(415)
                self._send(415, {"error": f"content type must be {SCORE_TYPE}"})
                return
            if platform.score_script or platform.mode == "plain":
                status = platform.score_script.pop(0) if platform.score_script else 200
                said = "scripted"
            elif platform.mode == "moodle":
                status, said = platform.moodle_score(self.path, json.loads(raw))
            else:
                status, said = platform.canvas_score(self.path, json.loads(raw))
            platform.score_attempts.append(status)
            platform.score_stamps.append(str(json.loads(raw).get("timestamp", "")))
            if status == 200:
                platform.scores.append(ScoreReceived(self.path, content_type, json.loads(raw)))
                self._send(200, {})
                return
            platform.refusals.append((status, said))
            if platform.mode == "moodle":  # the reason phrase says it; the body is []
                self._send(status, [], reason=said)
            elif platform.mode == "canvas":
                self._send(status, {"errors": {"type": str(status), "message": said}})
            else:
                headers = {"Retry-After": "1"} if status == 429 else {}
                self._send(status, {"error": said}, headers)

        def _lineitems(self, raw: bytes) -> None:
            authorization = self.headers.get("authorization", "")
            if not platform.token_valid(authorization):
                self._send(401, {"error": "invalid token"})
            elif not platform.token_grants(authorization, LINEITEM_SCOPE):
                self._send(401, {"errors": {"type": "unauthorized",
                                            "message": "Insufficient permissions"}})  # fmt: skip
            elif self.headers.get("content-type", "") != LINEITEM_TYPE:
                self._send(415, {"error": f"content type must be {LINEITEM_TYPE}"})
            else:
                self._send(*platform._create_lineitem(json.loads(raw)))

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    platform.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    with serving(server):
        yield platform
