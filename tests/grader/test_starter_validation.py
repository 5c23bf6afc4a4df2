"""Validation refuses a package whose untouched starter scores more than it may (by
default it must not pass; `[starter] max_share` allows a share, with a reason), and tells
the author, for a file that scores more than it should, which check would catch it."""

from __future__ import annotations

import pytest
from grading_helpers import package_at

from grader.authoring.validation import Validation, ValidationItem, validate_package
from grader.cache import ReferenceCache
from grader.sandbox.base import Sandbox
from grader.spec import Package, PackageError

HEAD, _, _ = package_at("vector-square").files["exercise.toml"].partition("[[checks]]")
# Only "runs without an error": the untouched starter and the mean-for-sum mistake pass.
WEAK_CHECKS = """
[[checks]]
name = "runs without an error"
type = "no_error"
points = 10

[[wrong]]
file = "wrong/mean.py"
diagnosis = "scaled-by-n"
"""


def _package(*, toml: str | None = None, starter: str | None = None, extra: str = "") -> Package:
    files = dict(package_at("vector-square").files)
    files["exercise.toml"] = (toml if toml is not None else files["exercise.toml"]) + extra
    if starter is not None:
        files["starter.py"] = starter
    return Package.from_files(files)


def _validate(package: Package, sandbox: Sandbox, cache: ReferenceCache) -> Validation:
    return validate_package(package, sandbox=sandbox, cache=cache, mutants=False)


def _item(validation: Validation, kind: str) -> ValidationItem:
    return next(item for item in validation.items if item.kind == kind)


def _share(share: float) -> str:
    return f'\n[starter]\nmax_share = {share}\nreason = "the starter already squares x"\n'


@pytest.mark.sandbox
def test_a_starter_that_passes_fails_validation_and_is_told_which_check_would_catch_it(
    sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    validation = _validate(_package(toml=HEAD + WEAK_CHECKS), sandbox, reference_cache)

    starter = _item(validation, "starter")
    assert not validation.ok and not starter.ok
    assert starter.expected == "runs without an error and does not pass"
    assert "10/10: an untouched starter scores too much" in starter.got
    assert 'a check that would catch it: type = "grad", target = "x"' in starter.got


@pytest.mark.sandbox
def test_a_wrong_solution_the_checks_let_through_names_the_check_that_would_catch_it(
    sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    validation = _validate(_package(toml=HEAD + WEAK_CHECKS), sandbox, reference_cache)

    wrong = _item(validation, "wrong")
    assert not wrong.ok
    assert 'type = "grad", target = "x"' in wrong.got
    assert 'type = "value", target = "x"' not in wrong.got  # x is the same in both
    assert "not as declared" in validation.summary()


@pytest.mark.sandbox
def test_a_starter_within_its_declared_share_validates(
    sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    package = _package(starter=package_at("vector-square").solution, extra=_share(1.0))

    validation = _validate(package, sandbox, reference_cache)

    starter = _item(validation, "starter")
    assert starter.ok, validation.summary()
    assert starter.expected == "runs without an error, at most 10/10 (100%)"


@pytest.mark.sandbox
def test_a_starter_above_its_declared_share_fails_validation(
    sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    # The starter computes y and the loss but never calls backward: 4 of 10 points.
    starter = "import torch\n\nx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
    starter += "y = x * 2\ny.retain_grad()\nloss = (y**2).sum()\n"
    within = _validate(_package(starter=starter, extra=_share(0.4)), sandbox, reference_cache)
    above = _validate(_package(starter=starter, extra=_share(0.3)), sandbox, reference_cache)

    assert _item(within, "starter").ok, within.summary()
    item = _item(above, "starter")
    assert not item.ok and item.expected == "runs without an error, at most 3/10 (30%)"
    assert "4/10" in item.got and 'type = "grad", target = "x"' not in item.got


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ("[starter]\nmax_share = 1.5\nreason = 'x'\n", "starter.max_share: must be a number"),
        ("[starter]\nmax_share = true\nreason = 'x'\n", "starter.max_share: must be a number"),
        ("[starter]\nmax_share = 0.5\n", "starter.reason: required field missing"),
        ("[starter]\nmax_share = 0.5\nreason = 'x'\nshare = 1\n", "starter.share: unknown"),
    ],
    ids=["above-one", "boolean", "no-reason", "unknown-key"],
)
def test_a_malformed_starter_share_is_refused_when_the_package_is_read(
    table: str, problem: str
) -> None:
    with pytest.raises(PackageError, match=problem):
        _package(extra="\n" + table)


def test_a_declared_share_and_its_reason_are_read() -> None:
    manifest = _package(extra=_share(0.25)).manifest

    assert (manifest.starter_max_share, manifest.starter_share_reason) == (
        0.25,
        "the starter already squares x",
    )
