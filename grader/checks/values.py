"""Checks on named values: value, grad, graph, message, gradcheck, device; each with
its typed options."""

from __future__ import annotations

from dataclasses import dataclass

from grader.capture import (
    Capture,
    DictValue,
    ExceptionValue,
    ModuleValue,
    ScalarValue,
    TensorValue,
    Value,
)
from grader.checks.base import CheckSpec, Outcome, each_trial, failed, passed
from grader.checks.compare import Tolerance, compare_tensors, compare_values, normalise
from grader.checks.diagnoses import differences, errors, provenance, run
from grader.checks.formatting import Missing, kind_name, show
from grader.checks.options import (
    CheckOptions,
    module_param,
    one_of,
    one_or_more_of,
    option,
    options_of,
    tolerance,
    variants,
)
from grader.checks.trials import Trial

GRAPH_FACTS = ("requires_grad", "is_leaf", "grad_fn")


@dataclass(frozen=True)
class ValueOptions(CheckOptions):
    """`value` and `grad`: tolerances (None: the dtype's default), `device = "any"` to
    accept any device, `variants` ({diagnosis = "_observation"}) that name the mistake
    whose value the learner's equals, and `module_param` ("model.weight"): where the
    learner's run holds no tensor under the target's name, the check reads that
    parameter of the module held by the named variable instead (script exercises)."""

    rtol: float | None = option(None, tolerance)
    atol: float | None = option(None, tolerance)
    device: str | None = option(None, one_of("any"))
    variants: tuple[tuple[str, str], ...] = option((), variants)
    module_param: str | None = option(None, module_param)

    @property
    def tolerance(self) -> Tolerance:
        return Tolerance(self.rtol, self.atol, device_any=self.device == "any")


@dataclass(frozen=True)
class GraphOptions(CheckOptions):
    """`graph`: which facts of the tensor to compare."""

    facts: tuple[str, ...] = option(GRAPH_FACTS, one_or_more_of(*GRAPH_FACTS))


def learner_value(trial: Trial, target: str, options: ValueOptions) -> Value | Missing:
    """The learner's value of `target`, or, where it holds no tensor, the parameter that
    `module_param` names ("model.weight": the `weight` of the module held by `model`)."""
    holder, param = learner_source(trial, target, options)
    got = trial.got(holder)
    if param is not None and isinstance(got, ModuleValue):
        return got.params[param]
    return got


def learner_source(trial: Trial, target: str, options: ValueOptions) -> tuple[str, str | None]:
    """Where the learner's value of `target` is read: (target, None), or (the module's
    name, its parameter) where `module_param` applies (`learner_value`)."""
    got = trial.got(target)
    if options.module_param is None or isinstance(got, TensorValue):
        return target, None
    holder, param = options.module_param.split(".", 1)
    module = trial.got(holder)
    if isinstance(module, ModuleValue) and param in module.params:
        return holder, param
    return target, None


