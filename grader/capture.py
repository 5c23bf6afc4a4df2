"""The capture: find the framed result in a sandbox's stdout and validate it.

Everything that comes out of a sandbox is untrusted: `parse_result` checks the frame,
the nonce, the length and the size, parses JSON (never pickle) and validates every
field the checks read (types, nesting depth, sizes) into frozen, typed objects.
Anything malformed raises `CaptureError`, which the engine turns into a failed run.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Union

FRAME = b"GRADLAB-RESULT"
MAX_RESULT_BYTES = 4_000_000
MAX_DEPTH = 12
MAX_STRING = 100_000
# Printed output (stdout, stderr, a case's stdout): the harness cuts it at the exercise's
# limits.stdout_bytes, which may be above MAX_STRING; the result's own cap bounds it.
MAX_OUTPUT = MAX_RESULT_BYTES
MAX_ELEMENTS = 1_000_000  # values in one tensor's data
MAX_ITEMS = 10_000  # items of one list/dict
MAX_CALLS = 10_000
MAX_CASES = 100
MAX_TAMPER_EVENTS = 1_000
MAX_TAMPER_TEXT = 2_000
MAX_DIMS = 16
MAX_NAMES = 1_000  # tracked names in one call's roots/graph/inputs
MAX_MRO = 64  # classes of one exception's MRO
MAX_STEPS = 2_000  # optimizer steps whose parameter values a capture carries
MAX_DIM = 2**40  # one dimension of a shape
MAX_NUMEL = 2**62  # elements of one tensor (torch counts them in an int64)
MAX_COUNT = 2**63 - 1  # counters, line numbers, exit codes
MAX_EXACT_INT = 2**63  # larger integer numbers are kept as floats (inf beyond float range)
# Integers in a tensor's data fit its dtype: int64 down to -2**63, uint64 up to 2**64 - 1.
MIN_ELEMENT, MAX_ELEMENT = -(2**63), 2**64 - 1
# Values kept per captured tensor: the engine sends this cap in the job envelope and
# judges a capture's data against it, never against what the sandbox says it did.
TENSOR_ELEMENTS = 100_000
FRAME_PATTERN = re.compile(rb"GRADLAB-RESULT ([0-9a-f]{32}) ([0-9]{1,9})\n")
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")  # JSON's escape of U+D800..U+DFFF
LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads joins the valid pairs
DTYPES = frozenset(
    {
        "float64", "float32", "float16", "bfloat16", "complex64", "complex128",
        "int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64", "bool",
    }
)  # fmt: skip
NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class CaptureError(ValueError):
    """The sandbox's output is missing, forged or malformed."""


# -- typed values --------------------------------------------------------------------


@dataclass(frozen=True)
class TensorValue:
    dtype: str
    shape: tuple[int, ...]
    device: str
    data: tuple[float | int | bool, ...]
    requires_grad: bool = False
    is_leaf: bool = True
    grad_fn: str | None = None
    grad: TensorValue | None = None
    truncated: bool = False
    kind: str = "tensor"
    retains_grad: bool = False  # a non-leaf whose .grad autograd keeps (retain_grad())

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def device_type(self) -> str:
        return self.device.split(":")[0]

    @property
    def complete(self) -> bool:
        """Carries all its values, or exactly the first TENSOR_ELEMENTS of a larger tensor;
        never a data-less tensor on the `meta` device."""
        return self.device_type != "meta" and _complete(self.data, self.numel, self.dtype)

    def floats(self) -> list[float]:
        return [float(v) for v in self.data]


@dataclass(frozen=True)
class NdarrayValue:
    dtype: str
    shape: tuple[int, ...]
    data: tuple[float | int | bool, ...]
    truncated: bool = False
    kind: str = "ndarray"

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def complete(self) -> bool:
        return _complete(self.data, self.numel, self.dtype)

    def floats(self) -> list[float]:
        return [float(v) for v in self.data]


def stored_length(numel: int, dtype: str) -> int:
    """How many data values an honest capture holds for `numel` elements: all of them, or
    TENSOR_ELEMENTS of a larger tensor (complex numbers as real, imaginary pairs)."""
    return min(numel, TENSOR_ELEMENTS) * (2 if dtype.startswith("complex") else 1)


