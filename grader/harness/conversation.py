"""The harness parent's side of the protocol: validates what the runner child says and
assembles the capture from it (FORMAT.md sections 2 and 7).

Pure bookkeeping, no I/O: `receive` takes one decoded message and returns the replies
to send; `capture` builds the capture once the child has ended. Everything the child
says is a claim of the learner's process: each message is checked against the state of
the conversation (what was asked, what was already said) and against a fixed schema;
a message out of place is dropped and recorded as a `protocol` tamper event. The parent
itself sets what it knows: the protocol, the job's kind, the torch version, the device,
which cases were hidden, how the child ended, and what the child printed: the Pump
(main.py) feeds the bytes of the child's stdout pipe into `printed`, and each message
ends a piece of it (FORMAT.md section 3, `stdout`): what came before the first `next` is
the module's output, what came before a `case-result` is that case's, the rest is
dropped. Every piece shown to the learner ends before the first hidden case is handed
out, so no byte written while the learner's code held a hidden case is ever shown.
"""

from __future__ import annotations

import codecs
import re
from typing import Any

PROTOCOL = 1
MAX_TAMPER = 100
MAX_KIND = 64
MAX_DETAIL = 500
DEFAULT_OUTPUT = 65_536
KIND_PATTERN = re.compile(r"[a-z][a-z0-9-]{0,63}")
NUMBER = (int, float)
# The fields a child's final result may carry, and their JSON types.
RESULT_FIELDS: dict[str, tuple[type, ...]] = {
    "variables": (dict,),
    "backward_calls": (list,),
    "backward_calls_truncated": (bool,),
    "optimizer_steps": (int,),
    "provenance": (dict,),
    "exception": (dict, type(None)),
    "duration_s": NUMBER,
    "defined": (dict,),
    "torch_seeded": (bool,),
}
CASE_FIELDS: dict[str, tuple[type, ...]] = {
    "observations": (dict,),
    "exception": (dict, type(None)),
    "backward_calls": (list,),
    "duration_s": NUMBER,
    "grads_filled": (list,),
}
EMPTY_RESULT: dict[str, Any] = {
    "variables": {},
    "backward_calls": [],
    "optimizer_steps": 0,
    "stdout": "",
    "stdout_truncated": False,
    "exception": None,
    "duration_s": 0.0,
}