def check_value(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    target = spec.target or ""
    options = options_of(spec.options, ValueOptions)
    tolerance = options.tolerance

    def one(trial: Trial) -> Outcome:
        got, want = learner_value(trial, target, options), trial.want(target)
        if isinstance(got, Missing):
            return failed(f"{target} is not defined", "missing-name")
        diff = compare_values(got, want, tolerance)
        edited = provenance.params_edited(trial, target, learner_source(trial, target, options))
        if diff is None and edited:
            return failed(
                f"{target} has the expected value, but not the one the last optimizer step "
                "left: it was changed by hand",
                "params-edited",
            )
        if diff is None:
            return passed(f"{target} is correct")
        pair = _pair(target, got, want)
        if edited:
            return failed(f"{target}: {diff.message}", "params-edited", **pair)
        if run.copied_too_early(trial, got, tolerance):
            return failed(f"{target}: {diff.message}", "copied-too-early", **pair)
        for slug, key in _present(options.variants, trial):
            if compare_values(got, trial.want(key), tolerance) is None:
                return failed(f"{target}: {diff.message}", slug, **pair)
        slug = differences.difference_slug(diff, accumulated=run.accumulated(trial))
        return failed(f"{target}: {diff.message}", slug, **pair)

    return each_trial(learner, reference, one, f"{target} is correct", options)


def _present(variants: tuple[tuple[str, str], ...], trial: Trial) -> list[tuple[str, str]]:
    """The variants whose observation the reference's run gave (a missing one matches
    nothing)."""
    return [(slug, key) for slug, key in variants if not isinstance(trial.want(key), Missing)]


def _pair(label: str, got: Value | Missing, want: Value | Missing) -> dict[str, str]:
    """The web's expected-vs-got row (each_trial drops it for hidden cases)."""
    return {"label": label, "got": show(got), "want": show(want)}


@dataclass(frozen=True)
class GradFinding:
    """Why a tensor's .grad differs from the reference's: the learner-facing message and
    the diagnosis (a missing grad is named by the run, a differing one by its values)."""

    message: str
    slug: str


def _grad_difference(
    got: TensorValue,
    want: TensorValue,
    label: str,
    tolerance: Tolerance,
    trial: Trial,
    where: tuple[str, str] = ("", ""),
) -> GradFinding | None:
    """`where`: the captured name and, for a module, the parameter (for the run's
    records of that grad)."""
    mine, theirs = got.grad, want.grad
    name, param = where
    if theirs is None:
        if mine is None:
            return None
        return GradFinding(f"{label}.grad is {show(mine)}, expected None", "wrong-value")
    if mine is None:
        slug = run.missing_grad_slug(got, trial, name, param)
        return GradFinding(f"{label}.grad is None, expected {show(theirs)}", slug)
    diff = compare_tensors(mine, theirs, tolerance)
    if diff is None:
        return None
    slug = differences.difference_slug(diff, accumulated=run.accumulated(trial))
    if provenance.is_cleared(mine) and not provenance.is_cleared(theirs):
        cleared = run.missing_grad_slug(got, trial, name, param)
        slug = cleared if cleared == "grad-cleared" else slug
    return GradFinding(f"{label}.grad: {diff.message}", slug)


def _grads_difference(
    got: Value | Missing, want: Value | Missing, target: str, tolerance: Tolerance, trial: Trial
) -> GradFinding | None:
    if isinstance(want, Missing):
        return None
    if isinstance(got, Missing):
        return GradFinding(f"{target} is not defined", "missing-name")
    if isinstance(want, TensorValue):
        if not isinstance(got, TensorValue):
            return GradFinding(f"{target} holds {kind_name(got)}, expected a tensor", "wrong-type")
        return _grad_difference(got, want, target, tolerance, trial, (target, ""))
    if isinstance(want, ModuleValue):
        if not isinstance(got, ModuleValue) or set(got.params) != set(want.params):
            return GradFinding(f"{target} is not the expected module", "wrong-type")
        for name, theirs in want.params.items():
            label = f"{target}.{name}"
            where = (target, name)
            diff = _grad_difference(got.params[name], theirs, label, tolerance, trial, where)
            if diff is not None:
                return diff
        return None
    return GradFinding(f"{target} holds {kind_name(got)}", "wrong-type")


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
    options = options_of(spec.options, ValueOptions)
    tolerance = options.tolerance

    def one(trial: Trial) -> Outcome:
        got, want = learner_value(trial, target, options), trial.want(target)
        diff = _grads_difference(got, want, target, tolerance, trial)
        overwritten = provenance.grad_overwritten(trial, target)
        if diff is None:
            if run.grad_written_by_hand(trial, _has_grads(want)):
                return failed(
                    f"{target}.grad has the expected value but no backward() ran", "hard-coded"
                )
            if overwritten:
                return failed(
                    f"{target}.grad has the expected value, but it is not what your last "
                    "backward() left there: it was written or changed by hand afterwards",
                    "hard-coded",
                )
            if run.grad_from_other_root(trial, target):
                return failed(
                    f"{target}.grad has the expected value, but the backward call that "
                    "filled it started from another tensor than the one the exercise "
                    "backpropagates from",
                    "wrong-backward-root",
                )
            return passed(f"{target}.grad is correct")
        data = {"label": f"{target}.grad", "got": _grads_shown(got), "want": _grads_shown(want)}
        for slug, key in _present(options.variants, trial):
            if _grads_difference(got, trial.want(key), target, tolerance, trial) is None:
                return failed(diff.message, slug, **data)
        if overwritten and diff.slug not in ("missing-name", "wrong-type"):
            return failed(diff.message, "hard-coded", **data)
        return failed(diff.message, diff.slug, **data)

    return each_trial(learner, reference, one, f"{target}.grad is correct", options)


def check_graph(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    target = spec.target or ""
    options = options_of(spec.options, GraphOptions)
    facts = options.facts

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
        return failed(details, run.graph_facts_slug(got, want))

    return each_trial(learner, reference, one, f"{target}'s graph facts are correct", options)


def _text_of(value: Value | Missing) -> str | None:
    if isinstance(value, ScalarValue) and value.kind == "str":
        return str(value.value)
    if isinstance(value, ExceptionValue):
        return value.message
    return None


def check_message(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    target = spec.target or ""
    options = options_of(spec.options, CheckOptions)

    def one(trial: Trial) -> Outcome:
        got, want = trial.got(target), trial.want(target)
        if isinstance(got, Missing):
            return failed(f"{target} is not defined", "missing-name")
        mine, theirs = _text_of(got), _text_of(want)
        if mine is None:
            return failed(f"{target} holds {kind_name(got)}, expected a message", "wrong-type")
        if normalise(theirs or "") in normalise(mine):
            if errors.typed_error_message(theirs or "", trial):
                return failed(
                    f"{target} holds the expected message, but your code never hit an error "
                    "with that message: it was typed in, not caught",
                    "hard-coded",
                )
            return passed(f"{target} holds the expected message")
        return failed(
            f"{target} is {mine!r}, expected a message containing {theirs!r}",
            errors.message_slug(mine, theirs or ""),
        )

    return each_trial(learner, reference, one, f"{target} holds the expected message", options)


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
    options = options_of(spec.options, CheckOptions)

    def one(trial: Trial) -> Outcome:
        got = trial.got(target)
        if isinstance(got, Missing):
            return failed("gradcheck did not run", "crashed" if trial.learner_exception else "")
        ok, note = _gradcheck_ok(got)
        if ok:
            return passed("torch.autograd.gradcheck passes")
        detail = f": {note}" if note else ""
        return failed(f"torch.autograd.gradcheck fails: backward does not match{detail}")

    return each_trial(learner, reference, one, "torch.autograd.gradcheck passes", options)


def check_device(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome:
    """The tensor, or every parameter of the module, lives on the worker's device (the
    capture's top-level device: "cuda" when the sandbox sees a GPU, else "cpu")."""
    target = spec.target or ""
    options = options_of(spec.options, CheckOptions)
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
        learner, reference, one, f"{target} is on the worker's device ({wanted})", options
    )
