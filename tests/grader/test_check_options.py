"""Typed check options (grader.checks.options): each check type declares a frozen
dataclass of its options beside the check; the manifest parser fills it or names the
file and the field of the first bad option."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from check_helpers import CONTEXT, KNOWN
from grading_helpers import package_at

from grader.checks.options import CheckOptions, OptionContext, OptionError
from grader.checks.registry import REGISTRY, parse_options
from grader.checks.runs import LossCurveOptions
from grader.checks.values import ValueOptions
from grader.spec import Package, PackageError


def test_every_check_type_has_frozen_options_whose_defaults_parse_from_nothing() -> None:
    for name, check_type in REGISTRY.items():
        options = parse_options(name, {}, CONTEXT)
        assert type(options) is check_type.options and isinstance(options, CheckOptions)
        assert options == check_type.options(), name
        with pytest.raises(dataclasses.FrozenInstanceError):
            options.diagnosis = "sign-error"  # type: ignore[misc]


def test_parsed_options_are_typed_values_not_strings() -> None:
    options = ValueOptions.parse(
        {"rtol": 1, "atol": 0.5, "device": "any", "variants": {"sign-error": "_neg"}}, CONTEXT
    )
    assert (options.rtol, options.atol) == (1.0, 0.5) and isinstance(options.rtol, float)
    assert options.tolerance.device_any
    assert options.variants == (("sign-error", "_neg"),)
    assert ValueOptions().tolerance.for_dtype("float64") == (1e-7, 1e-7)


@pytest.mark.parametrize(
    ("kind", "raw", "field", "message"),
    [
        ("grad", {"rtol": "tight"}, "rtol", "must be a non-negative number"),
        ("grad", {"atol": -1.0}, "atol", "must be a non-negative number"),
        ("grad", {"device": "cuda"}, "device", 'the only accepted value is "any"'),
        ("grad", {"tolerance": 1}, "tolerance", "unknown field"),
        ("device", {"rtol": 0.1}, "rtol", "unknown field"),
        ("value", {"variants": {"typo": "_x"}}, "variants.typo", "not a known diagnosis"),
        ("value", {"variants": {"sign-error": "x"}}, "variants.sign-error", "starting with _"),
        ("graph", {"facts": ["colour"]}, "facts", "non-empty list drawn from"),
        ("backward_calls", {"count": "yes"}, "count", "must be true or false"),
        ("loss_curve", {"mode": "fancy"}, "mode", "must be one of"),
        ("loss_curve", {"mode": "properties", "rtol": 0.1}, "rtol", 'mode = "pointwise"'),
        ("loss_curve", {"falls": True}, "falls", 'applies only in mode = "properties"'),
        ("loss_curve", {"mode": "properties", "min_steps": 9, "max_steps": 3}, "min_steps",
         "must not exceed max_steps"),
        ("loss_curve", {"mode": "properties", "final_below": float("nan")}, "final_below",
         "must be a number"),
        ("fresh_grads", {"names": ["nobody"]}, "names", "names listed in names"),
        ("stdout", {"mode": "pointwise"}, "mode", "must be one of"),
        ("raises", {"diagnosis": "typo"}, "diagnosis", "'typo' is not a known diagnosis"),
    ],
)  # fmt: skip
def test_a_bad_option_names_its_field(
    kind: str, raw: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(OptionError) as error:
        parse_options(kind, raw, CONTEXT)
    assert error.value.field == field
    assert message in error.value.message


def test_the_options_a_manifest_may_name_depend_on_its_names_and_diagnoses() -> None:
    narrow = OptionContext(names=("w",), diagnoses=frozenset({"wrong-value"}))
    assert parse_options("fresh_grads", {"names": ["w"]}, narrow).names == ("w",)  # type: ignore[attr-defined]
    with pytest.raises(OptionError, match="names listed in names"):
        parse_options("fresh_grads", {"names": ["x"]}, narrow)
    assert "sign-error" in KNOWN
    with pytest.raises(OptionError, match="not a known diagnosis"):
        parse_options("grad", {"diagnosis": "sign-error"}, narrow)


def test_a_manifest_with_a_bad_option_is_a_package_error_naming_the_file_and_the_field() -> None:
    files = dict(package_at("tiny-training").files)
    files["exercise.toml"] = files["exercise.toml"].replace("min_steps = 5", "rtol = 0.1", 1)
    with pytest.raises(PackageError) as error:
        Package.from_files(files, origin="tests/tiny-training")
    assert str(error.value) == (
        'tests/tiny-training/exercise.toml: checks[0].rtol: applies only in mode = "pointwise"'
    )


def test_a_course_manifest_loads_its_options_into_the_check_types_dataclass() -> None:
    manifest = package_at("tiny-training").manifest
    curve = manifest.checks[0].options
    assert isinstance(curve, LossCurveOptions)
    assert (curve.mode, curve.falls, curve.final_below, curve.min_steps) == (
        "properties",
        True,
        0.01,
        5,
    )
