"""Pure comparisons of a learner's capture with the reference's (FORMAT.md section 4).

Each check is `check(learner: Capture, reference: Capture, spec: CheckSpec) -> Outcome`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from grader.capture import Capture
from grader.checks.base import Outcome
from grader.checks.runs import (
    check_backward_calls,
    check_fresh_grads,
    check_grad_history,
    check_loss_curve,
    check_no_error,
    check_raises,
    check_stdout,
)
from grader.checks.values import (
    check_device,
    check_grad,
    check_gradcheck,
    check_graph,
    check_message,
    check_value,
)
from grader.spec import CheckSpec

Check = Callable[[Capture, Capture, CheckSpec], Outcome]

REGISTRY: Mapping[str, Check] = MappingProxyType(
    {
        "value": check_value,
        "grad": check_grad,
        "graph": check_graph,
        "backward_calls": check_backward_calls,
        "grad_history": check_grad_history,
        "loss_curve": check_loss_curve,
        "fresh_grads": check_fresh_grads,
        "message": check_message,
        "raises": check_raises,
        "stdout": check_stdout,
        "gradcheck": check_gradcheck,
        "no_error": check_no_error,
        "device": check_device,
    }
)

__all__ = ["REGISTRY", "Check", "Outcome"]
