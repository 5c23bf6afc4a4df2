"""A package whose code the compiler cannot take (nested too deeply, NUL bytes), whose
manifest is nested past tomllib's recursion, or whose text holds a lone surrogate is a
PackageError naming the file: never a RecursionError, MemoryError or UnicodeEncodeError."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.spec import Package, PackageError, load_package

EXERCISES = Path(__file__).resolve().parents[2] / "exercises"


@pytest.mark.parametrize(
    ("path", "text", "message"),
    [
        ("solution.py", "x = " + "-" * 100_000 + "1\n", "solution.py: nested too deeply"),
        ("starter.py", "y = " + "not " * 100_000 + "x\n", "starter.py: nested too deeply"),
        ("solution.py", "x = 1\x00\n", "solution.py"),
        ("solution.py", "# \ud800\nx = 1\n", "solution.py: not valid Unicode text"),
        ("exercise.toml", "a = " + "[" * 50_000 + "]" * 50_000, "exercise.toml: invalid TOML"),
    ],
    ids=["deep-solution", "deep-starter", "nul-bytes", "lone-surrogate", "deep-manifest"],
)
def test_a_file_the_parsers_cannot_take_is_a_package_error_naming_it(
    path: str, text: str, message: str
) -> None:
    files = {**load_package(EXERCISES / "chain-rule").files, path: text}

    with pytest.raises(PackageError, match=message.replace(".", r"\.")):
        Package.from_files(files, origin="chain-rule")
