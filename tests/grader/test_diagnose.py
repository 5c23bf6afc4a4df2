"""The recognisers of grader.diagnose on plain numbers."""

from __future__ import annotations

import pytest

from grader.diagnose import DIAGNOSES, curve_slug, error_slug, ratio_slug

TOL = (1.3e-6, 1e-5)


@pytest.mark.parametrize(
    ("got", "accumulated", "slug"),
    [
        ([-2.0, -4.0], False, "sign-error"),
        ([6.0, 12.0], True, "forgot-zero-grad"),
        ([6.0, 12.0], False, "scaled-by-n"),
        ([0.5, 1.0], False, "scaled-by-n"),
        ([2.5, 5.0], False, None),
        ([2.0, 5.0], False, None),
        ([0.0, 0.0], False, None),
    ],
)
def test_ratio_slug(got: list[float], accumulated: bool, slug: str | None) -> None:
    assert ratio_slug(got, [2.0, 4.0], *TOL, accumulated=accumulated) == slug


def test_curve_slug() -> None:
    assert curve_slug([4.0, 2.0, 1.0]) is None
    assert curve_slug([4.0, 4.0, 4.0]) == "loss-flat"
    assert curve_slug([4.0, 9.0]) == "loss-diverges"
    assert curve_slug([4.0, float("nan")]) == "loss-diverges"


def test_error_slug_recognises_the_course_errors() -> None:
    assert error_slug("grad can be implicitly created only for scalar outputs") == (
        "nonscalar-backward"
    )
    assert (
        error_slug(
            "Trying to backward through the graph a second time (or directly access saved tensors "
            "after they have already been freed)."
        )
        == "freed-graph"
    )
    assert (
        error_slug("a leaf Variable that requires grad is being used in an in-place operation.")
        == "inplace-leaf"
    )
    assert error_slug("division by zero") is None


def test_every_diagnosis_has_a_title_and_a_one_sentence_hint() -> None:
    for slug, diagnosis in DIAGNOSES.items():
        assert diagnosis.slug == slug and diagnosis.title
        assert diagnosis.hint.endswith(".") and diagnosis.hint.count(". ") == 0
