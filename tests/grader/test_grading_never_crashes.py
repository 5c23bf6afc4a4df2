"""Grading never crashes on learner data (property-based, with hypothesis).

Random and extreme captures (subnormals, infinities, NaN, huge integers, deep nesting,
wrong types, data cut short, meta tensors, tamper records) go through the trusted side:
the parser either returns a typed capture or raises CaptureError (which the engine turns
into a failed report), and every registered check, run through the report, gives a
report that serialises to strict JSON. No check may raise at all: a grading-error flag
here is a bug of ours that these examples found.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lanes import examples

from grader.capture import DTYPES, CaptureError, parse_result, validate_capture
from grader.checks.base import CheckSpec
from grader.checks.diagnoses.catalogue import DIAGNOSES
from grader.checks.options import OptionContext
from grader.checks.registry import REGISTRY, parse_options
from grader.protocol import Report
from grader.report import build_report, failed_report
from grader.spec import Manifest, Package

# heavy: property tests over random and extreme captures
pytestmark = pytest.mark.heavy

# Moderate example counts: this file is in the fast lane (about 10 s of CPU in all; a third
# of that there: lanes.examples).
EXAMPLES = settings(
    max_examples=examples(50),
    deadline=None,
    database=None,  # no .hypothesis/ folder in the checkout; a failure prints its example
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
NONCE = "ab" * 16
NAMES = ("x", "y", "m", "g", "model")
KEYS = (*NAMES, "_v")  # names and observation keys, "_v" a variant
EXTREME_FLOATS = [5e-324, 1e-310, -1e-310, 1e308, -1e308, 0.0, -0.0]
EXTREME_INTS = [2**53 + 1, 2**63, 2**64 - 1, 2**64, 10**400, -(10**400), -(2**63)]
NON_FINITE = ["nan", "inf", "-inf"]

# -- values ----------------------------------------------------------------------------

floats = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(EXTREME_FLOATS)
ints = st.integers() | st.sampled_from(EXTREME_INTS)
numbers = floats | ints | st.sampled_from(NON_FINITE)
# What a tensor of some dtype can hold: floats, or integers within int64/uint64.
elements = floats | st.integers(-(2**63), 2**64 - 1) | st.sampled_from(NON_FINITE)
texts = st.text(max_size=30) | st.sampled_from(
    ["grad can be implicitly created only for scalar outputs", "1.5 0.25 inf nan"]
)
json_leaves = st.none() | st.booleans() | ints | floats | texts
any_json = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)


@st.composite
def tensors(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    shape = draw(st.lists(st.integers(0, 3), max_size=3) | st.just([2**40]))
    numel = 1
    for dim in shape:
        numel *= dim
    dtype = draw(st.sampled_from(["float32", "float64"]) | st.sampled_from(sorted(DTYPES)))
    width = 2 if dtype.startswith("complex") else 1
    length = numel * width if numel <= 64 else 0
    # Mostly all the values; sometimes data cut short or none (as on the meta device).
    size = draw(st.sampled_from([length] * 4 + [max(length - 1, 0), 0]))
    grad = draw(st.none() | tensors(depth + 1)) if depth == 0 else None
    return {
        "kind": "tensor",
        "dtype": dtype,
        "shape": shape,
        "device": draw(st.sampled_from(["cpu", "cpu", "cuda:0", "meta"])),
        "requires_grad": draw(st.booleans()),
        "is_leaf": draw(st.booleans()),
        "grad_fn": draw(st.none() | st.sampled_from(["PowBackward0", "SumBackward0"])),
        "data": draw(st.lists(elements, min_size=size, max_size=size)),
        "grad": grad,
        "truncated": draw(st.booleans()),
    }


@st.composite
def float_tensors(draw: st.DrawFn) -> dict[str, Any]:
    """A float tensor with all its values and a grad of its shape: what value and grad
    checks compare most often."""
    shape = draw(st.lists(st.integers(1, 3), max_size=2))
    numel = 1
    for dim in shape:
        numel *= dim
    dtype = draw(st.sampled_from(["float32", "float64"]))
    sized = st.lists(floats, min_size=numel, max_size=numel)
    grad = {"kind": "tensor", "dtype": dtype, "shape": shape, "data": draw(sized)}
    return {"kind": "tensor", "dtype": dtype, "shape": shape, "device": "cpu",
            "requires_grad": True, "is_leaf": True, "data": draw(sized), "grad": grad}  # fmt: skip


def _list(items: list[Any]) -> dict[str, Any]:
    return {"kind": "list", "items": items}


def _scalar(kind: str, value: Any) -> dict[str, Any]:
    return {"kind": kind, "value": value}


scalars = (
    st.builds(_scalar, st.just("number"), numbers)
    | st.builds(_scalar, st.just("bool"), st.booleans())
    | st.builds(_scalar, st.just("str"), texts)
    | st.just({"kind": "none"})
    | st.builds(lambda m: {"kind": "exception", "type": "ValueError", "message": m}, texts)
    | st.just({"kind": "object", "type": "Thing"})
)


@st.composite
def arrays(draw: st.DrawFn) -> dict[str, Any]:
    shape = draw(st.lists(st.integers(0, 3), max_size=2))
    numel = 1
    for dim in shape:
        numel *= dim
    size = draw(st.sampled_from([numel, numel, numel, 0]))
    data = draw(st.lists(elements, min_size=size, max_size=size))
    return {"kind": "ndarray", "dtype": "float64", "shape": shape, "data": data}


leaf_values = tensors() | scalars | arrays()
values = st.recursive(
    leaf_values,
    lambda inner: st.builds(
        lambda items: {"kind": "list", "items": items}, st.lists(inner, max_size=3)
    )
    | st.builds(
        lambda items: {"kind": "dict", "items": items},
        st.dictionaries(st.sampled_from(["ok", "message", "a"]), inner, max_size=3),
    )
    | st.builds(
        lambda params: {"kind": "module", "type": "Linear", "params": params},
        st.dictionaries(st.sampled_from(["weight", "bias"]), tensors(), max_size=2),
    ),
    max_leaves=6,
)


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"kind": "none"}
    for _ in range(depth):
        value = {"kind": "list", "items": [value]}
    return value


# Mostly well-formed values, sometimes anything at all (wrong types, junk, deep nesting).
deep = st.integers(10, 40).map(_nested)


some_value = st.one_of(values, values, values, any_json, deep)

# -- run records -------------------------------------------------------------------------

grads = st.dictionaries(st.sampled_from(NAMES), st.none() | tensors(), max_size=3)
errors = st.none() | st.builds(
    lambda message: {"type": "RuntimeError", "message": message, "line": 3, "traceback": ""},
    texts,
)
calls = st.lists(
    st.fixed_dictionaries(
        {
            "api": st.sampled_from(["Tensor.backward", "autograd.backward", "autograd.grad"]),
            "loss": st.none() | numbers,
            "loss_shape": st.none() | st.lists(st.integers(0, 3), max_size=2),
            "gradient_given": st.booleans(),
            "retain_graph": st.none() | st.booleans(),
            "grads_before": grads,
            "grads_after": grads,
            "error": errors,
        }
    ),
    max_size=3,
)
tamper = st.lists(
    st.fixed_dictionaries({"kind": st.sampled_from(["ctypes", "proc-self"]), "detail": texts}),
    max_size=2,
)
stdouts = st.lists(numbers.map(str), max_size=6).map(" ".join) | texts


@st.composite
def captures(draw: st.DrawFn, kind: str, junk: bool = False) -> dict[str, Any]:
    """A capture of `kind`: well-formed values (extreme numbers included), or with
    `junk` also wrong types, deep nesting and out-of-range integers anywhere."""
    chosen = some_value if junk else values
    steps = st.integers(0, 12) | st.sampled_from(EXTREME_INTS) if junk else st.integers(0, 12)
    raw: dict[str, Any] = {
        "protocol": 1,
        "kind": kind,
        "torch": "2.13.0",
        "device": draw(st.sampled_from(["cpu", "cuda"])),
        "variables": {
            **draw(st.dictionaries(st.sampled_from(KEYS), chosen, max_size=3)),
            **draw(st.fixed_dictionaries({}, optional={"x": float_tensors()})),
        },
        "backward_calls": draw(calls),
        "optimizer_steps": draw(steps),
        "stdout": draw(stdouts),
        "stdout_truncated": False,
        "exception": draw(errors),
        "duration_s": draw(numbers),
        "terminated": None,
        "tamper": draw(tamper),
    }
    if kind == "function":
        raw["defined"] = {"f": draw(st.booleans())}
        raw["cases"] = draw(st.lists(cases(chosen), min_size=1, max_size=3))
    return raw


@st.composite
def cases(draw: st.DrawFn, chosen: st.SearchStrategy[Any]) -> dict[str, Any]:
    return {
        "visible": draw(st.booleans()),
        "observations": {
            **draw(st.dictionaries(st.sampled_from(KEYS), chosen, max_size=3)),
            **draw(st.fixed_dictionaries({}, optional={"x": float_tensors()})),
        },
        "exception": draw(errors),
        "backward_calls": draw(calls),
        "stdout": draw(stdouts),
        "input": {"kind": "dict", "items": {}},
    }


# -- a package with every check type ------------------------------------------------------

TARGETS = {"message": "m", "gradcheck": "g", "device": "model"}
EXTRA_OPTIONS: dict[str, list[dict[str, Any]]] = {
    "loss_curve": [{}, {"mode": "properties", "falls": True, "final_below": 0.1, "min_steps": 2}],
    "stdout": [{}, {"mode": "losses"}],
    "value": [{}, {"device": "any", "variants": {"sign-error": "_v"}}],
    "grad": [{}, {"rtol": 0.0, "atol": 0.0}],
    "backward_calls": [{"count": True, "retain_graph": True}, {"steps_match": True}],
}


def every_check(kind: str) -> tuple[CheckSpec, ...]:
    context = OptionContext(NAMES, frozenset(DIAGNOSES))
    specs = []
    for name, check_type in REGISTRY.items():
        for index, raw in enumerate(EXTRA_OPTIONS.get(name, [{}])):
            target = TARGETS.get(name, "x") if check_type.needs_target else None
            specs.append(
                CheckSpec(
                    name=f"{name} {index}",
                    type=name,
                    points=1,
                    target=target,
                    options=parse_options(name, raw, context),
                )
            )
    return tuple(specs)


def package(kind: str) -> Package:
    checks = every_check(kind)
    manifest = Manifest(
        slug="every-check",
        title="Every check",
        kind=kind,
        points=len(checks),
        names=NAMES if kind == "script" else ("f", *NAMES),
        checks=checks,
        entry="f" if kind == "function" else None,
        trials=3 if kind == "function" else 0,
    )
    return Package(slug="every-check", manifest=manifest, files={})


PACKAGES = {kind: package(kind) for kind in ("script", "function")}


def assert_strict_json(report: Report) -> None:
    text = json.dumps(report.to_json(), allow_nan=False)
    assert Report.from_json(json.loads(text)) == report


# -- the properties --------------------------------------------------------------------


@EXAMPLES
@given(raw=any_json | captures("script", junk=True) | captures("function", junk=True))
def test_the_parser_returns_a_capture_or_a_capture_error_for_anything(raw: Any) -> None:
    body = json.dumps(raw).encode()
    framed = f"GRADLAB-RESULT {NONCE} {len(body)}\n".encode() + body
    try:
        capture = parse_result(framed, NONCE)
    except CaptureError as error:
        assert str(error)
    else:
        assert capture.kind in ("script", "function")


@EXAMPLES
@given(kind=st.sampled_from(["script", "function"]), data=st.data())
def test_every_check_gives_a_report_for_random_and_extreme_captures(
    kind: str, data: st.DataObject
) -> None:
    try:
        reference = validate_capture(data.draw(captures(kind), label="reference"))
        learner = validate_capture(data.draw(captures(kind), label="learner"))
    except CaptureError:
        report = failed_report(PACKAGES[kind], "your program stopped", "fuzz", 0.1)
        assert_strict_json(report)
        return
    report = build_report(PACKAGES[kind], learner, reference, "fuzz", 0.1)
    assert_strict_json(report)
    assert len(report.checks) == len(PACKAGES[kind].manifest.checks)
    assert 0.0 <= report.score <= report.max_score
    errors = [f.detail for f in report.integrity_flags if f.kind == "grading-error"]
    assert errors == []
    tampered = len(learner.tamper) > 0
    assert tampered == any(f.kind == "tamper" for f in report.integrity_flags)


# -- the learner's capture as the reference's, mutated -------------------------------------

MUTATIONS: dict[str, Any] = {
    "keep": lambda v: v,
    "negate": lambda v: -v,
    "double": lambda v: 2 * v,
    "halve": lambda v: v / 2,
    "to-subnormal": lambda v: v * 1e-310,
    "to-huge": lambda v: v * 1e308,
    "subnormal": lambda v: 1e-310,
    "nan": lambda v: "nan",
    "inf": lambda v: "-inf",
    "huge-int": lambda v: 10**400,
}
TENSOR_MUTATIONS = ("cut-short", "meta", "no-data")


def _number(value: Any, how: str) -> Any:
    if how in TENSOR_MUTATIONS or isinstance(value, bool | str):
        return value
    try:
        return MUTATIONS[how](value)
    except (OverflowError, ArithmeticError):
        return value


def mutated(raw: Any, plan: list[str], at: list[int]) -> Any:
    """`raw` with its numbers and tensors changed as `plan` says, one step per node."""
    if isinstance(raw, list):
        return [mutated(item, plan, at) for item in raw]
    if not isinstance(raw, dict):
        return raw
    how = plan[at[0] % len(plan)]
    at[0] += 1
    changed = {key: mutated(item, plan, at) for key, item in raw.items()}
    if raw.get("kind") in ("tensor", "ndarray"):
        data = [_number(v, how) for v in raw.get("data", [])]
        if how == "cut-short":
            data = data[:-1]
        if how in ("meta", "no-data"):
            data = []
        changed["data"] = data
        if how == "meta" and raw.get("kind") == "tensor":
            changed["device"] = "meta"
    elif raw.get("kind") == "number":
        changed["value"] = _number(raw.get("value"), how)
    return changed


plans = st.lists(st.sampled_from([*MUTATIONS, *TENSOR_MUTATIONS]), min_size=1, max_size=3)


@settings(EXAMPLES, max_examples=examples(80))
@given(kind=st.sampled_from(["script", "function"]), data=st.data())
def test_every_check_gives_a_report_when_the_learner_mutates_the_references_values(
    kind: str, data: st.DataObject
) -> None:
    raw = data.draw(captures(kind), label="reference")
    plan = data.draw(plans, label="plan")
    learner_raw = mutated(raw, plan, [0])
    try:
        reference = validate_capture(raw)
        learner = validate_capture(json.loads(json.dumps(learner_raw)))
    except CaptureError:
        return
    report = build_report(PACKAGES[kind], learner, reference, "fuzz", 0.1)
    assert_strict_json(report)
    assert not [f.detail for f in report.integrity_flags if f.kind == "grading-error"]
    if plan == ["keep"]:
        assert report.checks == build_report(PACKAGES[kind], reference, reference, "", 0).checks
