"""An exercise that asks the learner to seed torch (`seed_by_learner = true`): the harness
leaves torch's generator as a fresh interpreter has it, in the learner's run and in the
reference's, so a missing seed line shows; graded through the real bubblewrap sandbox."""

from __future__ import annotations

import pytest
from grading_helpers import package_at

from grader.cache import ReferenceCache
from grader.capture import Capture, TensorValue
from grader.engine import GradeJob, grade_with_capture
from grader.runs.learner import learner_envelope
from grader.runs.reference import reference_envelope
from grader.sandbox.base import Sandbox
from grader.statement import SEED_RULE

UNSEEDED_MODEL = "import torch\nmodel = torch.nn.Linear(1, 1)\n"


def starting_weight(slug: str, code: str, sandbox: Sandbox, cache: ReferenceCache) -> list[float]:
    job = GradeJob(package=package_at(slug), code=code)
    _, capture = grade_with_capture(job, sandbox=sandbox, cache=cache)
    assert isinstance(capture, Capture)
    weight = capture.variables["model"].params["weight"]  # type: ignore[attr-defined]
    assert isinstance(weight, TensorValue)
    return weight.floats()


def test_fix_the_training_loop_asks_its_learner_to_seed_and_says_so() -> None:
    package = package_at("fix-the-training-loop")
    assert package.manifest.seed_by_learner
    assert not package_at("training-loop").manifest.seed_by_learner
    assert SEED_RULE in package.statement and SEED_RULE not in package_at("training-loop").statement


def test_both_envelopes_tell_the_harness_to_leave_torch_unseeded() -> None:
    package = package_at("fix-the-training-loop")
    reference = reference_envelope(package, 1).to_json()
    assert reference["seed_by_learner"] is True and reference["mode"] == "reference"
    assert "seed_by_learner" not in reference_envelope(package_at("training-loop"), 1).to_json()


@pytest.mark.sandbox
def test_an_unseeded_model_starts_from_other_weights_on_each_run_when_the_learner_seeds(
    sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    first = starting_weight("fix-the-training-loop", UNSEEDED_MODEL, sandbox, reference_cache)
    second = starting_weight("fix-the-training-loop", UNSEEDED_MODEL, sandbox, reference_cache)
    assert first != second


@pytest.mark.sandbox
def test_elsewhere_the_harness_still_seeds_torch_before_the_learners_code(
    sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    first = starting_weight("training-loop", UNSEEDED_MODEL, sandbox, reference_cache)
    second = starting_weight("training-loop", UNSEEDED_MODEL, sandbox, reference_cache)
    assert first == second


@pytest.mark.sandbox
def test_the_seed_line_kept_scores_full_marks_and_deleted_is_named_missing_seed(
    sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    package = package_at("fix-the-training-loop")
    kept, _ = grade_with_capture(
        GradeJob(package=package, code=package.solution), sandbox=sandbox, cache=reference_cache
    )
    assert kept.passed
    unseeded = package.solution.replace("torch.manual_seed(0)\n", "")
    report, capture = grade_with_capture(
        GradeJob(package=package, code=unseeded), sandbox=sandbox, cache=reference_cache
    )
    assert capture is not None and capture.torch_seeded is False
    failed = {c.name: c.diagnosis for c in report.checks if not c.passed}
    assert failed == {
        "loss curve equals the reference, epoch by epoch": "missing-seed",
        "final weight and bias": "missing-seed",
    }
    assert learner_envelope(package, unseeded, capture).to_json()["seed_by_learner"] is True
