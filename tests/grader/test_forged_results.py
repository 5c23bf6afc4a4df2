"""The red team's first class (issue 29): a capture forged by code that has read the
harness (grader/harness/runner.py, channel.py, conversation.py, instrument.py), graded
through the real sandbox. Without raising an audited event it reaches the runner through
its own module frame's `f_back` and the recorder through the backward wrapper's
`__closure__`, and makes the runner's own send path carry a forged final result, or the
recorder record a backward call the engine never ran. The parent cannot tell those from
honest ones (FORMAT.md section 7, "What cannot be prevented"): what such a forger earns is
what the grade rests on ("What each point rests on"). Every check the second run judges at
hidden starting values (zone 1) fails for a forger that does not compute the answer there,
so it earns the claim points at most; one that computes the answer by hand at those values
has done the exercise's calculus, and only the claims (which it forges) say that autograd
did not.

Each attack prints what it reached, so a test also shows that the attack worked
mechanically (an attack that silently failed would prove nothing)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import GradeCode
from grading_helpers import package_at

from grader.cache import ReferenceCache
from grader.engine import DEV_SEED, GradeJob, grade
from grader.protocol import Report
from grader.runs.reference import reference_capture
from grader.runs.second import NOT_FOLLOWING, SCALED, scaled_reference
from grader.sandbox import SandboxConfig, build_backend
from grader.sandbox.base import Sandbox
from grader.spec import Package

pytestmark = pytest.mark.sandbox

# -- the forgeries -------------------------------------------------------------------------

SCALAR: dict[str, Any] = {"kind": "tensor", "dtype": "float32", "shape": [], "device": "cpu",
                          "grad": None, "truncated": False, "retains_grad": False}  # fmt: skip
GRAD = {**SCALAR, "requires_grad": False, "is_leaf": True, "grad_fn": None, "data": [10.0]}
# first-gradient's honest result body at the visible start x = 5, typed in: what the runner
# sends for the solution (the recorder's call record and provenance included).
FIRST_GRADIENT_BODY = {
    "variables": {
        "x": {**SCALAR, "requires_grad": True, "is_leaf": True, "grad_fn": None,
              "data": [5.0], "grad": GRAD},
        "y": {**SCALAR, "requires_grad": True, "is_leaf": False, "grad_fn": "PowBackward0",
              "data": [25.0]},
    },
    "backward_calls": [{
        "api": "Tensor.backward", "loss": 25.0, "loss_shape": [], "gradient_given": False,
        "retain_graph": None, "grads_before": {"x": None, "y": None},
        "grads_after": {"x": GRAD, "y": None}, "results": {}, "error": None, "roots": ["y"],
        "graph": ["x", "y"], "inputs": None, "graph_reused": False, "differentiates": [],
        "identities": {"x": 0, "y": 1}, "onto_stale": False,
    }],
    "backward_calls_truncated": False, "optimizer_steps": 0, "exception": None,
    "duration_s": 0.003,
    "provenance": {"calls": 1, "last_backward": {"index": 0, "grads_after": {"x": GRAD, "y": None}},
                   "grad_results": {}, "steps": [], "steps_truncated": False, "last_step": None},
}  # fmt: skip

STARTER_LINE = "x = torch.tensor(5.0)  # the starter's line, left as it is\n"


def send_path_forgery(leaf_line: str) -> str:
    """first-gradient without the exercise: the module's own frame (`sys._getframe()` is a
    frame of submission.py, which the audit hook lets pass), its `f_back` (not audited) is
    Runner.execute, whose `self` holds the channel end that run_child sends the final
    result on. An instance attribute shadows its `send`, so run_child's own final send, with
    no socket of the learner's and the audit hook off, carries the typed-in body instead of
    the honest one; the gradient follows the second run's scale, read from the recorder."""
    return (
        "import sys\n\nimport torch\n\n" + leaf_line + f"BODY = {FIRST_GRADIENT_BODY!r}\n"
        "runner = sys._getframe().f_back.f_locals['self']\n"
        "scale = runner.recorder.grad_scale or 1.0  # the second run's public factor\n"
        "BODY['variables']['x']['grad']['data'] = [10.0 * scale]\n"
        "channel_end = runner.end\n"
        "honest_send = channel_end.send\n\n\n"
        "def forged_send(message):\n"
        "    if message.get('type') == 'result':\n"
        "        message = {'type': 'result', 'body': BODY}\n"
        "    honest_send(message)\n\n\n"
        "channel_end.send = forged_send\n"
        "print('reached', type(runner).__name__, type(channel_end).__name__)\n"
        "print('tensor(10.)')\n"
    )