class Output:
    """One piece of the child's printed output: its first `cap` bytes are kept (a
    character cut in two at the cap is dropped) and the rest marks it as cut; bytes that
    are not UTF-8 become U+FFFD."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.cut = False

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if len(chunk) > room:
            self.cut = True
        self.data += chunk[: max(room, 0)]

    def take(self) -> tuple[str, bool]:
        """The piece so far, as text, and whether it was cut; starts the next piece."""
        data, cut = bytes(self.data), self.cut
        self.data, self.cut = bytearray(), False
        if cut:  # an incomplete last character was cut in two: dropped, not replaced
            return codecs.getincrementaldecoder("utf-8")("replace").decode(data), True
        return data.decode("utf-8", "replace"), False


class Conversation:
    """One job's conversation with its runner child."""

    def __init__(
        self,
        envelope: dict[str, Any],
        cases: list[Any] | None = None,
        output_cap: int = DEFAULT_OUTPUT,
    ) -> None:
        """`cases`: the hidden cases to hand out (default: the envelope's);
        `output_cap`: the bytes of printed output kept per piece (`stdout_bytes`)."""
        self.kind = "function" if envelope.get("kind") == "function" else "script"
        self.reference = envelope.get("mode") == "reference"
        if cases is None:
            cases = envelope.get("cases")
        if self.kind != "function" or self.reference:
            cases = None
        self.cases: list[Any] = list(cases) if isinstance(cases, list) else []
        self.sent = 0
        self.finished = False  # "end" was sent: every case was handed out
        self.awaiting: int | None = None  # index of the case handed out, result pending
        self.case_results: list[dict[str, Any]] = []
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.tamper: list[dict[str, str]] = []
        self.printed = Output(output_cap)
        self.module_output: tuple[str, bool] | None = None  # before the first `next`
        # a case is shown only when it and every case before it are visible
        shown, before = [], True
        for case in self.cases:
            before = before and _visible(case)
            shown.append(before)
        self.shown = shown

    # -- findings -------------------------------------------------------------------

    def flag(self, kind: str, detail: str) -> None:
        if len(self.tamper) < MAX_TAMPER:
            self.tamper.append({"kind": kind[:MAX_KIND], "detail": detail[:MAX_DETAIL]})

    def violation(self, detail: str) -> list[dict[str, Any]]:
        self.flag("protocol", detail)
        return []

    # -- messages -------------------------------------------------------------------

    def receive(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """Handles one message; returns the messages to send back to the child."""
        kind = message.get("type")
        if kind == "tamper":
            return self._tamper(message)
        if self.result is not None or self.error is not None:
            return self.violation(f"{kind!r} message after the final result")
        if kind == "next":
            return self._next()
        if kind == "case-result":
            return self._case_result(message)
        if kind == "result":
            return self._result(message)
        if kind == "harness-error":
            error = message.get("error")
            self.error = error if isinstance(error, dict) else {"type": "?", "message": "?"}
            return []
        return self.violation(f"unknown message type {str(kind)[:40]!r}")

    def _tamper(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        kind, detail = message.get("kind"), message.get("detail")
        if not isinstance(kind, str) or not KIND_PATTERN.fullmatch(kind):
            return self.violation("malformed tamper message")
        self.flag(kind, detail if isinstance(detail, str) else "")
        return []

    def _next(self) -> list[dict[str, Any]]:
        if self.kind != "function":
            return self.violation("asked for a case in a job without cases to hand out")
        ended = self.printed.take()  # before a case is handed out: never shown with it
        if self.module_output is None:
            self.module_output = ended
        if self.reference:
            return []  # the reference's child makes its cases: `next` marks where one starts
        if self.awaiting is not None:
            return self.violation(f"asked for a case before case {self.awaiting} was answered")
        if self.sent >= len(self.cases):
            self.finished = True
            return [{"type": "end"}]
        self.awaiting = self.sent
        self.sent += 1
        return [{"type": "case", "index": self.awaiting, "case": self.cases[self.awaiting]}]

    def _case_result(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        index = message.get("index")
        result = message.get("result")
        expected = len(self.case_results) if self.reference else self.awaiting
        if self.kind != "function" or index != expected or not isinstance(result, dict):
            return self.violation(f"unexpected result for case {str(index)[:20]}")
        case = self._fields(result, CASE_FIELDS, f"case {index}")
        case["stdout"], case["stdout_truncated"] = self.printed.take()
        if self.reference:
            case["input"] = result.get("input")
            case["visible"] = _visible(result.get("input"))
        elif self.awaiting is not None:
            case["visible"] = self.shown[self.awaiting]
            self.awaiting = None
        self.case_results.append(case)
        return []

    def _result(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        body = message.get("body")
        if not isinstance(body, dict):
            return self.violation("final result is not an object")
        handing_out = self.kind == "function" and not self.reference
        if handing_out and (self.awaiting is not None or not self.finished):
            self.flag("protocol", "final result before every case was run")
            self.error = {"type": "ProtocolError", "message": "ended before every case ran"}
            return []
        self.result = self._fields(body, RESULT_FIELDS, "result")
        ended = self.printed.take()  # function jobs: after the last case, dropped
        if self.kind == "script" or self.module_output is None:
            self.module_output = ended
        self.result["stdout"], self.result["stdout_truncated"] = self.module_output
        return []

    def _fields(
        self, raw: dict[str, Any], schema: dict[str, tuple[type, ...]], where: str
    ) -> dict[str, Any]:
        """The schema's fields of `raw`, each of its type; anything else is dropped."""
        kept: dict[str, Any] = {}
        for key, value in raw.items():
            types = schema.get(key)
            if key == "input" and self.reference:
                continue
            if types is None:
                self.flag("protocol", f"{where}: unexpected field {str(key)[:40]!r}")
            elif not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                self.flag("protocol", f"{where}: field {key!r} has the wrong type")
            else:
                kept[key] = value
        return kept

    # -- the capture ----------------------------------------------------------------

    def capture(self, ended: dict[str, Any], *, torch_version: str, device: str) -> dict[str, Any]:
        """The capture the parent frames. `ended` says how the child's process ended."""
        base: dict[str, Any] = {
            "protocol": PROTOCOL,
            "kind": self.kind,
            "torch": torch_version,
            "device": device,
            **EMPTY_RESULT,
        }
        if self.kind == "function":
            base.update(defined={}, cases=[])
        if self.result is None:
            why = dict(ended)
            if self.error is not None:
                why.update(reason="harness-error", error=self.error)
            return {**base, "terminated": why, "tamper": self.tamper}
        capture = {**base, **self.result, "terminated": None, "tamper": self.tamper}
        if self.kind == "function":
            capture["cases"] = self.case_results
        return capture


def _visible(encoded: Any) -> bool:
    """The `visible` flag of an encoded case ({"kind": "dict", "items": {...}})."""
    if not isinstance(encoded, dict):
        return False
    items = encoded.get("items")
    flag = items.get("visible") if isinstance(items, dict) else None
    return isinstance(flag, dict) and flag.get("value") is True
