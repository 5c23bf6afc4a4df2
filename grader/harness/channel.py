"""The narrow protocol between the harness parent and the runner child (FORMAT.md section 2).

Both ends of one stream socket pair. A message is a 4-byte big-endian length, then that
many bytes of UTF-8 JSON holding one object with a string "type". The parent reads
with a cap on every message and on the whole conversation; nothing here executes or
unpickles what it reads. Standard library only.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

HEADER = struct.Struct(">I")
CHILD_FD = 3  # the runner child's end of the pair, at a fixed number (all others closed)


class ProtocolError(Exception):
    """A message that is not one: too large, truncated, not JSON, or not an object."""


class TooLarge(ProtocolError):
    """A message over the cap: an honest run can produce one (a huge variable)."""


def encode_message(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, allow_nan=False, separators=(",", ":")).encode("utf-8")
    return HEADER.pack(len(body)) + body


def decode_body(body: bytes) -> dict[str, Any]:
    try:
        message = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ProtocolError(f"not JSON ({type(error).__name__})") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ProtocolError("not an object with a string type")
    return message


class Reader:
    """Parses messages out of the bytes received so far, each at most `max_message`."""

    def __init__(self, max_message: int) -> None:
        self.max_message = max_message
        self.buffer = bytearray()

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        self.buffer += chunk
        messages = []
        while len(self.buffer) >= HEADER.size:
            (length,) = HEADER.unpack_from(self.buffer)
            if length > self.max_message:
                raise TooLarge(f"message of {length} bytes over the cap of {self.max_message}")
            end = HEADER.size + length
            if len(self.buffer) < end:
                break
            body = bytes(self.buffer[HEADER.size : end])
            del self.buffer[:end]
            messages.append(decode_body(body))
        return messages

    @property
    def pending(self) -> bool:
        return bool(self.buffer)


class ChildEnd:
    """The runner child's end: sends a message, waits for the parent's reply.

    It keeps only the descriptor's number: each send or receive wraps it in a socket
    object for the call and lets go of it after (`detach`), so no long-lived socket
    object is left for the learner's code to find and reuse; creating one raises the
    `socket.__new__` audit event that guard.py reports while the learner's code runs.
    """

    def __init__(self, fd: int, max_message: int) -> None:
        self.fd = fd
        self.reader = Reader(max_message)
        self.inbox: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> None:
        sock = socket.socket(fileno=self.fd)
        try:
            sock.sendall(encode_message(message))
        finally:
            sock.detach()

    def receive(self) -> dict[str, Any]:
        while not self.inbox:
            sock = socket.socket(fileno=self.fd)
            try:
                chunk = sock.recv(65_536)
            finally:
                sock.detach()
            if not chunk:
                raise ProtocolError("the harness parent closed the channel")
            self.inbox.extend(self.reader.feed(chunk))
        return self.inbox.pop(0)
