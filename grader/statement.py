"""The "What is checked" section of a statement, generated from the manifest's checks
(FORMAT.md section 1, "statement.md"): one source of truth for what is graded.

The statement's Markdown says where the section goes with a line `<!-- checks -->`
(without one, the section ends the statement). `with_checks(text, manifest)` puts there a
heading with the total points and a table of each check's name, points and what it
compares, then the dtype rule whenever a check compares values. A statement that still
has a hand-written "What is checked" heading is a package error (`stale_section`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from grader.protocol import size_label

if TYPE_CHECKING:
    from grader.checks.base import CheckSpec
    from grader.spec import Manifest

MARKER = "<!-- checks -->"
HEADING = "What is checked"
STALE_HEADING = re.compile(rf"^#+\s*{HEADING}\b", re.IGNORECASE | re.MULTILINE)
DTYPE_RULE = (
    "Values are compared within the default tolerance of the reference solution's dtype "
    "(float32: rtol 1.3e-6, atol 1e-5; float64: 1e-7, 1e-7) unless a row says otherwise. "
    "A more precise floating dtype than the one asked for is accepted at that tolerance "
    "(float64 where float32 is asked); a less precise or non-floating one is a dtype "
    "mismatch."
)
SEED_RULE = (
    "Random numbers: the grader does not seed torch for you. Your code's own "
    "`torch.manual_seed(...)` line decides the model's starting weights; without it they "
    "are random and the run cannot match the reference's."
)
VALUE_TYPES = frozenset({"value", "grad", "grad_history", "loss_curve"})


def marker_lines(text: str) -> int:
    return sum(line.strip() == MARKER for line in text.splitlines())


def stale_section(text: str) -> bool:
    """The statement still holds a hand-written "What is checked" heading."""
    return STALE_HEADING.search(text) is not None


def with_checks(text: str, manifest: Manifest) -> str:
    """`text` with the generated section where the marker line stands (or at the end)."""
    section = checks_section(manifest)
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.strip() == MARKER:
            rest = "\n".join(lines[index + 1 :])
            head = "\n".join(lines[:index])
            return f"{head}\n{section}\n" + (f"\n{rest.strip()}\n" if rest.strip() else "")
    return f"{text.rstrip()}\n\n{section}\n"


def checks_section(manifest: Manifest) -> str:
    rows = [
        f"## {HEADING} ({manifest.points} points)",
        "",
        "| check | points | what is compared with the reference solution |",
        "|---|---|---|",
    ]
    for check in manifest.checks:
        meaning = describe(check, function=manifest.kind == "function")
        rows.append(f"| {_cell(check.name)} | {check.points} | {_cell(meaning)} |")
    rows += ["", output_rule(manifest.limits.stdout_bytes)]
    if manifest.seed_by_learner:
        rows += ["", SEED_RULE]
    if any(check.type in VALUE_TYPES for check in manifest.checks):
        rows += ["", DTYPE_RULE]
    return "\n".join(rows)


def output_rule(stdout_bytes: int) -> str:
    """The output limit, as the learner reads it under the table."""
    return (
        f"Output limit: what your code prints is kept up to {size_label(stdout_bytes)}; "
        "anything printed past it is cut (the checks read what was kept) and never fails "
        "the run on its own."
    )


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _code(name: str | None) -> str:
    return f"`{name}`" if name else "the result"


def _tolerance(options: object) -> str:
    rtol, atol = getattr(options, "rtol", None), getattr(options, "atol", None)
    given = [f"{label} {value:g}" for label, value in (("rtol", rtol), ("atol", atol)) if value]
    text = f" (within {', '.join(given)})" if given else ""
    if getattr(options, "device", None) == "any":
        text += ", on any device"
    return text


def describe(check: CheckSpec, *, function: bool = False) -> str:
    """What the check compares, in a sentence for learners."""
    explain = DESCRIPTIONS.get(check.type)
    text = explain(check) if explain else "compared with the reference solution's run"
    if function and check.type in {"value", "grad", "graph", "message", "device"}:
        text += ", on the visible example and on every hidden case"
    return text


def _or_module(check: CheckSpec) -> str:
    """(or `model.weight`)" where a module's parameter may stand in for the target."""
    param = getattr(check.options, "module_param", None)
    return f" (or `{param}`)" if param else ""


def _value(check: CheckSpec) -> str:
    target = _code(check.target)
    return f"{target}{_or_module(check)} equals the reference's {target}{_tolerance(check.options)}"


def _grad(check: CheckSpec) -> str:
    return (
        f"the `.grad` of {_code(check.target)}{_or_module(check)} equals the reference's"
        f"{_tolerance(check.options)}"
    )


def _no_autograd(check: CheckSpec) -> str:
    if getattr(check.options, "during", "call") == "backward":
        return "no autograd while your backward runs: no `backward()`, no `torch.autograd.grad`"
    return (
        "no autograd while your function runs: no tensors that require grad, no "
        "`backward()`, no `torch.autograd.grad`"
    )


def _graph(check: CheckSpec) -> str:
    facts = getattr(check.options, "facts", ())
    listed = ", ".join(f"`{fact}`" for fact in facts)
    return f"{_code(check.target)} came out of autograd like the reference's: same {listed}"