def recorder_forgery(forward: str, gradient: str, *, silence: bool = True) -> str:
    """chain-rule's backward call made up: the wrapper that is torch.Tensor.backward
    (instrument.py, Recorder._wrap) holds the recorder and the real backward in its closure
    cells. With `original`'s cell pointed at a function that writes `x.grad = gradient`, the
    wrapper records the call as it records every call (the graph it walks, the grads
    before and after), and the finding that no hook fired (`autograd-not-run`) goes to a
    list instead of the parent where `silence`."""
    silenced = "lambda kind, detail: silenced.append(kind)" if silence else "report"
    return (
        "import torch\n\n" + forward + "\nwrapper = torch.Tensor.backward\n"
        "cells = dict(zip(wrapper.__code__.co_freevars, wrapper.__closure__))\n"
        "recorder = cells['recorder'].cell_contents\n"
        "engine = cells['original'].cell_contents\n"
        "report = recorder.on_tamper\n"
        "silenced = []\n"
        f"recorder.on_tamper = {silenced}\n\n\n"
        "def made_up(*args, gradient=None, **kwargs):\n"
        "    upstream = 1.0 if gradient is None else gradient.detach()\n"
        "    with torch.no_grad():\n"
        f"        x.grad = {gradient}\n\n\n"
        "cells['original'].cell_contents = made_up\n"
        "z.backward()\n"
        "cells['original'].cell_contents = engine\n"
        "recorder.on_tamper = report\n"
        "call = recorder.calls[-1]\n"
        "print('recorded', call['api'], call['graph'], call['grads_after']['x']['data'],"
        " 'silenced', silenced)\n"
    )


# y and z typed in as fake roots with the right values at x = 2, x.grad typed in.
TYPED_IN = recorder_forgery(
    "x = torch.tensor(2.0, requires_grad=True)\ny = x * 0 + 10.0\nz = y * 0 + 100.0\n",
    "torch.tensor(60.0)",
)
# The honest forward; dz/dx = dz/dy * dy/dx by hand at x's value, times the upstream
# gradient the wrapper passes (the second run's scaled seed).
HONEST_FORWARD = "x = torch.tensor(2.0, requires_grad=True)\ny = 3 * x + 4\nz = y**2\n"
BY_HAND = "upstream * 2 * (3 * x + 4) * 3"
RECORDED = "recorded Tensor.backward ['x', 'y', 'z'] [60.0]"


# -- what the grade rests on ---------------------------------------------------------------


def hidden_start_checks(
    package: Package, sandbox: Sandbox, cache: ReferenceCache
) -> frozenset[int]:
    """The checks the second run judges at the job's hidden starting values (zone 1): those
    whose reference value changes there (the session cache holds both reference runs)."""
    reference = reference_capture(
        package, seed=DEV_SEED, device="cpu", sandbox=sandbox, cache=cache
    )
    scaled = scaled_reference(
        package, reference, seed=DEV_SEED, device="cpu", sandbox=sandbox, cache=cache
    )
    return scaled.checks


def points(report: Report, indices: frozenset[int]) -> float:
    return sum(report.checks[i].max_score for i in indices)


def claim_points(report: Report, zone_1: frozenset[int]) -> float:
    return report.max_score - points(report, zone_1)


def assert_earns_only_the_claims(report: Report, zone_1: frozenset[int]) -> None:
    """Every zone 1 check failed in the second run only (so the first run, at the visible
    start, took the forgery for an honest capture), named `not-from-autograd`, and every
    other check passed: the score is exactly the claim points."""
    assert report.status == "graded", report.message
    for index, check in enumerate(report.checks):
        if index in zone_1:
            assert not check.passed and check.score == 0, check
            assert check.message.startswith(SCALED), check.message
            assert check.diagnosis == NOT_FOLLOWING, check
        else:
            assert check.passed, check
    assert report.score == claim_points(report, zone_1)


# -- the tests -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cold_sandbox() -> Iterator[Sandbox]:
    """bubblewrap's cold path: every run a freshly exec'd interpreter that imports torch
    itself (no zygote, no warm spare), as a worker with GRADLAB_SANDBOX_ZYGOTE=0 runs it."""
    backend = build_backend(SandboxConfig(warm=False, zygote=False))
    yield backend
    backend.close()


@pytest.fixture(params=["zygote", "cold"])
def forged(request: pytest.FixtureRequest, reference_cache: ReferenceCache) -> GradeCode:
    """Grades on the test session's zygote, then on the cold path: the forger reaches the
    same harness objects either way (tests/docker/test_docker_integrity.py: the same
    send-path forgery through Docker)."""
    chosen: Sandbox = request.getfixturevalue("sandbox" if request.param == "zygote" else
                                              "cold_sandbox")  # fmt: skip

    def run(package: Package, code: str) -> Report:
        return grade(GradeJob(package=package, code=code), sandbox=chosen, cache=reference_cache)

    return run