def full_length(numel: int, dtype: str) -> int:
    return numel * (2 if dtype.startswith("complex") else 1)


def _complete(data: tuple[float | int | bool, ...], numel: int, dtype: str) -> bool:
    return len(data) in (full_length(numel, dtype), stored_length(numel, dtype))


@dataclass(frozen=True)
class ScalarValue:
    """number, bool, str and none."""

    kind: str
    value: float | int | bool | str | None


@dataclass(frozen=True)
class ListValue:
    items: tuple[Value, ...]
    kind: str = "list"


@dataclass(frozen=True)
class DictValue:
    items: Mapping[str, Value]
    kind: str = "dict"


@dataclass(frozen=True)
class ModuleValue:
    type: str
    params: Mapping[str, TensorValue]
    kind: str = "module"


@dataclass(frozen=True)
class ExceptionValue:
    type: str
    message: str
    kind: str = "exception"


@dataclass(frozen=True)
class ObjectValue:
    type: str
    kind: str = "object"


Value = Union[  # noqa: UP007  (a runtime alias of a union of frozen dataclasses)
    TensorValue, NdarrayValue, ScalarValue, ListValue, DictValue, ModuleValue,
    ExceptionValue, ObjectValue,
]  # fmt: skip


# -- run records ---------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorInfo:
    type: str
    message: str
    line: int | None = None
    traceback: str = ""
    # The exception's classes, most derived first, as "module.qualname" (harness-made;
    # empty in captures without it): exception checks use isinstance semantics.
    mro: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "message": self.message,
            "line": self.line,
            "traceback": self.traceback,
        }

    @property
    def qualified(self) -> str:
        """The exception's own class as "module.qualname" (its bare type without MRO)."""
        return self.mro[0] if self.mro else self.type

    def is_a(self, other: ErrorInfo) -> bool:
        """isinstance semantics: this exception is an instance of `other`'s class (a
        subclass counts). Without MROs, the bare type names must be equal."""
        if self.mro and other.mro:
            return other.mro[0] in self.mro
        return self.type == other.type