def _backward_calls(check: CheckSpec) -> str:
    options = check.options
    parts = []
    if getattr(options, "count", False):
        parts.append("as many successful `backward()` calls as the reference makes")
    if getattr(options, "retain_graph", False):
        parts.append("`retain_graph` given on the same calls as the reference")
    if getattr(options, "gradient_given", False):
        parts.append("a gradient argument passed on the same calls as the reference")
    if getattr(options, "steps_match", False):
        parts.append("one `backward()` per optimizer step, and at least one step")
    return "; ".join(parts) or "as many successful `backward()` calls as the reference makes"


def _grad_history(check: CheckSpec) -> str:
    return (
        f"`{check.target}.grad` right after each `backward()` call equals the reference's, "
        f"call by call{_tolerance(check.options)}"
    )


def _loss_curve(check: CheckSpec) -> str:
    options = check.options
    if getattr(options, "mode", "pointwise") == "pointwise":
        return (
            "the loss of every `backward()` call equals the reference's, step by step"
            f"{_tolerance(options)}"
        )
    parts = ["the recorded losses are never NaN"]
    if getattr(options, "falls", False):
        parts.append("they fall")
    below = getattr(options, "final_below", None)
    if below is not None:
        parts.append(f"the last one is below {below:g}")
    low, high = getattr(options, "min_steps", None), getattr(options, "max_steps", None)
    if low is not None or high is not None:
        parts.append(f"between {low or 1} and {high or 'any number of'} steps")
    return ", ".join(parts)


def _fresh_grads(check: CheckSpec) -> str:
    names = getattr(check.options, "names", None)
    whose = ", ".join(f"`{name}`" for name in names) if names else "the tracked tensors"
    return f"the gradients of {whose} were None or zero before every `backward()` call"


def _message(check: CheckSpec) -> str:
    return (
        f"{_code(check.target)} contains the reference's message; when that is the text of "
        "an error, your run must really have raised it"
    )


def _stdout(check: CheckSpec) -> str:
    if getattr(check.options, "mode", "exact") == "losses":
        return "the loss of every `backward()` call is printed"
    return "what your code prints equals what the reference prints"


DESCRIPTIONS: dict[str, Callable[[CheckSpec], str]] = {
    "value": _value,
    "grad": _grad,
    "graph": _graph,
    "backward_calls": _backward_calls,
    "grad_history": _grad_history,
    "loss_curve": _loss_curve,
    "fresh_grads": _fresh_grads,
    "message": _message,
    "raises": lambda check: (
        "on every case, the same exception type as the reference raises, or none where it "
        "raises none"
    ),
    "stdout": _stdout,
    "gradcheck": lambda check: "`torch.autograd.gradcheck` of your function passes, in float64",
    "no_error": lambda check: "your code runs to the end without an uncaught exception",
    "device": lambda check: (
        f"{_code(check.target)} is on the worker's device (a GPU when the worker has one)"
    ),
    "autograd_function": lambda check: (
        "your entry subclasses `torch.autograd.Function`, its own backward makes the "
        "gradient, and that backward computes it without autograd"
    ),
    "no_autograd": _no_autograd,
    "max_batch": lambda check: (
        "a claim, from a watch inside your process: the model's layers never see more "
        "samples in one call than the micro-batch size, and each sees every sample"
    ),
    "grad_per_batch": lambda check: (
        "the grader hands you the micro-batches one at a time and copies every `param.grad` "
        "before it gives you the next one: each copy equals the gradient accumulated over "
        "the micro-batches so far"
    ),
    "retains_grad": lambda check: (
        f"{_code(check.target)} keeps its gradient through `{check.target}.retain_grad()` "
        "called before `backward()`: the backward pass fills its `.grad`"
    ),
    "backward_probe": lambda check: (
        "the grader calls your `backward` itself, on hidden `grad_output`s with autograd off "
        "(`torch.no_grad`, inference mode): each answer equals the reference's, float64 ones "
        "to 5e-14 of their largest value (finite differences are not that exact)"
    ),
    "exact_values": lambda check: (
        "every gradient equals the reference's to float64 precision: within 5e-14 of its "
        "largest entry (finite differences are not that exact)"
    ),
    "derivative_claim": lambda check: (
        "a claim, from a watch inside your process: your backward calls no built-in "
        "derivative (`aten.*_backward`, `torch.func`, dual tensors) and uses no complex step"
    ),
    "backward_pass_claim": lambda check: (
        "a claim, from a watch inside your process: no complex or object (dual-number) "
        "arithmetic on your input arrays, so the gradients come from a backward pass"
    ),
    "double_backward": lambda check: (
        "each second-order value comes from autograd differentiating a first derivative "
        "taken with `create_graph=True` (finite differences or a formula do not count)"
    ),
    "graph_reused": lambda check: (
        "the second `backward()` goes through the graph the first one retained (a graph "
        "built again does not count)"
    ),
    "same_leaf": lambda check: (
        "the parameters stay the same leaf tensors at every `backward()` call, updated in "
        "place (a new tensor made each step does not count)"
    ),
}