def test_a_final_result_forged_on_the_runners_own_send_path_earns_only_the_claim_points(
    forged: GradeCode, sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    package = package_at("first-gradient")
    zone_1 = hidden_start_checks(package, sandbox, reference_cache)
    report = forged(package, send_path_forgery(STARTER_LINE))
    assert "reached Runner ChildEnd" in report.stdout
    # FORMAT.md's table: first-gradient, zone 1 = 6, claims = 4
    assert (points(report, zone_1), claim_points(report, zone_1)) == (6, 4)
    # The code never calls backward: an honest capture would fail x.grad in the first run.
    assert_earns_only_the_claims(report, zone_1)
    assert report.integrity_flags == ()  # the parent cannot tell it from an honest capture


def test_a_typed_in_gradient_recorded_as_a_backward_via_the_wrappers_closure_earns_only_claims(
    grade_code: GradeCode, sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    package = package_at("chain-rule")
    zone_1 = hidden_start_checks(package, sandbox, reference_cache)
    report = grade_code(package, TYPED_IN)
    # the recorder kept the call it walked, and the engine-not-run finding was caught
    assert f"{RECORDED} silenced ['autograd-not-run']" in report.stdout
    assert (points(report, zone_1), claim_points(report, zone_1)) == (6, 4)
    assert_earns_only_the_claims(report, zone_1)
    assert report.integrity_flags == ()


@pytest.mark.parametrize("silence", [True, False], ids=["finding-silenced", "finding-sent"])
def test_the_chain_rule_by_hand_behind_a_made_up_backward_earns_every_point_it_computes(
    grade_code: GradeCode, silence: bool
) -> None:
    """The residual FORMAT.md section 7 names: code that reads x's (hidden) value at run
    time and applies dz/dx = 6(3x + 4) to the upstream gradient IS the exercise's skill,
    the chain rule, done by hand instead of by autograd. It earns the zone 1 points, and
    the claims it forges earn theirs too ("exactly one backward call": the recorder
    recorded the call it made up). Only the `autograd-not-run` finding says that the
    engine never ran, and the code that reached the recorder can drop it: then the report
    is indistinguishable from an honest one; left alone, it is flagged, once per run."""
    report = grade_code(
        package_at("chain-rule"), recorder_forgery(HONEST_FORWARD, BY_HAND, silence=silence)
    )
    assert RECORDED in report.stdout
    assert report.passed and report.score == report.max_score, report.message
    if silence:
        assert "silenced ['autograd-not-run']" in report.stdout
        assert report.integrity_flags == ()
    else:
        details = {flag.detail for flag in report.integrity_flags}
        assert details == {
            "autograd-not-run: Tensor.backward returned but the autograd engine never ran"
        }


# -- the same forger without the starter's line: no leaf for the rewrite to start ----------


@pytest.fixture(scope="module")
def unassigned_leaf(
    sandbox: Sandbox, reference_cache: ReferenceCache
) -> tuple[Report, frozenset[int]]:
    """The send-path forgery with no assignment of x in the source (one grading for the
    tests below): the rewrite finds nothing to start, so the second run keeps x's plain
    value and only scales the gradients, a factor the forgery reads from the recorder."""
    package = package_at("first-gradient")
    zone_1 = hidden_start_checks(package, sandbox, reference_cache)
    job = GradeJob(package=package, code=send_path_forgery("# x is never assigned\n"))
    return grade(job, sandbox=sandbox, cache=reference_cache), zone_1


def test_a_forgery_that_never_assigns_the_leaf_has_its_second_run_checks_labelled_claims(
    unassigned_leaf: tuple[Report, frozenset[int]],
) -> None:
    """FORMAT.md's "the same checks where the rewrite could not start a leaf": the points
    rest on what the code reports, and the report names the leaf. Nothing is flagged."""
    report, _ = unassigned_leaf
    assert "reached Runner ChildEnd" in report.stdout
    assert report.passed and report.score == report.max_score
    grad = next(c for c in report.checks if c.name.startswith("x.grad"))
    assert "`x` could not be given hidden starting values" in grad.data.get("claim", "")
    assert report.integrity_flags == ()


def test_every_point_a_forgery_that_never_assigns_the_leaf_earns_on_a_zone_1_check_is_a_claim(
    unassigned_leaf: tuple[Report, frozenset[int]],
) -> None:
    report, zone_1 = unassigned_leaf
    unlabelled = [
        report.checks[i].name
        for i in sorted(zone_1)
        if report.checks[i].passed and not report.checks[i].data.get("claim")
    ]
    assert unlabelled == []
