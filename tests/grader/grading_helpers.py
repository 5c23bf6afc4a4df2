"""Helpers shared by the grading-engine tests (imported by name: tests/ has no packages)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grader.capture import Capture, validate_capture
from grader.protocol import Report
from grader.spec import Package, load_package

REPO = Path(__file__).resolve().parents[2]
TEST_PACKAGES = Path(__file__).resolve().parent / "packages"


def package_at(name: str) -> Package:
    """A test-only package (tests/grader/packages/) or a course package (exercises/)."""
    local = TEST_PACKAGES / name
    return load_package(local if local.is_dir() else REPO / "exercises" / name)


def failed_diagnoses(report: Report) -> dict[str, str]:
    return {c.name: c.diagnosis for c in report.checks if not c.passed}


def tensor(
    data: list[Any],
    shape: list[int] | None = None,
    *,
    dtype: str = "float32",
    device: str = "cpu",
    grad: list[Any] | dict[str, Any] | None = None,
    requires_grad: bool = False,
    is_leaf: bool = True,
    grad_fn: str | None = None,
) -> dict[str, Any]:
    """A capture's tagged tensor, built by hand."""
    shape = [len(data)] if shape is None else shape
    encoded_grad = grad
    if isinstance(grad, list):
        encoded_grad = tensor(grad, shape, dtype=dtype, device=device)
    return {
        "kind": "tensor",
        "dtype": dtype,
        "shape": shape,
        "device": device,
        "requires_grad": requires_grad or grad is not None,
        "is_leaf": is_leaf,
        "grad_fn": grad_fn,
        "data": data,
        "grad": encoded_grad,
        "truncated": False,
    }


def call(
    loss: float | None = 1.0,
    *,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    error: str | None = None,
    retain_graph: bool | None = None,
    gradient_given: bool = False,
) -> dict[str, Any]:
    return {
        "api": "Tensor.backward",
        "loss": loss,
        "loss_shape": [],
        "gradient_given": gradient_given,
        "retain_graph": retain_graph,
        "grads_before": before or {},
        "grads_after": after or {},
        "error": None if error is None else {"type": "RuntimeError", "message": error},
    }


def script_capture(
    variables: dict[str, Any] | None = None,
    calls: list[dict[str, Any]] | None = None,
    *,
    stdout: str = "",
    exception: dict[str, Any] | None = None,
) -> Capture:
    raw = {
        "protocol": 1,
        "kind": "script",
        "torch": "2.13.0",
        "device": "cpu",
        "variables": variables or {},
        "backward_calls": calls if calls is not None else [call()],
        "optimizer_steps": 0,
        "stdout": stdout,
        "stdout_truncated": False,
        "exception": exception,
        "duration_s": 0.01,
        "terminated": None,
    }
    return validate_capture(json.loads(json.dumps(raw)))


def function_capture(cases: list[dict[str, Any]], *, reference: bool = True) -> Capture:
    encoded = []
    for index, case in enumerate(cases):
        item = {
            "visible": case.get("visible", index == 0),
            "observations": case.get("observations", {}),
            "exception": case.get("exception"),
            "backward_calls": case.get("calls", [call()]),
            "stdout": case.get("stdout", ""),
        }
        if reference:
            item["input"] = {"kind": "dict", "items": {}}
        encoded.append(item)
    raw = {
        "protocol": 1,
        "kind": "function",
        "torch": "2.13.0",
        "device": "cpu",
        "defined": {"f": True},
        "cases": encoded,
        "variables": {},
        "backward_calls": [],
        "optimizer_steps": 0,
        "stdout": "",
        "stdout_truncated": False,
        "exception": None,
        "duration_s": 0.01,
        "terminated": None,
    }
    return validate_capture(raw)
