"""Checks on named values: value, grad, graph, message, gradcheck."""

from __future__ import annotations

from grader import diagnose
from grader.capture import (
    Capture,
    DictValue,
    ExceptionValue,
    ModuleValue,
    ScalarValue,
    TensorValue,
    Value,
)
from grader.checks.base import (
    Outcome,
    Trial,
    accumulated,
    each_trial,
    failed,
    missing_grad_slug,
    passed,
)
from grader.checks.compare import Difference, Tolerance, compare_tensors, compare_values, normalise
from grader.checks.formatting import Missing, kind_name, show
from grader.spec import CheckSpec


def check_value(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    target = spec.target or ""
    tolerance = Tolerance.of(spec)

    def one(trial: Trial) -> Outcome:
        got, want = trial.got(target), trial.want(target)
        if isinstance(got, Missing):
            return failed(f"{target} is not defined", "missing-name")
        diff = compare_values(got, want, tolerance, accumulated=accumulated(trial))
        if diff is None:
            return passed(f"{target} is correct")
        for slug, key in (spec.option("variants") or {}).items():
            if compare_values(got, trial.want(key), tolerance) is None:
                return failed(f"{target}: {diff.message}", slug, **_pair(target, got, want))
        return failed(f"{target}: {diff.message}", diff.slug, **_pair(target, got, want))

    return each_trial(learner, reference, one, f"{target} is correct", spec)


def _pair(label: str, got: Value | Missing, want: Value | Missing) -> dict[str, str]:
    """The web's expected-vs-got row (each_trial drops it for hidden cases)."""
    return {"label": label, "got": show(got), "want": show(want)}


def _grad_difference(
    got: TensorValue, want: TensorValue, label: str, tolerance: Tolerance, trial: Trial
) -> Difference | None:
    mine, theirs = got.grad, want.grad
    if theirs is None:
        if mine is None:
            return None
        return Difference("wrong-value", f"{label}.grad is {show(mine)}, expected None")
    if mine is None:
        slug = missing_grad_slug(got, trial)
        return Difference(slug, f"{label}.grad is None, expected {show(theirs)}")
    diff = compare_tensors(mine, theirs, tolerance, accumulated=accumulated(trial))
    if diff is None:
        return None
    return Difference(diff.slug, f"{label}.grad: {diff.message}")


def _grads_difference(
    got: Value | Missing, want: Value | Missing, target: str, tolerance: Tolerance, trial: Trial
) -> Difference | None:
    if isinstance(want, Missing):
        return None
    if isinstance(got, Missing):
        return Difference("missing-name", f"{target} is not defined")
    if isinstance(want, TensorValue):
        if not isinstance(got, TensorValue):
            return Difference("wrong-type", f"{target} holds {kind_name(got)}, expected a tensor")
        return _grad_difference(got, want, target, tolerance, trial)
    if isinstance(want, ModuleValue):
        if not isinstance(got, ModuleValue) or set(got.params) != set(want.params):
            return Difference("wrong-type", f"{target} is not the expected module")
        for name, theirs in want.params.items():
            diff = _grad_difference(got.params[name], theirs, f"{target}.{name}", tolerance, trial)
            if diff is not None:
                return diff
        return None
    return Difference("wrong-type", f"{target} holds {kind_name(got)}")


def _has_grads(value: Value | Missing) -> bool:
    if isinstance(value, TensorValue):
        return value.grad is not None
    if isinstance(value, ModuleValue):
        return any(p.grad is not None for p in value.params.values())
    return False


def _grads_shown(value: Value | Missing) -> str:
    if isinstance(value, TensorValue):
        return show(value.grad)
    if isinstance(value, ModuleValue):
        return ", ".join(f"{k}: {show(p.grad)}" for k, p in value.params.items())
    return show(value)


def check_grad(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    target = spec.target or ""
    tolerance = Tolerance.of(spec)

    def one(trial: Trial) -> Outcome:
        got, want = trial.got(target), trial.want(target)
        diff = _grads_difference(got, want, target, tolerance, trial)
        if diff is None:
            if _has_grads(want) and trial.ok_reference_calls and not trial.ok_learner_calls:
                return failed(
                    f"{target}.grad has the expected value but no backward() ran", "hard-coded"
                )
            return passed(f"{target}.grad is correct")
        data = {"label": f"{target}.grad", "got": _grads_shown(got), "want": _grads_shown(want)}
        for slug, key in (spec.option("variants") or {}).items():
            if _grads_difference(got, trial.want(key), target, tolerance, trial) is None:
                return failed(diff.message, slug, **data)
        return failed(diff.message, diff.slug, **data)

    return each_trial(learner, reference, one, f"{target}.grad is correct", spec)


FACT_NAMES = {"requires_grad": "requires_grad", "is_leaf": "is_leaf", "grad_fn": "grad_fn"}


def check_graph(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    target = spec.target or ""
    facts = spec.option("facts") or ["requires_grad", "is_leaf", "grad_fn"]

    def one(trial: Trial) -> Outcome:
        got, want = trial.got(target), trial.want(target)
        if isinstance(got, Missing):
            return failed(f"{target} is not defined", "missing-name")
        if not isinstance(got, TensorValue) or not isinstance(want, TensorValue):
            return failed(f"{target} holds {kind_name(got)}, expected a tensor", "wrong-type")
        wrong = [f for f in facts if getattr(got, f) != getattr(want, f)]
        if not wrong:
            return passed(f"{target}'s graph facts are correct")
        details = "; ".join(
            f"{target}.{f} is {getattr(got, f)}, expected {getattr(want, f)}" for f in wrong
        )
        broken = (want.requires_grad and not got.requires_grad) or (
            want.grad_fn is not None and got.grad_fn is None
        )
        return failed(details, "graph-broken" if broken else "wrong-value")

    return each_trial(learner, reference, one, f"{target}'s graph facts are correct", spec)


def _text_of(value: Value | Missing) -> str | None:
    if isinstance(value, ScalarValue) and value.kind == "str":
        return str(value.value)
    if isinstance(value, ExceptionValue):
        return value.message
    return None


def _hit(text: str, trial: Trial, *, reference: bool) -> bool:
    """Did the run hit an error (a recorded backward error or its uncaught exception)
    whose message contains `text`?"""
    calls = trial.reference_calls if reference else trial.learner_calls
    exception = trial.reference_exception if reference else trial.learner_exception
    messages = [c.error.message for c in calls if c.error is not None]
    if exception is not None:
        messages.append(exception.message)
    wanted = normalise(text)
    return bool(wanted) and any(wanted in normalise(m) for m in messages)


def check_message(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    target = spec.target or ""

    def one(trial: Trial) -> Outcome:
        got, want = trial.got(target), trial.want(target)
        if isinstance(got, Missing):
            return failed(f"{target} is not defined", "missing-name")
        mine, theirs = _text_of(got), _text_of(want)
        if mine is None:
            return failed(f"{target} holds {kind_name(got)}, expected a message", "wrong-type")
        if normalise(theirs or "") in normalise(mine):
            if _hit(theirs or "", trial, reference=True) and not _hit(
                theirs or "", trial, reference=False
            ):
                return failed(
                    f"{target} holds the expected message, but your code never hit an error "
                    "with that message: it was typed in, not caught",
                    "hard-coded",
                )
            return passed(f"{target} holds the expected message")
        slug = diagnose.error_slug(mine)
        if slug == diagnose.error_slug(theirs or ""):
            slug = None
        return failed(
            f"{target} is {mine!r}, expected a message containing {theirs!r}",
            slug or "wrong-value",
        )

    return each_trial(learner, reference, one, f"{target} holds the expected message", spec)


def _gradcheck_ok(value: Value | Missing) -> tuple[bool, str]:
    if isinstance(value, ScalarValue) and value.kind == "bool":
        return bool(value.value), ""
    if isinstance(value, DictValue):
        ok = value.items.get("ok")
        note = value.items.get("message")
        text = str(note.value) if isinstance(note, ScalarValue) else ""
        return isinstance(ok, ScalarValue) and ok.value is True, text
    return False, ""


def check_gradcheck(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    target = spec.target or ""

    def one(trial: Trial) -> Outcome:
        got = trial.got(target)
        if isinstance(got, Missing):
            return failed("gradcheck did not run", "crashed" if trial.learner_exception else "")
        ok, note = _gradcheck_ok(got)
        if ok:
            return passed("torch.autograd.gradcheck passes")
        detail = f": {note}" if note else ""
        return failed(f"torch.autograd.gradcheck fails: backward does not match{detail}")

    return each_trial(learner, reference, one, "torch.autograd.gradcheck passes", spec)


def check_device(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    """The tensor, or every parameter of the module, lives on the worker's device (the
    capture's top-level device: "cuda" when the sandbox sees a GPU, else "cpu")."""
    target = spec.target or ""
    wanted = learner.device

    def one(trial: Trial) -> Outcome:
        got = trial.got(target)
        if isinstance(got, Missing):
            return failed(f"{target} is not defined", "missing-name")
        if isinstance(got, TensorValue):
            tensors = {target: got}
        elif isinstance(got, ModuleValue):
            tensors = {f"{target}.{k}": p for k, p in got.params.items()}
        else:
            return failed(
                f"{target} holds {kind_name(got)}, expected a tensor or module", "wrong-type"
            )
        for label, tensor in tensors.items():
            if tensor.device_type != wanted:
                return failed(
                    f"{label} is on {tensor.device}, but this worker's device is {wanted}",
                    "device-mismatch",
                    label=f"{label} device",
                    got=tensor.device,
                    want=wanted,
                )
        return passed(f"{target} is on the worker's device ({wanted})")

    return each_trial(
        learner, reference, one, f"{target} is on the worker's device ({wanted})", spec
    )