@dataclass(frozen=True)
class BackwardCall:
    api: str
    loss: float | None
    loss_shape: tuple[int, ...] | None
    gradient_given: bool
    retain_graph: bool | None
    grads_before: Mapping[str, Value | None]
    grads_after: Mapping[str, Value | None]
    error: ErrorInfo | None
    # Provenance (empty/None in captures without it): the tracked names the root is, the
    # tracked names its graph reaches (None: not walked), the tracked names among
    # `inputs=` (None: no inputs given), and autograd.grad's result per tracked input.
    roots: tuple[str, ...] = ()
    graph: tuple[str, ...] | None = None
    inputs: tuple[str, ...] | None = None
    results: Mapping[str, Value | None] = field(default_factory=dict)
    # An accumulating call whose leaves (tracked or not) already held a non-zero grad.
    onto_stale: bool = False
    # Its graph goes through a node an earlier call's went through (None: not walked);
    # the derivatives made with create_graph (numbered) it differentiates (None: not
    # walked); a serial per tracked tensor, the same while a name holds the same object.
    graph_reused: bool | None = None
    differentiates: tuple[int, ...] | None = None
    identities: Mapping[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def accumulates(self) -> bool:
        """Writes .grad (backward), unlike torch.autograd.grad."""
        return self.api != "autograd.grad"

    def reaches(self, name: str) -> bool | None:
        """Did this call's gradient reach `name` (None: unknown)?"""
        if self.graph is None:
            return None
        return name in self.graph and (self.inputs is None or name in self.inputs)


@dataclass(frozen=True)
class StepRecord:
    """One optimizer step: the tracked parameters' values before and after it (None:
    too many values to keep)."""

    index: int
    before: Mapping[str, Value] | None
    after: Mapping[str, Value] | None


@dataclass(frozen=True)
class Provenance:
    """Where the final values came from (FORMAT.md section 3): the index of the last
    accumulating backward call and the grads it left, autograd.grad's latest result per
    tracked name, and the parameter values around optimizer steps."""

    calls: int = 0
    last_backward: int | None = None
    after_last_backward: Mapping[str, Value | None] = field(default_factory=dict)
    grad_results: Mapping[str, Value | None] = field(default_factory=dict)
    steps: tuple[StepRecord, ...] = ()
    steps_truncated: bool = False
    last_step: StepRecord | None = None


@dataclass(frozen=True)
class Termination:
    reason: str  # "exit" | "signal" | "result-too-large" | "harness-error"
    code: int
    message: str


@dataclass(frozen=True)
class TamperEvent:
    """An attempt to reach the harness that its audit hook recorded (FORMAT.md section 3):
    `kind` names what was tried (e.g. "ctypes", "proc-self"), `detail` says how."""

    kind: str
    detail: str


@dataclass(frozen=True)
class Case:
    visible: bool
    observations: Mapping[str, Value]
    exception: ErrorInfo | None
    backward_calls: tuple[BackwardCall, ...]
    stdout: str
    input: Mapping[str, Any] | None = None  # reference captures only: the encoded case
    stdout_truncated: bool = False
    # The observed names to which a backward call of the case left a non-zero grad.
    grads_filled: tuple[str, ...] = ()


@dataclass(frozen=True)
class Capture:
    kind: str
    torch: str
    device: str
    variables: Mapping[str, Value]
    backward_calls: tuple[BackwardCall, ...]
    optimizer_steps: int
    stdout: str
    stdout_truncated: bool
    exception: ErrorInfo | None
    duration_s: float
    terminated: Termination | None = None
    defined: Mapping[str, bool] = field(default_factory=dict)
    cases: tuple[Case, ...] = ()
    stderr: str = ""
    stderr_truncated: bool = False
    tamper: tuple[TamperEvent, ...] = ()
    provenance: Provenance | None = None  # script captures of a harness that records it
    # Exercises whose learner seeds torch (`seed_by_learner`): did the code seed it itself
    # (torch's seed after the run is not the one the harness drew)? None: not recorded.
    torch_seeded: bool | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def output_truncated(self) -> bool:
        """Did the code print more than the output cap (stdout, stderr or a case's)?"""
        cases = any(case.stdout_truncated for case in self.cases)
        return self.stdout_truncated or self.stderr_truncated or cases


# -- the frame -----------------------------------------------------------------------


def parse_result(stdout: bytes, nonce: str, *, max_bytes: int = MAX_RESULT_BYTES) -> Capture:
    """Finds `GRADLAB-RESULT <nonce> <length>` and validates the JSON after it."""
    header = f"GRADLAB-RESULT {nonce} ".encode("ascii")
    start = stdout.find(header)
    if start < 0:
        raise CaptureError("no result frame in the sandbox's output")
    match = FRAME_PATTERN.match(stdout, start)
    if match is None or match.group(1).decode() != nonce:
        raise CaptureError("malformed result frame")
    length = int(match.group(2))
    if length > max_bytes:
        raise CaptureError(f"result of {length} bytes exceeds the cap of {max_bytes}")
    body = stdout[match.end() : match.end() + length]
    if len(body) != length:
        raise CaptureError("result shorter than its frame announces")
    try:
        raw = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise CaptureError(f"result is not valid JSON ({error})") from None
    if SURROGATE_ESCAPE.search(body):
        try:
            raw = valid_text(raw)
        except RecursionError:
            raise CaptureError("result is nested too deeply") from None
    return validate_capture(raw)


def valid_text(raw: Any) -> Any:
    """The decoded JSON with every lone surrogate (JSON's `\\ud800` escape: what the learner
    printed, raised or named, never valid Unicode) replaced by U+FFFD, in keys and values:
    what is stored from a capture is always valid UTF-8 text."""
    if isinstance(raw, str):
        return LONE_SURROGATE.sub("\ufffd", raw)
    if isinstance(raw, list):
        return [valid_text(item) for item in raw]
    if isinstance(raw, dict):
        return {valid_text(key): valid_text(item) for key, item in raw.items()}
    return raw


def validate_capture(raw: Any) -> Capture:
    """Validates a decoded capture (also used for captures read back from the cache)."""
    try:
        return _capture(raw)
    except CaptureError:
        raise
    except Exception as error:  # any surprise in untrusted data is a bad capture
        raise CaptureError(f"malformed capture ({type(error).__name__}: {error})") from None


def _capture(raw: Any) -> Capture:
    obj = _dict(raw, "capture")
    if obj.get("protocol") != 1:
        raise CaptureError("capture: unsupported protocol")
    kind = _choice(obj.get("kind"), ("script", "function"), "capture.kind")
    variables = _dict(obj.get("variables", {}), "variables")
    cases_raw = _list(obj.get("cases", []), "cases", MAX_CASES)
    defined = _dict(obj.get("defined", {}), "defined")
    return Capture(
        kind=kind,
        torch=_str(obj.get("torch", ""), "torch"),
        device=_str(obj.get("device", "cpu"), "device"),
        variables=MappingProxyType(
            {_str(k, "variables"): value(v, f"variables.{k}") for k, v in variables.items()}
        ),
        backward_calls=_calls(obj.get("backward_calls", []), "backward_calls"),
        optimizer_steps=_int(obj.get("optimizer_steps", 0), "optimizer_steps"),
        stdout=_str(obj.get("stdout", ""), "stdout", MAX_OUTPUT),
        stdout_truncated=_bool(obj.get("stdout_truncated", False), "stdout_truncated"),
        exception=_error(obj.get("exception"), "exception"),
        duration_s=_float(obj.get("duration_s", 0.0), "duration_s"),
        terminated=_termination(obj.get("terminated")),
        defined=MappingProxyType({_str(k, "defined"): _bool(v, k) for k, v in defined.items()}),
        cases=tuple(_case(c, f"cases[{i}]") for i, c in enumerate(cases_raw)),
        stderr=_str(obj.get("stderr", ""), "stderr", MAX_OUTPUT),
        stderr_truncated=_bool(obj.get("stderr_truncated", False), "stderr_truncated"),
        tamper=_tamper(obj.get("tamper", [])),
        provenance=_provenance(obj.get("provenance")),
        torch_seeded=_optional_bool(obj.get("torch_seeded"), "torch_seeded"),
        raw=obj,
    )


def _provenance(raw: Any) -> Provenance | None:
    if raw is None:
        return None
    obj = _dict(raw, "provenance")
    last = obj.get("last_backward")
    index: int | None = None
    after: Mapping[str, Value | None] = MappingProxyType({})
    if last is not None:
        record = _dict(last, "provenance.last_backward")
        index = _int(record.get("index"), "provenance.last_backward.index")
        after = _grads(record.get("grads_after", {}), "provenance.last_backward.grads_after")
    steps = _list(obj.get("steps", []), "provenance.steps", MAX_STEPS)
    last_step = obj.get("last_step")
    return Provenance(
        calls=_int(obj.get("calls", 0), "provenance.calls"),
        last_backward=index,
        after_last_backward=after,
        grad_results=_grads(obj.get("grad_results", {}), "provenance.grad_results"),
        steps=tuple(_step(s, f"provenance.steps[{i}]") for i, s in enumerate(steps)),
        steps_truncated=_bool(obj.get("steps_truncated", False), "provenance.steps_truncated"),
        last_step=None if last_step is None else _step(last_step, "provenance.last_step"),
    )


def _step(raw: Any, where: str) -> StepRecord:
    obj = _dict(raw, where)
    return StepRecord(
        index=_int(obj.get("index"), f"{where}.index"),
        before=_values(obj.get("before"), f"{where}.before"),
        after=_values(obj.get("after"), f"{where}.after"),
    )


def _values(raw: Any, where: str) -> Mapping[str, Value] | None:
    if raw is None:
        return None
    obj = _dict(raw, where)
    if len(obj) > MAX_NAMES:
        raise CaptureError(f"{where}: too many names")
    return MappingProxyType({_str(k, where): value(v, f"{where}.{k}") for k, v in obj.items()})


def _names(raw: Any, where: str) -> tuple[str, ...]:
    return tuple(_str(v, where)[:MAX_TAMPER_TEXT] for v in _list(raw, where, MAX_NAMES))


def _tamper(raw: Any) -> tuple[TamperEvent, ...]:
    events = []
    for index, item in enumerate(_list(raw, "tamper", MAX_TAMPER_EVENTS)):
        where = f"tamper[{index}]"
        obj = _dict(item, where)
        kind = _str(obj.get("kind"), f"{where}.kind")[:MAX_TAMPER_TEXT]
        detail = _str(obj.get("detail", ""), f"{where}.detail")[:MAX_TAMPER_TEXT]
        events.append(TamperEvent(kind=kind, detail=detail))
    return tuple(events)


def _termination(raw: Any) -> Termination | None:
    if raw is None:
        return None
    obj = _dict(raw, "terminated")
    return Termination(
        reason=_str(obj.get("reason", ""), "terminated.reason"),
        code=_int(obj.get("code", 0), "terminated.code", signed=True),
        message=_str(obj.get("message", ""), "terminated.message"),
    )


def _case(raw: Any, where: str) -> Case:
    obj = _dict(raw, where)
    observations = _dict(obj.get("observations", {}), f"{where}.observations")
    case_input = obj.get("input")
    if case_input is not None:
        value(case_input, f"{where}.input")  # validates the shape of the encoded case
    return Case(
        visible=_bool(obj.get("visible", False), f"{where}.visible"),
        observations=MappingProxyType(
            {_str(k, where): value(v, f"{where}.observations.{k}") for k, v in observations.items()}
        ),
        exception=_error(obj.get("exception"), f"{where}.exception"),
        backward_calls=_calls(obj.get("backward_calls", []), f"{where}.backward_calls"),
        stdout=_str(obj.get("stdout", ""), f"{where}.stdout", MAX_OUTPUT),
        input=case_input,
        stdout_truncated=_bool(obj.get("stdout_truncated", False), f"{where}.stdout_truncated"),
        grads_filled=_names(obj.get("grads_filled", []), f"{where}.grads_filled"),
    )


def _calls(raw: Any, where: str) -> tuple[BackwardCall, ...]:
    return tuple(_call(c, f"{where}[{i}]") for i, c in enumerate(_list(raw, where, MAX_CALLS)))


def _call(raw: Any, where: str) -> BackwardCall:
    obj = _dict(raw, where)
    loss = obj.get("loss")
    shape = obj.get("loss_shape")
    retain = obj.get("retain_graph")
    graph, inputs = obj.get("graph"), obj.get("inputs")
    return BackwardCall(
        api=_choice(
            obj.get("api"), ("Tensor.backward", "autograd.backward", "autograd.grad"), where
        ),
        loss=None if loss is None else _float(loss, f"{where}.loss"),
        loss_shape=None if shape is None else _shape(shape, f"{where}.loss_shape"),
        gradient_given=_bool(obj.get("gradient_given", False), f"{where}.gradient_given"),
        retain_graph=None if retain is None else _bool(retain, f"{where}.retain_graph"),
        grads_before=_grads(obj.get("grads_before", {}), f"{where}.grads_before"),
        grads_after=_grads(obj.get("grads_after", {}), f"{where}.grads_after"),
        error=_error(obj.get("error"), f"{where}.error"),
        roots=_names(obj.get("roots", []), f"{where}.roots"),
        graph=None if graph is None else _names(graph, f"{where}.graph"),
        inputs=None if inputs is None else _names(inputs, f"{where}.inputs"),
        results=_grads(obj.get("results", {}), f"{where}.results"),
        onto_stale=_bool(obj.get("onto_stale", False), f"{where}.onto_stale"),
        graph_reused=_optional_bool(obj.get("graph_reused"), f"{where}.graph_reused"),
        differentiates=_indices(obj.get("differentiates"), f"{where}.differentiates"),
        identities=_serials(obj.get("identities", {}), f"{where}.identities"),
    )


def _indices(raw: Any, where: str) -> tuple[int, ...] | None:
    if raw is None:
        return None
    return tuple(_int(item, where) for item in _list(raw, where, MAX_CALLS))


def _serials(raw: Any, where: str) -> Mapping[str, int]:
    obj = _dict(raw, where)
    if len(obj) > MAX_NAMES:
        raise CaptureError(f"{where}: too many names")
    return MappingProxyType({_str(k, where): _int(v, f"{where}.{k}") for k, v in obj.items()})


def _grads(raw: Any, where: str) -> Mapping[str, Value | None]:
    obj = _dict(raw, where)
    if len(obj) > MAX_NAMES:
        raise CaptureError(f"{where}: too many names")
    return MappingProxyType(
        {_str(k, where): None if v is None else value(v, f"{where}.{k}") for k, v in obj.items()}
    )


def _error(raw: Any, where: str) -> ErrorInfo | None:
    if raw is None:
        return None
    obj = _dict(raw, where)
    line = obj.get("line")
    mro = _list(obj.get("mro", []), f"{where}.mro", MAX_MRO)
    return ErrorInfo(
        type=_str(obj.get("type"), f"{where}.type"),
        message=_str(obj.get("message", ""), f"{where}.message"),
        line=None if line is None else _int(line, f"{where}.line"),
        traceback=_str(obj.get("traceback", ""), f"{where}.traceback"),
        mro=tuple(_str(v, f"{where}.mro")[:MAX_TAMPER_TEXT] for v in mro),
    )


# -- values --------------------------------------------------------------------------


def value(raw: Any, where: str, depth: int = 0) -> Value:
    """Validates one tagged value (FORMAT.md section 3)."""
    if depth > MAX_DEPTH:
        raise CaptureError(f"{where}: nested too deeply")
    obj = _dict(raw, where)
    kind = obj.get("kind")
    if kind == "tensor":
        return _tensor(obj, where, depth)
    if kind == "ndarray":
        dtype = _str(obj.get("dtype"), f"{where}.dtype")
        shape = _shape(obj.get("shape"), f"{where}.shape")
        _bool(obj.get("truncated", False), f"{where}.truncated")  # judged by our own cap
        data = _data(obj.get("data"), shape, dtype, where)
        truncated = len(data) < full_length(math.prod(shape), dtype)
        return NdarrayValue(dtype=dtype, shape=shape, data=data, truncated=truncated)
    if kind in ("number", "bool", "str", "none"):
        return _scalar(kind, obj.get("value"), where)
    if kind == "list":
        items = _list(obj.get("items"), f"{where}.items", MAX_ITEMS)
        return ListValue(tuple(value(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(items)))
    if kind == "dict":
        items_raw = _dict(obj.get("items"), f"{where}.items")
        if len(items_raw) > MAX_ITEMS:
            raise CaptureError(f"{where}: too many items")
        return DictValue(
            MappingProxyType(
                {_str(k, where): value(v, f"{where}.{k}", depth + 1) for k, v in items_raw.items()}
            )
        )
    if kind == "module":
        params = _dict(obj.get("params", {}), f"{where}.params")
        typed = {}
        for name, param in params.items():
            tensor = value(param, f"{where}.params.{name}", depth + 1)
            if not isinstance(tensor, TensorValue):
                raise CaptureError(f"{where}.params.{name}: must be a tensor")
            typed[_str(name, where)] = tensor
        return ModuleValue(type=_str(obj.get("type"), where), params=MappingProxyType(typed))
    if kind == "exception":
        return ExceptionValue(
            type=_str(obj.get("type"), f"{where}.type"),
            message=_str(obj.get("message", ""), f"{where}.message"),
        )
    if kind == "object":
        return ObjectValue(type=_str(obj.get("type", "object"), f"{where}.type"))
    raise CaptureError(f"{where}: unknown value kind {kind!r}")


def _tensor(obj: Mapping[str, Any], where: str, depth: int) -> TensorValue:
    dtype = _str(obj.get("dtype"), f"{where}.dtype")
    if dtype not in DTYPES:
        raise CaptureError(f"{where}.dtype: unknown dtype {dtype!r}")
    shape = _shape(obj.get("shape"), f"{where}.shape")
    _bool(obj.get("truncated", False), f"{where}.truncated")  # judged by our own cap
    data = _data(obj.get("data"), shape, dtype, where)
    grad = obj.get("grad")
    grad_value: TensorValue | None = None
    if grad is not None:
        decoded = value(grad, f"{where}.grad", depth + 1)
        if not isinstance(decoded, TensorValue):
            raise CaptureError(f"{where}.grad: must be a tensor or null")
        grad_value = decoded
    grad_fn = obj.get("grad_fn")
    return TensorValue(
        dtype=dtype,
        shape=shape,
        device=_str(obj.get("device", "cpu"), f"{where}.device"),
        data=data,
        requires_grad=_bool(obj.get("requires_grad", False), f"{where}.requires_grad"),
        is_leaf=_bool(obj.get("is_leaf", True), f"{where}.is_leaf"),
        grad_fn=None if grad_fn is None else _str(grad_fn, f"{where}.grad_fn"),
        grad=grad_value,
        truncated=len(data) < full_length(math.prod(shape), dtype),
        retains_grad=_bool(obj.get("retains_grad", False), f"{where}.retains_grad"),
    )


def _data(
    raw: Any, shape: tuple[int, ...], dtype: str, where: str
) -> tuple[float | int | bool, ...]:
    """The values, at most one per element. Fewer (data cut short, a meta tensor) are
    kept: such a value never matches (`complete`) and the report flags it."""
    items = _list(raw, f"{where}.data", MAX_ELEMENTS)
    expected = full_length(math.prod(shape), dtype)
    if len(items) > expected:
        raise CaptureError(f"{where}.data: {len(items)} values for shape {list(shape)}")
    return tuple(_element(v, where) for v in items)


def _element(raw: Any, where: str) -> float | int | bool:
    if isinstance(raw, bool | float):
        return raw
    if isinstance(raw, int):
        if not MIN_ELEMENT <= raw <= MAX_ELEMENT:
            raise CaptureError(f"{where}.data: an integer outside every dtype's range")
        return raw
    if isinstance(raw, str) and raw in NON_FINITE:
        return NON_FINITE[raw]
    raise CaptureError(f"{where}.data: {_short(raw)} is not a number")


def _short(raw: Any) -> str:
    text = repr(raw) if isinstance(raw, str | bool | float | type(None)) else type(raw).__name__
    return text[:40]


def _scalar(kind: str, raw: Any, where: str) -> ScalarValue:
    if kind == "none":
        return ScalarValue("none", None)
    if kind == "bool":
        return ScalarValue("bool", _bool(raw, where))
    if kind == "str":
        return ScalarValue("str", _str(raw, where))
    return ScalarValue("number", _number(raw, where))


def _number(raw: Any, where: str) -> float | int:
    """A JSON number or "nan"/"inf"/"-inf". Integers beyond MAX_EXACT_INT (a Python int
    may be huge) become floats, infinite beyond the float range: every number the checks
    read converts to float without an OverflowError."""
    if isinstance(raw, str) and raw in NON_FINITE:
        return NON_FINITE[raw]
    if isinstance(raw, float):
        return raw
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw if abs(raw) <= MAX_EXACT_INT else _int_as_float(raw)
    raise CaptureError(f"{where}: must be a number")


def _int_as_float(raw: int) -> float:
    try:
        return float(raw)
    except OverflowError:
        return math.inf if raw > 0 else -math.inf


# -- primitives ----------------------------------------------------------------------


def _dict(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise CaptureError(f"{where}: must be an object")
    return raw


def _list(raw: Any, where: str, limit: int) -> list[Any]:
    if not isinstance(raw, list):
        raise CaptureError(f"{where}: must be a list")
    if len(raw) > limit:
        raise CaptureError(f"{where}: more than {limit} items")
    return raw


def _str(raw: Any, where: str, limit: int = MAX_STRING) -> str:
    if not isinstance(raw, str):
        raise CaptureError(f"{where}: must be a string")
    if len(raw) > limit:
        raise CaptureError(f"{where}: string too long")
    return raw


def _optional_bool(raw: Any, where: str) -> bool | None:
    return None if raw is None else _bool(raw, where)


def _bool(raw: Any, where: str) -> bool:
    if not isinstance(raw, bool):
        raise CaptureError(f"{where}: must be true or false")
    return raw


def _int(raw: Any, where: str, *, signed: bool = False, limit: int = MAX_COUNT) -> int:
    if not isinstance(raw, int) or isinstance(raw, bool) or (raw < 0 and not signed):
        raise CaptureError(f"{where}: must be a non-negative integer")
    if abs(raw) > limit:
        raise CaptureError(f"{where}: integer out of range")
    return raw


def _float(raw: Any, where: str) -> float:
    return float(_number(raw, where))


def _shape(raw: Any, where: str) -> tuple[int, ...]:
    items = _list(raw, where, MAX_DIMS)
    shape = tuple(_int(v, where, limit=MAX_DIM) for v in items)
    if math.prod(shape) > MAX_NUMEL:
        raise CaptureError(f"{where}: more elements than a tensor can hold")
    return shape


def _choice(raw: Any, choices: tuple[str, ...], where: str) -> str:
    if raw not in choices:
        raise CaptureError(f"{where}: must be one of {list(choices)}")
    return raw
