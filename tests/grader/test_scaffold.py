"""`python -m grader new <slug> --kind script|function` (grader.authoring.scaffold): a package that
validates as written, its auto-mutants caught."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.__main__ import EXIT_BAD_INPUT, EXIT_OK, main
from grader.authoring.scaffold import new_package
from grader.authoring.validation import validate_package
from grader.cache import ReferenceCache
from grader.sandbox.base import Sandbox
from grader.spec import Package, PackageError, load_package


def test_a_new_package_parses_with_its_slug_title_and_one_wrong_solution() -> None:
    package = Package.from_files(new_package("cube-gradient", title='The "cube"'))

    assert package.slug == "cube-gradient"
    assert package.manifest.title == "The 'cube'"
    assert [w.diagnosis for w in package.manifest.wrong] == ["graph-broken"]
    assert "<!-- checks -->" in package.files["statement.md"]
    assert "What is checked (10 points)" in package.statement


def test_a_new_function_package_has_its_entry_cases_file_and_one_wrong_solution() -> None:
    package = Package.from_files(new_package("cube-grad", kind="function"))

    assert (package.manifest.kind, package.manifest.entry) == ("function", "cube_grad")
    assert package.manifest.names[0] == "cube_grad" and package.manifest.trials >= 2
    assert "def make_cases(seed, trials):" in package.files["cases.py"]
    assert "def cube_grad(x):" in package.starter and "def cube_grad(x):" in package.solution
    assert [w.diagnosis for w in package.manifest.wrong] == ["sign-error"]
    assert "What is checked (10 points)" in package.statement


def test_a_slug_that_is_not_one_is_refused() -> None:
    with pytest.raises(PackageError, match="lowercase words"):
        new_package("Cube_Gradient")


def test_a_kind_that_is_not_one_is_refused() -> None:
    with pytest.raises(PackageError, match="script, function"):
        new_package("cube-gradient", kind="class")


def test_the_cli_writes_the_package_once_and_refuses_to_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "cube-gradient", "--dir", str(tmp_path)]) == EXIT_OK
    before = (tmp_path / "cube-gradient" / "solution.py").read_text()
    (tmp_path / "cube-gradient" / "solution.py").write_text(before + "# mine\n")

    assert main(["new", "cube-gradient", "--dir", str(tmp_path)]) == EXIT_BAD_INPUT

    assert load_package(tmp_path / "cube-gradient").slug == "cube-gradient"
    assert (tmp_path / "cube-gradient" / "solution.py").read_text().endswith("# mine\n")
    assert "already exists" in capsys.readouterr().err


def test_the_cli_writes_a_function_package_with_kind_function(tmp_path: Path) -> None:
    assert main(["new", "cube-grad", "--kind", "function", "--dir", str(tmp_path)]) == EXIT_OK

    package = load_package(tmp_path / "cube-grad")

    assert package.manifest.kind == "function"
    assert sorted(package.files) == [
        "cases.py", "exercise.toml", "solution.py", "starter.py", "statement.md",
        "wrong/sign-error.py",
    ]  # fmt: skip


@pytest.mark.sandbox
def test_a_new_package_validates_in_the_sandbox_as_it_is(
    sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    package = Package.from_files(new_package("cube-gradient"))

    validation = validate_package(package, sandbox=sandbox, cache=reference_cache)

    assert validation.ok, validation.summary()  # every auto-mutant caught, too
    assert [item.kind for item in validation.items] == ["reference", "starter", "wrong"]
    assert len(validation.mutants) >= 3


@pytest.mark.sandbox
def test_a_new_function_package_validates_in_the_sandbox_as_it_is(
    sandbox: Sandbox, reference_cache: ReferenceCache
) -> None:
    package = Package.from_files(new_package("cube-grad", kind="function"))

    validation = validate_package(package, sandbox=sandbox, cache=reference_cache)

    assert validation.ok, validation.summary()  # every auto-mutant caught, too
    assert [item.kind for item in validation.items] == ["reference", "starter", "wrong"]
    assert len(validation.mutants) >= 2
