"""A webhook receiver written from the Standard Webhooks text (spec/standard-webhooks.md),
independently of gradlab's sender: a real HTTP server on 127.0.0.1 in a thread.

Verifying, as the spec says: the signed content is `{webhook-id}.{webhook-timestamp}.{body}`;
the key is the base64-decoded part of the secret after `whsec_`; the signature is HMAC-SHA256,
base64-encoded, prefixed `v1,`; the header may hold several space-separated signatures, any
one matching is enough; the comparison is constant-time; a timestamp more than five minutes
away from now is refused (replay protection).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gradlab_fixtures import serving

TOLERANCE_S = 5 * 60


def verify(secret: str, headers: dict[str, str], body: bytes, now: float | None = None) -> bool:
    msg_id = headers.get("webhook-id", "")
    timestamp = headers.get("webhook-timestamp", "")
    signatures = headers.get("webhook-signature", "")
    if not (msg_id and timestamp.isdigit() and signatures):
        return False
    if abs((now if now is not None else time.time()) - int(timestamp)) > TOLERANCE_S:
        return False
    key = base64.b64decode(secret.split("_", 1)[1])
    content = msg_id.encode() + b"." + timestamp.encode() + b"." + body
    expected = base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode()
    for candidate in signatures.split(" "):
        version, _, value = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return True
    return False


@dataclass
class Received:
    msg_id: str
    verified: bool
    body: Any
    answered: int


@dataclass
class Receiver:
    secret: str = ""
    script: list[int] = field(default_factory=list)  # statuses to answer, then 200
    received: list[Received] = field(default_factory=list)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def accepted(self) -> list[Received]:
        """The deliveries a receiver keeps: verified, answered 2xx, one per message id."""
        kept: dict[str, Received] = {}
        for item in self.received:
            if item.verified and 200 <= item.answered < 300:
                kept.setdefault(item.msg_id, item)
        return list(kept.values())

    def _answer(self, headers: dict[str, str], body: bytes) -> int:
        with self.lock:
            verified = verify(self.secret, headers, body)
            status = self.script.pop(0) if self.script else (200 if verified else 401)
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = None
            self.received.append(Received(headers.get("webhook-id", ""), verified, parsed, status))
            return status


@contextmanager
def running_receiver(path: str = "/hooks/gradlab") -> Iterator[Receiver]:
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            status = receiver._answer(headers, body) if self.path == path else 404
            if status in (301, 302, 307):
                self.send_response(status)
                self.send_header("location", "http://127.0.0.1:1/elsewhere")
            else:
                self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}{path}"
    with serving(server):
        yield receiver
