"""The statement's "What is checked" section is generated from the manifest (one source of
truth): it stands where the marker line is, lists every check with its points and what it
compares, and a hand-written section is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.checks.registry import REGISTRY
from grader.spec import Package, PackageError, load_package, package_dirs
from grader.statement import DESCRIPTIONS, DTYPE_RULE, MARKER

EXERCISES = Path(__file__).resolve().parents[2] / "exercises"
PACKAGES = package_dirs(EXERCISES)

MANIFEST = """\
slug = "p"
title = "P"
kind = "script"
points = 7
names = ["x", "note"]

[[checks]]
name = "x.grad is 2x | the slope"
type = "grad"
target = "x"
points = 4
rtol = 1e-4

[[checks]]
name = "the note"
type = "message"
target = "note"
points = 2

[[checks]]
name = "runs"
type = "no_error"
points = 1
"""


def package(statement: str, manifest: str = MANIFEST) -> Package:
    files = {
        "exercise.toml": manifest,
        "statement.md": statement,
        "starter.py": "x = 1\n",
        "solution.py": "x = 1\n",
    }
    return Package.from_files(files, origin="exercises/p")


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]


def test_the_section_replaces_the_marker_line_between_the_prose_around_it() -> None:
    text = package(f"# P\n\nDo it.\n\n{MARKER}\n\nNamed mistakes: none.\n").statement
    before, after = text.split("## What is checked (7 points)")
    assert before == "# P\n\nDo it.\n\n"
    assert after.rstrip().endswith("Named mistakes: none.")
    assert MARKER not in text
    assert table_rows(after) == [
        "| check | points | what is compared with the reference solution |",
        "| x.grad is 2x \\| the slope | 4 | the `.grad` of `x` equals the reference's "
        "(within rtol 0.0001) |",
        "| the note | 2 | `note` contains the reference's message; when that is the text of an "
        "error, your run must really have raised it |",
        "| runs | 1 | your code runs to the end without an uncaught exception |",
    ]


def test_without_a_marker_the_section_ends_the_statement() -> None:
    text = package("# P\n\nDo it.\n").statement
    assert text.startswith("# P\n\nDo it.\n\n## What is checked (7 points)\n")
    assert text.rstrip().endswith(DTYPE_RULE)


def test_the_dtype_rule_follows_the_table_only_when_a_check_compares_values() -> None:
    assert DTYPE_RULE in package(f"# P\n{MARKER}\n").statement
    only_runs = MANIFEST.split("[[checks]]")[0].replace("points = 7", "points = 1")
    only_runs += '[[checks]]\nname = "runs"\ntype = "no_error"\npoints = 1\n'
    assert DTYPE_RULE not in package(f"# P\n{MARKER}\n", only_runs).statement


def test_the_raw_file_keeps_the_marker_and_the_package_hash_covers_it() -> None:
    built = package(f"# P\n{MARKER}\n")
    assert built.files["statement.md"] == f"# P\n{MARKER}\n"
    assert built.content_hash != package(f"# P\n{MARKER}\nMore.\n").content_hash


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        (
            "# P\n\n## What is checked (7 points)\n\n| check | points |\n|---|---|\n| x | 7 |\n",
            r"statement\.md: a hand-written 'What is checked' section",
        ),
        (f"# P\n{MARKER}\ntext\n{MARKER}\n", r"statement\.md: the line <!-- checks --> appears"),
    ],
)
def test_a_hand_written_section_or_a_second_marker_is_a_package_error(
    statement: str, message: str
) -> None:
    with pytest.raises(PackageError, match=message):
        package(statement)


def test_every_check_type_has_a_description_for_learners() -> None:
    assert set(REGISTRY) <= set(DESCRIPTIONS)


@pytest.mark.parametrize("path", PACKAGES, ids=[path.name for path in PACKAGES])
def test_every_course_statement_places_the_generated_table_and_has_no_stale_one(
    path: Path,
) -> None:
    raw = (path / "statement.md").read_text(encoding="utf-8")
    assert [line.strip() for line in raw.splitlines()].count(MARKER) == 1
    assert not table_rows(raw), "a hand-written table: the marker line generates it"
    package_ = load_package(path)
    manifest = package_.manifest
    rows = table_rows(package_.statement.split(f"## What is checked ({manifest.points} points)")[1])
    assert len(rows) == 1 + len(manifest.checks)
    for row, check in zip(rows[1:], manifest.checks, strict=True):
        assert row.split(" | ")[1] == str(check.points)
